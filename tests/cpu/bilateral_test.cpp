// CPU bilateral filter against the naive double-precision reference.

#include "common/bilateral_case.hpp"
#include "common/test_util.hpp"

#include <ctdenoise/ctdenoise.hpp>

#include <optional>

namespace {

using testing_util::compare;

using Case = testing_util::BilateralCase;

const Case kCases[] = {
    {"single voxel", {1, 1, 1}, 1.0f, 20},
    {"single row", {10, 1, 1}, 1.2f, 20},
    {"odd 2D default radius", {15, 13, 1}, 1.5f, 25},
    {"2D per-axis radius", {12, 9, 1}, 2.0f, 30, std::array<int, 3>{1, 3, 1}},
    {"2D radius larger than image", {4, 3, 1}, 3.0f, 30, std::array<int, 3>{6, 7, 1}},
    {"2x2x2", {2, 2, 2}, 1.0f, 40},
    {"odd non-cubic 3D", {9, 7, 5}, 1.0f, 25},
    {"3D per-axis radius", {8, 6, 7}, 1.7f, 15, std::array<int, 3>{2, 1, 3}},
    {"3D radius larger than volume", {3, 4, 2}, 2.0f, 30, std::array<int, 3>{5, 5, 4}},
    {"sigma in mm, anisotropic", {9, 8, 6}, 2.0f, 20, std::nullopt, ctd::SpatialUnit::Millimetre, {0.7, 0.9, 2.0}},
    {"sigma in mm, 2D", {11, 10, 1}, 1.5f, 20, std::nullopt, ctd::SpatialUnit::Millimetre, {0.6, 0.8, 5.0}},
    {"small range sigma", {9, 9, 3}, 1.0f, 2},
};

class BilateralCpu : public ::testing::TestWithParam<Case> {};

TEST_P(BilateralCpu, MatchesReferenceOnRandomAndStructuredInputs) {
  const Case& c = GetParam();
  const ctd::BilateralParams p = testing_util::to_params(c);
  const ref::BilateralSettings s = testing_util::to_ref(c);

  for (int pattern = 0; pattern < 2; ++pattern) {
    const ctd::Volume in = pattern == 0 ? testing_util::random_volume(c.dims, 4321)
                                        : testing_util::structured_volume(c.dims, 17);
    ctd::Volume out(in.dims());
    ctd::ExecContext ctx;
    ctx.device = ctd::Device::Cpu;
    ctx.threads = 2;
    ctd::bilateral(in.view(), out.view(), p, ctx);
    const auto cmp = compare(out, ref::bilateral(testing_util::to_ref(in), s));
    EXPECT_LE(cmp.relative_l2, 1e-6) << c.name << " pattern " << pattern << ": " << cmp.where(in.dims());
    EXPECT_LE(cmp.max_abs, 2e-3) << c.name << " pattern " << pattern << ": " << cmp.where(in.dims());
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, BilateralCpu, ::testing::ValuesIn(kCases), testing_util::case_name);

TEST(BilateralCpuProperties, PreservesAStepEdgeAndSmoothsFlatNoise) {
  ctd::Volume in = testing_util::random_volume({32, 8, 1}, 8, -5, 5);
  for (std::int64_t y = 0; y < 8; ++y)
    for (std::int64_t x = 16; x < 32; ++x) in.view()(x, y, 0) += 1000;
  ctd::Volume out(in.dims());
  ctd::BilateralParams p;
  p.sigma_spatial = 2;
  p.sigma_range = 30;
  ctd::bilateral(in.view(), out.view(), p);
  EXPECT_NEAR(out.view()(15, 4, 0), 0, 4);     // left of the edge: not pulled up
  EXPECT_NEAR(out.view()(16, 4, 0), 1000, 4);  // right of the edge: not pulled down
  double var = 0;
  for (std::int64_t x = 4; x < 12; ++x) var += std::pow(out.view()(x, 4, 0), 2) / 8;
  EXPECT_LT(var, 3.0);  // uniform noise in [-5, 5) has variance 8.3
}

TEST(BilateralCpuProperties, BitIdenticalAcrossThreadCountsAndInPlace) {
  ctd::Volume in = testing_util::structured_volume({19, 13, 7}, 4);
  ctd::BilateralParams p;
  p.sigma_spatial = 1.3f;
  p.sigma_range = 20;
  ctd::Volume a(in.dims()), b(in.dims());
  ctd::ExecContext one, many;
  one.threads = 1;
  many.threads = 4;
  ctd::bilateral(in.view(), a.view(), p, one);
  ctd::bilateral(in.view(), b.view(), p, many);
  EXPECT_TRUE(testing_util::bit_identical(a, b));
  ctd::bilateral(in.view(), in.view(), p, many);
  EXPECT_TRUE(testing_util::bit_identical(a, in));
}

}  // namespace
