#pragma once
// Noise level of an image: the standard deviation sigma of additive, independent noise, in image
// units (HU for CT), estimated robustly so that edges, air and padding do not bias it.

#include <ctdenoise/volume.hpp>

#include <cstdint>
#include <string_view>

namespace ctd {

enum class NoiseEstimator {
  PseudoResidual,  // Gasser/Coupe: sqrt(6/7) (u - mean of the 6 neighbours) in 3D, sqrt(4/5) and 4 in 2D
  WaveletMad,      // Donoho: the finest diagonal Haar detail band (HH in 2D, HHH in 3D)
};

std::string_view to_string(NoiseEstimator estimator) noexcept;

struct NoiseEstimate {
  double sigma = 0;           // image units
  std::int64_t samples = 0;   // residuals (or detail coefficients) the estimate rests on
  double excluded_value = 0;  // the (largest) padding value left out (see below), or NaN when none
};

// sigma = 1.4826 x the median absolute deviation of the residuals (or detail coefficients) from
// their median, refined as their standard deviation within 3 sigma (corrected for the cut), which
// edges bias less. Padding, any value that fills at least 1% of the voxels and 10 times as many as
// its nearest values (a spike in the histogram: -3024 HU outside a CT's field of view, air clipped
// at the lowest stored value), is left out with every residual that touches it.
// Throws InvalidArgument when fewer than 16 residuals remain (e.g. a 1-voxel image).
NoiseEstimate estimate_noise(ConstVolumeView<float> image, NoiseEstimator estimator = NoiseEstimator::PseudoResidual);

// The image's padding value as defined above (the largest spike), or NaN when it has none.
double padding_value(ConstVolumeView<float> image);

}  // namespace ctd
