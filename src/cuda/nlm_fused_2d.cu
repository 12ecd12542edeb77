// fused NLM on 2D images, sliding sums (nlm_fused.cu has the scheme): the one-sided kernel, tile
// 64 x 32, pass A one thread per (row, 16 columns) into the row sums Hx, pass B one thread per
// (column, 8 rows) down the columns into weights in registers, Hx double-buffered (one barrier per
// displacement); and the two symmetric kernels, which compute each unordered pair once.
// An image too small to fill the GPU with tiles also splits the search window: blockIdx.z takes a
// contiguous range of displacements and writes its partial sums, and a second kernel adds the
// ranges in order (still deterministic).

#include "cuda/nlm_slide.cuh"

#include <algorithm>
#include <cstdlib>
#include <string>

namespace ctd::cuda::slide {
namespace {

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
// each range keeping at least 64 displacements.
int window_parts(const KernelParams& k, int displacements) {
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
  if (k.rs == 0) return Kernel2d::OneSided;
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

template <int RP>
void launch_2d(const float* in, float* out, float* workspace, const KernelParams& k, bool uniform,
               cudaStream_t stream) {
  const long long n = (long long)k.nx * k.ny * k.nz;
  SymLayout sym{};
  const Kernel2d kind = kernel_2d(k, &sym);
  if (kind != Kernel2d::OneSided) {
    auto kernel = kind == Kernel2d::Rows
                      ? pick_kernel(k, uniform, nlm_sym2d_rows_kernel<RP, true, false>, nlm_sym2d_rows_kernel<RP, true, true>,
                                    nlm_sym2d_rows_kernel<RP, false, false>, nlm_sym2d_rows_kernel<RP, false, true>)
                      : pick_kernel(k, uniform, nlm_sym2d_ring_kernel<RP, true, false>, nlm_sym2d_ring_kernel<RP, true, true>,
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
  const std::size_t bytes = slide_layout(k).bytes();
  const int parts = full_window_parts(k);
  const Partials partials{parts > 1 ? workspace : nullptr, parts};
  auto kernel = pick_kernel(k, uniform, nlm_slide2d_kernel<RP, true, false>, nlm_slide2d_kernel<RP, true, true>,
                            nlm_slide2d_kernel<RP, false, false>, nlm_slide2d_kernel<RP, false, true>);
  set_shared_bytes(kernel, bytes);
  dim3 grid = tiles_2d(k);
  grid.z = unsigned(parts);
  kernel<<<grid, kThreads, bytes, stream>>>(in, out, k, partials);
  CTD_CUDA_CHECK_LAUNCH();
  if (partials.data) {
    combine_partials_kernel<<<unsigned((n + 255) / 256), 256, 0, stream>>>(in, partials, out, k);
    CTD_CUDA_CHECK_LAUNCH();
  }
}

}  // namespace

std::size_t slide2d_workspace_floats(const KernelParams& k) {
  const std::size_t n = std::size_t(k.nx) * k.ny * k.nz;
  SymLayout sym{};
  if (kernel_2d(k, &sym) != Kernel2d::OneSided) return sym.parts * (3 * n + std::size_t(sym.nbx) * sym.nby * sym.region_floats());
  const int parts = full_window_parts(k);
  return parts > 1 ? parts * 3 * n : 0;
}

std::size_t slide2d_shared_bytes(const KernelParams& k) {
  SymLayout sym{};
  return kernel_2d(k, &sym) != Kernel2d::OneSided ? sym.bytes() : slide_layout(k).bytes();
}

void slide2d_launch(const float* in, float* out, float* workspace, const KernelParams& k, bool uniform_patch,
                    cudaStream_t stream) {
  with_patch_radius(k.rp, [&](auto rp) { launch_2d<decltype(rp)::value>(in, out, workspace, k, uniform_patch, stream); });
}

}  // namespace ctd::cuda::slide
