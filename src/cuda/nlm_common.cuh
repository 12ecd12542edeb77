#pragma once
// Shared by the CUDA NLM kernels: the kernel parameters, mirror border, weight and final division.
// Every kernel computes the definition of docs/filters.md exactly (float32, the hardware exp2).

#include "cuda/device_util.cuh"

#include <ctdenoise/nlm.hpp>

#include <cmath>

namespace ctd::cuda::nlm_detail {

constexpr int kMaxPatchWidth = 65;  // patch radius up to 32

// Everything a kernel needs, passed by value.
struct KernelParams {
  int nx, ny, nz;
  int rs, rsz, rp, rpz;  // search and patch radii; z radii are 0 for 2D images
  float l2_scale, l2_offset;  // L2 weight = exp2(min(distance * l2_scale + l2_offset, 0)), see l2_weight
  float l1_scale;
  int l1;          // Zhang et al.'s weighted L1 distance instead of L2
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
  const double inv_norm = 1.0 / std::pow(g_sum, dim), inv_h2 = 1.0 / (double(p.h) * p.h);
  // exp(-max(d / norm - bias, 0) / h^2) = exp2(min(d * scale + offset, 0)): one FMA, one min, one exp2.
  const double log2e = 1.4426950408889634;
  k.l2_scale = float(-log2e * inv_norm * inv_h2);
  k.l2_offset = float(log2e * 2.0 * double(p.noise_sigma) * p.noise_sigma * inv_h2);
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

// 2^x on the special-function unit alone; x <= 0 here, and weights below 2^-126 (nothing next to
// the centre weight 1) flush to zero instead of taking the denormal fix-up.
__device__ __forceinline__ float exp2_ftz(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

__device__ __forceinline__ float l2_weight(float distance, const KernelParams& k) {
  return exp2_ftz(fminf(fmaf(distance, k.l2_scale, k.l2_offset), 0.0f));
}

__device__ __forceinline__ float pair_weight(float distance, const KernelParams& k) {
  return k.l1 ? __expf(-distance * k.l1_scale) : l2_weight(distance, k);
}

// Walks a contiguous range of the search window's displacements, by index in the window (x
// fastest, then y, then z), skipping the centre, with no division per step.
struct WindowWalk {
  int dx, dy, dz;
  int left;  // displacements still to visit, the current one included
  int rs, rsz;
  bool slid = false;  // the last step moved dx by one within a window row
  // Indices begin .. end - 1.
  __device__ WindowWalk(const KernelParams& k, int begin, int end) : rs(k.rs), rsz(k.rsz) {
    const int wx = 2 * k.rs + 1, centre = wx * wx * (2 * k.rsz + 1) / 2;
    dx = begin % wx - rs;
    dy = begin / wx % wx - rs;
    dz = begin / (wx * wx) - rsz;
    left = max(0, end - begin - (begin <= centre && centre < end ? 1 : 0));
    if ((dx | dy | dz) == 0) dx = 1;
  }
  // Part `part` of `parts` equal ranges of the whole window.
  __device__ static WindowWalk part_of(const KernelParams& k, int part, int parts) {
    const int wx = 2 * k.rs + 1, count = wx * wx * (2 * k.rsz + 1);
    return WindowWalk(k, int((long long)count * part / parts), int((long long)count * (part + 1) / parts));
  }
  __device__ void step() {
    slid = true;
    if (++dx > rs) {  // next row of the window
      dx = -rs;
      slid = false;
      if (++dy > rs) {
        dy = -rs;
        ++dz;
      }
    }
    if ((dx | dy | dz) == 0) {  // the centre (dx jumps by two)
      dx = 1;
      slid = false;
    }
    --left;
  }
};

__device__ __forceinline__ float finish(float sum, float weight_sum, float weight_max, float centre, const KernelParams& k) {
  const float wc = k.centre_max ? (weight_max > 0.0f ? weight_max : 1.0f) : 1.0f;
  return (sum + wc * centre) / (weight_sum + wc);
}

}  // namespace ctd::cuda::nlm_detail
