#pragma once
// Shared by the CUDA NLM kernels: the kernel parameters, mirror border, weight and final division.
// Every kernel computes the definition of docs/filters.md exactly (float32, __expf).

#include "cuda/device_util.cuh"

#include <ctdenoise/nlm.hpp>

#include <cmath>

namespace ctd::cuda::nlm_detail {

constexpr int kMaxPatchWidth = 65;  // patch radius up to 32

// Everything a kernel needs, passed by value.
struct KernelParams {
  int nx, ny, nz;
  int rs, rsz, rp, rpz;  // search and patch radii; z radii are 0 for 2D images
  float inv_h2, bias, inv_norm, l1_scale;
  int l1;          // seed 003's weighted L1 distance instead of L2
  int centre_max;  // w(p,p) = max over q != p
  float g[kMaxPatchWidth];  // L2: separable patch kernel factors g1(k + rp)
};

inline KernelParams make_params(const Dims& dims, const NlmParams& p) {
  KernelParams k{};
  k.nx = int(dims.nx);
  k.ny = int(dims.ny);
  k.nz = int(dims.nz);
  const bool flat = dims.is_2d();
  k.rs = p.search_radius;
  k.rsz = flat ? 0 : p.search_radius;
  k.rp = p.patch_radius;
  k.rpz = flat ? 0 : p.patch_radius;
  const int dim = flat ? 2 : 3;
  double g_sum = 0;
  for (int i = -k.rp; i <= k.rp; ++i) {
    const double g = p.patch_kernel == PatchKernel::Gaussian
                         ? std::exp(-double(i) * i / (2.0 * p.patch_sigma * p.patch_sigma))
                         : 1.0;
    k.g[i + k.rp] = float(g);
    g_sum += g;
  }
  k.inv_norm = float(1.0 / std::pow(g_sum, dim));
  k.inv_h2 = float(1.0 / (double(p.h) * p.h));
  k.bias = float(2.0 * double(p.noise_sigma) * p.noise_sigma);
  k.l1 = p.distance == PatchDistance::L1;
  k.l1_scale = float(1.0 / (double(p.h) * std::pow(2.0 * p.patch_radius + 1, dim)));
  k.centre_max = p.centre_weight == CentreWeight::Max;
  return k;
}


// Seed 003's L1 patch kernel: G(0) = sqrt(2), G(k) = 1/|k|.
__device__ __forceinline__ float l1_kernel(int kx, int ky, int kz) {
  const int r2 = kx * kx + ky * ky + kz * kz;
  return r2 == 0 ? 1.41421356f : rsqrtf(float(r2));
}

__device__ __forceinline__ float pair_weight(float distance, const KernelParams& k) {
  return k.l1 ? __expf(-distance * k.l1_scale) : __expf(-fmaxf(distance * k.inv_norm - k.bias, 0.0f) * k.inv_h2);
}

__device__ __forceinline__ float finish(float sum, float weight_sum, float weight_max, float centre, const KernelParams& k) {
  const float wc = k.centre_max ? (weight_max > 0.0f ? weight_max : 1.0f) : 1.0f;
  return (sum + wc * centre) / (weight_sum + wc);
}

}  // namespace ctd::cuda::nlm_detail
