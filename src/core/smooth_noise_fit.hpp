#pragma once
// Smooth noise read from the mean square second differences of an image's flattest blocks
// (noise_model.cpp): white noise smoothed by a Gaussian, alone or with white noise on top.

#include <cmath>
#include <optional>

namespace ctd::detail {

// Noise from a smooth reconstruction kernel, read where the outer lags hold anatomy: white noise
// smoothed by a Gaussian, of correlation g(d) = exp(-|d|^2 / (4 w^2)), fitted to the mean square
// second differences at lags 1 and 2 (E[D(d)^2] = C(0) (6 - 8 g(d) + 2 g(2d))), where anatomy
// adds least. Their ratio gives the width w (1 for white noise, towards 16 for wide smoothing or
// smooth anatomy: widths over 3 voxels are not believed), then v1 the level.
struct SmoothNoise {
  double c0 = 0, width = 0;
  double white = 0;  // the variance of white noise on top (fit_smooth_and_white_noise)
  double correlation(double d) const { return std::exp(-d * d / (4 * width * width)); }
  // E[D(d)^2] / c0 of the smooth part alone.
  double reads(double d) const { return 6 - 8 * correlation(d) + 2 * correlation(2 * d); }
  double mean_square_difference(double d) const { return c0 * reads(d) + 6 * white; }
  double sigma() const { return std::sqrt(c0 + white); }  // of both parts together
};
// The smooth noise whose E[D(d)^2] at lags 1 and 2 are v1 and v2; nothing where their ratio
// gives no width in (0, 3] voxels.
std::optional<SmoothNoise> fit_smooth_noise(double v1, double v2);
// Smooth noise with white noise on top (a scan's own, finer noise under blurred added noise):
// E[D(d)^2] = 6 c_white + c0 (6 - 8 g(d) + 2 g(2d)). White noise adds the same at every lag, so
// (v4 - v1) / (v2 - v1) depends on the width alone (it grows with it: 1.05 at 0.5 voxels, 2.8 at
// 1.2, 10 at 3); then v2 - v1 gives c0 and v1 the white part. Nothing where the width is not
// within (0.5, 3] voxels or the parts are not positive.
std::optional<SmoothNoise> fit_smooth_and_white_noise(double v1, double v2, double v4);

}  // namespace ctd::detail
