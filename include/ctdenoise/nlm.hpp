#pragma once
// Non-local means (docs/filters.md has the exact definition):
//   out(p) = sum_q w(p,q) u(q) / sum_q w(p,q),  q inside the volume with |q - p|_inf <= search_radius
//   d2(p,q) = sum_k g(k) (u(p+k) - u(q+k))^2 / sum_k g(k),  k in [-patch_radius, patch_radius]^dim
//   w(p,q) = exp(-max(d2 - 2 noise_sigma^2, 0) / h^2)
// Patches read across the border by mirroring (c b | a b c d | c b); dim = 2 when nz = 1.

#include <ctdenoise/exec.hpp>
#include <ctdenoise/volume.hpp>

#include <cstdint>
#include <string_view>

namespace ctd {

enum class PatchKernel {
  Uniform,   // g = 1
  Gaussian,  // g(k) = exp(-|k|^2 / (2 patch_sigma^2))
};

enum class PatchDistance {
  L2,  // the squared distance above
  L1,  // Zhang et al.: w = exp(-sum_k G(k) |u(p+k) - u(q+k)| / (h (2 patch_radius + 1)^dim)),
       // G(0) = sqrt(2), G(k) = 1/|k|; patch_kernel and noise_sigma do not apply
};

enum class CentreWeight {
  Formula,  // w(p,p) from the formula (= 1)
  Max,      // w(p,p) = max over q != p of w(p,q); 1 where p has no neighbour or that max is 0
};

enum class NlmAlgorithm {
  Auto,          // the fastest exact variant for the device
  Displacement,  // CPU: one pass per displacement, symmetric pairs computed once;
                 // CUDA: Márques & Pardo, kernels per displacement (difference, separable sums, weights)
  RowWise,       // CUDA: Zhang et al., row partial distances once into shared memory, symmetric weights
  Naive,         // CUDA: one thread per voxel, everything from global memory (the papers' baseline)
  Tiled,         // CUDA: Mueller et al., the block's apron prefetched into shared memory, then the naive loops
  ZSlide,        // CUDA, 3D only: Horáček et al., each thread slides along z, planes kept in shared memory
  Fused,         // CUDA: tiles in shared memory, patch distances by sliding sums in registers,
                 // no intermediates in global memory
  Blockwise,     // CPU, APPROXIMATE: Coupe et al. 2008 blockwise NLM with voxel preselection
};

struct NlmParams {
  int search_radius = 5;  // voxels; the search window is (2r+1)^dim, >= 1
  int patch_radius = 1;   // voxels; the patch is (2r+1)^dim, >= 1
  float h = 0.0f;         // filtering strength, image units (HU for CT), > 0; required
  float noise_sigma = 0;  // noise standard deviation, image units, >= 0; 0 = no bias term
  PatchKernel patch_kernel = PatchKernel::Uniform;
  float patch_sigma = 1.0f;  // voxels, > 0; Gaussian patch kernel only
  PatchDistance distance = PatchDistance::L2;
  CentreWeight centre_weight = CentreWeight::Formula;
  NlmAlgorithm algorithm = NlmAlgorithm::Auto;
};

// Throws ctd::Error(InvalidArgument) naming the field and value; never clamps.
void validate(const NlmParams& params);

// h chosen for the image: ctdenoise/auto_params.hpp.

// Filters `in` into `out` (same dims; may be the same memory). Host memory; on CUDA this uploads,
// runs, downloads and synchronises.
FilterRun nlm(ConstVolumeView<float> in, VolumeView<float> out, const NlmParams& params,
              const ExecContext& context = {});
// The same from int16 voxels (CT's stored type), with the same output as from their float
// values: on CUDA they are uploaded as they are (half the bytes) and converted on the GPU.
FilterRun nlm(ConstVolumeView<std::int16_t> in, VolumeView<float> out, const NlmParams& params,
              const ExecContext& context = {});

// The same on device memory (CUDA builds): `device_in` and `device_out` hold dims.count() floats
// on the current device and must not overlap. The work is queued on `stream` and the call
// returns without synchronising; it allocates no memory, so an iterative loop can call it every
// iteration. Input voxels are not checked for NaN here. Throws Unsupported without CUDA.
FilterRun nlm_device(const float* device_in, float* device_out, const Dims& dims, const NlmParams& params,
                     CudaStream stream = nullptr);

std::string_view to_string(NlmAlgorithm algorithm) noexcept;
NlmAlgorithm nlm_algorithm_from_string(std::string_view name);  // throws InvalidArgument

}  // namespace ctd
