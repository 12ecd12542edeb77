// What the automatic parameters read of the image, from wherever it lies: the padding search's
// sample, the noise estimates' residuals, the noise model's second differences and the risk
// sample's blocks. host_reads reads host memory; cuda::device_reads (src/cuda/image_reads.cu)
// reads the GPU's, so that only these reads' results cross the bus. Both give the same bits:
// every value is computed from the same floats by the same operations in the same order (each
// area's sums over its voxels in scan order), and what is made of them runs on the host.
// C++17, for the CUDA sources.
#pragma once

#include <ctdenoise/exec.hpp>
#include <ctdenoise/noise.hpp>
#include <ctdenoise/volume.hpp>

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <memory>
#include <mutex>
#include <vector>

namespace ctd::detail {

// A residual (or Haar detail) and the value range of the voxels it was made from.
struct Residual {
  double value, range;
};
// A second difference's lag (dx, dy, dz) in voxels.
struct Lag {
  int dx, dy, dz;
};
// An in-plane square of kLagArea x kLagArea voxels of slice z whose first voxel is (x, y); it may
// reach outside the image.
struct LagArea {
  std::int64_t x, y, z;
};
inline constexpr std::int64_t kLagArea = 8;
// The first voxel of a block.
struct Corner {
  std::int64_t x, y, z;
};

// Where a noise estimate's residuals are taken over an image of dims d: the interior voxels
// (pseudo-residuals, each with its full neighbourhood) or the 2 x 2 (x 2) blocks (Haar diagonal
// details), a grid of nx x ny x nz positions in scan order, the scale that gives each the
// noise's variance, and whether each is made within its slice. A volume of two slices has no
// interior voxel along z: its pseudo-residuals are each slice's in-plane ones (as the noise
// model, which reads no lag across slices there).
struct ResidualGrid {
  std::int64_t nx, ny, nz;
  double scale;
  bool in_plane;
};
inline ResidualGrid residual_grid(NoiseEstimator estimator, const Dims& d) {
  if (estimator == NoiseEstimator::PseudoResidual) {
    const bool in_plane = d.nz < 3;
    return {d.nx - 2, d.ny - 2, in_plane ? d.nz : d.nz - 2, in_plane ? std::sqrt(4.0 / 5.0) : std::sqrt(6.0 / 7.0), in_plane};
  }
  const bool flat = d.is_2d();
  return {d.nx / 2, d.ny / 2, flat ? d.nz : d.nz / 2, flat ? 0.5 : 1.0 / std::sqrt(8.0), flat};
}

// What the reads leave out: voxels that are not finite or hold one of `values` (padding); but a
// voxel of `in_regions_only` (one of `values` that is both padding and a clip floor: a scanner
// that stores -1024 HU outside its field of view and in its clipped air) only where all of its
// in-plane neighbours (x +- 1, y +- 1) inside the image hold it too. So the regions are left out
// and the clipped air's voxels, most of which have a neighbour of another value, are read.
struct Excluded {
  std::vector<float> values;
  float in_regions_only = std::numeric_limits<float>::quiet_NaN();
  Excluded() = default;
  Excluded(std::vector<float> v, float regions_only = std::numeric_limits<float>::quiet_NaN())  // NOLINT: a list of values is one
      : values(std::move(v)), in_regions_only(regions_only) {}
  Excluded(std::initializer_list<float> v) : values(v) {}
};

#ifdef __CUDACC__
#define CTD_HOST_DEVICE __host__ __device__
#else
#define CTD_HOST_DEVICE
#endif

// Whether the voxel (x, y, z) of an image of nx x ny in-plane, read by at(x, y, z), is usable
// under `excluded` (its values given as count floats: the host's vector or a kernel's array).
// The host's reads and the GPU's kernels (src/cuda/image_reads.cu) both call it.
template <class At>
CTD_HOST_DEVICE inline bool usable_voxel(At&& at, std::int64_t x, std::int64_t y, std::int64_t z, std::int64_t nx,
                                         std::int64_t ny, const float* values, int count, float in_regions_only) {
  using std::isfinite;  // on the GPU, CUDA's own
  const float v = at(x, y, z);
  if (!isfinite(v)) return false;
  bool listed = false;
  for (int i = 0; i < count; ++i) listed = listed || v == values[i];
  if (!listed) return true;
  if (!(v == in_regions_only)) return false;
  return !((x == 0 || at(x - 1, y, z) == v) && (x + 1 == nx || at(x + 1, y, z) == v) && (y == 0 || at(x, y - 1, z) == v) &&
           (y + 1 == ny || at(x, y + 1, z) == v));
}

// Values that fill at least 1% of the image as spikes of its histogram (find_spikes,
// robust_stats.hpp): padding is left out of every reading; a clip floor is read as a value, its
// voxels' noise censored.
struct SpikeValues {
  Excluded padding;  // values that fill regions, largest spike first (and the one also scattered)
  std::vector<float> clipped;  // values scattered among others (a clip floor), largest spike first
};
// A noise model's excluded_value and clipped_value from them (NaN where there is none).
inline void set_spike_values(NoiseModel& m, const SpikeValues& s) {
  constexpr double nan = std::numeric_limits<double>::quiet_NaN();
  m.excluded_value = s.padding.values.empty() ? nan : double(s.padding.values.front());
  m.clipped_value = s.clipped.empty() ? nan : double(s.clipped.front());
}

class ImageReads {
 public:
  explicit ImageReads(const Dims& dims) : dims_(dims) {}
  virtual ~ImageReads() = default;
  ImageReads(const ImageReads&) = delete;
  ImageReads& operator=(const ImageReads&) = delete;

