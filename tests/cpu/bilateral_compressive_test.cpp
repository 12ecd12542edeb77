// Compressive bilateral filter (approximate): PSNR against the exact filter over the input's value
// range must reach the accuracy asked for.

#include "common/test_util.hpp"

#include <ctdenoise/ctdenoise.hpp>

#include <algorithm>
#include <cmath>

namespace {

using testing_util::psnr;

struct Case {
  const char* name;
  ctd::Dims dims;
  float sigma_spatial, sigma_range_fraction, accuracy_db;
};

const Case kCases[] = {
    {"2D sr 0.05", {61, 47, 1}, 2.0f, 0.05f, 50},  {"2D sr 0.10", {61, 47, 1}, 2.0f, 0.10f, 50},
    {"2D sr 0.20", {61, 47, 1}, 3.0f, 0.20f, 50},  {"3D sr 0.05", {23, 19, 17}, 1.0f, 0.05f, 50},
    {"3D sr 0.10", {23, 19, 17}, 2.0f, 0.10f, 50}, {"3D sr 0.15", {23, 19, 17}, 1.5f, 0.15f, 50},
    {"3D sr 0.20", {23, 19, 17}, 2.0f, 0.20f, 50}, {"2D 40 dB", {50, 40, 1}, 2.0f, 0.1f, 40},
    {"3D 70 dB", {21, 17, 9}, 1.0f, 0.1f, 70},
};

class CompressiveBilateral : public ::testing::TestWithParam<Case> {};

TEST_P(CompressiveBilateral, ReachesTheRequestedPsnrAgainstTheExactFilter) {
  const Case& c = GetParam();
  for (int pattern = 0; pattern < 2; ++pattern) {
    const ctd::Volume in = pattern == 0 ? testing_util::random_volume(c.dims, 5, -500, 1500)
                                        : testing_util::structured_volume(c.dims, 6);
    const auto [lo, hi] = std::minmax_element(in.data(), in.data() + in.size());
    const double range = double(*hi) - double(*lo);
    ctd::BilateralParams p;
    p.sigma_spatial = c.sigma_spatial;
    p.sigma_range = float(c.sigma_range_fraction * range);
    p.accuracy_db = c.accuracy_db;
    ctd::Volume exact(in.dims()), approx(in.dims());
    p.algorithm = ctd::BilateralAlgorithm::Direct;
    ctd::bilateral(in.view(), exact.view(), p);
    p.algorithm = ctd::BilateralAlgorithm::Compressive;
    const ctd::FilterRun run = ctd::bilateral(in.view(), approx.view(), p);
    EXPECT_EQ(run.algorithm, "compressive");
    const double db = psnr(exact, approx, range);
    EXPECT_GE(db, c.accuracy_db) << c.name << " pattern " << pattern << ": " << run.details.at("terms") << " terms, T "
                                 << run.details.at("period");
    RecordProperty("psnr_db_pattern" + std::to_string(pattern), std::to_string(db));
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, CompressiveBilateral, ::testing::ValuesIn(kCases), testing_util::case_name);

TEST(CompressiveBilateralProperties, IsAnApproximationWhoseTermsFollowTheAccuracy) {
  ctd::BilateralParams p;
  p.sigma_spatial = 2;
  p.sigma_range = 100;
  p.accuracy_db = 50;
  const auto s50 = ctd::compressive_settings(p, 2000);
  EXPECT_GT(s50.period, 2000);
  p.accuracy_db = 20;
  const auto s20 = ctd::compressive_settings(p, 2000);
  EXPECT_LT(s20.terms, s50.terms);
  p.sigma_range = 50;
  p.accuracy_db = 50;
  EXPECT_GT(ctd::compressive_settings(p, 2000).terms, s50.terms);

  // At a loose accuracy the result really differs from the exact filter (but still meets it).
  const ctd::Volume in = testing_util::structured_volume({40, 30, 1}, 2);
  ctd::Volume exact(in.dims()), approx(in.dims());
  p.sigma_range = 20;
  p.accuracy_db = 20;
  ctd::bilateral(in.view(), exact.view(), p);
  p.algorithm = ctd::BilateralAlgorithm::Compressive;
  ctd::bilateral(in.view(), approx.view(), p);
  const auto [lo, hi] = std::minmax_element(in.data(), in.data() + in.size());
  const double db = psnr(exact, approx, double(*hi) - double(*lo));
  EXPECT_LT(db, 80);
  EXPECT_GE(db, 20);
}

TEST(CompressiveBilateralProperties, FixedTermsSetMAndBalanceTheTwoErrors) {
  ctd::BilateralParams p;
  p.sigma_spatial = 1.5f;
  p.sigma_range = 200;
  const double range = 2000;
  for (int m : {3, 4, 7}) {
    p.terms = m;
    const auto s = ctd::compressive_settings(p, range);
    EXPECT_EQ(s.terms, m);
    ASSERT_GT(s.period, range);
    // ln of the nearest periodic copy of the kernel and of the first dropped term a_{M+1}.
    const double copy = -(s.period - range) * (s.period - range) / (2.0 * 200 * 200);
    const double w = 2 * M_PI / s.period;
    const double dropped = std::log(2.0) - 0.5 * (w * (m + 1) * 200) * (w * (m + 1) * 200);
    EXPECT_NEAR(copy, dropped, 1e-6 * std::abs(copy)) << "M " << m;
  }
  // More terms, closer to the exact filter; the report names M.
  const ctd::Volume in = testing_util::structured_volume({40, 30, 1}, 3);
  ctd::Volume exact(in.dims()), approx(in.dims());
  p.sigma_range = 30;
  p.terms = 0;
  ctd::bilateral(in.view(), exact.view(), p);
  const auto [lo, hi] = std::minmax_element(in.data(), in.data() + in.size());
  p.algorithm = ctd::BilateralAlgorithm::Compressive;
  double previous = 0;
  for (int m : {3, 7, 15}) {
    p.terms = m;
    const auto run = ctd::bilateral(in.view(), approx.view(), p);
    EXPECT_EQ(run.details.at("terms"), m);
    const double db = psnr(exact, approx, double(*hi) - double(*lo));
    EXPECT_GT(db, previous + 3) << "M " << m;
    previous = db;
  }
  p.terms = -1;
  EXPECT_TRUE(testing_util::throws_kind([&] { ctd::validate(p); }, ctd::ErrorKind::InvalidArgument));
}

TEST(CompressiveBilateralProperties, ConstantImageStaysConstantAndRerunsAreIdentical) {
  ctd::Volume in({9, 8, 5});
  std::fill(in.data(), in.data() + in.size(), 42.5f);
  ctd::BilateralParams p;
  p.sigma_spatial = 1.5f;
  p.sigma_range = 10;
  p.algorithm = ctd::BilateralAlgorithm::Compressive;
  ctd::Volume out(in.dims());
  ctd::bilateral(in.view(), out.view(), p);
  for (std::int64_t i = 0; i < out.size(); ++i) ASSERT_NEAR(out.data()[i], 42.5f, 1e-4);
  const ctd::Volume noisy = testing_util::structured_volume({17, 13, 6}, 1);
  ctd::Volume a(noisy.dims()), b(noisy.dims());
  ctd::ExecContext one, many;
  one.threads = 1;
  many.threads = 3;
  ctd::bilateral(noisy.view(), a.view(), p, one);
  ctd::bilateral(noisy.view(), b.view(), p, many);
  EXPECT_TRUE(testing_util::bit_identical(a, b));
}

TEST(CompressiveBilateralProperties, RefusesWhatItCannotDo) {
  ctd::BilateralParams p;
  p.sigma_spatial = 1;
  p.sigma_range = 0.01f;
  p.algorithm = ctd::BilateralAlgorithm::Compressive;
  EXPECT_TRUE(testing_util::throws_kind([&] { ctd::compressive_settings(p, 1e6); }, ctd::ErrorKind::Unsupported));
  p.sigma_range = 10;
  p.accuracy_db = 0;
  EXPECT_TRUE(testing_util::throws_kind([&] { ctd::validate(p); }, ctd::ErrorKind::InvalidArgument));
  p.accuracy_db = 200;
  EXPECT_TRUE(testing_util::throws_kind([&] { ctd::validate(p); }, ctd::ErrorKind::InvalidArgument));
}

}  // namespace

namespace {

TEST(CompressiveBilateralRecursive, CloseToTheDirectGaussianAndItsConstantsHold) {
  for (ctd::Dims dims : {ctd::Dims{80, 61, 1}, ctd::Dims{33, 29, 21}}) {
    const ctd::Volume in = testing_util::structured_volume(dims, 12);
    const auto [lo, hi] = std::minmax_element(in.data(), in.data() + in.size());
    const double range = double(*hi) - double(*lo);
    for (float sigma : {1.0f, 3.0f, 6.0f}) {
      ctd::BilateralParams p;
      p.sigma_spatial = sigma;
      p.sigma_range = float(0.1 * range);
      p.algorithm = ctd::BilateralAlgorithm::Compressive;
      ctd::Volume direct(in.dims()), recursive(in.dims()), exact(in.dims());
      ctd::bilateral(in.view(), direct.view(), p);
      p.gaussian = ctd::BilateralParams::Gaussian::Recursive;
      ctd::bilateral(in.view(), recursive.view(), p);
      p.algorithm = ctd::BilateralAlgorithm::Direct;
      ctd::bilateral(in.view(), exact.view(), p);
      const double vs_direct = psnr(direct, recursive, range), vs_exact = psnr(exact, recursive, range);
      EXPECT_GE(vs_exact, 45.0) << "sigma " << sigma << " dims " << dims.nx << "x" << dims.ny << "x" << dims.nz;
      EXPECT_LT(vs_direct, 200.0) << "it is a different Gaussian, not the same code path";
      RecordProperty("psnr_vs_exact_sigma" + std::to_string(int(sigma)) + "_nz" + std::to_string(dims.nz), std::to_string(vs_exact));
    }
  }
  ctd::Volume flat({31, 20, 7});
  std::fill(flat.data(), flat.data() + flat.size(), -7.25f);
  ctd::BilateralParams p;
  p.sigma_spatial = 4;
  p.sigma_range = 5;
  p.algorithm = ctd::BilateralAlgorithm::Compressive;
  p.gaussian = ctd::BilateralParams::Gaussian::Recursive;
  ctd::Volume out(flat.dims());
  ctd::bilateral(flat.view(), out.view(), p);
  for (std::int64_t i = 0; i < out.size(); ++i) ASSERT_NEAR(out.data()[i], -7.25f, 1e-4);
  p.sigma_spatial = 0.3f;  // below the recursive filter's range
  EXPECT_TRUE(testing_util::throws_kind([&] { ctd::bilateral(flat.view(), out.view(), p); }, ctd::ErrorKind::InvalidArgument));
}

}  // namespace
