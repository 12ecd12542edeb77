// The papers' multi-kernel NLM schemes, one group of kernels per displacement d of half the search
// window (d > 0 in (z, y, x) order), intermediates in a device workspace:
//   displacement (Marques et al., Condat's algorithm): the difference image e = (u(x) - u(x + d))^2 over
//     the volume plus the patch apron, separable patch sums (one kernel per axis, the last one
//     turning the distance into the weight image w(x) = w(x, x + d)), then the accumulation;
//   rowwise (Zhang et al. section 3.3): per image row, the differences go once into shared memory and
//     every voxel's row partial distance is summed from there (for the L1 distance one row sum per
//     distinct |ky|, |kz| of the kernel G); a second kernel sums the rows into the weight image.
// Both accumulate as Marques et al. do last: each voxel x adds w(x) u(x + d) and w(x - d) u(x - d),
// so every write is coalesced and each weight is computed once for both voxels of a pair.

#include "cuda/cuda_check.hpp"
#include "cuda/nlm_kernels.hpp"

namespace ctd::cuda {
namespace {

using namespace nlm_detail;

constexpr int kBlock = 256;
constexpr int kRowBlock = 128;

struct Shift {
  int dx, dy, dz;
};

struct Extents {
  long long ex, ey, ez;  // the volume plus the patch apron
  long long n;           // voxels of the volume
};

Extents extents(const KernelParams& k) {
  return {k.nx + 2LL * k.rp, k.ny + 2LL * k.rp, k.nz + 2LL * k.rpz, (long long)k.nx * k.ny * k.nz};
}

unsigned blocks_for(long long count, int block) { return unsigned((count + block - 1) / block); }

__device__ __forceinline__ float mirrored(const float* __restrict__ u, const KernelParams& k, int x, int y, int z) {
  return u[((long long)mirror(z, k.nz) * k.ny + mirror(y, k.ny)) * k.nx + mirror(x, k.nx)];
}

__device__ __forceinline__ bool pair_inside(const KernelParams& k, int x, int y, int z) {
  return x >= 0 && x < k.nx && y >= 0 && y < k.ny && z >= 0 && z < k.nz;
}

// e(x) = (u(x) - u(x + d))^2 for x in [-rp, n + rp) per axis, mirror border.
__global__ void difference_kernel(const float* __restrict__ u, float* __restrict__ e, KernelParams k, Shift d) {
  const long long ex = k.nx + 2LL * k.rp, ey = k.ny + 2LL * k.rp, count = ex * ey * (k.nz + 2LL * k.rpz);
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= count) return;
  const int x = int(i % ex) - k.rp, y = int((i / ex) % ey) - k.rp, z = int(i / (ex * ey)) - k.rpz;
  const float diff = mirrored(u, k, x, y, z) - mirrored(u, k, x + d.dx, y + d.dy, z + d.dz);
  e[i] = diff * diff;
}

// One separable pass: out(x, y, z) = sum_j g[j] in(.. + j along `axis` ..), j = 0 .. 2 radius;
// `in` is 2 radius longer than `out` along that axis. WEIGHT: the last pass, out = w(p, p + d).
template <bool WEIGHT>
__global__ void patch_pass_kernel(const float* __restrict__ in, float* __restrict__ out, int ox, int oy, int oz,
                                  int axis, KernelParams k, Shift d) {
  const long long count = (long long)ox * oy * oz;
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= count) return;
  const int x = int(i % ox), y = int((i / ox) % oy), z = int(i / ((long long)ox * oy));
  const int radius = axis == 2 ? k.rpz : k.rp;
  const long long ix = ox + (axis == 0 ? 2 * radius : 0), iy = oy + (axis == 1 ? 2 * radius : 0);
  const long long stride = axis == 0 ? 1 : axis == 1 ? ix : ix * iy;
  const float* src = in + ((long long)z * iy + y) * ix + x;
  float s = 0;
  for (int j = 0; j <= 2 * radius; ++j) s = fmaf(k.g[j], src[j * stride], s);
  if constexpr (WEIGHT) {
    out[i] = pair_inside(k, x + d.dx, y + d.dy, z + d.dz) ? pair_weight(s, k) : 0.0f;
  } else {
    out[i] = s;
  }
}

