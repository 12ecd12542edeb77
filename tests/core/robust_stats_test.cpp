// The parallel k-th smallest against a full sort, on orders and values chosen to defeat its
// sampled bounds as well as on plain random data.

#include "core/robust_stats.hpp"

#include <gtest/gtest.h>

#include <algorithm>
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

}  // namespace
