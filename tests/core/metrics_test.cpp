// Quality metrics against their definitions (SSIM against the naive reference).

#include "common/test_util.hpp"

#include <ctdenoise/metrics.hpp>

#include <cmath>
#include <limits>
#include <random>

namespace {

TEST(Metrics, RmseAndPsnrFollowTheirFormulas) {
  ctd::Volume a({4, 3, 2}), b({4, 3, 2});
  for (std::int64_t i = 0; i < a.size(); ++i) {
    a.data()[i] = float(i);
    b.data()[i] = float(i) + (i % 2 ? 2.0f : -2.0f);
  }
  EXPECT_DOUBLE_EQ(ctd::rmse(a.view(), b.view()), 2.0);
  EXPECT_NEAR(ctd::psnr(a.view(), b.view(), 200.0), 20 * std::log10(100.0), 1e-12);
  EXPECT_EQ(ctd::psnr(a.view(), a.view(), 1.0), std::numeric_limits<double>::infinity());
  EXPECT_TRUE(testing_util::throws_kind([&] { ctd::psnr(a.view(), b.view(), 0); }, ctd::ErrorKind::InvalidArgument));
  ctd::Volume c({4, 3, 1});
  EXPECT_TRUE(testing_util::throws_kind([&] { ctd::rmse(a.view(), c.view()); }, ctd::ErrorKind::InvalidArgument));
}

// Over several pieces of a million voxels (the last one short), on any number of threads: the
// same figures as a plain double-precision pass; a new volume holds zeros.
TEST(Metrics, StatisticsMatchAPlainPassOverManyPieces) {
  ctd::Volume v({129, 131, 130});  // 2.2 million voxels: three pieces
  for (std::int64_t i = 0; i < v.size(); ++i) EXPECT_EQ(v.data()[i], 0.0f) << i;
  std::mt19937 rng(7);
  std::normal_distribution<float> noise(-300.0f, 250.0f);
  for (std::int64_t i = 0; i < v.size(); ++i) v.data()[i] = noise(rng);
  v.data()[v.size() - 1] = 5000.0f;  // the maximum in the short last piece
  v.data()[1234567] = -4000.0f;      // the minimum in the middle one
  double sum = 0, sum2 = 0;
  for (std::int64_t i = 0; i < v.size(); ++i) {
    sum += v.data()[i];
    sum2 += double(v.data()[i]) * v.data()[i];
  }
  const double mean = sum / double(v.size());
  const ctd::Statistics s = ctd::statistics(v.view());
  EXPECT_EQ(s.min, -4000.0);
  EXPECT_EQ(s.max, 5000.0);
  EXPECT_NEAR(s.mean, mean, 1e-9 * std::fabs(mean));
  EXPECT_NEAR(s.std, std::sqrt(sum2 / double(v.size()) - mean * mean), 1e-9 * s.std);
  EXPECT_EQ(s.non_finite, 0);
  const ctd::Volume one({1, 1, 1});
  EXPECT_EQ(ctd::statistics(one.view()).max, 0.0);
}

// NaN and infinite voxels are counted and left out of the figures, in any piece; an image of
// them alone has no figures.
TEST(Metrics, StatisticsLeaveOutAndCountNonFiniteVoxels) {
  ctd::Volume v = testing_util::random_volume({1031, 1030, 2}, 11, -200, 300);  // two pieces
  const std::int64_t bad[] = {0, 1 << 20, v.size() - 1};
  v.data()[bad[0]] = std::numeric_limits<float>::quiet_NaN();
  v.data()[bad[1]] = std::numeric_limits<float>::infinity();
  v.data()[bad[2]] = -std::numeric_limits<float>::infinity();
  double sum = 0, sum2 = 0, low = 1e9, high = -1e9;
  for (std::int64_t i = 0; i < v.size(); ++i) {
    if (i == bad[0] || i == bad[1] || i == bad[2]) continue;
    const double x = v.data()[i];
    sum += x, sum2 += x * x, low = std::min(low, x), high = std::max(high, x);
  }
  const double n = double(v.size() - 3), mean = sum / n;
  const ctd::Statistics s = ctd::statistics(v.view());
  EXPECT_EQ(s.non_finite, 3);
  EXPECT_EQ(s.min, low);
  EXPECT_EQ(s.max, high);
  EXPECT_NEAR(s.mean, mean, 1e-9 * std::fabs(mean));
  EXPECT_NEAR(s.std, std::sqrt(sum2 / n - mean * mean), 1e-9 * s.std);
  ctd::Volume nans({3, 1, 1});
  for (std::int64_t i = 0; i < nans.size(); ++i) nans.data()[i] = std::numeric_limits<float>::quiet_NaN();
  const ctd::Statistics none = ctd::statistics(nans.view());
  EXPECT_EQ(none.non_finite, 3);
  EXPECT_EQ(none.min, 0.0);
  EXPECT_EQ(none.max, 0.0);
  EXPECT_EQ(none.mean, 0.0);
}

TEST(Metrics, SsimMatchesTheReferenceIn2DAnd3D) {
  for (ctd::Dims dims : {ctd::Dims{23, 17, 1}, ctd::Dims{13, 11, 9}}) {
    const ctd::Volume a = testing_util::structured_volume(dims, 3);
    ctd::Volume b = a;
    std::mt19937 rng(4);
    std::normal_distribution<float> noise(0, 15);
    for (std::int64_t i = 0; i < b.size(); ++i) b.data()[i] += noise(rng);
    const double got = ctd::ssim(a.view(), b.view(), 200);
    EXPECT_NEAR(got, ref::ssim(testing_util::to_ref(a), testing_util::to_ref(b), 200), 1e-9);
    EXPECT_LT(got, 0.99);
    EXPECT_NEAR(ctd::ssim(a.view(), a.view(), 200), 1.0, 1e-12);
  }
}

TEST(Metrics, RegionsCnrAndTheFlattestBox) {
  ctd::Volume v({40, 30, 1});
  std::mt19937 rng(5);
  std::normal_distribution<float> noise(0, 10);
  for (std::int64_t y = 0; y < 30; ++y)
    for (std::int64_t x = 0; x < 40; ++x) {
      const float base = x < 20 ? 0.0f : 100.0f;
      const float sigma = y < 15 ? 1.0f : 3.0f;  // the top half is quieter
      v.view()(x, y, 0) = x == 0 ? -3024.0f : base + sigma * noise(rng);
    }
  const ctd::Region left{{5, 0, 0}, {15, 15, 1}}, right{{25, 0, 0}, {35, 15, 1}};
  const auto s = ctd::region_stats(v.view(), left);
  EXPECT_EQ(s.voxels, 150);
  EXPECT_NEAR(s.mean, 0, 3);
  EXPECT_NEAR(s.std, 10, 2);
  EXPECT_NEAR(ctd::cnr(v.view(), left, right), 10, 2);
  const ctd::Region flat = ctd::find_flat_region(v.view(), {8, 8, 8}, -3024);
  EXPECT_LE(flat.end[1], 15) << "the quiet half";
  EXPECT_GE(flat.begin[0], 1) << "not touching the padding column";
  EXPECT_TRUE((flat.end[0] <= 20) || (flat.begin[0] >= 20)) << "not across the edge";
  EXPECT_TRUE(testing_util::throws_kind([&] { ctd::region_stats(v.view(), {{0, 0, 0}, {50, 5, 1}}); },
                                        ctd::ErrorKind::InvalidArgument));
}

}  // namespace
