// CUDA non-local means: routing, the `naive` baseline, the papers' `tiled` (Mueller et al.) and `zslide`
// (Horáček et al.) kernels, and the general `fused` kernel (every option; the sliding-sum fused kernel of
// nlm_fused.cu takes the L2 cases it was compiled for). All compute the definition of
// docs/filters.md exactly (float32, __expf), mirror border.

#include "cuda/backend.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/device_buffer.hpp"
#include "cuda/host_call.hpp"
#include "cuda/nlm_kernels.hpp"

#include <ctdenoise/error.hpp>
#include <ctdenoise/exec.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

namespace ctd::cuda {
namespace {

using namespace nlm_detail;

// ---- naive: one thread per voxel, every read from global memory -------------------------------

__global__ void nlm_naive_kernel(const float* __restrict__ u, float* __restrict__ out, KernelParams k) {
  const long long n = (long long)k.nx * k.ny * k.nz;
  const long long index = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (index >= n) return;
  const int x = int(index % k.nx), y = int((index / k.nx) % k.ny), z = int(index / ((long long)k.nx * k.ny));
  auto at = [&](int xx, int yy, int zz) {
    return u[((long long)mirror(zz, k.nz) * k.ny + mirror(yy, k.ny)) * k.nx + mirror(xx, k.nx)];
  };
  float sum = 0, weight_sum = 0, weight_max = 0;
  for (int qz = max(0, z - k.rsz); qz <= min(k.nz - 1, z + k.rsz); ++qz)
    for (int qy = max(0, y - k.rs); qy <= min(k.ny - 1, y + k.rs); ++qy)
      for (int qx = max(0, x - k.rs); qx <= min(k.nx - 1, x + k.rs); ++qx) {
        if (qx == x && qy == y && qz == z) continue;  // the centre is added at the end
        float distance = 0;
        for (int kz = -k.rpz; kz <= k.rpz; ++kz)
          for (int ky = -k.rp; ky <= k.rp; ++ky)
            for (int kx = -k.rp; kx <= k.rp; ++kx) {
              const float d = at(x + kx, y + ky, z + kz) - at(qx + kx, qy + ky, qz + kz);
              const float gz = k.rpz ? k.g[kz + k.rp] : 1.0f;  // 2D: no z factor
              distance += k.l1 ? l1_kernel(kx, ky, kz) * fabsf(d) : k.g[kx + k.rp] * k.g[ky + k.rp] * gz * d * d;
            }
        const float w = pair_weight(distance, k);
        sum += w * u[((long long)qz * k.ny + qy) * k.nx + qx];
        weight_sum += w;
        weight_max = fmaxf(weight_max, w);
      }
  out[index] = finish(sum, weight_sum, weight_max, u[index], k);
}

// ---- fused: a tile and its apron in shared memory, one displacement at a time --------------
//
// A block owns a TX x TY x TZ tile of outputs (one thread per (x, y), TZ outputs along z). It
// loads the tile plus the search and patch aprons (mirror border applied) into shared memory
// once. Then, for every displacement d of the search window, it forms the difference image E of
// the tile plus the patch apron, sums it over the patch (separably for L2: x, then y, then z; the
// whole kernel for L1), turns the distance into a weight and accumulates in registers. Nothing
// goes through global memory but the input (once) and the output (once), and every voxel sums its
// terms in the same order of displacements: deterministic.

constexpr int kTileX = 32, kTileY = 8;

struct FusedLayout {
  int ax, ay, az;  // search + patch apron
  int ux, uy, uz;  // U extents
  int ex, ey, ez;  // E extents (tile + patch apron)
  std::size_t u_size, e_size, hx_size;
  std::size_t bytes() const { return (u_size + e_size + hx_size) * sizeof(float); }
};

__host__ __device__ inline FusedLayout fused_layout(const KernelParams& k, int tile_z) {
  FusedLayout l{};
  l.ax = k.rs + k.rp;
  l.ay = k.rs + k.rp;
  l.az = k.rsz + k.rpz;
  l.ux = kTileX + 2 * l.ax;
  l.uy = kTileY + 2 * l.ay;
  l.uz = tile_z + 2 * l.az;
  l.ex = kTileX + 2 * k.rp;
  l.ey = kTileY + 2 * k.rp;
  l.ez = tile_z + 2 * k.rpz;
  l.u_size = std::size_t(l.ux) * l.uy * l.uz;
  l.e_size = std::size_t(l.ex) * l.ey * l.ez;
  l.hx_size = k.l1 ? 0 : std::size_t(kTileX) * l.ey * l.ez;
  return l;
}

// Loads the block's tile plus its search and patch aprons (mirror border) into U.
__device__ void load_apron(float* U, const float* __restrict__ u, const KernelParams& k, const FusedLayout& l, int x0,
                           int y0, int z0) {
  const int tid = threadIdx.y * kTileX + threadIdx.x, threads = kTileX * kTileY;
  for (int i = tid; i < int(l.u_size); i += threads) {
    const int ix = i % l.ux, iy = (i / l.ux) % l.uy, iz = i / (l.ux * l.uy);
    const int gx = mirror(x0 - l.ax + ix, k.nx), gy = mirror(y0 - l.ay + iy, k.ny), gz = mirror(z0 - l.az + iz, k.nz);
    U[i] = u[((long long)gz * k.ny + gy) * k.nx + gx];
  }
}

// TZ = 1 for 2D images (the z pass disappears); RP > 0 fixes the patch radius at compile time so
// the patch loops unroll (RP = 0: the radius is read at run time).
template <int TZ, int RP>
__global__ void __launch_bounds__(kTileX* kTileY) nlm_fused_kernel(const float* __restrict__ u, float* __restrict__ out,
                                                                   KernelParams k) {
  extern __shared__ float shared[];
  const int rp = RP > 0 ? RP : k.rp;
  const int rpz = TZ > 1 ? rp : 0;
  const FusedLayout l = fused_layout(k, TZ);
  float* U = shared;
  float* E = U + l.u_size;
  float* Hx = E + l.e_size;
  float* Hxy = E;  // E is dead once Hx is formed

  const int x0 = blockIdx.x * kTileX, y0 = blockIdx.y * kTileY, z0 = blockIdx.z * TZ;
  const int tx = threadIdx.x, ty = threadIdx.y;

  load_apron(U, u, k, l, x0, y0, z0);
  __syncthreads();

  const int x = x0 + tx, y = y0 + ty;
  float sum[TZ], weight_sum[TZ], weight_max[TZ];
  int centre[TZ];  // U index of this thread's outputs
#pragma unroll
  for (int t = 0; t < TZ; ++t) {
    sum[t] = weight_sum[t] = weight_max[t] = 0.0f;
    centre[t] = ((t + l.az) * l.uy + ty + l.ay) * l.ux + tx + l.ax;
  }

  for (int dz = -k.rsz; dz <= k.rsz; ++dz)
    for (int dy = -k.rs; dy <= k.rs; ++dy)
      for (int dx = -k.rs; dx <= k.rs; ++dx) {
        if (dx == 0 && dy == 0 && dz == 0) continue;
        const int shift = (dz * l.uy + dy) * l.ux + dx;  // U offset from p to q = p + d
        // E over the tile plus the patch apron: rows (z, y) across threadIdx.y, x across threadIdx.x.
        for (int row = ty; row < l.ey * l.ez; row += kTileY) {
          const int ez = row / l.ey, ey = row - ez * l.ey;
          const float* a = U + ((ez - rpz + l.az) * l.uy + ey - rp + l.ay) * l.ux + l.ax - rp;
          for (int ex = tx; ex < l.ex; ex += kTileX) {
            const float d = a[ex] - a[ex + shift];
            E[row * l.ex + ex] = k.l1 ? fabsf(d) : d * d;
          }
        }
        __syncthreads();
        if (!k.l1) {
          // x pass: one row per thread row, one x per lane.
          for (int row = ty; row < l.ey * l.ez; row += kTileY) {
            const float* e = E + row * l.ex + tx;
            float s = 0;
#pragma unroll
            for (int kx = 0; kx <= 2 * rp; ++kx) s += k.g[kx] * e[kx];
            Hx[row * kTileX + tx] = s;
          }
          __syncthreads();
          if constexpr (TZ > 1) {
            // y pass: every thread its own (x, y), for each z of the tile plus the patch apron.
            for (int ez = 0; ez < l.ez; ++ez) {
              const float* h = Hx + (ez * l.ey + ty) * kTileX + tx;
              float s = 0;
#pragma unroll
              for (int ky = 0; ky <= 2 * rp; ++ky) s += k.g[ky] * h[ky * kTileX];
              Hxy[(ez * kTileY + ty) * kTileX + tx] = s;
            }
            __syncthreads();
          }
        }
        const bool qx_inside = x + dx >= 0 && x + dx < k.nx, qy_inside = y + dy >= 0 && y + dy < k.ny;
#pragma unroll
        for (int t = 0; t < TZ; ++t) {
          const int z = z0 + t;
          if (!(qx_inside && qy_inside && z + dz >= 0 && z + dz < k.nz)) continue;
          float distance = 0;
          if (k.l1) {
            for (int kz = -rpz; kz <= rpz; ++kz)
              for (int ky = -rp; ky <= rp; ++ky)
                for (int kx = -rp; kx <= rp; ++kx) {
                  distance += l1_kernel(kx, ky, kz) * E[((t + kz + rpz) * l.ey + ty + ky + rp) * l.ex + tx + kx + rp];
                }
          } else if constexpr (TZ == 1) {
            const float* h = Hx + ty * kTileX + tx;  // 2D: the y pass gives the distance
#pragma unroll
            for (int ky = 0; ky <= 2 * rp; ++ky) distance += k.g[ky] * h[ky * kTileX];
          } else {
#pragma unroll
            for (int kz = 0; kz <= 2 * rpz; ++kz) distance += k.g[kz] * Hxy[((t + kz) * kTileY + ty) * kTileX + tx];
          }
          const float w = pair_weight(distance, k);
          sum[t] += w * U[centre[t] + shift];
          weight_sum[t] += w;
          weight_max[t] = fmaxf(weight_max[t], w);
        }
        __syncthreads();  // the next displacement overwrites E/Hx/Hxy
      }

  if (x >= k.nx || y >= k.ny) return;
#pragma unroll
  for (int t = 0; t < TZ; ++t) {
    const int z = z0 + t;
    if (z < k.nz) out[((long long)z * k.ny + y) * k.nx + x] = finish(sum[t], weight_sum[t], weight_max[t], U[centre[t]], k);
  }
}

// ---- tiled (Mueller et al.) and zslide (Horáček et al.): the naive arithmetic, reading from shared memory --

// Patch distance of p and q; plane_p(kz) and plane_q(kz) point at p and q shifted by kz along z,
// rows `row` floats apart.
template <class PlaneP, class PlaneQ>
__device__ __forceinline__ float shared_patch_distance(const KernelParams& k, int rpz, int row, PlaneP plane_p,
                                                       PlaneQ plane_q) {
  float distance = 0;
  for (int kz = -rpz; kz <= rpz; ++kz) {
    const float* a = plane_p(kz);
    const float* b = plane_q(kz);
    const float gz = rpz ? k.g[kz + k.rp] : 1.0f;
    for (int ky = -k.rp; ky <= k.rp; ++ky)
      for (int kx = -k.rp; kx <= k.rp; ++kx) {
        const float d = a[ky * row + kx] - b[ky * row + kx];
        distance += k.l1 ? l1_kernel(kx, ky, kz) * fabsf(d) : gz * k.g[ky + k.rp] * k.g[kx + k.rp] * d * d;
      }
  }
  return distance;
}

// Mueller et al. section III.B: the block's apron (Eq. 4) prefetched into shared memory (Fig. 2), the
// fixed patch weights in constant memory (the kernel parameters), then the straightforward loops.
template <int TZ>
__global__ void __launch_bounds__(kTileX* kTileY) nlm_tiled_kernel(const float* __restrict__ u, float* __restrict__ out,
                                                                   KernelParams k) {
  extern __shared__ float U[];
  const FusedLayout l = fused_layout(k, TZ);
  const int x0 = blockIdx.x * kTileX, y0 = blockIdx.y * kTileY, z0 = blockIdx.z * TZ;
  load_apron(U, u, k, l, x0, y0, z0);
  __syncthreads();
  const int x = x0 + threadIdx.x, y = y0 + threadIdx.y;
  if (x >= k.nx || y >= k.ny) return;
  const int plane = l.ux * l.uy;
  for (int t = 0; t < TZ && z0 + t < k.nz; ++t) {
    const int z = z0 + t;
    const int c = ((t + l.az) * l.uy + threadIdx.y + l.ay) * l.ux + threadIdx.x + l.ax;
    float sum = 0, weight_sum = 0, weight_max = 0;
    for (int dz = max(-k.rsz, -z); dz <= min(k.rsz, k.nz - 1 - z); ++dz)
      for (int dy = max(-k.rs, -y); dy <= min(k.rs, k.ny - 1 - y); ++dy)
        for (int dx = max(-k.rs, -x); dx <= min(k.rs, k.nx - 1 - x); ++dx) {
          if (dx == 0 && dy == 0 && dz == 0) continue;
          const int q = c + (dz * l.uy + dy) * l.ux + dx;
          const float distance = shared_patch_distance(
              k, k.rpz, l.ux, [&](int kz) { return U + c + kz * plane; }, [&](int kz) { return U + q + kz * plane; });
          const float w = pair_weight(distance, k);
          sum += w * U[q];
          weight_sum += w;
          weight_max = fmaxf(weight_max, w);
        }
    out[((long long)z * k.ny + y) * k.nx + x] = finish(sum, weight_sum, weight_max, U[c], k);
  }
}

// Horáček et al. section 4.2: one thread per (x, y) column slides along z. The block keeps the planes
// z - A .. z + A of its tile plus apron (A = search + patch radius) in a ring in shared memory and
// loads one new plane per step.
struct ZSlideLayout {
  int a, ux, uy, plane, planes;
  std::size_t bytes() const { return std::size_t(plane) * planes * sizeof(float); }
};

__host__ __device__ inline ZSlideLayout zslide_layout(const KernelParams& k) {
  ZSlideLayout l{};
  l.a = k.rs + k.rp;
  l.ux = kTileX + 2 * l.a;
  l.uy = kTileY + 2 * l.a;
  l.plane = l.ux * l.uy;
  l.planes = 2 * (k.rsz + k.rpz) + 1;
  return l;
}

__global__ void __launch_bounds__(kTileX* kTileY) nlm_zslide_kernel(const float* __restrict__ u, float* __restrict__ out,
                                                                    KernelParams k) {
  extern __shared__ float ring[];
  const ZSlideLayout l = zslide_layout(k);
  const int az = k.rsz + k.rpz;
  const int x0 = blockIdx.x * kTileX, y0 = blockIdx.y * kTileY;
  const int tid = threadIdx.y * kTileX + threadIdx.x, threads = kTileX * kTileY;
  auto plane_at = [&](int z) {
    int slot = z % l.planes;
    if (slot < 0) slot += l.planes;
    return ring + slot * l.plane;
  };
  auto load_plane = [&](int z) {
    float* dst = plane_at(z);
    const long long base = (long long)mirror(z, k.nz) * k.ny;
    for (int i = tid; i < l.plane; i += threads) {
      const int ix = i % l.ux, iy = i / l.ux;
      dst[i] = u[(base + mirror(y0 - l.a + iy, k.ny)) * k.nx + mirror(x0 - l.a + ix, k.nx)];
    }
  };
  for (int z = -az; z < az; ++z) load_plane(z);
  const int x = x0 + threadIdx.x, y = y0 + threadIdx.y;
  const int c = (threadIdx.y + l.a) * l.ux + threadIdx.x + l.a;
  for (int z = 0; z < k.nz; ++z) {
    load_plane(z + az);
    __syncthreads();
    if (x < k.nx && y < k.ny) {
      float sum = 0, weight_sum = 0, weight_max = 0;
      for (int dz = max(-k.rsz, -z); dz <= min(k.rsz, k.nz - 1 - z); ++dz)
        for (int dy = max(-k.rs, -y); dy <= min(k.rs, k.ny - 1 - y); ++dy)
          for (int dx = max(-k.rs, -x); dx <= min(k.rs, k.nx - 1 - x); ++dx) {
            if (dx == 0 && dy == 0 && dz == 0) continue;
            const int q = c + dy * l.ux + dx;
            const float distance = shared_patch_distance(
                k, k.rpz, l.ux, [&](int kz) { return plane_at(z + kz) + c; },
                [&](int kz) { return plane_at(z + dz + kz) + q; });
            const float w = pair_weight(distance, k);
            sum += w * plane_at(z + dz)[q];
            weight_sum += w;
            weight_max = fmaxf(weight_max, w);
          }
      out[((long long)z * k.ny + y) * k.nx + x] = finish(sum, weight_sum, weight_max, plane_at(z)[c], k);
    }
    __syncthreads();  // the next plane replaces the oldest one
  }
}

constexpr int kTileZ3d = 8;



}  // namespace

namespace {

bool uniform_patch(const NlmParams& params) { return params.patch_kernel == PatchKernel::Uniform; }

// Whether `fused` runs as the sliding-sum kernel (else the general one).
bool fused_slides(const KernelParams& k, const NlmParams& params) {
  const std::size_t slide = nlm_slide_shared_bytes(k, uniform_patch(params));
  return slide > 0 && slide <= max_shared_bytes();
}

// Shared memory the variant's kernel takes (0: none).
std::size_t shared_bytes(const KernelParams& k, const Dims& dims, const NlmParams& params, NlmAlgorithm algorithm) {
  const int tile_z = dims.is_2d() ? 1 : kTileZ3d;
  switch (algorithm) {
    case NlmAlgorithm::Fused:
      return fused_slides(k, params) ? nlm_slide_shared_bytes(k, uniform_patch(params)) : fused_layout(k, tile_z).bytes();
    case NlmAlgorithm::Tiled: return fused_layout(k, tile_z).u_size * sizeof(float);
    case NlmAlgorithm::ZSlide: return zslide_layout(k).bytes();
    default: return 0;
  }
}

std::size_t workspace_floats(const KernelParams& k, const NlmParams& params, NlmAlgorithm algorithm) {
  if (algorithm == NlmAlgorithm::Displacement) return nlm_workspace_floats(k, false);
  if (algorithm == NlmAlgorithm::RowWise) return nlm_workspace_floats(k, true);
  if (algorithm == NlmAlgorithm::Fused && fused_slides(k, params)) return nlm_slide_workspace_floats(k);
  return 0;
}

}  // namespace

void check_nlm_supported(const Dims& dims, const NlmParams& params, NlmAlgorithm algorithm) {
  require_device();
  if (algorithm == NlmAlgorithm::Auto || algorithm == NlmAlgorithm::Blockwise) {
    throw Error(ErrorKind::Unsupported, "the NLM algorithm '" + std::string(to_string(algorithm)) +
                                            "' is not available on CUDA (available: naive, tiled, zslide, "
                                            "displacement, rowwise, fused)");
  }
  if (algorithm == NlmAlgorithm::ZSlide && dims.is_2d()) {
    throw Error(ErrorKind::Unsupported, "zslide slides along z and needs a 3D volume; use tiled or fused for 2D images");
  }
  if (algorithm == NlmAlgorithm::Displacement && params.distance == PatchDistance::L1) {
    throw Error(ErrorKind::Unsupported, "the displacement scheme sums patches separably, and the L1 kernel G of seed "
                                        "003 is not separable; use rowwise, fused or naive for L1");
  }
  if (2 * params.patch_radius + 1 > kMaxPatchWidth) {
    throw Error(ErrorKind::Unsupported, "patch_radius " + std::to_string(params.patch_radius) +
                                            " is too large for the CUDA kernels (at most " +
                                            std::to_string((kMaxPatchWidth - 1) / 2) + ")");
  }
  if (dims.count() > kMaxCudaVoxels) {
    throw Error(ErrorKind::Unsupported, "volumes of 2^31 voxels or more are not supported on CUDA yet");
  }
  const KernelParams k = make_params(dims, params);
  const std::size_t need = shared_bytes(k, dims, params, algorithm);
  if (need > max_shared_bytes()) {
    throw Error(ErrorKind::Unsupported, "the " + std::string(to_string(algorithm)) + " kernel needs " +
                                            std::to_string(need / 1024) + " KiB of shared memory for this search "
                                            "window, more than the device has per block; use --algorithm naive");
  }
}

namespace {

void run_variant(const float* in, float* out, const Dims& dims, const NlmParams& params, NlmAlgorithm algorithm,
                 float* workspace, cudaStream_t stream) {
  const KernelParams k = make_params(dims, params);
  if (algorithm == NlmAlgorithm::Displacement) return nlm_displacement_launch(in, out, workspace, k, stream);
  if (algorithm == NlmAlgorithm::RowWise) return nlm_rowwise_launch(in, out, workspace, k, stream);
  if (algorithm == NlmAlgorithm::Fused && fused_slides(k, params)) {
    return nlm_slide_launch(in, out, workspace, k, uniform_patch(params), stream);
  }
  if (algorithm == NlmAlgorithm::Naive) {
    const int block = 256;
    const long long blocks = (dims.count() + block - 1) / block;
    nlm_naive_kernel<<<unsigned(blocks), block, 0, stream>>>(in, out, k);
    CTD_CUDA_CHECK_LAUNCH();
    return;
  }
  const dim3 block(kTileX, kTileY);
  const int tile_z = dims.is_2d() ? 1 : kTileZ3d;
  const dim3 tiles(unsigned((dims.nx + kTileX - 1) / kTileX), unsigned((dims.ny + kTileY - 1) / kTileY));
  if (algorithm == NlmAlgorithm::Tiled) {
    const std::size_t bytes = fused_layout(k, tile_z).u_size * sizeof(float);
    auto kernel = dims.is_2d() ? nlm_tiled_kernel<1> : nlm_tiled_kernel<kTileZ3d>;
    CTD_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
    kernel<<<dim3(tiles.x, tiles.y, unsigned((dims.nz + tile_z - 1) / tile_z)), block, bytes, stream>>>(in, out, k);
    CTD_CUDA_CHECK_LAUNCH();
    return;
  }
  if (algorithm == NlmAlgorithm::ZSlide) {
    const std::size_t bytes = zslide_layout(k).bytes();
    CTD_CUDA_CHECK(cudaFuncSetAttribute(nlm_zslide_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
    nlm_zslide_kernel<<<tiles, block, bytes, stream>>>(in, out, k);
    CTD_CUDA_CHECK_LAUNCH();
    return;
  }
  auto launch = [&](auto kernel, int tile_z) {
    const std::size_t bytes = fused_layout(k, tile_z).bytes();
    CTD_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
    const dim3 grid(unsigned((dims.nx + kTileX - 1) / kTileX), unsigned((dims.ny + kTileY - 1) / kTileY),
                    unsigned((dims.nz + tile_z - 1) / tile_z));
    kernel<<<grid, block, bytes, stream>>>(in, out, k);
    CTD_CUDA_CHECK_LAUNCH();
  };
  // Compile-time patch radii for the common sizes; others read it at run time.
  auto dispatch = [&](auto tile_z) {
    constexpr int TZ = decltype(tile_z)::value;
    switch (k.rp) {
      case 1: launch(nlm_fused_kernel<TZ, 1>, TZ); break;
      case 2: launch(nlm_fused_kernel<TZ, 2>, TZ); break;
      case 3: launch(nlm_fused_kernel<TZ, 3>, TZ); break;
      case 4: launch(nlm_fused_kernel<TZ, 4>, TZ); break;
      case 5: launch(nlm_fused_kernel<TZ, 5>, TZ); break;
      default: launch(nlm_fused_kernel<TZ, 0>, TZ); break;
    }
  };
  if (dims.is_2d()) {
    dispatch(std::integral_constant<int, 1>{});
  } else {
    dispatch(std::integral_constant<int, kTileZ3d>{});
  }
}

}  // namespace

void nlm_device(const float* in, float* out, const Dims& dims, const NlmParams& params, NlmAlgorithm algorithm,
                CudaStream stream) {
  const std::size_t floats = workspace_floats(make_params(dims, params), params, algorithm);
  float* workspace = floats > 0 ? stream_workspace(floats, stream) : nullptr;
  run_variant(in, out, dims, params, algorithm, workspace, stream);
}

namespace {

template <class T>
HostTimes nlm_from_host(ConstVolumeView<T> in, VolumeView<float> out, const NlmParams& params, NlmAlgorithm algorithm,
                        const std::function<void()>& uploaded, bool output_statistics) {
  const KernelParams k = make_params(in.dims, params);
  const std::size_t workspace = workspace_floats(k, params, algorithm);
  // The symmetric 3D kernel starts on the first slices uploaded and its last slices go down while
  // it runs on (nlm_slide_steps).
  const int chunks = step_chunks(in.dims);
  if (algorithm == NlmAlgorithm::Fused && fused_slides(k, params) && chunks > 1) {
    const std::vector<HostStep> steps = nlm_slide_steps(k, chunks);
    if (!steps.empty()) {
      return run_from_host_in_steps(in, out, workspace * sizeof(float), steps, uploaded, output_statistics,
                                    [&](int step, const float* d_in, float* d_out, void* work, cudaStream_t stream) {
                                      nlm_slide_queue_step(d_in, d_out, static_cast<float*>(work), k,
                                                           uniform_patch(params), chunks, step, stream);
                                    });
    }
  }
  return run_from_host(in, out, workspace * sizeof(float), uploaded, output_statistics,
                       [&](const float* d_in, float* d_out, void* work, cudaStream_t stream) {
                         run_variant(d_in, d_out, in.dims, params, algorithm, static_cast<float*>(work), stream);
                       });
}

}  // namespace

HostTimes nlm_host(ConstVolumeView<float> in, VolumeView<float> out, const NlmParams& params, NlmAlgorithm algorithm,
                   const std::function<void()>& uploaded, bool output_statistics) {
  return nlm_from_host(in, out, params, algorithm, uploaded, output_statistics);
}

HostTimes nlm_host(ConstVolumeView<std::int16_t> in, VolumeView<float> out, const NlmParams& params, NlmAlgorithm algorithm,
                   const std::function<void()>& uploaded, bool output_statistics) {
  return nlm_from_host(in, out, params, algorithm, uploaded, output_statistics);
}

}  // namespace ctd::cuda
