// exp_of_negative_products (Highway's Exp on the widest vectors this CPU has) against exp in
// double: within 2 ULP of the correctly rounded float over the weights' range, exactly 1 at 0,
// 0 past exp's float range, the same value whatever the row's length and position (the tail
// goes through a full vector too), and in place.

#include "cpu/vector_exp.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace {

// Distance in units in the last place between two finite non-negative floats.
std::int64_t ulps(float a, float b) {
  std::int32_t ia = 0, ib = 0;
  std::memcpy(&ia, &a, sizeof a);
  std::memcpy(&ib, &b, sizeof b);
  return std::llabs(std::int64_t(ia) - std::int64_t(ib));
}

TEST(VectorExp, WithinTwoUlpOfTheExactValueOverTheWeightsRange) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> arg(0.0f, 87.0f);  // exp(-87) is still a normal float
  for (const std::int64_t n : {1, 3, 7, 8, 15, 16, 17, 31, 33, 1000, 1001}) {
    std::vector<float> a(static_cast<std::size_t>(n)), out(static_cast<std::size_t>(n));
    for (float& v : a) v = arg(rng);
    const float b = 0.75f;
    ctd::cpu::exp_of_negative_products(a.data(), b, out.data(), n);
    for (std::int64_t i = 0; i < n; ++i) {
      const float exact = float(std::exp(-double(a[std::size_t(i)] * b)));
      EXPECT_LE(ulps(out[std::size_t(i)], exact), 2) << "n " << n << " i " << i << " a " << a[std::size_t(i)];
    }
  }
}

TEST(VectorExp, OneAtZeroAndZeroPastTheFloatRange) {
  std::vector<float> a = {0.0f, 0.0f, 104.5f, 200.0f, 1e30f, std::numeric_limits<float>::max(), 0.0f};
  std::vector<float> out(a.size(), -1.0f);
  ctd::cpu::exp_of_negative_products(a.data(), 1.0f, out.data(), std::int64_t(a.size()));
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], 1.0f);
  for (std::size_t i = 2; i < 6; ++i) EXPECT_EQ(out[i], 0.0f) << a[i];
  EXPECT_EQ(out[6], 1.0f);
}

TEST(VectorExp, EachValueIsTheSameWhateverTheRowAndInPlace) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> arg(0.0f, 30.0f);
  std::vector<float> a(257);
  for (float& v : a) v = arg(rng);
  std::vector<float> whole(a.size());
  ctd::cpu::exp_of_negative_products(a.data(), 1.3f, whole.data(), std::int64_t(a.size()));
  // Every start and a few lengths: the same bits as in the whole row.
  for (std::size_t start = 0; start < 40; ++start) {
    for (const std::size_t length : {std::size_t(1), std::size_t(5), std::size_t(19)}) {
      std::vector<float> part(length);
      ctd::cpu::exp_of_negative_products(a.data() + start, 1.3f, part.data(), std::int64_t(length));
      for (std::size_t i = 0; i < length; ++i) ASSERT_EQ(part[i], whole[start + i]) << start << " " << length;
    }
  }
  std::vector<float> in_place = a;
  ctd::cpu::exp_of_negative_products(in_place.data(), 1.3f, in_place.data(), std::int64_t(in_place.size()));
  EXPECT_EQ(in_place, whole);
}

}  // namespace
