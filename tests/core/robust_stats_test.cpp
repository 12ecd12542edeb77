// The parallel k-th smallest against a full sort, on orders and values chosen to defeat its
// sampled bounds as well as on plain random data; the paired gain against a two-pass sum in long
// double.

#include "core/robust_stats.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace {

double by_sorting(std::vector<double> v, std::size_t k) {
  std::sort(v.begin(), v.end());
  return v[k];
}

void expect_every_rank_checked(const std::vector<double>& v, const char* what) {
  const std::size_t n = v.size();
  for (std::size_t k : {std::size_t(0), std::size_t(1), n / 10, n / 2 - 1, n / 2, n / 2 + 1, n - 2, n - 1}) {
    std::vector<double> copy = v;
    EXPECT_EQ(ctd::detail::kth_smallest(copy, k), by_sorting(v, k)) << what << ", n " << n << ", k " << k;
  }
  std::vector<double> copy = v;
  EXPECT_EQ(ctd::detail::median(copy), by_sorting(v, n / 2)) << what;
  EXPECT_EQ(copy, v) << what << ": the median reordered its argument";
}

TEST(KthSmallest, MatchesAFullSortOnEveryKindOfInput) {
  std::mt19937 rng(42);
  std::normal_distribution<double> normal(3.0, 25.0);
  for (std::size_t n : {std::size_t(1), std::size_t(7), std::size_t((1 << 16) - 1), std::size_t(1 << 16),
                        std::size_t(300001)}) {
    std::vector<double> v(n);
    for (double& x : v) x = normal(rng);
    expect_every_rank_checked(v, "normal");
    if (n < 16) continue;
    std::vector<double> sorted = v;
    std::sort(sorted.begin(), sorted.end());
    expect_every_rank_checked(sorted, "ascending");
    std::reverse(sorted.begin(), sorted.end());
    expect_every_rank_checked(sorted, "descending");
    for (double& x : v) x = std::round(x / 40);  // a handful of values, each repeated many times
    expect_every_rank_checked(v, "few distinct values");
    std::fill(v.begin(), v.end(), -7.5);
    expect_every_rank_checked(v, "all equal");
    // The sampled positions (i n / 4096) hold the largest values, the rest small ones: the
    // sample's bounds miss the true ranks, and the whole vector must be selected from.
    for (std::size_t i = 0; i < n; ++i) v[i] = normal(rng);
    for (std::size_t i = 0; i < 4096 && n >= 4096; ++i) v[i * n / 4096] = 1e6 + double(i);
    expect_every_rank_checked(v, "sample of outliers");
  }
}

// The paired t statistic the textbook way: the differences' mean, then their sample variance
// from it (two passes), in long double.
double paired_t(const std::vector<double>& before, const std::vector<double>& after) {
  std::vector<long double> d;
  for (std::size_t i = 0; i < before.size(); ++i)
    if (std::isfinite(before[i]) && std::isfinite(after[i])) d.push_back((long double)before[i] - after[i]);
  long double mean = 0, var = 0;
  for (long double x : d) mean += x;
  mean /= d.size();
  for (long double x : d) var += (x - mean) * (x - mean);
  var /= (d.size() - 1);
  return double(mean / std::sqrt(var / d.size()));
}

TEST(PairedGain, MatchesTheTextbookStatisticAndSkipsUnreadEntries) {
  std::mt19937 rng(7);
  std::normal_distribution<double> scatter(0.0, 1.0);
  for (const double gain : {0.0, 0.1, 0.5, -0.3}) {
    for (const std::size_t n : {std::size_t(2), std::size_t(3), std::size_t(16), std::size_t(257)}) {
      std::vector<double> before(n), after(n);
      for (std::size_t i = 0; i < n; ++i) {
        before[i] = 0.01 + 0.05 * std::fabs(scatter(rng));                // tiles' scores differ a lot
        after[i] = before[i] - gain * 0.01 + 0.01 * scatter(rng);         // each moves a little
      }
      const double expected = paired_t(before, after);
      EXPECT_NEAR(ctd::detail::paired_gain_in_standard_errors(before, after), expected, 1e-9 * (1 + std::fabs(expected)))
          << "gain " << gain << ", n " << n;
      // An unread tile on either side leaves the rest as they were.
      std::vector<double> b = before, a = after;
      b.push_back(std::numeric_limits<double>::quiet_NaN()), a.push_back(0.5);
      b.insert(b.begin(), 0.3), a.insert(a.begin(), std::numeric_limits<double>::quiet_NaN());
      EXPECT_NEAR(ctd::detail::paired_gain_in_standard_errors(b, a), expected, 1e-9 * (1 + std::fabs(expected)));
    }
  }
}

TEST(PairedGain, ASmallConsistentGainOutweighsALargeScatteredOne) {
  // 16 tiles: every one 0.001 nearer is a clear step; a mean gain ten times larger made of a few
  // tiles' large moves either way is not.
  std::vector<double> before(16), consistent(16), scattered(16);
  for (std::size_t i = 0; i < 16; ++i) {
    before[i] = 0.02 + 0.001 * double(i % 5);
    consistent[i] = before[i] - 0.001 - 0.0001 * double(i % 3);
    scattered[i] = before[i] + (i % 2 == 0 ? -0.05 : 0.03);
  }
  EXPECT_GT(ctd::detail::paired_gain_in_standard_errors(before, consistent), 10.0);
  // The differences are 0.05 and -0.03 by turns: mean 0.01, sample sd 0.04 sqrt(16 / 15), so
  // t = 0.01 / (0.04 sqrt(16 / 15) / 4) = sqrt(15 / 16).
  EXPECT_NEAR(ctd::detail::paired_gain_in_standard_errors(before, scattered), std::sqrt(15.0 / 16.0), 1e-9);
  EXPECT_LT(ctd::detail::paired_gain_in_standard_errors(before, scattered), 1.0);
}

TEST(PairedGain, TooFewPairsOrNoScatter) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(ctd::detail::paired_gain_in_standard_errors({0.2}, {0.1}), 0.0);
  EXPECT_EQ(ctd::detail::paired_gain_in_standard_errors({0.2, nan, 0.4}, {0.1, 0.3, nan}), 0.0);
  EXPECT_EQ(ctd::detail::paired_gain_in_standard_errors({0.5, 0.75}, {0.25, 0.5}), std::numeric_limits<double>::infinity());
  EXPECT_EQ(ctd::detail::paired_gain_in_standard_errors({0.25, 0.5}, {0.5, 0.75}), -std::numeric_limits<double>::infinity());
  EXPECT_EQ(ctd::detail::paired_gain_in_standard_errors({0.1, 0.3}, {0.1, 0.3}), 0.0);
}

}  // namespace
