#pragma once
// Image quality figures for comparing a test image with a reference (ctdenoise compare).

#include <ctdenoise/statistics.hpp>
#include <ctdenoise/volume.hpp>

#include <array>
#include <cstdint>

namespace ctd {

// A box of voxels [begin, end) along x, y, z.
struct Region {
  std::array<std::int64_t, 3> begin{0, 0, 0}, end{0, 0, 0};
  std::int64_t count() const noexcept { return (end[0] - begin[0]) * (end[1] - begin[1]) * (end[2] - begin[2]); }
};

struct RegionStats {
  double mean = 0, std = 0;
  std::int64_t voxels = 0;
};

// Statistics of the finite voxels, and the count of the others (statistics.hpp). Multithreaded;
// the same figures on any number of threads.
Statistics statistics(ConstVolumeView<float> image);

// All throw InvalidArgument for different dims, empty or out-of-bounds regions, data_range <= 0.
double rmse(ConstVolumeView<float> reference, ConstVolumeView<float> test);
// 20 log10(data_range / RMSE); +infinity for identical images.
double psnr(ConstVolumeView<float> reference, ConstVolumeView<float> test, double data_range);
// Mean SSIM (Wang et al. 2004): Gaussian window sigma 1.5 voxels, radius 5 (11 x 11 in 2D,
// 11^3 in 3D), mirror border, every voxel averaged; C1 = (0.01 L)^2, C2 = (0.03 L)^2, L = data_range.
double ssim(ConstVolumeView<float> reference, ConstVolumeView<float> test, double data_range);
RegionStats region_stats(ConstVolumeView<float> image, const Region& region);
// |mean_a - mean_b| / sqrt((std_a^2 + std_b^2) / 2).
double cnr(ConstVolumeView<float> image, const Region& a, const Region& b);
// The box of `size` voxels per axis (clipped to the image) where the image varies least: a flat
// region to measure noise in. Boxes touching `padding` (pass NaN for none) are skipped.
Region find_flat_region(ConstVolumeView<float> image, std::array<std::int64_t, 3> size, double padding);

}  // namespace ctd
