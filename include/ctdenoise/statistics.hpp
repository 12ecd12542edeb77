#pragma once
// An image's voxel statistics (ctd::statistics in metrics.hpp; FilterRun::output_statistics).

namespace ctd {

// Minimum, maximum, mean and standard deviation of every voxel (all zero for an empty image).
struct Statistics {
  double min = 0, max = 0, mean = 0, std = 0;
};

}  // namespace ctd
