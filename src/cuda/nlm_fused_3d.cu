// fused NLM on volumes searched across slices, sliding sums (nlm_fused.cu has the scheme): the
// one-sided kernel, tile 32 x 8 x 8, pass A per (y, z) row of 32 into Hx, pass B per (x, z)
// column along y into Hxy, pass C per (x, y) column along z into weights in registers (two
// barriers per displacement); and the symmetric kernel, which computes each unordered pair once.

#include "cuda/nlm_slide.cuh"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>

namespace ctd::cuda::slide {
namespace {

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
                                                                  KernelParams k) {
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

// Which 3D kernel: the symmetric one where it fits two blocks per SM (not for the centre weight
// max: a voxel's maximum over both sides of its pairs would need a third accumulator), else the
// one-sided one. CTD_NLM_FUSED_3D (one-sided or symmetric) forces one where it fits.
bool symmetric_3d(const KernelParams& k) {
  if (k.centre_max) return false;
  const char* forced = std::getenv("CTD_NLM_FUSED_3D");
  const std::string force = forced ? forced : "";
  if (force == "one-sided") return false;
  const std::size_t bytes = sym3_layout(k).bytes();
  const std::size_t blocks = force == "symmetric" ? 1 : 2;
  return bytes <= max_shared_bytes() && blocks * (bytes + reserved_shared_bytes_per_block()) <= shared_bytes_per_sm();
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
void launch_3d(const float* in, float* out, float* workspace, const KernelParams& k, bool uniform,
               cudaStream_t stream) {
  if (symmetric_3d(k)) {
    for (const Sym3Step& step : sym3d_plan(k, 1)) queue_sym3d_step<RP>(in, out, workspace, k, uniform, step, stream);
    return;
  }
  const std::size_t bytes = slide_layout(k).bytes();
  auto kernel = pick_kernel(k, uniform, nlm_slide3d_kernel<RP, true, false>, nlm_slide3d_kernel<RP, true, true>,
                            nlm_slide3d_kernel<RP, false, false>, nlm_slide3d_kernel<RP, false, true>);
  set_shared_bytes(kernel, bytes);
  const dim3 grid(unsigned((k.nx + kTx3 - 1) / kTx3), unsigned((k.ny + kTy3 - 1) / kTy3),
                  unsigned((k.nz + kTz3 - 1) / kTz3));
  kernel<<<grid, kThreads, bytes, stream>>>(in, out, k);
  CTD_CUDA_CHECK_LAUNCH();
}

}  // namespace

std::size_t slide3d_workspace_floats(const KernelParams& k) {
  return symmetric_3d(k) ? 2 * std::size_t(k.nx) * k.ny * k.nz : 0;
}

std::size_t slide3d_shared_bytes(const KernelParams& k) {
  return symmetric_3d(k) ? sym3_layout(k).bytes() : slide_layout(k).bytes();
}

void slide3d_launch(const float* in, float* out, float* workspace, const KernelParams& k, bool uniform_patch,
                    cudaStream_t stream) {
  with_patch_radius(k.rp, [&](auto rp) {
    constexpr int RP = decltype(rp)::value;
    if constexpr (RP <= kMaxRp3) launch_3d<RP>(in, out, workspace, k, uniform_patch, stream);
  });
}

std::vector<HostStep> slide3d_steps(const KernelParams& k, int chunks) {
  std::vector<HostStep> steps;
  if (!symmetric_3d(k)) return steps;
  for (const Sym3Step& step : sym3d_plan(k, chunks)) steps.push_back(step.host);
  return steps;
}

void slide3d_queue_step(const float* in, float* out, float* workspace, const KernelParams& k, bool uniform_patch,
                        int chunks, int step, cudaStream_t stream) {
  const std::vector<Sym3Step> plan = sym3d_plan(k, chunks);
  with_patch_radius(k.rp, [&](auto rp) {
    constexpr int RP = decltype(rp)::value;
    if constexpr (RP <= kMaxRp3) queue_sym3d_step<RP>(in, out, workspace, k, uniform_patch, plan.at(std::size_t(step)), stream);
  });
}

}  // namespace ctd::cuda::slide
