#pragma once
// The sliding-sums NLM kernels' shared parts: tile layout, patch sums, accumulators, and the
// per-dimension launchers that nlm_fused.cu routes to (nlm_fused_2d.cu, nlm_fused_3d.cu).

#include "cuda/cuda_check.hpp"
#include "cuda/host_call.hpp"
#include "cuda/nlm_common.cuh"

#include <ctdenoise/error.hpp>

#include <cstddef>
#include <string>
#include <type_traits>
#include <vector>

namespace ctd::cuda::slide {

using namespace nlm_detail;

constexpr int kThreads = 256;
constexpr int kTx2 = 64, kTy2 = 32, kChunk2 = 16, kRy2 = 8;  // 2D tile, pass A run, pass B run
constexpr int kTx3 = 32, kTy3 = 8, kTz3 = 8;                  // 3D tile
constexpr int kMaxRp2 = 7, kMaxRp3 = 4;                       // compiled patch radii
constexpr int kHs2 = kTx2 + 4, kHs3 = kTx3 + 4;               // Hx row strides: = 4 mod 32, conflict-free float4 stores

struct SlideLayout {
  int a, az;       // apron: search + patch radius (z: 0 in 2D)
  int ux, uy, uz;  // U extents
  int sx;          // U row stride, odd: rows read by neighbouring lanes fall in different banks
  std::size_t u_floats, h_floats;
  std::size_t bytes() const { return (u_floats + h_floats) * sizeof(float); }
};

// U for a tile of tx x ty with the apron a in x and y, uz planes from z0 - az; h_floats left to the caller.
__host__ __device__ inline SlideLayout u_layout(int tx, int ty, int a, int az, int uz) {
  SlideLayout l{};
  l.a = a;
  l.az = az;
  l.ux = tx + 2 * a;
  l.uy = ty + 2 * a;
  l.uz = uz;
  l.sx = l.ux | 1;
  l.u_floats = (std::size_t(l.sx) * l.uy * l.uz + 3) / 4 * 4;  // Hx after U takes float4 stores
  return l;
}

__host__ __device__ inline SlideLayout slide_layout(const KernelParams& k) {
  const bool flat = k.rsz == 0;
  const int az = k.rsz + k.rpz;
  SlideLayout l = u_layout(flat ? kTx2 : kTx3, flat ? kTy2 : kTy3, k.rs + k.rp, az, (flat ? 1 : kTz3) + 2 * az);
  if (flat) {
    l.h_floats = 2 * std::size_t(kTy2 + 2 * k.rp) * kHs2;  // Hx, double-buffered
  } else {
    const int rows = kTy3 + 2 * k.rp, planes = kTz3 + 2 * k.rp;
    l.h_floats = std::size_t(planes) * rows * kHs3 + std::size_t(planes) * kTy3 * kTx3;  // Hx, Hxy
  }
  return l;
}

__device__ inline void load_tile(float* U, const float* __restrict__ u, const KernelParams& k, const SlideLayout& l,
                                 int x0, int y0, int z0) {
  const int count = l.ux * l.uy * l.uz;
#pragma unroll 4
  for (int i = threadIdx.x; i < count; i += kThreads) {
    const int ix = i % l.ux, iy = (i / l.ux) % l.uy, iz = i / (l.ux * l.uy);
    const int gx = mirror(x0 - l.a + ix, k.nx), gy = mirror(y0 - l.a + iy, k.ny), gz = mirror(z0 - l.az + iz, k.nz);
    U[(iz * l.uy + iy) * l.sx + ix] = u[((long long)gz * k.ny + gy) * k.nx + gx];
  }
}

// out[i] = sum_k g[k] e[i + k], k = 0 .. 2 RP; a running sum for the uniform patch.
template <int RP, int N, bool UNIFORM>
__device__ __forceinline__ void patch_sums(const float (&e)[N + 2 * RP], float (&out)[N], const float* g) {
  if constexpr (UNIFORM) {
    float s = e[0];
#pragma unroll
    for (int j = 1; j <= 2 * RP; ++j) s += e[j];
    out[0] = s;
#pragma unroll
    for (int i = 1; i < N; ++i) {
      s += e[i + 2 * RP] - e[i - 1];
      out[i] = s;
    }
  } else {
#pragma unroll
    for (int i = 0; i < N; ++i) {
      float s = 0;
#pragma unroll
      for (int j = 0; j <= 2 * RP; ++j) s = fmaf(g[j], e[i + j], s);
      out[i] = s;
    }
  }
}

// Per-output accumulators of one thread; the running maximum only where the centre weight needs it.
template <int N, bool CENTRE_MAX>
struct Accumulators {
  float sum[N], weight_sum[N], weight_max[N];
  __device__ Accumulators() {
#pragma unroll
    for (int t = 0; t < N; ++t) sum[t] = weight_sum[t] = weight_max[t] = 0.0f;
  }
  __device__ __forceinline__ void add(int t, float w, float q) {
    sum[t] = fmaf(w, q, sum[t]);
    weight_sum[t] += w;
    if constexpr (CENTRE_MAX) weight_max[t] = fmaxf(weight_max[t], w);
  }
};

// Whether every displacement of the window stays inside the volume for every voxel of the tile:
// such blocks (most of them) skip the per-pair border test.
__device__ __forceinline__ bool window_inside(const KernelParams& k, int x0, int y0, int z0, int tx, int ty, int tz) {
  return x0 >= k.rs && x0 + tx + k.rs <= k.nx && y0 >= k.rs && y0 + ty + k.rs <= k.ny && z0 >= k.rsz &&
         z0 + tz + k.rsz <= k.nz;
}

// The squared differences between a thread's own N + 2 RP values and the shifted ones (at
// `stride` floats apart), summed over each patch row or column into N values.
template <int RP, int N, bool UNIFORM>
__device__ __forceinline__ void difference_patch_sums(const float (&own)[N + 2 * RP], const float* shifted, int stride,
                                                      float (&out)[N], const float* g) {
  float d[N + 2 * RP];
#pragma unroll
  for (int j = 0; j < N + 2 * RP; ++j) d[j] = own[j] - shifted[j * stride];
  if constexpr (UNIFORM) {  // the running sum with the squares folded into FMAs: two per output
    float s = d[0] * d[0];
#pragma unroll
    for (int j = 1; j <= 2 * RP; ++j) s = fmaf(d[j], d[j], s);
    out[0] = s;
#pragma unroll
    for (int i = 1; i < N; ++i) {
      s = fmaf(d[i + 2 * RP], d[i + 2 * RP], s);
      s = fmaf(-d[i - 1], d[i - 1], s);
      out[i] = s;
    }
  } else {
    float e[N + 2 * RP];
#pragma unroll
    for (int j = 0; j < N + 2 * RP; ++j) e[j] = d[j] * d[j];
    patch_sums<RP, N, UNIFORM>(e, out, g);
  }
}

// The shifted run u(p + d + j), j = 0 .. N - 1, of a pass-A thread, kept in registers: where the
// walk moved d one step along x it slides by one value, one shared-memory load instead of N.
// (Shared-memory bandwidth bounds the 3D symmetric kernel, and these loads were a fifth of it.)
template <int N>
struct ShiftedRun {
  float v[N];
  __device__ __forceinline__ void update(const float* src, bool slid) {
    if (slid) {
#pragma unroll
      for (int j = 0; j + 1 < N; ++j) v[j] = v[j + 1];
      v[N - 1] = src[N - 1];
    } else {
#pragma unroll
      for (int j = 0; j < N; ++j) v[j] = src[j];
    }
  }
};

// Pass A of the one-sided kernels: along a run of a tile row, into N entries of H (float4 stores).
template <int RP, int N, bool UNIFORM>
__device__ __forceinline__ void row_patch_sums(const float (&own)[N + 2 * RP], const float* shifted, float* dst,
                                               const float* g) {
  float h[N];
  difference_patch_sums<RP, N, UNIFORM>(own, shifted, 1, h, g);
  float4* out = reinterpret_cast<float4*>(dst);
#pragma unroll
  for (int m = 0; m < N / 4; ++m) out[m] = make_float4(h[4 * m], h[4 * m + 1], h[4 * m + 2], h[4 * m + 3]);
}

// The patch sums of N outputs from the N + 2 RP partial sums at `src`, `stride` floats apart.
template <int RP, int N, bool UNIFORM>
__device__ __forceinline__ void strided_patch_sums(const float* src, int stride, float (&out)[N], const float* g) {
  float values[N + 2 * RP];
#pragma unroll
  for (int j = 0; j < N + 2 * RP; ++j) values[j] = src[j * stride];
  patch_sums<RP, N, UNIFORM>(values, out, g);
}

// As much shared memory as the SM has: several blocks of 45-110 KB per SM.
template <typename Kernel>
void set_shared_bytes(Kernel kernel, std::size_t bytes) {
  CTD_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
  CTD_CUDA_CHECK(
      cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, int(cudaSharedmemCarveoutMaxShared)));
}

