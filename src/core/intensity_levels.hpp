// Noise whose level follows the image's values, voxel by voxel (src/core/intensity_levels.cpp;
// docs/parameters.md, "The level"): Poisson counts read in the image's own units, as image-domain
// low-dose simulations make noise, have a variance a + b u at the value u.
#pragma once

#include "core/auto_sample.hpp"

#include <optional>
#include <vector>

namespace ctd::detail {

// var = (a + b u) d(z): d a dose per slice of the image (as tube current modulation along z gives;
// 1 where the slices share one dose), log d = c1 t + c2 t^2 at t = (z - z_mid) / z_half (the
// tiles' centres at -1 and 1), held beyond |t| = t_reach (the tiles' outer slices).
struct IntensityLevels {
  double a = 0, b = 0;
  double c1 = 0, c2 = 0, z_mid = 0, z_half = 1, t_reach = 1;
  double dose(double z) const;  // d(z), relative
  double level(double u, double z) const;
};

// The fit of the tiles' flat parts' levels (their pseudo-residual sigma over sqrt(gain), squared)
// to their median values, where the values tell the levels apart better than the tiles' places
// do; else nullopt.
std::optional<IntensityLevels> fit_intensity_levels(const std::vector<Sample::Tile>& tiles, double gain);

// Sets the sample's level_at voxel by voxel from the fit, its level (their root mean square) and
// texture (the noise's correlation read relative to these levels), and noise_over_image.
void use_intensity_levels(Sample& s, const IntensityLevels& fit, const NoiseModel& noise, double gain);

}  // namespace ctd::detail
