#pragma once
// An image's voxel statistics (ctd::statistics in metrics.hpp; FilterRun::output_statistics).

#include <cstdint>

namespace ctd {

// Minimum, maximum, mean and standard deviation of the finite voxels (all zero where there are
// none), and how many voxels are NaN or infinite (FilterRun::output_statistics describes a
// filter's output, whose voxels are finite: it leaves the count at 0).
struct Statistics {
  double min = 0, max = 0, mean = 0, std = 0;
  std::int64_t non_finite = 0;
};

}  // namespace ctd
