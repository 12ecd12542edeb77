// The flat blocks' Gaussianity (noise_gaussianity.hpp): their voxels are copied to the host
// (ImageReads::copy_blocks, the same floats from host or device memory) and measured here.

#include "core/noise_gaussianity.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace ctd::detail {
namespace {

using i64 = std::int64_t;

constexpr i64 kMargin = 3;                      // the largest lag measured
constexpr i64 kBox = kLagArea + 2 * kMargin;    // a block with the voxels its differences reach
constexpr i64 kLeastBlocks = 32;
constexpr i64 kReferenceBlocksX = 64, kReferenceBlocksY = 40;  // the synthesised noise's blocks
constexpr std::uint64_t kReferenceSeed = 0x4B55525453;

// Mean over lags 2 and 3 of the kurtosis of a block's second differences along x and y (its
// kLagArea^2 positions at offset kMargin of a kBox^2 box starting at `box`, rows `stride` apart);
// NaN where one reaches an unusable voxel or the differences are all equal.
double block_kurtosis(const float* box, i64 stride, const std::vector<float>& padding) {
  auto usable = [&](float v) { return std::isfinite(v) && std::find(padding.begin(), padding.end(), v) == padding.end(); };
  for (i64 y = 0; y < kBox; ++y)
    for (i64 x = 0; x < kBox; ++x)
      if (!usable(box[y * stride + x])) return std::numeric_limits<double>::quiet_NaN();
  double kurtosis_sum = 0;
  for (const i64 lag : {i64(2), i64(3)}) {
    double values[2 * kLagArea * kLagArea];
    i64 n = 0;
    for (i64 y = kMargin; y < kMargin + kLagArea; ++y)
      for (i64 x = kMargin; x < kMargin + kLagArea; ++x) {
        const float* p = box + y * stride + x;
        values[n++] = double(p[-lag]) - 2.0 * p[0] + p[lag];
        values[n++] = double(p[-lag * stride]) - 2.0 * p[0] + p[lag * stride];
      }
    double mean = 0;
    for (i64 i = 0; i < n; ++i) mean += values[i];
    mean /= double(n);
    double m2 = 0, m4 = 0;
    for (i64 i = 0; i < n; ++i) {
      const double c = (values[i] - mean) * (values[i] - mean);
      m2 += c;
      m4 += c * c;
    }
    m2 /= double(n);
    m4 /= double(n);
    if (!(m2 > 0)) return std::numeric_limits<double>::quiet_NaN();
    kurtosis_sum += m4 / (m2 * m2);
  }
  return kurtosis_sum / 2;
}

}  // namespace

double flat_blocks_excess_kurtosis(const ImageReads& reads, const std::vector<LagArea>& blocks,
                                   const std::vector<float>& padding, const NoiseModel& model) {
  const Dims d = reads.dims();
  std::vector<Corner> corners;
  for (const LagArea& b : blocks) {
    if (b.x >= kMargin && b.y >= kMargin && b.x + kLagArea + kMargin <= d.nx && b.y + kLagArea + kMargin <= d.ny) {
      corners.push_back({b.x - kMargin, b.y - kMargin, b.z});
    }
  }
  if (i64(corners.size()) < kLeastBlocks) return 0;
  Volume boxes(Dims{kBox * i64(corners.size()), kBox, 1});
  reads.copy_blocks(corners, Dims{kBox, kBox, 1}, boxes.view());
  double sum = 0;
  i64 count = 0;
  for (std::size_t b = 0; b < corners.size(); ++b) {
    const double k = block_kurtosis(boxes.data() + i64(b) * kBox, boxes.dims().nx, padding);
    if (!std::isnan(k)) sum += k, ++count;
  }
  if (count < kLeastBlocks) return 0;
  const double observed = sum / double(count);

  // Gaussian noise of the model's in-plane covariance, in as many boxes side by side.
  NoiseModel in_plane = model;
  if (model.radius_z > 0) {
    const int w = 2 * model.radius_xy + 1;
    const auto plane = model.covariance.begin() + std::ptrdiff_t(model.radius_z) * w * w;
    in_plane.covariance.assign(plane, plane + w * w);
    in_plane.radius_z = 0;
  }
  const Volume noise = synthesize_noise(in_plane, Dims{kBox * kReferenceBlocksX, kBox * kReferenceBlocksY, 1}, kReferenceSeed);
  double ref_sum = 0, ref_sum2 = 0;
  i64 ref_count = 0;
  for (i64 by = 0; by < kReferenceBlocksY; ++by)
    for (i64 bx = 0; bx < kReferenceBlocksX; ++bx) {
      const double k = block_kurtosis(noise.data() + by * kBox * noise.dims().nx + bx * kBox, noise.dims().nx, {});
      if (std::isnan(k)) continue;
      ref_sum += k, ref_sum2 += k * k, ++ref_count;
    }
  if (ref_count < kLeastBlocks) return 0;
  const double ref_mean = ref_sum / double(ref_count);
  const double ref_sd = std::sqrt(std::max(0.0, ref_sum2 / double(ref_count) - ref_mean * ref_mean));
  if (!(ref_sd > 0)) return 0;
  return (observed - ref_mean) / (ref_sd / std::sqrt(double(count)));
}

}  // namespace ctd::detail
