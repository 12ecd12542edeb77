// The automatic parameters' reads of host memory (src/core/image_reads.hpp) against naive
// double-precision sums written here from their definitions.

#include "common/test_util.hpp"

#include "core/image_reads.hpp"

#include <ctdenoise/auto_params.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numeric>
#include <random>

namespace {

using i64 = std::int64_t;
using ctd::detail::Corner;
using ctd::detail::Lag;
using ctd::detail::LagArea;

// Gaussian noise on a step, with a padding value on a few percent of the voxels and one NaN.
ctd::Volume padded_noise(ctd::Dims d, std::uint32_t seed, float padding) {
  ctd::Volume v(d);
  std::mt19937 rng(seed);
  std::normal_distribution<float> noise(0.0f, 20.0f);
  std::uniform_real_distribution<float> pick(0, 1);
  for (i64 i = 0; i < v.size(); ++i) v.data()[i] = (i % d.nx > d.nx / 3 ? 50.0f : -30.0f) + noise(rng);
  for (i64 i = 0; i < v.size(); ++i) {
    if (pick(rng) < 0.05f) v.data()[i] = padding;
  }
  v.data()[v.size() / 2] = std::numeric_limits<float>::quiet_NaN();
  return v;
}

bool usable(float v, const std::vector<float>& padding) {
  if (!std::isfinite(v)) return false;
  for (float p : padding) {
    if (v == p) return false;
  }
  return true;
}

TEST(ImageReads, LagSumsAreTheSecondDifferencesOfEveryUsableVoxelOfTheArea) {
  const ctd::Dims d{37, 29, 5};
  const std::vector<float> padding{-1024.0f};
  const ctd::Volume v = padded_noise(d, 3, padding[0]);
  // Areas inside, across every border and wholly outside; lags in-plane, across slices, long;
  // squares (no shift) and products with the difference a few voxels away, in-plane or across.
  const std::vector<LagArea> areas{{0, 0, 0}, {13, 9, 2}, {-4, -3, 0}, {33, 25, 4}, {30, 0, 1}, {-8, 10, 2}, {50, 50, 0}};
  const std::vector<Lag> lags{{1, 0, 0}, {0, 1, 0}, {2, -1, 0}, {-5, 3, 0}, {0, 0, 1}, {1, 1, 1}, {3, -2, 2}, {9, 0, 0}};
  auto at = [&](i64 x, i64 y, i64 z, double& out) {
    if (x < 0 || y < 0 || z < 0 || x >= d.nx || y >= d.ny || z >= d.nz) return false;
    out = v.data()[(z * d.ny + y) * d.nx + x];
    return usable(float(out), padding);
  };
  auto difference = [&](i64 x, i64 y, i64 z, const Lag& g, double& out) {
    double p, c, n;
    if (!at(x - g.dx, y - g.dy, z - g.dz, p) || !at(x, y, z, c) || !at(x + g.dx, y + g.dy, z + g.dz, n)) return false;
    out = p - 2 * c + n;
    return true;
  };
  for (const Lag shift : {Lag{0, 0, 0}, Lag{3, 0, 0}, Lag{0, -3, 0}, Lag{-2, 1, 1}}) {
    std::vector<double> sums(areas.size() * lags.size(), -1);
    std::vector<i64> counts(sums.size(), -1);
    ctd::detail::host_reads(v.view())->lag_sums(areas, lags, shift, padding, sums.data(), counts.data());
    i64 seen = 0;
    for (std::size_t a = 0; a < areas.size(); ++a)
      for (std::size_t l = 0; l < lags.size(); ++l) {
        double expected = 0;
        i64 count = 0;
        for (i64 y = areas[a].y; y < areas[a].y + 8; ++y)
          for (i64 x = areas[a].x; x < areas[a].x + 8; ++x) {
            double here, there;
            if (difference(x, y, areas[a].z, lags[l], here) &&
                difference(x + shift.dx, y + shift.dy, areas[a].z + shift.dz, lags[l], there)) {
              expected += here * there;
              ++count;
            }
          }
        const std::size_t k = a * lags.size() + l;
        EXPECT_EQ(counts[k], count) << "area " << a << " lag " << l << " shift " << shift.dx << shift.dy << shift.dz;
        EXPECT_NEAR(sums[k], expected, 1e-12 * std::max(1.0, std::abs(expected) + 1e4 * count))
            << "area " << a << " lag " << l << " shift " << shift.dx << shift.dy << shift.dz;
        seen += count;
      }
    EXPECT_GT(seen, 500);  // the case is not vacuous
    EXPECT_EQ(counts[6 * lags.size()], 0);  // the area outside the image
  }
}

TEST(ImageReads, AValueLeftOutInItsRegionsOnlyIsReadWhereItLiesScattered) {
  // -1024 fills the first 9 columns (padding) and lies scattered elsewhere (clipped air): with it
  // left out in its regions only, a voxel of it is usable unless its in-plane neighbours in the
  // image all hold it too.
  const ctd::Dims d{37, 29, 3};
  ctd::Volume v = padded_noise(d, 7, -1024.0f);
  for (i64 z = 0; z < d.nz; ++z)
    for (i64 y = 0; y < d.ny; ++y)
      for (i64 x = 0; x < 9; ++x) v.view()(x, y, z) = -1024.0f;
  auto value = [&](i64 x, i64 y, i64 z) { return v.data()[(z * d.ny + y) * d.nx + x]; };
  auto usable = [&](i64 x, i64 y, i64 z) {
    const float f = value(x, y, z);
    if (!std::isfinite(f)) return false;
    if (f != -1024.0f) return true;
    for (const auto& [dx, dy] : {std::pair<i64, i64>{-1, 0}, {1, 0}, {0, -1}, {0, 1}}) {
      const i64 nx = x + dx, ny = y + dy;
      if (nx >= 0 && ny >= 0 && nx < d.nx && ny < d.ny && value(nx, ny, z) != -1024.0f) return true;
    }
    return false;
  };
  const std::vector<LagArea> areas{{0, 0, 0}, {5, 9, 1}, {13, 9, 2}, {-4, -3, 0}, {33, 25, 2}};
  const std::vector<Lag> lags{{1, 0, 0}, {0, 1, 0}, {2, -1, 0}, {0, 0, 1}, {4, 0, 0}};
  std::vector<double> sums(areas.size() * lags.size());
  std::vector<i64> counts(sums.size());
  const auto reads = ctd::detail::host_reads(v.view());
  reads->lag_sums(areas, lags, {0, 0, 0}, ctd::detail::Excluded({-1024.0f}, -1024.0f), sums.data(), counts.data());
  i64 scattered_read = 0;
  for (std::size_t a = 0; a < areas.size(); ++a)
    for (std::size_t l = 0; l < lags.size(); ++l) {
      const Lag g = lags[l];
      double expected = 0;
      i64 count = 0;
      for (i64 y = areas[a].y; y < areas[a].y + 8; ++y)
        for (i64 x = areas[a].x; x < areas[a].x + 8; ++x) {
          const i64 z = areas[a].z;
          auto inside = [&](i64 px, i64 py, i64 pz) { return px >= 0 && py >= 0 && pz >= 0 && px < d.nx && py < d.ny && pz < d.nz; };
          if (!inside(x - g.dx, y - g.dy, z - g.dz) || !inside(x, y, z) || !inside(x + g.dx, y + g.dy, z + g.dz)) continue;
          if (!usable(x - g.dx, y - g.dy, z - g.dz) || !usable(x, y, z) || !usable(x + g.dx, y + g.dy, z + g.dz)) continue;
          const double p = value(x - g.dx, y - g.dy, z - g.dz), c = value(x, y, z), n = value(x + g.dx, y + g.dy, z + g.dz);
          expected += (p - 2 * c + n) * (p - 2 * c + n);
          ++count;
          scattered_read += c == -1024.0;
        }
      const std::size_t k = a * lags.size() + l;
      EXPECT_EQ(counts[k], count) << "area " << a << " lag " << l;
      EXPECT_NEAR(sums[k], expected, 1e-12 * std::max(1.0, expected)) << "area " << a << " lag " << l;
    }
  EXPECT_GT(scattered_read, 10);  // scattered voxels of the value were read
  EXPECT_EQ(counts[0], 0);        // the region's inside was not
  // The pseudo-residuals likewise: each position's five voxels usable by the same rule.
  const std::vector<ctd::detail::Residual> got =
      reads->residuals(ctd::NoiseEstimator::PseudoResidual, 0, 1, ctd::detail::Excluded({-1024.0f}, -1024.0f), 1);
  std::size_t expected_count = 0;
  for (i64 y = 1; y + 1 < d.ny; ++y)
    for (i64 x = 1; x + 1 < d.nx; ++x)
      expected_count += usable(x, y, 0) && usable(x - 1, y, 0) && usable(x + 1, y, 0) && usable(x, y - 1, 0) && usable(x, y + 1, 0);
  EXPECT_EQ(got.size(), expected_count);
}

TEST(ImageReads, ResidualsAreTheScaledPseudoResidualsAndHaarDetailsOfUsableNeighbourhoods) {
  const ctd::Dims d{23, 19, 7};
  const std::vector<float> padding{-1024.0f};
  const ctd::Volume v = padded_noise(d, 5, padding[0]);
  auto u = [&](i64 x, i64 y, i64 z) { return double(v.data()[(z * d.ny + y) * d.nx + x]); };
  const auto reads = ctd::detail::host_reads(v.view());
  // The slices [2, 6) as an image of their own, every third position.
  const i64 z0 = 2, nz = 4, step = 3;
  {
    const std::vector<ctd::detail::Residual> got = reads->residuals(ctd::NoiseEstimator::PseudoResidual, z0, nz, padding, step);
    std::vector<ctd::detail::Residual> expected;
    const i64 gx = d.nx - 2, gy = d.ny - 2, gz = nz - 2;
    for (i64 k = 0; k * step < gx * gy * gz; ++k) {
      const i64 p = k * step, x = p % gx + 1, y = p / gx % gy + 1, z = z0 + p / (gx * gy) + 1;
      const double n[6] = {u(x - 1, y, z), u(x + 1, y, z), u(x, y - 1, z), u(x, y + 1, z), u(x, y, z - 1), u(x, y, z + 1)};
      bool ok = usable(float(u(x, y, z)), padding);
      double lo = u(x, y, z), hi = lo, sum = 0;
      for (double w : n) ok = ok && usable(float(w), padding), sum += w, lo = std::min(lo, w), hi = std::max(hi, w);
      if (ok) expected.push_back({std::sqrt(6.0 / 7.0) * (u(x, y, z) - sum / 6), hi - lo});
    }
    ASSERT_EQ(got.size(), expected.size());
    ASSERT_GT(got.size(), 100u);
    for (std::size_t i = 0; i < got.size(); ++i) {
      EXPECT_NEAR(got[i].value, expected[i].value, 1e-9) << i;
      EXPECT_EQ(got[i].range, expected[i].range) << i;
    }
  }
  {
    // One slice: 2 x 2 Haar details.
    const std::vector<ctd::detail::Residual> got = reads->residuals(ctd::NoiseEstimator::WaveletMad, 4, 1, padding, 1);
    std::vector<ctd::detail::Residual> expected;
    for (i64 y = 0; y + 1 < d.ny; y += 2)
      for (i64 x = 0; x + 1 < d.nx; x += 2) {
        const double a = u(x, y, 4), b = u(x + 1, y, 4), c = u(x, y + 1, 4), e = u(x + 1, y + 1, 4);
        const bool ok = usable(float(a), padding) && usable(float(b), padding) && usable(float(c), padding) && usable(float(e), padding);
        if (ok) expected.push_back({0.5 * (a - b - c + e), std::max({a, b, c, e}) - std::min({a, b, c, e})});
      }
    ASSERT_EQ(got.size(), expected.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
      EXPECT_NEAR(got[i].value, expected[i].value, 1e-9) << i;
      EXPECT_EQ(got[i].range, expected[i].range) << i;
    }
  }
}

TEST(ImageReads, BlocksAreCountedAndCopiedWhereTheyLie) {
  const ctd::Dims d{41, 35, 9};
  const ctd::Volume v = padded_noise(d, 7, -1024.0f);
  const auto reads = ctd::detail::host_reads(v.view());
  const Corner origin{2, 1, 1};
  const i64 bxy = 6, bz = 3, cx = 6, cy = 5, cz = 2;
  const std::vector<i64> bad = reads->unusable_per_block(origin, bxy, bz, cx, cy, cz, -1024.0f);
  ASSERT_EQ(bad.size(), std::size_t(cx * cy * cz));
  i64 total = 0;
  for (i64 b = 0; b < cx * cy * cz; ++b) {
    i64 expected = 0;
    const i64 x0 = origin.x + b % cx * bxy, y0 = origin.y + b / cx % cy * bxy, z0 = origin.z + b / (cx * cy) * bz;
    for (i64 z = z0; z < z0 + bz; ++z)
      for (i64 y = y0; y < y0 + bxy; ++y)
        for (i64 x = x0; x < x0 + bxy; ++x) expected += usable(v.data()[(z * d.ny + y) * d.nx + x], {-1024.0f}) ? 0 : 1;
    EXPECT_EQ(bad[std::size_t(b)], expected) << b;
    total += expected;
  }
  EXPECT_GT(total, 0);
  // A NaN excluded value leaves out the non-finite voxels only.
  const std::vector<i64> nan_only =
      reads->unusable_per_block({0, 0, 0}, 41 / 2, 9, 2, 1, 1, std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(nan_only[0] + nan_only[1], 1);  // the one NaN

  const std::vector<Corner> corners{{0, 0, 0}, {35, 29, 6}, {10, 3, 2}, {20, 20, 0}};
  ctd::Volume out({12, 12, 3});
  reads->copy_blocks(corners, {6, 6, 3}, out.view());
  for (i64 z = 0; z < 3; ++z)
    for (i64 y = 0; y < 12; ++y)
      for (i64 x = 0; x < 12; ++x) {
        const Corner& c = corners[std::size_t((y / 6) * 2 + x / 6)];
        const float expected = v.data()[((c.z + z) * d.ny + c.y + y % 6) * d.nx + c.x + x % 6];
        const float got = out.data()[(z * 12 + y) * 12 + x];
        EXPECT_TRUE(got == expected || (std::isnan(got) && std::isnan(expected))) << x << "," << y << "," << z;
      }
  const std::vector<float> every = reads->every(7, 20);
  for (i64 k = 0; k < 20; ++k) {
    const float expected = v.data()[k * 7];
    EXPECT_TRUE(every[std::size_t(k)] == expected || (std::isnan(expected) && std::isnan(every[std::size_t(k)])));
  }
}

TEST(ImageReads, Int16VoxelsReadAsTheirFloatValues) {
  const ctd::Dims d{19, 17, 4};
  std::vector<std::int16_t> stored(std::size_t(d.count()));
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> value(-1200, 1500);
  for (auto& s : stored) s = std::int16_t(value(rng));
  ctd::Volume as_float(d);
  std::copy(stored.begin(), stored.end(), as_float.data());
  ctd::ExecContext cpu;
  cpu.device = ctd::Device::Cpu;
  const auto from_int16 = ctd::detail::reads_for(ctd::ConstVolumeView<std::int16_t>{stored.data(), d}, cpu);
  const auto from_float = ctd::detail::host_reads(as_float.view());
  const std::vector<LagArea> areas{{0, 0, 1}, {9, 8, 3}};
  const std::vector<Lag> lags{{1, 0, 0}, {0, 2, 1}};
  std::vector<double> s1(4), s2(4);
  std::vector<i64> c1(4), c2(4);
  from_int16->lag_sums(areas, lags, {0, 0, 0}, {}, s1.data(), c1.data());
  from_float->lag_sums(areas, lags, {0, 0, 0}, {}, s2.data(), c2.data());
  EXPECT_EQ(s1, s2);
  EXPECT_EQ(c1, c2);
  EXPECT_EQ(from_int16->every(3, 100), from_float->every(3, 100));
  // Every other read too, with a padding value that occurs in the image: the int16 voxels are
  // read where they lie (no float copy of the volume), and must give the same results.
  stored[5] = stored[77] = stored[400] = -1024;
  as_float.data()[5] = as_float.data()[77] = as_float.data()[400] = -1024;
  const std::vector<float> padding{-1024.0f};
  for (const ctd::NoiseEstimator estimator : {ctd::NoiseEstimator::PseudoResidual, ctd::NoiseEstimator::WaveletMad}) {
    const auto r1 = from_int16->residuals(estimator, 1, 3, padding, 2), r2 = from_float->residuals(estimator, 1, 3, padding, 2);
    ASSERT_EQ(r1.size(), r2.size());
    ASSERT_GT(r1.size(), 20u);
    for (std::size_t i = 0; i < r1.size(); ++i) {
      EXPECT_EQ(r1[i].value, r2[i].value) << i;
      EXPECT_EQ(r1[i].range, r2[i].range) << i;
    }
  }
  from_int16->lag_sums(areas, lags, {3, 0, 0}, padding, s1.data(), c1.data());
  from_float->lag_sums(areas, lags, {3, 0, 0}, padding, s2.data(), c2.data());
  EXPECT_EQ(s1, s2);
  EXPECT_EQ(c1, c2);
  const std::vector<i64> bad = from_int16->unusable_per_block({1, 0, 0}, 6, 2, 3, 2, 2, -1024.0f);
  EXPECT_EQ(bad, from_float->unusable_per_block({1, 0, 0}, 6, 2, 3, 2, 2, -1024.0f));
  EXPECT_EQ(std::accumulate(bad.begin(), bad.end(), i64(0)), 3);
  const std::vector<Corner> corners{{0, 0, 0}, {13, 11, 1}};
  ctd::Volume b1({12, 6, 3}), b2({12, 6, 3});
  from_int16->copy_blocks(corners, {6, 6, 3}, b1.view());
  from_float->copy_blocks(corners, {6, 6, 3}, b2.view());
  EXPECT_TRUE(std::equal(b1.data(), b1.data() + b1.size(), b2.data()));
  EXPECT_EQ(b1.data()[5], -1024.0f);
}

TEST(ImageReads, AnEmptyImageIsRefusedWhereverItIsRead) {
  const std::vector<float> none;
  ctd::ExecContext cpu;
  cpu.device = ctd::Device::Cpu;
  for (const ctd::Dims d : {ctd::Dims{0, 4, 4}, ctd::Dims{4, 0, 4}, ctd::Dims{4, 4, 0}}) {
    const ctd::ConstVolumeView<float> empty{none.data(), d};
    EXPECT_TRUE(testing_util::throws_kind([&] { ctd::detail::host_reads(empty); }, ctd::ErrorKind::InvalidArgument));
    EXPECT_TRUE(testing_util::throws_kind([&] { ctd::AutoInput(empty, cpu); }, ctd::ErrorKind::InvalidArgument));
    EXPECT_TRUE(testing_util::throws_kind([&] { ctd::estimate_noise_model(empty); }, ctd::ErrorKind::InvalidArgument));
    EXPECT_TRUE(testing_util::throws_kind([&] { ctd::estimate_noise_model_device(nullptr, d); }, ctd::ErrorKind::InvalidArgument));
  }
}

}  // namespace
