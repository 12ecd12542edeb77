#pragma once
// The SSIM's window and per-window formula (ctd::ssim, metrics.hpp), shared with the validation's
// SSIM against a truth that the reference only approximates (tools/truth_score.cpp).

#include <ctdenoise/volume.hpp>

#include <vector>

namespace ctd::detail {

// Each voxel's Gaussian-weighted mean over its window (sigma 1.5, radius 5, mirror border), in double.
std::vector<double> ssim_window_mean(const std::vector<double>& in, const Dims& d);

// SSIM of one window from its moments: the product and the squares of the two means, the two
// variances and the covariance; c1 and c2 the stabilising constants.
inline double ssim_from_moments(double means_product, double mean_x_squared, double mean_y_squared, double var_x,
                                double var_y, double covariance, double c1, double c2) {
  return ((2 * means_product + c1) * (2 * covariance + c2)) /
         ((mean_x_squared + mean_y_squared + c1) * (var_x + var_y + c2));
}

}  // namespace ctd::detail
