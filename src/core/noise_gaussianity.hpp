#pragma once
// Whether the noise model's flat blocks hold noise alone: Gaussian noise, whatever its
// correlation, has Gaussian second differences, while anatomy at the noise's scale (a lung's
// vessels) makes them heavy-tailed (docs/parameters.md, "The noise model", step 4).

#include "core/image_reads.hpp"

#include <ctdenoise/noise.hpp>

#include <vector>

namespace ctd::detail {

// The flat blocks' mean kurtosis of their second differences at lags 2 and 3 (along x and y,
// each block centred on its own mean, so that levels changing from block to block do not count)
// above that of Gaussian noise of the model's in-plane covariance (synthesised), in standard
// errors of the blocks' mean. 0 where fewer than 32 blocks can be read whole (inside the image,
// no unusable voxel).
double flat_blocks_excess_kurtosis(const ImageReads& reads, const std::vector<LagArea>& blocks,
                                   const std::vector<float>& padding, const NoiseModel& model);

}  // namespace ctd::detail