// Seed 003 kernel (11): the row differences once into shared memory, then the row sums, one layer
// per distinct kernel row (L2: one, the patch kernel being separable).
__global__ void row_sums_kernel(const float* __restrict__ u, float* __restrict__ rows, KernelParams k, Shift d) {
  extern __shared__ float e[];
  const long long ex_rows = k.ny + 2LL * k.rp, layer_size = k.nx * ex_rows * (k.nz + 2LL * k.rpz);
  const int row = blockIdx.x, ye = row % int(ex_rows), ze = row / int(ex_rows);  // rows on x: y may exceed 65535
  const int y = ye - k.rp, z = ze - k.rpz, x0 = blockIdx.y * kRowBlock;
  for (int j = threadIdx.x; j < kRowBlock + 2 * k.rp; j += kRowBlock) {
    const int x = x0 - k.rp + j;
    if (x - k.rp >= k.nx) break;
    const float diff = mirrored(u, k, x, y, z) - mirrored(u, k, x + d.dx, y + d.dy, z + d.dz);
    e[j] = k.l1 ? fabsf(diff) : diff * diff;
  }
  __syncthreads();
  const int x = x0 + threadIdx.x;
  if (x >= k.nx) return;
  const long long at = ((long long)ze * ex_rows + ye) * k.nx + x;
  if (!k.l1) {
    float s = 0;
    for (int j = 0; j <= 2 * k.rp; ++j) s = fmaf(k.g[j], e[threadIdx.x + j], s);
    rows[at] = s;
    return;
  }
  for (int kz = 0; kz <= k.rpz; ++kz)
    for (int ky = 0; ky <= k.rp; ++ky) {
      float s = 0;
      for (int kx = -k.rp; kx <= k.rp; ++kx) s = fmaf(l1_kernel(kx, ky, kz), e[threadIdx.x + kx + k.rp], s);
      rows[(kz * (k.rp + 1) + ky) * layer_size + at] = s;
    }
}

// Seed 003 kernel (12): the patch distance from the row sums, then the weight w(p, p + d).
__global__ void row_columns_kernel(const float* __restrict__ rows, float* __restrict__ weights, KernelParams k,
                                   Shift d) {
  const long long n = (long long)k.nx * k.ny * k.nz;
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const int x = int(i % k.nx), y = int((i / k.nx) % k.ny), z = int(i / ((long long)k.nx * k.ny));
  const long long ex_rows = k.ny + 2LL * k.rp, layer_size = k.nx * ex_rows * (k.nz + 2LL * k.rpz);
  float s = 0;
  for (int kz = -k.rpz; kz <= k.rpz; ++kz)
    for (int ky = -k.rp; ky <= k.rp; ++ky) {
      const long long at = ((long long)(z + kz + k.rpz) * ex_rows + y + ky + k.rp) * k.nx + x;
      if (k.l1) {
        s += rows[(abs(kz) * (k.rp + 1) + abs(ky)) * layer_size + at];
      } else {
        s = fmaf(k.g[ky + k.rp] * (k.rpz ? k.g[kz + k.rp] : 1.0f), rows[at], s);
      }
    }
  weights[i] = pair_inside(k, x + d.dx, y + d.dy, z + d.dz) ? pair_weight(s, k) : 0.0f;
}

struct Accumulators {
  float *sum, *weight_sum, *weight_max;
};

// Seed 004's coalesced update: voxel x takes w(x) u(x + d) and w(x - d) u(x - d).
__global__ void gather_kernel(const float* __restrict__ u, const float* __restrict__ weights, Accumulators a,
                              KernelParams k, Shift d) {
  const long long n = (long long)k.nx * k.ny * k.nz;
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const int x = int(i % k.nx), y = int((i / k.nx) % k.ny), z = int(i / ((long long)k.nx * k.ny));
  const long long offset = ((long long)d.dz * k.ny + d.dy) * k.nx + d.dx;
  float sum = a.sum[i], weight_sum = a.weight_sum[i], weight_max = a.weight_max[i];
  if (pair_inside(k, x + d.dx, y + d.dy, z + d.dz)) {
    const float w = weights[i];
    sum = fmaf(w, u[i + offset], sum);
    weight_sum += w;
    weight_max = fmaxf(weight_max, w);
  }
  if (pair_inside(k, x - d.dx, y - d.dy, z - d.dz)) {
    const float w = weights[i - offset];
    sum = fmaf(w, u[i - offset], sum);
    weight_sum += w;
    weight_max = fmaxf(weight_max, w);
  }
  a.sum[i] = sum;
  a.weight_sum[i] = weight_sum;
  a.weight_max[i] = weight_max;
}

__global__ void finish_kernel(const float* __restrict__ u, Accumulators a, float* __restrict__ out, KernelParams k) {
  const long long n = (long long)k.nx * k.ny * k.nz;
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  out[i] = finish(a.sum[i], a.weight_sum[i], a.weight_max[i], u[i], k);
}