// One instantiation per (patch kernel, centre weight rule).
template <class Kernel>
Kernel pick_kernel(const KernelParams& k, bool uniform, Kernel uniform_kernel, Kernel uniform_max,
                   Kernel gaussian_kernel, Kernel gaussian_max) {
  if (uniform) return k.centre_max ? uniform_max : uniform_kernel;
  return k.centre_max ? gaussian_max : gaussian_kernel;
}

// f(std::integral_constant<int, RP>{}) for the patch radius the kernels were compiled for.
template <class F>
void with_patch_radius(int rp, F&& f) {
  switch (rp) {
    case 1: f(std::integral_constant<int, 1>{}); break;
    case 2: f(std::integral_constant<int, 2>{}); break;
    case 3: f(std::integral_constant<int, 3>{}); break;
    case 4: f(std::integral_constant<int, 4>{}); break;
    case 5: f(std::integral_constant<int, 5>{}); break;
    case 6: f(std::integral_constant<int, 6>{}); break;
    case 7: f(std::integral_constant<int, 7>{}); break;
    default: throw Error(ErrorKind::Unsupported, "internal: the sliding NLM kernel has no patch radius " + std::to_string(rp));
  }
}

// nlm_fused_2d.cu: 2D images (search radius 0 across slices: k.rsz == 0; nlm_fused.cu routes).
std::size_t slide2d_workspace_floats(const KernelParams& k);
std::size_t slide2d_shared_bytes(const KernelParams& k);
void slide2d_launch(const float* in, float* out, float* workspace, const KernelParams& k, bool uniform_patch,
                    cudaStream_t stream);

// nlm_fused_3d.cu: volumes searched across slices (k.rsz > 0); the steps of the symmetric kernel for
// the host API.
std::size_t slide3d_workspace_floats(const KernelParams& k);
std::size_t slide3d_shared_bytes(const KernelParams& k);
void slide3d_launch(const float* in, float* out, float* workspace, const KernelParams& k, bool uniform_patch,
                    cudaStream_t stream);
std::vector<HostStep> slide3d_steps(const KernelParams& k, int chunks);
void slide3d_queue_step(const float* in, float* out, float* workspace, const KernelParams& k, bool uniform_patch,
                        int chunks, int step, cudaStream_t stream);

}  // namespace ctd::cuda::slide
