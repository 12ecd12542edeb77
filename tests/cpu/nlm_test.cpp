// CPU NLM against the naive double-precision reference, over sizes, radii, options and borders.

#include "common/nlm_case.hpp"
#include "common/test_util.hpp"
#include "cpu/backend.hpp"

#include <ctdenoise/ctdenoise.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <span>
#include <vector>

namespace {

using testing_util::compare;

using Case = testing_util::NlmCase;
using testing_util::to_params;
using testing_util::to_ref;

const Case kCases[] = {
    {"single voxel", {1, 1, 1}, 2, 1},
    {"single row 2D", {9, 1, 1}, 2, 1},
    {"single column 2D", {1, 8, 1}, 1, 2},
    {"odd 2D", {13, 11, 1}, 3, 1},
    {"2D radii larger than image", {5, 4, 1}, 7, 6},
    {"2x2x2", {2, 2, 2}, 1, 1},
    {"odd non-cubic 3D", {9, 7, 5}, 2, 1},
    {"thin 3D", {11, 3, 2}, 2, 2},
    {"3D radii larger than volume", {4, 3, 3}, 5, 4},
    {"one-voxel-wide 3D", {1, 5, 4}, 2, 1},
    {"gaussian patch 2D", {12, 9, 1}, 3, 2, 40, 0, ctd::PatchKernel::Gaussian, 1.3f},
    {"gaussian patch 3D", {7, 6, 5}, 2, 2, 40, 0, ctd::PatchKernel::Gaussian, 0.8f},
    {"noise bias 2D", {10, 9, 1}, 3, 1, 30, 12},
    {"noise bias 3D", {6, 7, 5}, 2, 1, 30, 9},
    {"L1 2D", {11, 10, 1}, 3, 2, 20, 0, ctd::PatchKernel::Uniform, 1, ctd::PatchDistance::L1},
    {"L1 3D", {6, 5, 4}, 2, 1, 20, 0, ctd::PatchKernel::Uniform, 1, ctd::PatchDistance::L1},
    {"centre max 2D", {9, 8, 1}, 2, 1, 40, 0, ctd::PatchKernel::Uniform, 1, ctd::PatchDistance::L2, ctd::CentreWeight::Max},
    {"centre max 3D", {5, 6, 4}, 2, 1, 40, 0, ctd::PatchKernel::Uniform, 1, ctd::PatchDistance::L2, ctd::CentreWeight::Max},
    {"centre max single voxel", {1, 1, 1}, 1, 1, 40, 0, ctd::PatchKernel::Uniform, 1, ctd::PatchDistance::L2, ctd::CentreWeight::Max},
    // Larger than one of the boxes the output is computed in (cpu::nlm_box_size), along every axis
    // that has several.
    {"2D over several boxes", {263, 71, 1}, 3, 1},
    {"3D over several boxes", {7, 53, 29}, 2, 1},
    {"L1 3D over several boxes", {5, 27, 26}, 2, 1, 20, 0, ctd::PatchKernel::Uniform, 1, ctd::PatchDistance::L1},
    {"centre max 3D over several boxes", {6, 26, 27}, 2, 1, 40, 0, ctd::PatchKernel::Uniform, 1, ctd::PatchDistance::L2,
     ctd::CentreWeight::Max},
};

class NlmCpu : public ::testing::TestWithParam<Case> {};

TEST_P(NlmCpu, MatchesReferenceOnRandomAndStructuredInputs) {
  const Case& c = GetParam();
  for (int pattern = 0; pattern < 2; ++pattern) {
    const ctd::Volume in = pattern == 0 ? testing_util::random_volume(c.dims, 1234)
                                        : testing_util::structured_volume(c.dims, 99);
    ctd::Volume out(in.dims());
    ctd::ExecContext ctx;
    ctx.device = ctd::Device::Cpu;
    ctx.threads = 3;
    ctd::nlm(in.view(), out.view(), to_params(c), ctx);
    const auto expected = ref::nlm(testing_util::to_ref(in), to_ref(c));
    const auto cmp = compare(out, expected);
    EXPECT_LE(cmp.relative_l2, 1e-6) << c.name << " pattern " << pattern << ": " << cmp.where(in.dims());
    EXPECT_LE(cmp.max_abs, 2e-3) << c.name << " pattern " << pattern << ": " << cmp.where(in.dims());
  }
}

// The output computed in boxes of a few voxels, so that every voxel lies near a box's seam and
// a box's weights come from its neighbours' voxels, against the reference.
TEST_P(NlmCpu, MatchesReferenceInTinyBoxes) {
  const Case& c = GetParam();
  const ctd::Volume in = testing_util::random_volume(c.dims, 4321);
  ctd::Volume out(in.dims());
  ctd::cpu::ThreadPool pool(2);
  const auto boxes = ctd::cpu::cache_boxes(in.dims(), {3, 2, 4});
  ctd::cpu::nlm_displacement(in.view(), out.view(), to_params(c), pool, {}, boxes);
  const auto cmp = compare(out, ref::nlm(testing_util::to_ref(in), to_ref(c)));
  EXPECT_LE(cmp.relative_l2, 1e-6) << c.name << ": " << cmp.where(in.dims());
  EXPECT_LE(cmp.max_abs, 2e-3) << c.name << ": " << cmp.where(in.dims());
}

INSTANTIATE_TEST_SUITE_P(Cases, NlmCpu, ::testing::ValuesIn(kCases), testing_util::case_name);

// Asked for the output in some boxes (as the automatic h reads it), the filter computes those
// voxels bit for bit as over the whole volume and leaves every other voxel as it was.
TEST(NlmCpuProperties, OutputInBoxesAloneIsTheWholeRunsThere) {
  const ctd::Volume in = testing_util::structured_volume({41, 30, 9}, 8);
  for (const bool l1 : {false, true}) {
    ctd::NlmParams p;
    p.h = 30;
    p.search_radius = 3;
    p.distance = l1 ? ctd::PatchDistance::L1 : ctd::PatchDistance::L2;
    ctd::cpu::ThreadPool pool(2);
    ctd::Volume whole(in.dims());
    ctd::cpu::nlm_displacement(in.view(), whole.view(), p, pool, {});
    const std::vector<ctd::cpu::OutputBox> boxes = {{0, 0, 0, 1, 1, 1}, {5, 4, 2, 36, 11, 9}, {40, 29, 0, 41, 30, 9},
                                                    {10, 20, 3, 11, 25, 4}};
    ctd::Volume part(in.dims());
    constexpr float kUntouched = -12345.0f;
    std::fill(part.data(), part.data() + part.size(), kUntouched);
    ctd::cpu::nlm_displacement(in.view(), part.view(), p, pool, {}, boxes);
    std::int64_t inside = 0, differ = 0, touched = 0;
    for (std::int64_t z = 0; z < in.dims().nz; ++z)
      for (std::int64_t y = 0; y < in.dims().ny; ++y)
        for (std::int64_t x = 0; x < in.dims().nx; ++x) {
          const bool in_box = std::any_of(boxes.begin(), boxes.end(), [&](const ctd::cpu::OutputBox& b) {
            return x >= b.x0 && x < b.x1 && y >= b.y0 && y < b.y1 && z >= b.z0 && z < b.z1;
          });
          const float got = part.view()(x, y, z);
          if (in_box) {
            ++inside;
            differ += std::memcmp(&got, &whole.view()(x, y, z), sizeof(float)) != 0;
          } else {
            touched += got != kUntouched;
          }
        }
    EXPECT_EQ(inside, 1 + 31 * 7 * 7 + 9 + 5);
    EXPECT_EQ(differ, 0) << (l1 ? "L1" : "L2");
    EXPECT_EQ(touched, 0) << (l1 ? "L1" : "L2");
  }
}

// Several strengths in one pass (as the automatic h runs the filter) give each output bit for
// bit as a run at that strength alone, with every option, over the whole volume and in boxes.
TEST(NlmCpuProperties, SeveralStrengthsInOnePassAreEachAsAlone) {
  const ctd::Volume in = testing_util::random_volume({29, 27, 6}, 21);
  const std::vector<float> hs = {12.5f, 30.0f, 71.0f};
  const std::vector<ctd::cpu::OutputBox> boxes = {{2, 3, 0, 27, 20, 6}};
  ctd::cpu::ThreadPool pool(2);
  for (int variant = 0; variant < 4; ++variant) {
    ctd::NlmParams p;
    p.search_radius = 3;
    if (variant == 1) p.distance = ctd::PatchDistance::L1;
    if (variant == 2) p.centre_weight = ctd::CentreWeight::Max, p.patch_kernel = ctd::PatchKernel::Gaussian;
    if (variant == 3) p.noise_sigma = 8;
    for (const bool in_boxes : {false, true}) {
      const std::span<const ctd::cpu::OutputBox> only = in_boxes ? std::span<const ctd::cpu::OutputBox>(boxes)
                                                                 : std::span<const ctd::cpu::OutputBox>();
      std::vector<ctd::Volume> together(hs.size(), ctd::Volume(in.dims()));
      std::vector<ctd::VolumeView<float>> views;
      for (auto& v : together) views.push_back(v.view());
      ctd::cpu::nlm_displacement(in.view(), views, hs, p, pool, {}, only);
      for (std::size_t k = 0; k < hs.size(); ++k) {
        ctd::NlmParams q = p;
        q.h = hs[k];
        ctd::Volume alone(in.dims());
        ctd::cpu::nlm_displacement(in.view(), alone.view(), q, pool, {}, only);
        EXPECT_TRUE(testing_util::bit_identical(together[k], alone)) << "variant " << variant << " h " << hs[k];
      }
      EXPECT_FALSE(testing_util::bit_identical(together[0], together[2])) << "variant " << variant;
    }
  }
}

TEST(NlmCpuProperties, FiltersActuallySmoothNoise) {
  // Guards against a filter that returns its input: the reference comparison alone would not.
  const ctd::Volume in = testing_util::random_volume({16, 16, 1}, 5);
  ctd::Volume out(in.dims());
  ctd::NlmParams p;
  p.h = 200;
  ctd::nlm(in.view(), out.view(), p);
  double var_in = 0, var_out = 0, mean = 0;
  for (std::int64_t i = 0; i < in.size(); ++i) mean += in.data()[i] / double(in.size());
  for (std::int64_t i = 0; i < in.size(); ++i) {
    var_in += std::pow(in.data()[i] - mean, 2);
    var_out += std::pow(out.data()[i] - mean, 2);
  }
  EXPECT_LT(var_out, 0.2 * var_in);
}

TEST(NlmCpuProperties, BitIdenticalAcrossRunsAndThreadCounts) {
  const ctd::Volume in = testing_util::structured_volume({23, 17, 9}, 3);
  ctd::NlmParams p;
  p.h = 25;
  p.search_radius = 3;
  ctd::Volume first(in.dims());
  ctd::ExecContext one;
  one.threads = 1;
  ctd::nlm(in.view(), first.view(), p, one);
  for (int threads : {1, 2, 5}) {
    ctd::Volume again(in.dims());
    ctd::ExecContext ctx;
    ctx.threads = threads;
    ctd::nlm(in.view(), again.view(), p, ctx);
    EXPECT_TRUE(testing_util::bit_identical(first, again)) << threads << " threads";
  }
}

TEST(NlmCpuProperties, InPlaceEqualsOutOfPlace) {
  ctd::Volume in = testing_util::random_volume({8, 7, 3}, 11);
  ctd::NlmParams p;
  p.h = 40;
  p.search_radius = 2;
  ctd::Volume out(in.dims());
  ctd::nlm(in.view(), out.view(), p);
  ctd::nlm(in.view(), in.view(), p);
  EXPECT_TRUE(testing_util::bit_identical(in, out));
}

TEST(NlmCpuProperties, ReportsMonotoneProgressEndingAtOne) {
  const ctd::Volume in = testing_util::random_volume({8, 8, 4}, 2);
  ctd::Volume out(in.dims());
  ctd::NlmParams p;
  p.h = 40;
  ctd::ExecContext ctx;
  std::vector<double> seen;
  ctx.progress = [&](double f) { seen.push_back(f); };
  ctd::nlm(in.view(), out.view(), p, ctx);
  ASSERT_FALSE(seen.empty());
  EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
  EXPECT_DOUBLE_EQ(seen.back(), 1.0);
}

TEST(NlmCpuProperties, ProgressCallbackCanCancel) {
  const ctd::Volume in = testing_util::random_volume({8, 8, 4}, 2);
  ctd::Volume out(in.dims());
  ctd::NlmParams p;
  p.h = 40;
  ctd::ExecContext ctx;
  ctx.progress = [](double f) {
    if (f > 0.3) throw ctd::Error(ctd::ErrorKind::Cancelled, "stop");
  };
  EXPECT_TRUE(testing_util::throws_kind([&] { ctd::nlm(in.view(), out.view(), p, ctx); }, ctd::ErrorKind::Cancelled));
}

}  // namespace