  const Dims& dims() const noexcept { return dims_; }
  virtual bool on_device() const noexcept = 0;  // the GPU's memory

  // Voxels k * step, k < count (in index order).
  virtual std::vector<float> every(std::int64_t step, std::int64_t count) const = 0;

  // The slices [z0, z0 + nz) as an image of their own: its pseudo-residuals (interior voxels:
  // sqrt(4/5) or sqrt(6/7) x (centre - the mean of its 4 or 6 neighbours)) or orthonormal Haar
  // diagonal details of 2 x 2 (x 2) blocks, at every step-th position of their grid in scan
  // order, those whose voxels are all usable (usable_voxel under `padding`), in order.
  virtual std::vector<Residual> residuals(NoiseEstimator estimator, std::int64_t z0, std::int64_t nz,
                                          const Excluded& padding, std::int64_t step) const = 0;

  // For each area a and lag l: the sum of D(p) D(p + shift), D(p) = u(p - l) - 2 u(p) + u(p + l),
  // over the area's voxels p in scan order (sums[a * lags.size() + l]) and their number (counts),
  // leaving out p where any of the voxels is outside the image or not usable. A shift of 0 sums
  // D(p)^2.
  virtual void lag_sums(const std::vector<LagArea>& areas, const std::vector<Lag>& lags, const Lag& shift,
                        const Excluded& padding, double* sums, std::int64_t* counts) const = 0;

  // The blocks of (bxy, bxy, bz) voxels whose first voxels are origin + (i bxy, j bxy, k bz) for
  // i < cx, j < cy, k < cz, in that scan order: how many of each one's voxels are not finite or
  // equal `excluded` (a NaN excludes nothing).
  virtual std::vector<std::int64_t> unusable_per_block(const Corner& origin, std::int64_t bxy, std::int64_t bz,
                                                       std::int64_t cx, std::int64_t cy, std::int64_t cz,
                                                       float excluded) const = 0;

  // The blocks of `block` dims at `corners` copied side by side into `out`, which they fill: block
  // b at ((b % per_row) * block.nx, (b / per_row) * block.ny, 0), per_row = out.nx / block.nx.
  virtual void copy_blocks(const std::vector<Corner>& corners, const Dims& block, VolumeView<float> out) const = 0;

  // find_spikes of this image, found on the first call: the noise model and the automatic
  // choices both need the image's padding and clip floor.
  const SpikeValues& spikes() const;

 private:
  Dims dims_;
  mutable std::once_flag spikes_found_;
  mutable SpikeValues spikes_;
};

// Reads of host memory, on all cores. Each of these makers refuses an image with a dimension
// under 1 (InvalidArgument).
std::unique_ptr<ImageReads> host_reads(ConstVolumeView<float> image);
// Reads where filters run in `context`: on CUDA the image uploaded and read on the GPU; else
// host memory (int16 voxels converted first).
std::unique_ptr<ImageReads> reads_for(ConstVolumeView<float> image, const ExecContext& context);
std::unique_ptr<ImageReads> reads_for(ConstVolumeView<std::int16_t> image, const ExecContext& context);
// Reads of device memory (float voxels on the current device, on `stream`); Unsupported without
// CUDA.
std::unique_ptr<ImageReads> device_reads(const float* image, const Dims& dims, CudaStream stream);

}  // namespace ctd::detail
