#include "cpu/host_copy.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace {

// Every byte of the range copied and none beside it touched, for every alignment of either end
// and lengths around the 16-byte stores and the 64-byte steps.
TEST(StreamingCopy, CopiesExactlyTheRangeAtEveryAlignment) {
  std::mt19937 rng(17);
  std::vector<unsigned char> source(4096 + 64);
  for (auto& b : source) b = static_cast<unsigned char>(rng());
  for (std::size_t to_offset = 0; to_offset < 17; ++to_offset) {
    for (std::size_t from_offset = 0; from_offset < 5; ++from_offset) {
      for (std::size_t bytes : {0, 1, 15, 16, 17, 63, 64, 65, 127, 128, 129, 1000, 4000}) {
        std::vector<unsigned char> target(4096 + 64, 0xA5);
        ctd::cpu::streaming_copy(target.data() + to_offset, source.data() + from_offset, bytes);
        for (std::size_t i = 0; i < target.size(); ++i) {
          const bool inside = i >= to_offset && i < to_offset + bytes;
          const unsigned char want = inside ? source[i - to_offset + from_offset] : 0xA5;
          ASSERT_EQ(target[i], want) << "to+" << to_offset << " from+" << from_offset << " bytes " << bytes
                                     << " at " << i;
        }
      }
    }
  }
}

}  // namespace

namespace {

// copy_finite copies every float and finds a NaN or an infinity wherever it is; the largest
// finite values, denormals and -0 are finite.
TEST(CopyFinite, CopiesAndFindsEveryNonFiniteValueAnywhere) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> value(-3000.0f, 3000.0f);
  const float specials[] = {std::numeric_limits<float>::max(), -std::numeric_limits<float>::max(),
                            std::numeric_limits<float>::denorm_min(), -0.0f};
  for (std::size_t count : {1, 7, 64, 1001}) {
    std::vector<float> from(count), to(count);
    for (auto& v : from) v = value(rng);
    for (std::size_t i = 0; i < count; i += 3) from[i] = specials[i % 4];
    ASSERT_TRUE(ctd::cpu::copy_finite(to.data(), from.data(), count)) << count;
    ASSERT_EQ(std::memcmp(to.data(), from.data(), count * sizeof(float)), 0);
    for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                      -std::numeric_limits<float>::infinity()}) {
      for (std::size_t at : {std::size_t(0), count / 2, count - 1}) {
        std::vector<float> with_bad = from;
        with_bad[at] = bad;
        EXPECT_FALSE(ctd::cpu::copy_finite(to.data(), with_bad.data(), count)) << count << " at " << at;
        EXPECT_EQ(std::memcmp(to.data(), with_bad.data(), count * sizeof(float)), 0);
      }
    }
  }
}

}  // namespace
