// The scan-like probe's SIMD loops (src/cpu/scan_rows.cpp) against plain loops written here: the
// same bits for every voxel, whatever the row's length (full vectors and tails), with bins beyond
// both ends of the rows (the clamps), for one channel and several, parallel and fan beams.

#include "cpu/scan_rows.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace {

using i64 = std::int64_t;

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// The interpolation of the plain loop: k = clamp(trunc(t), 0, last), f = clamp(t - k, 0, 1).
double plain_interpolation(const std::vector<double>& row, const std::vector<double>& step, i64 last, double t) {
  const i64 truncated = i64(t);
  const auto k = std::size_t(truncated < 0 ? 0 : truncated > last ? last : truncated);
  double f = t - double(k);
  f = f < 0.0 ? 0.0 : f > 1.0 ? 1.0 : f;
  return row[k] + f * step[k];
}

struct Channels {
  std::vector<std::vector<double>> rows, steps, acc;
  std::vector<const double*> row_of, step_of;
  std::vector<double*> acc_of;
};

Channels random_channels(std::size_t count, i64 bins, i64 n, std::mt19937_64& rng) {
  std::normal_distribution<double> normal;
  Channels c;
  for (std::size_t q = 0; q < count; ++q) {
    c.rows.emplace_back(std::size_t(bins)), c.steps.emplace_back(std::size_t(bins)), c.acc.emplace_back(std::size_t(n));
    for (double& v : c.rows.back()) v = normal(rng);
    for (double& v : c.steps.back()) v = normal(rng);
    for (double& v : c.acc.back()) v = 10 * normal(rng);
  }
  for (std::size_t q = 0; q < count; ++q) {
    c.row_of.push_back(c.rows[q].data()), c.step_of.push_back(c.steps[q].data()), c.acc_of.push_back(c.acc[q].data());
  }
  return c;
}

TEST(ScanRows, ParallelRaysAreThePlainLoopsBits) {
  std::mt19937_64 rng(41);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  const i64 bins = 40, last = bins - 2;
  int clamped_low = 0, clamped_high = 0;
  for (const std::size_t channels : {1u, 3u, 5u}) {
    for (const i64 n : {0, 1, 3, 7, 8, 9, 16, 17, 37, 64, 101}) {
      for (int trial = 0; trial < 4; ++trial) {
        Channels c = random_channels(channels, bins, n, rng);
        const Channels before = c;
        // Rows that run off both ends of the bins on some trials (the clamps).
        const double c_step = unit(rng), start = 20 + 30 * unit(rng);
        ctd::cpu::add_parallel_rays(c.row_of, c.step_of, last, start, c_step, c.acc_of, n);
        for (i64 x = 0; x < n; ++x) {
          const double t = start + double(x) * c_step;
          clamped_low += t < 0, clamped_high += t > double(last) + 1;
          for (std::size_t q = 0; q < channels; ++q) {
            const double expected =
                before.acc[q][std::size_t(x)] + plain_interpolation(before.rows[q], before.steps[q], last, t);
            ASSERT_TRUE(same_bits(c.acc[q][std::size_t(x)], expected))
                << "channels " << channels << " n " << n << " x " << x << " q " << q << ": " << c.acc[q][std::size_t(x)]
                << " for " << expected;
          }
        }
      }
    }
  }
  EXPECT_GT(clamped_low, 0);
  EXPECT_GT(clamped_high, 0);
}

TEST(ScanRows, FanRaysAreThePlainLoopsBits) {
  std::mt19937_64 rng(43);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  const i64 bins = 60, last = bins - 2;
  const double cd = 29.5;
  int clamped = 0;
  for (const std::size_t channels : {1u, 2u, 5u}) {
    for (const i64 n : {1, 5, 8, 13, 33, 70}) {
      for (int trial = 0; trial < 4; ++trial) {
        Channels c = random_channels(channels, bins, n, rng);
        const Channels before = c;
        const double angle = 3.2 * unit(rng), cs = std::cos(angle), sn = std::sin(angle);
        const double D = 90 + 20 * unit(rng), along0 = D + 30 * unit(rng), across0 = 40 * unit(rng);
        const double t0 = std::floor(10 * unit(rng));
        ctd::cpu::add_fan_rays(c.row_of, c.step_of, last, along0, across0, cs, sn, D, cd, t0, c.acc_of, n);
        for (i64 x = 0; x < n; ++x) {
          const double along = along0 - double(x) * cs, across = across0 - double(x) * sn;
          const double t = across * D / along + cd - t0, inverse_U = D / along;
          clamped += t < 0 || t > double(last) + 1;
          for (std::size_t q = 0; q < channels; ++q) {
            const double expected = before.acc[q][std::size_t(x)] +
                                    plain_interpolation(before.rows[q], before.steps[q], last, t) * inverse_U * inverse_U;
            ASSERT_TRUE(same_bits(c.acc[q][std::size_t(x)], expected))
                << "channels " << channels << " n " << n << " x " << x << " q " << q;
          }
        }
      }
    }
  }
  EXPECT_GT(clamped, 0);
}

TEST(ScanRows, CorrelationIsThePlainLoopsBitsTapByTap) {
  std::mt19937_64 rng(47);
  std::normal_distribution<double> normal;
  for (const i64 taps : {1, 3, 129}) {
    for (const i64 n : {1, 7, 8, 9, 100, 1750}) {
      std::vector<double> in(static_cast<std::size_t>(n + taps - 1)), kernel(static_cast<std::size_t>(taps)),
          acc(static_cast<std::size_t>(n));
      for (double& v : in) v = normal(rng);
      for (double& v : kernel) v = normal(rng);
      for (double& v : acc) v = normal(rng);
      std::vector<double> expected = acc;
      for (i64 k = 0; k < taps; ++k)
        for (i64 t = 0; t < n; ++t) expected[std::size_t(t)] += kernel[std::size_t(k)] * in[std::size_t(t + k)];
      ctd::cpu::add_correlation(in.data(), kernel.data(), taps, acc.data(), n);
      for (i64 t = 0; t < n; ++t) ASSERT_TRUE(same_bits(acc[std::size_t(t)], expected[std::size_t(t)])) << taps << " " << n << " " << t;
    }
  }
}

}  // namespace
