// Noise whose covariance changes over the volume, region by region (src/core/noise_model.cpp):
// the probe of the automatic parameters where a reconstruction's noise texture varies over the
// image (docs/parameters.md, "The level and the texture").
#pragma once

#include <ctdenoise/noise.hpp>

#include <cstdint>
#include <vector>

namespace ctd::detail {

// Voxel i gets noise of models[region[i]]'s covariance (an empty `region`: models[0] everywhere),
// shaped from one white-noise field, so that the noise runs on across the regions' borders. The
// models must have the same lags (radius_xy, radius_z). Deterministic for a seed; voxels whose
// `mask` entry is 0 are 0.
Volume synthesize_noise_by_region(const std::vector<NoiseModel>& models, const std::vector<std::uint32_t>& region,
                                  const Dims& dims, std::uint64_t seed, const std::vector<unsigned char>* mask = nullptr);

}  // namespace ctd::detail
