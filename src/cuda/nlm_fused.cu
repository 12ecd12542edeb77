// fused NLM, sliding sums: the fast exact kernel for the L2 distance (uniform or Gaussian patch).
//
// A block loads its tile plus the search and patch aprons into shared memory once (mirror border).
// Then, per displacement d of the search window, the patch distance of every tile voxel is a
// separable sum of e = (u(p) - u(p + d))^2, done in passes that each keep a run of values in
// registers and slide along it (a running sum for the uniform patch, so O(1) per output):
//   2D, tile 64 x 32: pass A: one thread per (row, 16 columns) forms e and the row sums Hx;
//       pass B: one thread per (column, 8 rows) sums Hx down the column, turns the distance into
//       a weight and accumulates in registers. Hx is double-buffered: one barrier per d.
//   3D, tile 32 x 8 x 8: pass A per (y, z) row of 32, pass B per (x, z) column along y (Hxy),
//       pass C per (x, y) column along z, weights in registers. Two barriers per d.
// The symmetric kernels (2D and 3D, below) walk half the window and compute each unordered pair once.
// Nothing goes to global memory but the output, and every voxel sums its terms in a fixed order:
// deterministic. The patch row of p (independent of d) stays in registers across displacements.
// A 2D image too small to fill the GPU with tiles also splits the search window: blockIdx.z takes
// a contiguous range of displacements and writes its partial sums, and a second kernel adds the
// ranges in order (still deterministic).

#include "cuda/cuda_check.hpp"
#include "cuda/nlm_kernels.hpp"

#include <ctdenoise/error.hpp>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <type_traits>
#include <vector>

