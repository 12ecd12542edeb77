#include "core/mirror.hpp"
#include "reference/reference.hpp"

#include <gtest/gtest.h>

namespace {

using ctd::detail::mirror;

TEST(Mirror, ReflectsWithoutRepeatingTheEdge) {
  // ... c b | a b c d | c b a b c ...
  const int n = 4;
  const int expected[] = {0, 1, 2, 3, 2, 1, 0, 1, 2, 3, 2, 1, 0, 1};  // i = -6 .. 7
  for (int i = -6; i <= 7; ++i) EXPECT_EQ(mirror(i, n), expected[i + 6]) << "i = " << i;
}

TEST(Mirror, SizeOneMapsToZero) {
  for (int i = -5; i <= 5; ++i) EXPECT_EQ(mirror(i, 1), 0);
}

TEST(Mirror, SizeTwoAlternates) {
  for (int i = -7; i <= 7; ++i) EXPECT_EQ(mirror(i, 2), ((i % 2) + 2) % 2);
}

TEST(Mirror, AgreesWithTheReferenceFarOutside) {
  for (int n = 1; n <= 9; ++n)
    for (int i = -40; i <= 40; ++i) EXPECT_EQ(mirror(i, n), ref::reflect(i, n)) << "n=" << n << " i=" << i;
}

TEST(Mirror, TableMatchesFunction) {
  const ctd::detail::MirrorTable table(5, 12);
  for (int i = -12; i < 17; ++i) EXPECT_EQ(table[i], mirror(i, 5));
}

}  // namespace
