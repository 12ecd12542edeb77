// Noise whose covariance changes over the volume, region by region (src/core/noise_synthesis.cpp):
// the probe of the automatic parameters where a reconstruction's noise texture varies over the
// image (docs/parameters.md, "The level" under "The strength").
#pragma once

#include <ctdenoise/noise.hpp>

#include <cstdint>
#include <vector>

namespace ctd::detail {

// Unit normal values on `dims` grown by the reach of the kernels that shape noise of `lags`'s
// lags (radius_xy, radius_z): what synthesize_noise_by_region shapes. Deterministic for a seed;
// made apart so that a caller can make it while it does other work.
struct WhiteNoise {
  int reach_xy = 0, reach_z = 0;
  std::vector<float> values;  // (nx + 2 reach_xy) x (ny + 2 reach_xy) x (nz + 2 reach_z), x fastest
};
// From `drawn_ahead`, the first values of unit_normals(seed, ...), where it holds enough
// (white_noise_size); else drawn anew.
WhiteNoise white_noise_for(const NoiseModel& lags, const Dims& dims, std::uint64_t seed, std::vector<float> drawn_ahead = {});
std::size_t white_noise_size(const NoiseModel& lags, const Dims& dims);
// The stream of unit normal values white_noise_for lays out: its first `count` values for a seed.
std::vector<float> unit_normals(std::uint64_t seed, std::size_t count);

// Voxel i gets noise of models[region[i]]'s covariance (an empty `region`: models[0] everywhere),
// shaped from one white-noise field (white_noise_for models[0], dims and the seed), so that the
// noise runs on across the regions' borders. The models must have the same lags (radius_xy,
// radius_z). Voxels whose `mask` entry is 0 are 0.
Volume synthesize_noise_by_region(const std::vector<NoiseModel>& models, const std::vector<std::uint32_t>& region,
                                  const Dims& dims, const WhiteNoise& white, const std::vector<unsigned char>* mask = nullptr);
Volume synthesize_noise_by_region(const std::vector<NoiseModel>& models, const std::vector<std::uint32_t>& region,
                                  const Dims& dims, std::uint64_t seed, const std::vector<unsigned char>* mask = nullptr);

}  // namespace ctd::detail