// Workspace: weights, the three accumulators, then the scheme's own images.
struct Workspace {
  float* weights;
  Accumulators acc;
  float* rest;
};

Workspace split(float* workspace, const Extents& e) {
  return {workspace, {workspace + e.n, workspace + 2 * e.n, workspace + 3 * e.n}, workspace + 4 * e.n};
}

int l1_layers(const KernelParams& k) { return k.l1 ? (k.rp + 1) * (k.rpz + 1) : 1; }

// Runs `per_displacement(d)` for every d of half the window, between clearing the accumulators
// and the final division.
template <class PerDisplacement>
void over_half_window(const float* in, float* out, const Workspace& w, const KernelParams& k, cudaStream_t stream,
                      PerDisplacement per_displacement) {
  const Extents e = extents(k);
  CTD_CUDA_CHECK(cudaMemsetAsync(w.acc.sum, 0, 3 * e.n * sizeof(float), stream));
  for (int dz = 0; dz <= k.rsz; ++dz)
    for (int dy = dz > 0 ? -k.rs : 0; dy <= k.rs; ++dy)
      for (int dx = (dz > 0 || dy > 0) ? -k.rs : 1; dx <= k.rs; ++dx) {
        const Shift d{dx, dy, dz};
        per_displacement(d);
        gather_kernel<<<blocks_for(e.n, kBlock), kBlock, 0, stream>>>(in, w.weights, w.acc, k, d);
        CTD_CUDA_CHECK_LAUNCH();
      }
  finish_kernel<<<blocks_for(e.n, kBlock), kBlock, 0, stream>>>(in, w.acc, out, k);
  CTD_CUDA_CHECK_LAUNCH();
}

}  // namespace

std::size_t nlm_workspace_floats(const KernelParams& k, bool rowwise) {
  const Extents e = extents(k);
  const std::size_t common = 4 * std::size_t(e.n);
  if (rowwise) return common + std::size_t(l1_layers(k)) * k.nx * e.ey * e.ez;
  return common + std::size_t(e.ex * e.ey * e.ez) + std::size_t(k.nx * e.ey * e.ez) + std::size_t(k.nx) * k.ny * e.ez;
}

void nlm_displacement_launch(const float* in, float* out, float* workspace, const KernelParams& k, cudaStream_t stream) {
  const Extents e = extents(k);
  const Workspace w = split(workspace, e);
  float* diff = w.rest;
  float* along_x = diff + e.ex * e.ey * e.ez;
  float* along_xy = along_x + k.nx * e.ey * e.ez;
  const bool flat = k.rsz == 0;
  over_half_window(in, out, w, k, stream, [&](Shift d) {
    difference_kernel<<<blocks_for(e.ex * e.ey * e.ez, kBlock), kBlock, 0, stream>>>(in, diff, k, d);
    patch_pass_kernel<false><<<blocks_for(k.nx * e.ey * e.ez, kBlock), kBlock, 0, stream>>>(
        diff, along_x, k.nx, int(e.ey), int(e.ez), 0, k, d);
    if (flat) {
      patch_pass_kernel<true><<<blocks_for(e.n, kBlock), kBlock, 0, stream>>>(along_x, w.weights, k.nx, k.ny, 1, 1, k, d);
    } else {
      patch_pass_kernel<false><<<blocks_for(k.nx * k.ny * e.ez, kBlock), kBlock, 0, stream>>>(
          along_x, along_xy, k.nx, k.ny, int(e.ez), 1, k, d);
      patch_pass_kernel<true><<<blocks_for(e.n, kBlock), kBlock, 0, stream>>>(along_xy, w.weights, k.nx, k.ny, k.nz, 2,
                                                                               k, d);
    }
    CTD_CUDA_CHECK_LAUNCH();
  });
}

void nlm_rowwise_launch(const float* in, float* out, float* workspace, const KernelParams& k, cudaStream_t stream) {
  const Extents e = extents(k);
  const Workspace w = split(workspace, e);
  const dim3 row_grid(unsigned(e.ey * e.ez), blocks_for(k.nx, kRowBlock));
  const std::size_t row_bytes = (kRowBlock + 2 * k.rp) * sizeof(float);
  over_half_window(in, out, w, k, stream, [&](Shift d) {
    row_sums_kernel<<<row_grid, kRowBlock, row_bytes, stream>>>(in, w.rest, k, d);
    row_columns_kernel<<<blocks_for(e.n, kBlock), kBlock, 0, stream>>>(w.rest, w.weights, k, d);
    CTD_CUDA_CHECK_LAUNCH();
  });
}

}  // namespace ctd::cuda