namespace ctd::cuda {
namespace {

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

__device__ void load_tile(float* U, const float* __restrict__ u, const KernelParams& k, const SlideLayout& l, int x0,
                          int y0, int z0) {
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

// Partial sums of one range of displacements: [part][sum, weight sum, weight max][voxel].
struct Partials {
  float* data;  // null: one range, write the output directly
  int parts;
};

__device__ __forceinline__ void store_result(float* out, const Partials& partials, long long n, long long i, float sum,
                                             float weight_sum, float weight_max, float centre, const KernelParams& k) {
  if (partials.data == nullptr) {
    out[i] = finish(sum, weight_sum, weight_max, centre, k);
    return;
  }
  float* part = partials.data + 3 * n * blockIdx.z;
  part[i] = sum;
  part[n + i] = weight_sum;
  part[2 * n + i] = weight_max;
}

__global__ void combine_partials_kernel(const float* __restrict__ u, Partials partials, float* __restrict__ out,
                                        KernelParams k) {
  const long long n = (long long)k.nx * k.ny * k.nz;
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float sum = 0, weight_sum = 0, weight_max = 0;
  for (int s = 0; s < partials.parts; ++s) {
    const float* part = partials.data + 3 * n * s;
    sum += part[i];
    weight_sum += part[n + i];
    weight_max = fmaxf(weight_max, part[2 * n + i]);
  }
  out[i] = finish(sum, weight_sum, weight_max, u[i], k);
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

// The window walk of the 2D kernels: pass A runs one displacement ahead of pass B, into the other
// half of the double buffer H (hbuf floats each); interior blocks skip pass B's border tests.
// pass_b(dx, dy, H, check_border, last) learns whether this is the walk's last displacement.
template <typename PassA, typename PassB>
__device__ __forceinline__ void walk_double_buffered(WindowWalk walk, float* H, int hbuf, bool inside, PassA pass_a,
                                                     PassB pass_b) {
  if (walk.left > 0) pass_a(walk.dx, walk.dy, H);
  __syncthreads();
  for (int buffer = 0; walk.left > 0; buffer ^= 1) {
    const int dx = walk.dx, dy = walk.dy;
    walk.step();
    const bool last = walk.left == 0;
    if (!last) pass_a(walk.dx, walk.dy, H + (buffer ^ 1) * hbuf);
    if (inside) {
      pass_b(dx, dy, H + buffer * hbuf, std::false_type{}, last);
    } else {
      pass_b(dx, dy, H + buffer * hbuf, std::true_type{}, last);
    }
    __syncthreads();
  }
}

template <int RP, bool UNIFORM, bool CENTRE_MAX>
__global__ void __launch_bounds__(kThreads, 3) nlm_slide2d_kernel(const float* __restrict__ u, float* __restrict__ out,
                                                                  KernelParams k, Partials partials) {
  constexpr int kRowsA = kTy2 + 2 * RP, kRunA = kChunk2 + 2 * RP;
  static_assert((kTx2 / kChunk2) * kRowsA <= kThreads, "pass A: one run per thread");
  extern __shared__ float shared[];
  const SlideLayout l = slide_layout(k);
  float* U = shared;
  float* H = U + l.u_floats;
  const int hbuf = kRowsA * kHs2;
  const int x0 = blockIdx.x * kTx2, y0 = blockIdx.y * kTy2;
  load_tile(U, u, k, l, x0, y0, 0);
  __syncthreads();

  const int tid = threadIdx.x;
  // Pass A: row ra (tile row ra - RP), columns ca * 16 - RP ...; neighbouring lanes take neighbouring rows.
  const bool a_active = tid < (kTx2 / kChunk2) * kRowsA;
  const int ra = tid % kRowsA, ca = tid / kRowsA;
  const int a_base = (l.a - RP + ra) * l.sx + l.a - RP + ca * kChunk2;
  float own[kRunA];  // u(p + k) along this row: the same for every displacement
#pragma unroll
  for (int j = 0; j < kRunA; ++j) own[j] = a_active ? U[a_base + j] : 0.0f;
  // Pass B: column cb, tile rows gb * 8 ... gb * 8 + 7.
  const int cb = tid % kTx2, gb = tid / kTx2;
  const int x = x0 + cb, yb = y0 + gb * kRy2;
  const float* q_base = U + (l.a + gb * kRy2) * l.sx + l.a + cb;
  Accumulators<kRy2, CENTRE_MAX> acc;
  const bool inside = window_inside(k, x0, y0, 0, kTx2, kTy2, 0);

  auto pass_a = [&](int dx, int dy, float* Hx) {
    if (a_active) row_patch_sums<RP, kChunk2, UNIFORM>(own, U + a_base + dy * l.sx + dx, Hx + ra * kHs2 + ca * kChunk2, k.g);
  };
  auto pass_b = [&](int dx, int dy, const float* Hx, auto check_border, bool /*last*/) {
    constexpr bool kCheck = decltype(check_border)::value;
    if (kCheck && (x + dx < 0 || x + dx >= k.nx)) return;  // q outside for the whole column
    float distance[kRy2];
    strided_patch_sums<RP, kRy2, UNIFORM>(Hx + gb * kRy2 * kHs2 + cb, kHs2, distance, k.g);
    const float* q = q_base + dy * l.sx + dx;
#pragma unroll
    for (int t = 0; t < kRy2; ++t) {
      float w = l2_weight(distance[t], k);
      if (kCheck && unsigned(yb + t + dy) >= unsigned(k.ny)) w = 0.0f;
      acc.add(t, w, q[t * l.sx]);
    }
  };

  walk_double_buffered(WindowWalk::part_of(k, blockIdx.z, gridDim.z), H, hbuf, inside, pass_a, pass_b);

  if (x >= k.nx) return;
#pragma unroll
  for (int t = 0; t < kRy2; ++t) {
    const int y = yb + t;
    if (y < k.ny) {
      store_result(out, partials, (long long)k.nx * k.ny, (long long)y * k.nx + x, acc.sum[t], acc.weight_sum[t],
                   acc.weight_max[t], q_base[t * l.sx], k);
    }
  }
}

// Pass B of the 3D kernels: the columns (x = i % 32, plane i / 32), i = tid, tid + 256, ..., of Hx
// summed down y into Hxy; their offsets computed once per thread.
template <int RP, int PLANES, bool UNIFORM>
struct ColumnSums3d {
  static constexpr int kColumns = kTx3 * PLANES, kPerThread = (kColumns + kThreads - 1) / kThreads;
  int src[kPerThread], dst[kPerThread];
  bool exists[kPerThread];
  __device__ explicit ColumnSums3d(int tid) {
#pragma unroll
    for (int j = 0; j < kPerThread; ++j) {
      const int i = tid + j * kThreads;
      exists[j] = (j == 0 && kColumns >= kThreads) || i < kColumns;
      src[j] = (i / kTx3) * (kTy3 + 2 * RP) * kHs3 + i % kTx3;
      dst[j] = (i / kTx3) * kTy3 * kTx3 + i % kTx3;
    }
  }
  __device__ __forceinline__ void operator()(const float* Hx, float* Hxy, const float* g) const {
#pragma unroll
    for (int j = 0; j < kPerThread; ++j) {
      if (!exists[j]) continue;
      float h[kTy3];
      strided_patch_sums<RP, kTy3, UNIFORM>(Hx + src[j], kHs3, h, g);
#pragma unroll
      for (int t = 0; t < kTy3; ++t) Hxy[dst[j] + t * kTx3] = h[t];
    }
  }
};

// The window walk of the 3D kernels, pass A one displacement ahead; the passes get the walk (its
// dx, dy, dz and whether it slid). Hazards: pass A of the next d writes Hx, read by pass B before the
// barrier in between; pass B writes Hxy, read by pass C of the previous d before the barrier after
// pass A; the symmetric kernel's S is written by pass C only, two barriers apart from one d to the
// next. Interior blocks skip pass C's border tests.
template <typename PassA, typename PassB, typename PassC>
__device__ __forceinline__ void walk_three_passes(WindowWalk walk, bool inside, PassA pass_a, PassB pass_b,
                                                  PassC pass_c) {
  if (walk.left > 0) pass_a(walk);
  __syncthreads();
  while (walk.left > 0) {
    pass_b();
    __syncthreads();
    if (inside) {
      pass_c(walk, std::false_type{});
    } else {
      pass_c(walk, std::true_type{});
    }
    walk.step();
    if (walk.left > 0) pass_a(walk);
    __syncthreads();
  }
}

template <int RP, bool UNIFORM, bool CENTRE_MAX>
__global__ void __launch_bounds__(kThreads, 2) nlm_slide3d_kernel(const float* __restrict__ u, float* __restrict__ out,
                                                                  KernelParams k, Partials /*one range in 3D*/) {
  constexpr int kRowsY = kTy3 + 2 * RP, kPlanes = kTz3 + 2 * RP, kRunA = kTx3 + 2 * RP;
  static_assert(kRowsY * kPlanes <= kThreads, "pass A: one row per thread");
  extern __shared__ float shared[];
  const SlideLayout l = slide_layout(k);
  float* U = shared;
  float* Hx = U + l.u_floats;                // [plane][row][kHs3]
  float* Hxy = Hx + kPlanes * kRowsY * kHs3;  // [plane][y][kTx3]
  const int x0 = blockIdx.x * kTx3, y0 = blockIdx.y * kTy3, z0 = blockIdx.z * kTz3;
  load_tile(U, u, k, l, x0, y0, z0);
  __syncthreads();

  const int tid = threadIdx.x;
  const int plane = l.sx * l.uy;
  // Pass A: the whole tile row (ry, rz), i.e. tile y = ry - RP, z = rz - RP.
  const bool a_active = tid < kRowsY * kPlanes;
  const int ry = tid % kRowsY, rz = tid / kRowsY;
  const int a_base = (l.az - RP + rz) * plane + (l.a - RP + ry) * l.sx + l.a - RP;
  float own[kRunA];
#pragma unroll
  for (int j = 0; j < kRunA; ++j) own[j] = a_active ? U[a_base + j] : 0.0f;
  const ColumnSums3d<RP, kPlanes, UNIFORM> column_sums(tid);
  // Pass C: column (xc, yc) along z.
  const int xc = tid % kTx3, yc = tid / kTx3;
  const int x = x0 + xc, y = y0 + yc;
  const float* q_base = U + l.az * plane + (l.a + yc) * l.sx + l.a + xc;
  Accumulators<kTz3, CENTRE_MAX> acc;
  const bool inside = window_inside(k, x0, y0, z0, kTx3, kTy3, kTz3);

  auto pass_a = [&](const WindowWalk& d) {
    if (a_active) {
      row_patch_sums<RP, kTx3, UNIFORM>(own, U + a_base + d.dz * plane + d.dy * l.sx + d.dx,
                                        Hx + (rz * kRowsY + ry) * kHs3, k.g);
    }
  };
  auto pass_c = [&](const WindowWalk& d, auto check_border) {
    constexpr bool kCheck = decltype(check_border)::value;
    if (kCheck && (x + d.dx < 0 || x + d.dx >= k.nx || y + d.dy < 0 || y + d.dy >= k.ny)) return;
    float distance[kTz3];
    strided_patch_sums<RP, kTz3, UNIFORM>(Hxy + yc * kTx3 + xc, kTy3 * kTx3, distance, k.g);
    const float* q = q_base + d.dz * plane + d.dy * l.sx + d.dx;
#pragma unroll
    for (int t = 0; t < kTz3; ++t) {
      float w = l2_weight(distance[t], k);
      if (kCheck && unsigned(z0 + t + d.dz) >= unsigned(k.nz)) w = 0.0f;
      acc.add(t, w, q[t * plane]);
    }
  };

  walk_three_passes(WindowWalk::part_of(k, 0, 1), inside, pass_a, [&] { column_sums(Hx, Hxy, k.g); }, pass_c);

  if (x >= k.nx || y >= k.ny) return;
#pragma unroll
  for (int t = 0; t < kTz3; ++t) {
    const int z = z0 + t;
    if (z < k.nz) {
      out[((long long)z * k.ny + y) * k.nx + x] =
          finish(acc.sum[t], acc.weight_sum[t], acc.weight_max[t], q_base[t * plane], k);
    }
  }
}

// ---- 3D, symmetric: each unordered pair once -------------------------------------------------
//
// The half of the window after the centre in walk order (dz > 0, or dz = 0 and dy > 0, or dz = dy
// = 0 and dx > 0), on a tile of 32 x 8 x 4 with the one-sided kernel's passes A, B and C. The
// weight of (p, p + d) goes to p in registers and to p + d in a shared accumulator S over the
// targets (tile + search apron in x and y, + dz in z); p -> p + d is one-to-one for a fixed d and
// the barriers order the displacements, so no two threads meet in S. At the end a block adds its
// own sums into S and S into two global accumulators (sum, weight sum) by plain read-modify-write:
// the blocks run in colours (launches) whose S regions do not overlap, so every voxel receives its
// blocks' sums in a fixed order (deterministic), and the workspace is two floats per voxel.
constexpr int kTz3s = 4;

struct Sym3Layout {
  SlideLayout u;         // U: z from z0 - rp to z0 + 4 + rsz + rp
  int sx, sy, sz;        // S extents: targets x0 - rs ..., y0 - rs ..., z0 ...
  std::size_t hx_floats, hxy_floats;
  std::size_t s_floats() const { return 2 * std::size_t(sx) * sy * sz; }
  std::size_t bytes() const { return (u.u_floats + hx_floats + hxy_floats + s_floats()) * sizeof(float); }
};

__host__ __device__ inline Sym3Layout sym3_layout(const KernelParams& k) {
  Sym3Layout l{};
  l.u = u_layout(kTx3, kTy3, k.rs + k.rp, k.rp, kTz3s + k.rsz + 2 * k.rp);
  const int rows = kTy3 + 2 * k.rp, planes = kTz3s + 2 * k.rp;
  l.hx_floats = std::size_t(planes) * rows * kHs3;
  l.hxy_floats = (std::size_t(planes) * kTy3 * kTx3 + 1) / 2 * 2;  // S after Hxy takes float2
  l.sx = kTx3 + 2 * k.rs;
  l.sy = kTy3 + 2 * k.rs;
  l.sz = kTz3s + k.rsz;
  return l;
}

// Colours: tiles `step` apart along an axis have disjoint S regions.
struct Sym3Colours {
  int step_x, step_y, step_z;
};

__host__ __device__ inline Sym3Colours sym3_colours(const Sym3Layout& l) {
  return {(l.sx + kTx3 - 1) / kTx3, (l.sy + kTy3 - 1) / kTy3, (l.sz + kTz3s - 1) / kTz3s};
}

template <int RP, bool UNIFORM>
__global__ void __launch_bounds__(kThreads, 2) nlm_sym3d_kernel(const float* __restrict__ u, KernelParams k,
                                                                Sym3Layout l, int3 colour, Sym3Colours steps,
                                                                float* __restrict__ sums) {
  constexpr int kRowsY = kTy3 + 2 * RP, kPlanes = kTz3s + 2 * RP, kRows = kRowsY * kPlanes;
  // Pass A: half rows where they all fit in one round, else whole rows; a half row's shifted run
  // stays in registers (a whole row's would spill).
  constexpr int kSplitA = 2 * kRows <= kThreads ? 2 : 1, kRunA = kTx3 / kSplitA;
  constexpr bool kSlideA = kSplitA == 2;
  static_assert(kRows * kSplitA <= kThreads, "pass A: one run per thread");
  extern __shared__ float shared[];
  float* U = shared;
  float* Hx = U + l.u.u_floats;   // [plane][row][kHs3]
  float* Hxy = Hx + l.hx_floats;  // [plane][y][kTx3]
  float2* S = reinterpret_cast<float2*>(Hxy + l.hxy_floats);
  const int x0 = (blockIdx.x * steps.step_x + colour.x) * kTx3, y0 = (blockIdx.y * steps.step_y + colour.y) * kTy3,
            z0 = (blockIdx.z * steps.step_z + colour.z) * kTz3s;
  load_tile(U, u, k, l.u, x0, y0, z0);
  const int s_count = l.sx * l.sy * l.sz;
  for (int i = threadIdx.x; i < s_count; i += kThreads) S[i] = make_float2(0.0f, 0.0f);
  __syncthreads();

  const int tid = threadIdx.x;
  const int plane = l.u.sx * l.u.uy, s_plane = l.sx * l.sy;
  // Pass A: run `half` of the tile row (ry, rz), i.e. tile y = ry - RP, z = rz - RP.
  const bool a_active = tid < kRows * kSplitA;
  const int row = tid % kRows, half = tid / kRows;
  const int ry = row % kRowsY, rz = row / kRowsY;
  const int a_base = rz * plane + (l.u.a - RP + ry) * l.u.sx + l.u.a - RP + half * kRunA;
  float* const a_dst = Hx + row * kHs3 + half * kRunA;
  float own[kRunA + 2 * RP];
#pragma unroll
  for (int j = 0; j < kRunA + 2 * RP; ++j) own[j] = a_active ? U[a_base + j] : 0.0f;
  const ColumnSums3d<RP, kPlanes, UNIFORM> column_sums(tid);
  // Pass C: column (xc, yc), outputs z0 ... z0 + 3; u(p) stays in registers for the targets' sums.
  const int xc = tid % kTx3, yc = tid / kTx3;
  const int x = x0 + xc, y = y0 + yc;
  const float* p_base = U + l.u.az * plane + (l.u.a + yc) * l.u.sx + l.u.a + xc;
  float centre[kTz3s];
#pragma unroll
  for (int t = 0; t < kTz3s; ++t) centre[t] = p_base[t * plane];
  float2* s_base = S + (yc + k.rs) * l.sx + xc + k.rs;
  Accumulators<kTz3s, false> acc;
  const bool inside = window_inside(k, x0, y0, z0, kTx3, kTy3, kTz3s);

  ShiftedRun<kRunA + 2 * RP> shifted;
  auto pass_a = [&](const WindowWalk& d) {
    if (!a_active) return;
    const float* src = U + a_base + d.dz * plane + d.dy * l.u.sx + d.dx;
    if constexpr (kSlideA) {
      shifted.update(src, d.slid);
      row_patch_sums<RP, kRunA, UNIFORM>(own, shifted.v, a_dst, k.g);
    } else {
      row_patch_sums<RP, kRunA, UNIFORM>(own, src, a_dst, k.g);
    }
  };
  auto pass_c = [&](const WindowWalk& d, auto check_border) {
    constexpr bool kCheck = decltype(check_border)::value;
    // A pair counts where both p and p + d are voxels (p outside: the tile's overhang).
    if (kCheck &&
        (x >= k.nx || y >= k.ny || unsigned(x + d.dx) >= unsigned(k.nx) || unsigned(y + d.dy) >= unsigned(k.ny)))
      return;
    float distance[kTz3s];
    strided_patch_sums<RP, kTz3s, UNIFORM>(Hxy + yc * kTx3 + xc, kTy3 * kTx3, distance, k.g);
    const float* q = p_base + d.dz * plane + d.dy * l.u.sx + d.dx;
    float2* target = s_base + d.dz * s_plane + d.dy * l.sx + d.dx;
    // The targets' sums all loaded before any is stored: the compiler cannot tell that the entries
    // differ, and would otherwise wait for each store before the next load.
    float2 s[kTz3s];
#pragma unroll
    for (int t = 0; t < kTz3s; ++t) s[t] = target[t * s_plane];
#pragma unroll
    for (int t = 0; t < kTz3s; ++t) {
      float w = l2_weight(distance[t], k);
      if (kCheck && z0 + t + d.dz >= k.nz) w = 0.0f;  // p + d beyond the last slice (or p itself)
      acc.add(t, w, q[t * plane]);
      s[t].x = fmaf(w, centre[t], s[t].x);
      s[t].y += w;
    }
#pragma unroll
    for (int t = 0; t < kTz3s; ++t) target[t * s_plane] = s[t];
  };

  const int wx = 2 * k.rs + 1, window = wx * wx * (2 * k.rsz + 1);
  walk_three_passes(WindowWalk(k, window / 2 + 1, window), inside, pass_a, [&] { column_sums(Hx, Hxy, k.g); }, pass_c);

  // The own sums join S (each thread its own entries), then S joins the global sums.
  if (x < k.nx && y < k.ny) {
#pragma unroll
    for (int t = 0; t < kTz3s; ++t) {
      float2& s = s_base[t * s_plane];
      s.x += acc.sum[t];
      s.y += acc.weight_sum[t];
    }
  }
  __syncthreads();
  // In batches whose loads all go out before the first store (the compiler cannot tell that the
  // entries differ): the read-modify-writes are latency-bound otherwise.
  constexpr int kBatch = 4;
  const long long n = (long long)k.nx * k.ny * k.nz;
  for (int first = tid; first < s_count; first += kBatch * kThreads) {
    long long v[kBatch];
    float2 old[kBatch];
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      const int i = first + b * kThreads;
      const int gx = x0 - k.rs + i % l.sx, gy = y0 - k.rs + i / l.sx % l.sy, gz = z0 + i / s_plane;
      const bool voxel = i < s_count && unsigned(gx) < unsigned(k.nx) && unsigned(gy) < unsigned(k.ny) && gz < k.nz;
      v[b] = voxel ? ((long long)gz * k.ny + gy) * k.nx + gx : -1;
      if (voxel) old[b] = make_float2(sums[v[b]], sums[n + v[b]]);
    }
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      if (v[b] < 0) continue;
      const float2 add = S[first + b * kThreads];
      sums[v[b]] = old[b].x + add.x;
      sums[n + v[b]] = old[b].y + add.y;
    }
  }
}

// The output voxels [first, end) from the sums.
__global__ void sym3d_finish_kernel(const float* __restrict__ u, const float* __restrict__ sums,
                                    float* __restrict__ out, KernelParams k, long long first, long long end) {
  const long long n = (long long)k.nx * k.ny * k.nz;
  const long long i = first + (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < end) out[i] = finish(sums[i], sums[n + i], 0.0f, u[i], k);
}

// ---- 2D, symmetric: each unordered pair once ------------------------------------------------
//
// Half the search window (dy > 0, or dy = 0 and dx > 0), walked row by row, dx fastest. The
// weight of the pair (p, p + d) goes to p in registers and to p + d in a shared accumulator S
// over the tile and its apron (p -> p + d is one-to-one for a fixed d and every displacement ends
// at a barrier, so no two threads meet in S and the order of the additions is fixed). At the end
// a block writes its own sums and its S; a second kernel adds, for each voxel, its own sums and
// the S entries of every block whose apron covers it, in a fixed order: deterministic. The window
// is cut into parts of consecutive rows (blockIdx.z); a part's S spans its rows only.
// Two kernels do this:
//   rows: the one-sided kernel's passes (A along rows, B down columns), and a read-modify-write
//       of S per pair. 80 registers: three blocks per SM where S is small.
//   ring: the passes turned by a quarter: pass A (one thread per column and 16 rows) sums e down
//       the patch columns into Hy, pass B (one thread per row and 8 columns) sums Hy along the
//       row, turns the distances into weights and accumulates. The sums for p + d go through a
//       ring of 8 register accumulators that slides with dx: from one displacement to the next,
//       output t's target is output t + 1's before, so a step hands over only the leaving target
//       to S and loads only one new u(p + d); at the end of a window row the ring is handed over
//       whole. A quarter of rows' shared-memory traffic per pair, but 128 registers: two blocks
//       per SM, which is what rows gets anyway where S is large (search radius above ~15).

struct HalfWindowPart {
  int begin, end;    // indices in the whole window (centre + 1 .. count - 1 for all parts)
  int dy_lo, dy_hi;  // rows of the window it touches
};

__host__ __device__ inline HalfWindowPart half_window_part(const KernelParams& k, int part, int parts) {
  const int wx = 2 * k.rs + 1, centre = wx * wx / 2;  // the half window has `centre` displacements
  HalfWindowPart h{};
  h.begin = centre + 1 + int((long long)centre * part / parts);
  h.end = centre + 1 + int((long long)centre * (part + 1) / parts);
  if (h.begin < h.end) {
    h.dy_lo = h.begin / wx - k.rs;
    h.dy_hi = (h.end - 1) / wx - k.rs;
  }
  return h;
}

// Hy row stride: odd, so that pass B's lanes read down a column without bank conflicts.
__host__ __device__ constexpr int hy_stride(int rp) { return (kTx2 + 2 * rp) | 1; }

struct SymLayout {
  int parts, span;    // window parts; largest dy_hi - dy_lo of a part
  int sw, sh;         // S: (tile width + 2 rs, padded to odd) x (tile height + span)
  bool ring;          // the ring kernel's layout, else the rows kernel's
  int ux, uy;         // U holds the shifted rows only
  int u_stride;       // rows: row stride; ring: column stride (U column by column); odd
  int channels;       // sum, weight sum, and the running max where the centre weight needs it
  int nbx, nby;       // tiles
  std::size_t u_floats, h_floats, s_floats;  // s_floats: one channel
  std::size_t bytes() const { return (u_floats + h_floats + s_floats * channels) * sizeof(float); }
  __host__ __device__ std::size_t region_floats() const { return s_floats * channels; }  // one block's S in the workspace
};

SymLayout sym_layout(const KernelParams& k, int parts, bool ring) {
  SymLayout l{};
  l.ring = ring;
  l.parts = parts;
  for (int part = 0; part < parts; ++part) {
    const HalfWindowPart h = half_window_part(k, part, parts);
    l.span = std::max(l.span, h.dy_hi - h.dy_lo);
  }
  l.sw = (kTx2 + 2 * k.rs) | 1;
  l.sh = kTy2 + l.span;
  l.ux = kTx2 + 2 * (k.rs + k.rp);
  l.uy = kTy2 + 2 * k.rp + l.span;
  l.u_stride = (ring ? l.uy : l.ux) | 1;
  l.channels = k.centre_max ? 3 : 2;
  l.nbx = (k.nx + kTx2 - 1) / kTx2;
  l.nby = (k.ny + kTy2 - 1) / kTy2;
  l.u_floats = (std::size_t(ring ? l.ux : l.uy) * l.u_stride + 3) / 4 * 4;  // rows: H after U takes float4 stores
  l.h_floats = 2 * std::size_t(ring ? kTy2 * hy_stride(k.rp) : (kTy2 + 2 * k.rp) * kHs2);  // double-buffered
  l.s_floats = std::size_t(l.sw) * l.sh;
  return l;
}

// The shared parts of the two symmetric kernels: U (rows y0 + dy_lo - RP ..., columns
// x0 - rs - RP ..., in the kernel's layout) and S cleared, then S written out at the end.
template <bool CENTRE_MAX>
__device__ void load_shifted_rows_clear_s(float* U, float2* S, float* S_max, const float* __restrict__ u,
                                          const KernelParams& k, const SymLayout& l, int x0, int y0, int dy_lo) {
  const int ux0 = x0 - k.rs - k.rp, uy0 = y0 + dy_lo - k.rp;
  for (int i = threadIdx.x; i < l.ux * l.uy; i += kThreads) {
    const int ix = i % l.ux, iy = i / l.ux;
    U[l.ring ? ix * l.u_stride + iy : iy * l.u_stride + ix] =
        u[(long long)mirror(uy0 + iy, k.ny) * k.nx + mirror(ux0 + ix, k.nx)];
  }
  for (int i = threadIdx.x; i < int(l.s_floats); i += kThreads) {
    S[i] = make_float2(0.0f, 0.0f);
    if constexpr (CENTRE_MAX) S_max[i] = 0.0f;
  }
}

template <bool CENTRE_MAX>
__device__ void write_region(const float2* S, const float* S_max, const SymLayout& l, float* __restrict__ regions) {
  float* region = regions + ((std::size_t(blockIdx.z) * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x) *
                                l.region_floats();
  for (int i = threadIdx.x; i < int(l.s_floats); i += kThreads) {
    region[i] = S[i].x;
    region[l.s_floats + i] = S[i].y;
    if constexpr (CENTRE_MAX) region[2 * l.s_floats + i] = S_max[i];
  }
}

// A voxel's own sums of one window part.
template <int N, bool CENTRE_MAX>
__device__ __forceinline__ void store_own_sums(float* own_sums, long long n, long long i,
                                               const Accumulators<N, CENTRE_MAX>& acc, int t) {
  float* sums = own_sums + 3 * n * blockIdx.z;
  sums[i] = acc.sum[t];
  sums[n + i] = acc.weight_sum[t];
  sums[2 * n + i] = acc.weight_max[t];
}

template <int RP, bool UNIFORM, bool CENTRE_MAX>
__global__ void __launch_bounds__(kThreads, CENTRE_MAX ? 2 : 3) nlm_sym2d_rows_kernel(const float* __restrict__ u, KernelParams k,
                                                                     SymLayout l, float* __restrict__ own_sums,
                                                                     float* __restrict__ regions) {
  constexpr int kRowsA = kTy2 + 2 * RP, kRunA = kChunk2 + 2 * RP;
  static_assert((kTx2 / kChunk2) * kRowsA <= kThreads, "pass A: one run per thread");
  extern __shared__ float shared[];
  float* U = shared;
  float* H = U + l.u_floats;
  float2* S = reinterpret_cast<float2*>(H + l.h_floats);                    // (sum, weight sum)
  float* S_max = reinterpret_cast<float*>(S + l.s_floats);                  // CENTRE_MAX only
  const int hbuf = kRowsA * kHs2;
  const int x0 = blockIdx.x * kTx2, y0 = blockIdx.y * kTy2;
  const HalfWindowPart part = half_window_part(k, blockIdx.z, gridDim.z);
  const int tid = threadIdx.x;
  load_shifted_rows_clear_s<CENTRE_MAX>(U, S, S_max, u, k, l, x0, y0, part.dy_lo);
  // Pass A: row ra (tile row ra - RP), columns ca * 16 - RP ...; its own values come from global memory.
  const bool a_active = tid < (kTx2 / kChunk2) * kRowsA;
  const int ra = tid % kRowsA, ca = tid / kRowsA;
  const int a_base = ra * l.u_stride + ca * kChunk2 + k.rs - part.dy_lo * l.u_stride;  // shifted run at d = (0, 0)
  float own[kRunA];
  {
    const float* row = u + (long long)mirror(y0 - RP + ra, k.ny) * k.nx;
#pragma unroll
    for (int j = 0; j < kRunA; ++j) own[j] = a_active ? __ldg(row + mirror(x0 - RP + ca * kChunk2 + j, k.nx)) : 0.0f;
  }
  // Pass B: column cb, tile rows gb * 8 ... gb * 8 + 7, and their values u(p) for the mirrored contributions.
  const int cb = tid % kTx2, gb = tid / kTx2;
  const int x = x0 + cb, yb = y0 + gb * kRy2;
  float centre[kRy2];
#pragma unroll
  for (int t = 0; t < kRy2; ++t) centre[t] = __ldg(u + (long long)mirror(yb + t, k.ny) * k.nx + mirror(x, k.nx));
  const float* q_base = U + (gb * kRy2 + RP - part.dy_lo) * l.u_stride + cb + k.rs + RP;  // u(p + d) at d = (dx, dy): + dy sx + dx
  const int s_base = (gb * kRy2 - part.dy_lo) * l.sw + cb + k.rs;                    // S(p + d): + dy sw + dx
  Accumulators<kRy2, CENTRE_MAX> acc;
  const bool inside = x0 >= k.rs && x0 + kTx2 + k.rs <= k.nx && y0 + kTy2 + part.dy_hi <= k.ny;
  __syncthreads();

  auto pass_a = [&](int dx, int dy, float* Hx) {
    if (a_active) row_patch_sums<RP, kChunk2, UNIFORM>(own, U + a_base + dy * l.u_stride + dx, Hx + ra * kHs2 + ca * kChunk2, k.g);
  };
  auto pass_b = [&](int dx, int dy, const float* Hx, auto check_border, bool /*last*/) {
    constexpr bool kCheck = decltype(check_border)::value;
    if (kCheck && (x >= k.nx || unsigned(x + dx) >= unsigned(k.nx))) return;  // p or q outside for the whole column
    float distance[kRy2];
    strided_patch_sums<RP, kRy2, UNIFORM>(Hx + gb * kRy2 * kHs2 + cb, kHs2, distance, k.g);
    const float* q = q_base + dy * l.u_stride + dx;
    const int s = s_base + dy * l.sw + dx;
#pragma unroll
    for (int t = 0; t < kRy2; ++t) {
      float w = l2_weight(distance[t], k);
      if (kCheck && yb + t + dy >= k.ny) w = 0.0f;  // p + d below the image (or p itself: dy >= 0)
      acc.add(t, w, q[t * l.u_stride]);
      float2 mirrored = S[s + t * l.sw];
      mirrored.x = fmaf(w, centre[t], mirrored.x);
      mirrored.y += w;
      S[s + t * l.sw] = mirrored;
      if constexpr (CENTRE_MAX) S_max[s + t * l.sw] = fmaxf(S_max[s + t * l.sw], w);
    }
  };

  walk_double_buffered(WindowWalk(k, part.begin, part.end), H, hbuf, inside, pass_a, pass_b);

  // This block's S, then its own sums; the combine kernel adds them up.
  write_region<CENTRE_MAX>(S, S_max, l, regions);
  if (x >= k.nx) return;
#pragma unroll
  for (int t = 0; t < kRy2; ++t) {
    if (yb + t < k.ny) store_own_sums(own_sums, (long long)k.nx * k.ny, (long long)(yb + t) * k.nx + x, acc, t);
  }
}


template <int RP, bool UNIFORM, bool CENTRE_MAX>
__global__ void __launch_bounds__(kThreads, 2) nlm_sym2d_ring_kernel(const float* __restrict__ u, KernelParams k,
                                                                     SymLayout l, float* __restrict__ own_sums,
                                                                     float* __restrict__ regions) {
  constexpr int kRunA = 16, kColsA = kTx2 + 2 * RP;  // pass A: a column of 16 tile rows
  constexpr int kRunB = 8;                           // pass B: a row of 8 tile columns
  static_assert(kColsA * (kTy2 / kRunA) <= kThreads, "pass A: one run per thread");
  static_assert(kTy2 * (kTx2 / kRunB) == kThreads, "pass B: one run per thread");
  extern __shared__ float shared[];
  float* U = shared;
  float* H = U + l.u_floats;
  float2* S = reinterpret_cast<float2*>(H + l.h_floats);  // (sum, weight sum)
  float* S_max = reinterpret_cast<float*>(S + l.s_floats);  // CENTRE_MAX only
  constexpr int kHs = hy_stride(RP);
  const int hbuf = kTy2 * kHs;
  const int x0 = blockIdx.x * kTx2, y0 = blockIdx.y * kTy2;
  const HalfWindowPart part = half_window_part(k, blockIdx.z, gridDim.z);
  const int tid = threadIdx.x;
  load_shifted_rows_clear_s<CENTRE_MAX>(U, S, S_max, u, k, l, x0, y0, part.dy_lo);
  // Pass A: column ca (tile column ca - RP), tile rows ra * 16 ...; its own values come from global memory.
  const bool a_active = tid < kColsA * (kTy2 / kRunA);
  const int ca = tid % kColsA, ra = tid / kColsA;
  const int a_base = (ca + k.rs) * l.u_stride + ra * kRunA - part.dy_lo;  // shifted run at d = (0, 0)
  float own[kRunA + 2 * RP];
  {
    const int column = mirror(x0 - RP + ca, k.nx);
#pragma unroll
    for (int j = 0; j < kRunA + 2 * RP; ++j) {
      own[j] = a_active ? __ldg(u + (long long)mirror(y0 - RP + ra * kRunA + j, k.ny) * k.nx + column) : 0.0f;
    }
  }
  // Pass B: tile row yb, columns rb * 8 ... rb * 8 + 7, and their values u(p) for the mirrored contributions.
  const int yb = tid % kTy2, rb = tid / kTy2;
  const int x = x0 + rb * kRunB, y = y0 + yb;
  float centre[kRunB];
#pragma unroll
  for (int t = 0; t < kRunB; ++t) centre[t] = __ldg(u + (long long)mirror(y, k.ny) * k.nx + mirror(x + t, k.nx));
  const float* q_base = U + (rb * kRunB + k.rs + RP) * l.u_stride + yb + RP - part.dy_lo;  // u(p + d): + dx sy + dy
  const int s_base = (yb - part.dy_lo) * l.sw + rb * kRunB + k.rs;                    // S(p + d): + dy sw + dx
  Accumulators<kRunB, CENTRE_MAX> acc;
  Accumulators<kRunB, CENTRE_MAX> ring;  // slot t: the sums for p_t + d, handed over as d moves on
  float q[kRunB];                        // u(p_t + d)
  auto load_q = [&](int dx, int dy) {
#pragma unroll
    for (int t = 0; t < kRunB; ++t) q[t] = q_base[(dx + t) * l.u_stride + dy];
  };
  const bool inside = x0 >= k.rs && x0 + kTx2 + k.rs <= k.nx && y0 + kTy2 + part.dy_hi <= k.ny;
  __syncthreads();  // U is in place
  const WindowWalk walk(k, part.begin, part.end);
  load_q(walk.dx, walk.dy);

  auto pass_a = [&](int dx, int dy, float* Hy) {
    if (!a_active) return;
    float h[kRunA];
    difference_patch_sums<RP, kRunA, UNIFORM>(own, U + a_base + dx * l.u_stride + dy, 1, h, k.g);
#pragma unroll
    for (int t = 0; t < kRunA; ++t) Hy[(ra * kRunA + t) * kHs + ca] = h[t];
  };
  auto hand_over = [&](int at, int t) {  // ring slot t into S
    float2 mirrored = S[at];
    mirrored.x += ring.sum[t];
    mirrored.y += ring.weight_sum[t];
    S[at] = mirrored;
    if constexpr (CENTRE_MAX) S_max[at] = fmaxf(S_max[at], ring.weight_max[t]);
  };
  auto pass_b = [&](int dx, int dy, const float* Hy, auto check_border, bool last) {
    constexpr bool kCheck = decltype(check_border)::value;
    float distance[kRunB];
    strided_patch_sums<RP, kRunB, UNIFORM>(Hy + yb * kHs + rb * kRunB, 1, distance, k.g);
#pragma unroll
    for (int t = 0; t < kRunB; ++t) {
      float w = l2_weight(distance[t], k);
      // p outside the image (a partial tile) or p + d outside (dy >= 0: only right, left or below).
      if (kCheck && (x + t >= k.nx || y >= k.ny || unsigned(x + t + dx) >= unsigned(k.nx) || y + dy >= k.ny)) w = 0.0f;
      acc.add(t, w, q[t]);
      ring.add(t, w, centre[t]);
    }
    const int s = s_base + dy * l.sw + dx;
    if (last || dx == k.rs) {  // the next displacement starts a window row: every slot has its last term
#pragma unroll
      for (int t = 0; t < kRunB; ++t) hand_over(s + t, t);
      ring = Accumulators<kRunB, CENTRE_MAX>();
      if (!last) load_q(-k.rs, dy + 1);
      return;
    }
    hand_over(s, 0);
#pragma unroll
    for (int t = 0; t + 1 < kRunB; ++t) {
      ring.sum[t] = ring.sum[t + 1];
      ring.weight_sum[t] = ring.weight_sum[t + 1];
      ring.weight_max[t] = ring.weight_max[t + 1];
      q[t] = q[t + 1];
    }
    ring.sum[kRunB - 1] = ring.weight_sum[kRunB - 1] = ring.weight_max[kRunB - 1] = 0.0f;
    q[kRunB - 1] = q_base[(dx + kRunB) * l.u_stride + dy];  // u(p_7 + d + (1, 0))
  };

  walk_double_buffered(walk, H, hbuf, inside, pass_a, pass_b);

  // This block's S, then its own sums; the combine kernel adds them up.
  write_region<CENTRE_MAX>(S, S_max, l, regions);
  if (y >= k.ny) return;
#pragma unroll
  for (int t = 0; t < kRunB; ++t) {
    if (x + t < k.nx) store_own_sums(own_sums, (long long)k.nx * k.ny, (long long)y * k.nx + x + t, acc, t);
  }
}

__host__ __device__ inline int floor_div(int a, int b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

// Per voxel: its own sums of every part plus the S entries of every block (of every part) whose
// apron covers it, in a fixed order.
__global__ void sym_combine_kernel(const float* __restrict__ u, float* __restrict__ out,
                                   const float* __restrict__ own_sums, const float* __restrict__ regions,
                                   KernelParams k, SymLayout l) {
  const long long n = (long long)k.nx * k.ny;
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const int px = int(i % k.nx), py = int(i / k.nx);
  float sum = 0, weight_sum = 0, weight_max = 0;
  for (int p = 0; p < l.parts; ++p) {
    const float* own = own_sums + 3 * n * p;
    sum += own[i];
    weight_sum += own[n + i];
    weight_max = fmaxf(weight_max, own[2 * n + i]);
    const HalfWindowPart h = half_window_part(k, p, l.parts);
    if (h.begin >= h.end) continue;
    // Blocks with y0 + dy_lo <= py <= y0 + 31 + dy_hi and x0 - rs <= px <= x0 + 63 + rs.
    const int by_lo = max(0, -floor_div(-(py - h.dy_hi - kTy2 + 1), kTy2)), by_hi = min(l.nby - 1, floor_div(py - h.dy_lo, kTy2));
    const int bx_lo = max(0, -floor_div(-(px - k.rs - kTx2 + 1), kTx2)), bx_hi = min(l.nbx - 1, floor_div(px + k.rs, kTx2));
    for (int by = by_lo; by <= by_hi; ++by) {
      for (int bx = bx_lo; bx <= bx_hi; ++bx) {
        const float* region = regions + ((std::size_t(p) * l.nby + by) * l.nbx + bx) * l.region_floats();
        const int at = (py - by * kTy2 - h.dy_lo) * l.sw + px - bx * kTx2 + k.rs;
        sum += region[at];
        weight_sum += region[l.s_floats + at];
        if (l.channels == 3) weight_max = fmaxf(weight_max, region[2 * l.s_floats + at]);
      }
    }
  }
  out[i] = finish(sum, weight_sum, weight_max, u[i], k);
}

dim3 tiles_2d(const KernelParams& k) {
  return dim3(unsigned((k.nx + kTx2 - 1) / kTx2), unsigned((k.ny + kTy2 - 1) / kTy2));
}

// Ranges of the search window for the one-sided 2D kernel: enough blocks for about four per SM,
// each range keeping at least 64 displacements. 3D volumes fill the GPU with tiles.
int window_parts(const KernelParams& k, int displacements) {
  if (k.rsz != 0) return 1;
  const int sms = sm_count();
  const dim3 tiles = tiles_2d(k);
  const long long blocks = (long long)tiles.x * tiles.y;
  const long long wanted = (4LL * sms + blocks - 1) / blocks;
  return int(std::max(1LL, std::min<long long>(wanted, displacements / 64)));
}

int full_window_parts(const KernelParams& k) { return window_parts(k, (2 * k.rs + 1) * (2 * k.rs + 1)); }

// Which 2D kernel (measured side by side on the H100, bench/results/*-nlm-fused-v7.md): rows for
// short window rows (search radius below 8: ring hands its whole ring over at the end of every
// window row) and where rows, at three blocks per SM, runs all its blocks at once up to a search
// radius of 12 (N1); ring otherwise (N2, N3, S003 from search 31^2), where it fits two blocks
// per SM (search radius up to about 45 on large images); rows where it fits three and ring does
// not fit; else the one-sided kernel. Centre weight max: ring (rows has two blocks per SM then).
// The environment variable CTD_NLM_FUSED_2D (one-sided, rows or ring) forces one where it fits:
// for tests and benchmarks.
//
// Each takes the number of window parts that finishes soonest: the blocks run in rounds of
// (SMs x blocks per SM) and a block walks its part of the window after a fixed start (U, S), so
// the time goes as rounds x (displacements / parts + start). (N2, 128 tiles, 2 blocks per SM: 5
// parts are 640 blocks in 3 rounds of 264, 4 parts 512 blocks in 2.) Parts are at most what
// gives about four blocks per SM: each costs the combine kernel a pass over the image.
enum class Kernel2d { OneSided, Rows, Ring };

struct SymChoice {
  SymLayout layout;
  int blocks_per_sm = 0;
  long long rounds = 0;  // of SMs x blocks per SM blocks
  double time = 0;  // rounds x (displacements per part + start), in displacements
};

SymChoice best_parts(const KernelParams& k, bool ring, int register_bound, int min_blocks_per_sm) {
  const int half = (2 * k.rs + 1) * (2 * k.rs + 1) / 2;
  const dim3 grid = tiles_2d(k);
  const long long tiles = (long long)grid.x * grid.y;
  const int max_parts = window_parts(k, half);
  constexpr double kStartDisplacements = 16;  // a block's start (U, S) against one displacement
  SymChoice best{};
  for (int parts = 1; parts <= max_parts; ++parts) {
    const SymLayout l = sym_layout(k, parts, ring);
    const int per_sm = int(std::min<std::size_t>(
        register_bound, shared_bytes_per_sm() / (l.bytes() + reserved_shared_bytes_per_block())));
    if (per_sm < min_blocks_per_sm || l.bytes() > max_shared_bytes()) continue;
    const long long slots = (long long)sm_count() * per_sm;
    const long long rounds = (tiles * parts + slots - 1) / slots;
    const double time = double(rounds) * (double(half) / parts + kStartDisplacements);
    if (best.blocks_per_sm == 0 || time < best.time * 0.999) best = SymChoice{l, per_sm, rounds, time};
  }
  return best;
}

Kernel2d kernel_2d(const KernelParams& k, SymLayout* layout = nullptr) {
  if (k.rsz != 0 || k.rs == 0) return Kernel2d::OneSided;
  const char* forced = std::getenv("CTD_NLM_FUSED_2D");
  const std::string force = forced ? forced : "";
  if (force == "one-sided") return Kernel2d::OneSided;
  const SymChoice rows = best_parts(k, false, k.centre_max ? 2 : 3, force == "rows" ? 1 : 3);
  const SymChoice ring = best_parts(k, true, 2, force == "ring" ? 1 : 2);
  const bool rows_preferred = k.rs < 8 || (k.rs <= 12 && rows.rounds == 1) || ring.blocks_per_sm == 0;
  if (force != "ring" && rows.blocks_per_sm > 0 && (rows_preferred || force == "rows")) {
    if (layout) *layout = rows.layout;
    return Kernel2d::Rows;
  }
  if (force != "rows" && ring.blocks_per_sm > 0) {
    if (layout) *layout = ring.layout;
    return Kernel2d::Ring;
  }
  return Kernel2d::OneSided;
}

// Which 3D kernel: the symmetric one where it fits two blocks per SM (not for the centre weight
// max: a voxel's maximum over both sides of its pairs would need a third accumulator), else the
// one-sided one. CTD_NLM_FUSED_3D (one-sided or symmetric) forces one where it fits.
bool symmetric_3d(const KernelParams& k) {
  if (k.rsz == 0 || k.centre_max) return false;
  const char* forced = std::getenv("CTD_NLM_FUSED_3D");
  const std::string force = forced ? forced : "";
  if (force == "one-sided") return false;
  const std::size_t bytes = sym3_layout(k).bytes();
  const std::size_t blocks = force == "symmetric" ? 1 : 2;
  return bytes <= max_shared_bytes() && blocks * (bytes + reserved_shared_bytes_per_block()) <= shared_bytes_per_sm();
}

// As much shared memory as the SM has: several blocks of 45-110 KB per SM.
template <typename Kernel>
void set_shared_bytes(Kernel kernel, std::size_t bytes) {
  CTD_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
  CTD_CUDA_CHECK(
      cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, int(cudaSharedmemCarveoutMaxShared)));
}

// The symmetric 3D kernel's work in order: clear the sums, then one launch per colour over its
// z blocks [first_block, end_block), the finish of the output slices [finish_z0, finish_z1) after
// some. Within a colour no two blocks write the same voxel, so a colour cut into launches along z
// gives every voxel the same sums in the same order as one launch: the host API (nlm_host) cuts
// the first colour into `chunks` so that it starts on the slices already uploaded, and the last
// one so that the slices it finishes go down while it runs on (run_from_host_in_steps).
struct Sym3Step {
  bool clear = false;
  int3 colour{};
  int first_block = 0, end_block = 0;
  int finish_z0 = 0, finish_z1 = 0;
  HostStep host;  // the input it reads and the output final after it
};

std::vector<Sym3Step> sym3d_plan(const KernelParams& k, int chunks) {
  const Sym3Layout l = sym3_layout(k);
  const Sym3Colours c = sym3_colours(l);
  const int tiles_z = (k.nz + kTz3s - 1) / kTz3s;
  auto blocks = [&](int first, int step) { return std::max(0, (tiles_z - first + step - 1) / step); };
  std::vector<Sym3Step> plan;
  Sym3Step clear;
  clear.clear = true;
  plan.push_back(clear);
  const int colours = c.step_x * c.step_y * c.step_z;
  for (int index = 0; index < colours; ++index) {
    const int3 colour = make_int3(index % c.step_x, index / c.step_x % c.step_y, index / (c.step_x * c.step_y));
    const int z_blocks = blocks(colour.z, c.step_z);
    const bool first = index == 0, last = index == colours - 1;
    const int parts = first || last ? std::clamp(chunks, 1, std::max(1, z_blocks)) : 1;
    for (int part = 0; part < parts; ++part) {
      Sym3Step step;
      step.colour = colour;
      step.first_block = int(std::int64_t(z_blocks) * part / parts);
      step.end_block = int(std::int64_t(z_blocks) * (part + 1) / parts);
      // Its blocks read the planes z0 - rp ... z0 + kTz3s + rsz + rp - 1 (mirrored inside).
      const int last_z0 = ((step.end_block - 1) * c.step_z + colour.z) * kTz3s;
      step.host.input_slices = first && step.end_block > 0 ? std::min(k.nz, last_z0 + kTz3s + k.rsz + k.rp) : k.nz;
      if (last) {
        // Its blocks add to the slices from their z0 on: the slices before the next one's z0 are final.
        step.finish_z0 = plan.back().finish_z1;
        step.finish_z1 = part + 1 == parts ? k.nz : std::min(k.nz, (step.end_block * c.step_z + colour.z) * kTz3s);
        step.host.output_slices = step.finish_z1;
      }
      plan.push_back(step);
    }
  }
  return plan;
}

template <int RP>
void queue_sym3d_step(const float* in, float* out, float* workspace, const KernelParams& k, bool uniform,
                      const Sym3Step& step, cudaStream_t stream) {
  const long long n = (long long)k.nx * k.ny * k.nz;
  if (step.clear) {
    CTD_CUDA_CHECK(cudaMemsetAsync(workspace, 0, 2 * std::size_t(n) * sizeof(float), stream));
    return;
  }
  const Sym3Layout l = sym3_layout(k);
  const Sym3Colours c = sym3_colours(l);
  auto kernel = uniform ? nlm_sym3d_kernel<RP, true> : nlm_sym3d_kernel<RP, false>;
  set_shared_bytes(kernel, l.bytes());
  const int tiles_x = (k.nx + kTx3 - 1) / kTx3, tiles_y = (k.ny + kTy3 - 1) / kTy3;
  auto count = [](int tiles, int first, int step) { return unsigned(std::max(0, (tiles - first + step - 1) / step)); };
  const dim3 grid(count(tiles_x, step.colour.x, c.step_x), count(tiles_y, step.colour.y, c.step_y),
                  unsigned(step.end_block - step.first_block));
  if (grid.x > 0 && grid.y > 0 && grid.z > 0) {
    // The launch's first z block is the colour's block first_block.
    const int3 shifted = make_int3(step.colour.x, step.colour.y, step.colour.z + step.first_block * c.step_z);
    kernel<<<grid, kThreads, l.bytes(), stream>>>(in, k, l, shifted, c, workspace);
    CTD_CUDA_CHECK_LAUNCH();
  }
  if (step.finish_z1 > step.finish_z0) {
    const long long plane = (long long)k.nx * k.ny, first = step.finish_z0 * plane, end = step.finish_z1 * plane;
    sym3d_finish_kernel<<<unsigned((end - first + 255) / 256), 256, 0, stream>>>(in, workspace, out, k, first, end);
    CTD_CUDA_CHECK_LAUNCH();
  }
}

template <int RP>
void launch_radius(const float* in, float* out, float* workspace, const KernelParams& k, bool uniform,
                   cudaStream_t stream) {
  const long long n = (long long)k.nx * k.ny * k.nz;
  // One instantiation per (patch kernel, centre weight rule).
  auto pick = [&](auto uniform_kernel, auto uniform_max, auto gaussian_kernel, auto gaussian_max) {
    if (uniform) return k.centre_max ? uniform_max : uniform_kernel;
    return k.centre_max ? gaussian_max : gaussian_kernel;
  };
  SymLayout sym{};
  const Kernel2d kind = kernel_2d(k, &sym);
  if (kind != Kernel2d::OneSided) {
    auto kernel = kind == Kernel2d::Rows
                      ? pick(nlm_sym2d_rows_kernel<RP, true, false>, nlm_sym2d_rows_kernel<RP, true, true>,
                             nlm_sym2d_rows_kernel<RP, false, false>, nlm_sym2d_rows_kernel<RP, false, true>)
                      : pick(nlm_sym2d_ring_kernel<RP, true, false>, nlm_sym2d_ring_kernel<RP, true, true>,
                             nlm_sym2d_ring_kernel<RP, false, false>, nlm_sym2d_ring_kernel<RP, false, true>);
    set_shared_bytes(kernel, sym.bytes());
    float* own_sums = workspace;
    float* regions = workspace + 3 * n * sym.parts;
    kernel<<<dim3(unsigned(sym.nbx), unsigned(sym.nby), unsigned(sym.parts)), kThreads, sym.bytes(), stream>>>(
        in, k, sym, own_sums, regions);
    CTD_CUDA_CHECK_LAUNCH();
    sym_combine_kernel<<<unsigned((n + 255) / 256), 256, 0, stream>>>(in, out, own_sums, regions, k, sym);
    CTD_CUDA_CHECK_LAUNCH();
    return;
  }
  if constexpr (RP <= kMaxRp3) {
    if (symmetric_3d(k)) {
      const std::vector<Sym3Step> plan = sym3d_plan(k, 1);
      for (const Sym3Step& step : plan) queue_sym3d_step<RP>(in, out, workspace, k, uniform, step, stream);
      return;
    }
  }
  const bool flat = k.rsz == 0;
  const std::size_t bytes = slide_layout(k).bytes();
  const int parts = full_window_parts(k);
  const Partials partials{parts > 1 ? workspace : nullptr, parts};
  auto go = [&](auto kernel, dim3 grid) {
    set_shared_bytes(kernel, bytes);
    kernel<<<grid, kThreads, bytes, stream>>>(in, out, k, partials);
    CTD_CUDA_CHECK_LAUNCH();
    if (partials.data) {
      combine_partials_kernel<<<unsigned((n + 255) / 256), 256, 0, stream>>>(in, partials, out, k);
      CTD_CUDA_CHECK_LAUNCH();
    }
  };
  if (flat) {
    dim3 grid = tiles_2d(k);
    grid.z = unsigned(parts);
    go(pick(nlm_slide2d_kernel<RP, true, false>, nlm_slide2d_kernel<RP, true, true>, nlm_slide2d_kernel<RP, false, false>,
            nlm_slide2d_kernel<RP, false, true>),
       grid);
    return;
  }
  if constexpr (RP <= kMaxRp3) {
    const dim3 grid(unsigned((k.nx + kTx3 - 1) / kTx3), unsigned((k.ny + kTy3 - 1) / kTy3),
                    unsigned((k.nz + kTz3 - 1) / kTz3));
    go(pick(nlm_slide3d_kernel<RP, true, false>, nlm_slide3d_kernel<RP, true, true>, nlm_slide3d_kernel<RP, false, false>,
            nlm_slide3d_kernel<RP, false, true>),
       grid);
  }
}

}  // namespace

std::size_t nlm_slide_workspace_floats(const KernelParams& k) {
  const std::size_t n = std::size_t(k.nx) * k.ny * k.nz;
  if (symmetric_3d(k)) return 2 * n;
  SymLayout sym{};
  if (kernel_2d(k, &sym) != Kernel2d::OneSided) return sym.parts * (3 * n + std::size_t(sym.nbx) * sym.nby * sym.region_floats());
  const int parts = full_window_parts(k);
  return parts > 1 ? parts * 3 * n : 0;
}

std::size_t nlm_slide_shared_bytes(const KernelParams& k, bool /*uniform_patch*/) {
  if (k.l1 || k.rp < 1) return 0;
  if (k.rp > (k.rsz == 0 ? kMaxRp2 : kMaxRp3)) return 0;
  if (symmetric_3d(k)) return sym3_layout(k).bytes();
  SymLayout sym{};
  return kernel_2d(k, &sym) != Kernel2d::OneSided ? sym.bytes() : slide_layout(k).bytes();
}

namespace {
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
}  // namespace

void nlm_slide_launch(const float* in, float* out, float* workspace, const KernelParams& k, bool uniform_patch,
                      cudaStream_t stream) {
  with_patch_radius(k.rp, [&](auto rp) { launch_radius<decltype(rp)::value>(in, out, workspace, k, uniform_patch, stream); });
}

std::vector<HostStep> nlm_slide_steps(const KernelParams& k, int chunks) {
  std::vector<HostStep> steps;
  if (k.l1 || k.rp < 1 || k.rp > kMaxRp3 || !symmetric_3d(k)) return steps;
  for (const Sym3Step& step : sym3d_plan(k, chunks)) steps.push_back(step.host);
  return steps;
}

void nlm_slide_queue_step(const float* in, float* out, float* workspace, const KernelParams& k, bool uniform_patch,
                          int chunks, int step, cudaStream_t stream) {
  const std::vector<Sym3Step> plan = sym3d_plan(k, chunks);
  with_patch_radius(k.rp, [&](auto rp) {
    constexpr int RP = decltype(rp)::value;
    if constexpr (RP <= kMaxRp3) queue_sym3d_step<RP>(in, out, workspace, k, uniform_patch, plan.at(std::size_t(step)), stream);
  });
}

}  // namespace ctd::cuda
