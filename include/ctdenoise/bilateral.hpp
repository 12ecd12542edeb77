#pragma once
// Bilateral filter (docs/filters.md has the exact definition):
//   out(p) = sum_q gs(p-q) gr(u(p)-u(q)) u(q) / sum_q gs(p-q) gr(u(p)-u(q))
// over the box |q_i - p_i| <= radius_i (mirror border), with
//   gs(d) = exp(-sum_i (d_i s_i)^2 / (2 sigma_spatial^2)),  gr(a) = exp(-a^2 / (2 sigma_range^2)),
// s_i = 1 (sigma in voxels) or the voxel spacing (sigma in mm). A volume with nz = 1 is 2D.

#include <ctdenoise/exec.hpp>
#include <ctdenoise/volume.hpp>

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>

namespace ctd {

enum class SpatialUnit {
  Voxel,       // sigma_spatial counts voxels along every axis
  Millimetre,  // sigma_spatial is in mm; the axes scale by `spacing` (anisotropic CT)
};

enum class BilateralAlgorithm {
  Auto,         // the fastest exact variant for the device (CPU: direct, CUDA: fused)
  Direct,       // CPU: direct sum over the window, spatial weights tabulated
  Naive,        // CUDA: one thread per voxel, everything from global memory (the papers' baseline)
  Tiled,        // CUDA: Mueller et al., the apron in shared memory, the spatial kernel in constant memory
  Fused,        // CUDA: each thread 8 outputs down a column sharing every loaded neighbour, one exp2
                // per pair
  Compressive,  // CPU and CUDA, approximate (Yano et al. / Sugimoto & Kamata 2015): the range kernel as
                // a cosine series, so the filter becomes 4M + 1 separable Gaussian filters; see accuracy_db
};

struct BilateralParams {
  float sigma_spatial = 0.0f;  // > 0, in `spatial_unit`; required
  SpatialUnit spatial_unit = SpatialUnit::Voxel;
  float sigma_range = 0.0f;  // >= 1e-18 (float32 arithmetic), image units (HU for CT); required
  // Half-width of the window along x, y, z in voxels (each >= 1; z is ignored for 2D images).
  // Unset: ceil(3 sigma_spatial / s_i) per axis.
  std::optional<std::array<int, 3>> radius;
  std::array<double, 3> spacing{1.0, 1.0, 1.0};  // mm per voxel, used with SpatialUnit::Millimetre
  BilateralAlgorithm algorithm = BilateralAlgorithm::Auto;
  // Compressive only: the accuracy asked for, as PSNR in dB of the result against the exact
  // filter over the input's value range (> 0; 50 dB by default, as in Yano et al.).
  float accuracy_db = 50.0f;
  // Compressive only: the number of cosine terms M, fixed (Yano et al. sweep M = 3, 4, 7); 0 (the
  // default) chooses M from accuracy_db. With M fixed, accuracy_db is ignored and the period T
  // is the one that balances the series' two errors (docs/filters.md).
  int terms = 0;
  // Compressive only: how each Gaussian filter runs. Direct: 1D passes over the exact filter's
  // window (cost grows with sigma; accuracy_db holds). Recursive: Young-van Vliet's third-order
  // recursive Gaussian (cost independent of sigma; itself an approximation of an untruncated
  // Gaussian, so accuracy_db no longer bounds the error; sigma >= 0.5 voxel per axis).
  enum class Gaussian { Direct, Recursive } gaussian = Gaussian::Direct;
};

// The cosine series the compressive filter uses: period T (image units) and M terms. For data
// spanning `value_range` (max - min) it is chosen so that both errors of the series, the
// periodic copies of the range kernel (T beyond the range) and the dropped terms (after M), stay
// below eps = 10^(-(accuracy_db - 20) / 20) of the series' DC term, then T is moved to where the two
// errors are equal for that M (or for the M given in `terms`); docs/filters.md derives it.
struct CompressiveSettings {
  double period = 0;
  int terms = 0;
};
CompressiveSettings compressive_settings(const BilateralParams& params, double value_range);

// Throws ctd::Error(InvalidArgument) naming the field and value; never clamps.
void validate(const BilateralParams& params);

// sigma_range chosen for the image: ctdenoise/auto_params.hpp.

// The window half-widths the filter uses for a volume of these dims (z = 0 for 2D images).
std::array<int, 3> bilateral_radius(const BilateralParams& params, const Dims& dims);

// Filters `in` into `out` (same dims; may be the same memory). Host memory.
FilterRun bilateral(ConstVolumeView<float> in, VolumeView<float> out, const BilateralParams& params,
                    const ExecContext& context = {});
// The same from int16 voxels (CT's stored type), as nlm's: uploaded as they are on CUDA.
FilterRun bilateral(ConstVolumeView<std::int16_t> in, VolumeView<float> out, const BilateralParams& params,
                    const ExecContext& context = {});

// The same on device memory (CUDA builds), as nlm_device: `device_in` and `device_out` hold
// dims.count() floats on the current device and must not overlap; the work is queued on `stream`.
// Variants: naive, tiled, fused (auto picks) and compressive. The compressive series depends on
// the input's value range: give it as `value_range` (min, max) to keep the call asynchronous;
// without it the range is measured on the device and the call waits for `stream` once. Device
// workspace is kept per (host thread, stream) and grown on demand, so a loop allocates once.
// Input voxels are not checked for NaN here. Throws Unsupported without CUDA.
FilterRun bilateral_device(const float* device_in, float* device_out, const Dims& dims, const BilateralParams& params,
                           CudaStream stream = nullptr,
                           std::optional<std::pair<float, float>> value_range = std::nullopt);

std::string_view to_string(BilateralAlgorithm algorithm) noexcept;
BilateralAlgorithm bilateral_algorithm_from_string(std::string_view name);  // throws InvalidArgument

}  // namespace ctd
