// The fit of noise levels that follow the image's values, and a dose per slice
// (src/core/intensity_levels.hpp), on tiles whose levels are drawn from a known law with the
// chance scatter of a pseudo-residual sigma read from a few hundred residuals.

#include "core/intensity_levels.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace {

// 16 tiles per layer, each of air, soft tissue or bone at random, `layers` layers 4 slices apart; variance
// (a + b u) dose(z) with a = 40, b = 3.5 (water's sigma about 60, the air's about 9).
template <class Dose>
std::vector<ctd::detail::Sample::Tile> tiles_of(int layers, Dose dose, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0, 1);
  std::uniform_int_distribution<int> residuals(300, 3000), kind(0, 2);
  std::vector<ctd::detail::Sample::Tile> tiles;
  for (int layer = 0; layer < layers; ++layer)
    for (int k = 0; k < 16; ++k) {
      ctd::detail::Sample::Tile t{};
      const double values[] = {-1000, 40, 600};
      t.flat_median = values[kind(rng)] + 10 * normal(rng);
      t.centre = {16.0 + 32 * (k % 4), 16.0 + 32 * (k / 4), 2.0 + 4 * layer};
      t.size = {32, 32, 4};
      t.thin_flat_residuals = residuals(rng);
      // A robust sigma read from n residuals scatters about 0.8 / sqrt(n) in log.
      const double variance = (40 + 3.5 * (t.flat_median + 1024)) * dose(t.centre[2]);
      t.thin_flat_residual_sigma = std::sqrt(variance) * std::exp(0.8 / std::sqrt(double(t.thin_flat_residuals)) * normal(rng));
      t.flat_residual_sigma = t.thin_flat_residual_sigma;
      tiles.push_back(t);
    }
  return tiles;
}

double level_ratio(const ctd::detail::IntensityLevels& fit, double z0, double z1) {
  return fit.level(40, z1) / fit.level(40, z0);
}

TEST(IntensityLevels, OneDoseTakesNoDoseTerm) {
  for (unsigned seed = 1; seed <= 40; ++seed) {
    const auto fit = ctd::detail::fit_intensity_levels(tiles_of(6, [](double) { return 1.0; }, seed), 1.0);
    ASSERT_TRUE(fit) << "seed " << seed;
    EXPECT_EQ(fit->c1, 0) << "seed " << seed;
    EXPECT_EQ(fit->c2, 0) << "seed " << seed;
    EXPECT_NEAR(fit->level(40, 2), std::sqrt(40 + 3.5 * 1064), 0.05 * std::sqrt(40 + 3.5 * 1064));
  }
}

TEST(IntensityLevels, ADosePerSliceIsFitted) {
  // The dose falls from 2 x to 0.5 x over the slices (the variance rises 4 x).
  for (unsigned seed = 1; seed <= 10; ++seed) {
    const auto fit = ctd::detail::fit_intensity_levels(tiles_of(6, [](double z) { return std::pow(4.0, (z - 2) / 20 - 0.5); }, seed), 1.0);
    ASSERT_TRUE(fit) << "seed " << seed;
    EXPECT_NEAR(level_ratio(*fit, 2, 22), 2.0, 0.15) << "seed " << seed;
    EXPECT_NEAR(fit->level(-1000, 12), std::sqrt(40 + 3.5 * 24), 0.15 * std::sqrt(40 + 3.5 * 24)) << "seed " << seed;
    // The dose is followed to the outer tiles' outer slices (0 and 24), and held beyond them.
    EXPECT_GT(fit->level(40, 24), fit->level(40, 22));
    EXPECT_NEAR(level_ratio(*fit, 0, 24), std::pow(4.0, 24.0 / 20 / 2), 0.15) << "seed " << seed;
    EXPECT_DOUBLE_EQ(fit->level(40, 40), fit->level(40, 24));
    EXPECT_DOUBLE_EQ(fit->level(40, -9), fit->level(40, 0));
  }
}

TEST(IntensityLevels, ADoseLeavesTheValuesTheirOwnTest) {
  // Levels that change with the slice (4 x in variance) and with the place (across x), barely with
  // the values, as FBP noise in a head whose rays lengthen towards its base: the dose explains
  // most of the levels, the values little of what it leaves, and the fit is refused.
  for (unsigned seed = 1; seed <= 10; ++seed) {
    auto tiles = tiles_of(6, [](double) { return 1.0; }, seed);
    for (auto& t : tiles) {
      const double dose = std::pow(4.0, (t.centre[2] - 2) / 20 - 0.5);
      const double place = 1 + 0.6 * t.centre[0] / 128, value = t.flat_median > 0 ? 1.15 : 1.0;
      t.thin_flat_residual_sigma = std::sqrt(3000 * dose * place * value);
    }
    EXPECT_FALSE(ctd::detail::fit_intensity_levels(tiles, 1.0)) << "seed " << seed;
  }
}

TEST(IntensityLevels, TwoLayersTakeALinearDose) {
  const auto fit = ctd::detail::fit_intensity_levels(tiles_of(2, [](double z) { return z < 4 ? 0.5 : 2.0; }, 7), 1.0);
  ASSERT_TRUE(fit);
  EXPECT_EQ(fit->c2, 0);
  EXPECT_NEAR(level_ratio(*fit, 2, 6), 2.0, 0.15);
}

TEST(IntensityLevels, ASliceTakesNoDoseAndPlaceBeatsValues) {
  // A 2D image: one layer, no dose term.
  const auto flat = ctd::detail::fit_intensity_levels(tiles_of(1, [](double) { return 1.0; }, 3), 1.0);
  ASSERT_TRUE(flat);
  EXPECT_EQ(flat->c1, 0);
  // Levels that follow the tiles' places (x), not their values: refused.
  auto tiles = tiles_of(1, [](double) { return 1.0; }, 5);
  for (auto& t : tiles) t.thin_flat_residual_sigma = 20 + t.centre[0];
  EXPECT_FALSE(ctd::detail::fit_intensity_levels(tiles, 1.0));
}

}  // namespace
