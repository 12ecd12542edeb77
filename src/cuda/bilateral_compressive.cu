// CUDA compressive bilateral filter (Yano et al., Algorithm 1): the range kernel as a Fourier
// series, each term filtered by separable Gaussian passes. Definition: docs/filters.md (mirror
// border, per-axis radius, sigma in voxels or mm). bilateral.cu routes to it.

#include "cuda/bilateral_compressive.hpp"

#include "core/recursive_gaussian.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/device_buffer.hpp"
#include "cuda/device_util.cuh"

#include <cuda_pipeline.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <type_traits>
#include <vector>

namespace ctd::cuda {
namespace {

// ---- compressive (Yano et al.): 4M + 1 Gaussian filters as three 1D passes ----------------------
//
// Per term m >= 1, the four images c f, s f, c, s (c = cos(w m (f - lo)), s = sin(...)) travel
// together as a float4 through a pass along x (generated from f on the fly), along y and along z;
// the last pass adds a_m (c G(cf) + s G(sf)) and a_m (c G(c) + s G(s)) to the numerator and
// denominator. The DC term (m = 0) filters f alone as a float and writes numerator = G f and
// denominator = 1 (the taps sum to 1 and the border is a mirror, so G 1 = 1).
//
// Each Gaussian pass is either direct (the exact filter's window; a block holds 32 lines x
// (64 + taps) samples in shared memory, lines on the lanes so loads are conflict-free, and each
// thread slides 8 outputs along its line with the samples in registers) or recursive (Young-van
// Vliet: one thread per line, a causal pass into `fwd`, an anti-causal pass back over it).

constexpr int kLines = 32, kPassRun = 8, kPassGroups = 8, kPassTile = kPassRun * kPassGroups;
constexpr int kPassStride = kLines + 1;  // per position, padded: conflict-free transposed stores
constexpr int kChunkLoads = kPassTile / kPassGroups;  // a thread's samples of 64 positions x 32 lines
constexpr int kPaddedTaps = 2 * kMaxAxisTaps + 2;  // 2 r + 1 taps rounded up to a multiple of 8
constexpr int kRecursiveThreads = 128;

// The lines of one pass: axis x -> lines (y, z), y -> (x, z), z -> (x, y); `line` is the index
// whose neighbours are adjacent in memory (for coalescing), `other` the remaining one.
struct Lines {
  int nx, ny, nz, axis;
  __host__ __device__ int length() const { return axis == 0 ? nx : axis == 1 ? ny : nz; }
  __host__ __device__ int count() const { return axis == 0 ? ny : nx; }
  __host__ __device__ int others() const { return axis == 2 ? ny : nz; }
  __device__ long long address(int line, int other, int position) const {
    if (axis == 0) return ((long long)other * ny + line) * nx + position;
    if (axis == 1) return ((long long)other * ny + position) * nx + line;
    return ((long long)position * ny + other) * nx + line;
  }
};

// One term of the series: its phase w m (f - lo) = 2 pi m (f - lo) / T and weight a_m.
struct Term {
  float lo, inv_period, a;
  int m;
};

template <typename V>
__device__ __forceinline__ V channels(float f, const Term& t);
template <>
__device__ __forceinline__ float channels<float>(float f, const Term&) {
  return f;
}
template <>
__device__ __forceinline__ float4 channels<float4>(float f, const Term& t) {
  // cos/sin of 2 pi frac(m (f - lo) / T): reduced first, so the fast intrinsics stay accurate.
  const float x = float(t.m) * (f - t.lo) * t.inv_period;
  float s, c;
  __sincosf(6.283185307179586f * (x - floorf(x)), &s, &c);
  return make_float4(c * f, s * f, c, s);
}

__device__ __forceinline__ void madd(float& acc, float g, float v) { acc = fmaf(g, v, acc); }
__device__ __forceinline__ void madd(float4& acc, float g, const float4& v) {
  acc.x = fmaf(g, v.x, acc.x);
  acc.y = fmaf(g, v.y, acc.y);
  acc.z = fmaf(g, v.z, acc.z);
  acc.w = fmaf(g, v.w, acc.w);
}

// The last pass of a term at one voxel: from G of the channels and f there, what the term adds to
// the numerator and the denominator.
__device__ __forceinline__ float2 contribution(float g, float, const Term&) {
  return make_float2(g, 1.0f);  // DC term: G f and G 1 = 1
}
__device__ __forceinline__ float2 contribution(const float4& g, float f, const Term& t) {
  const float4 c = channels<float4>(f, t);  // (c f, s f, c, s) of the centre voxel
  return make_float2(t.a * (c.z * g.x + c.w * g.y), t.a * (c.z * g.z + c.w * g.w));
}
// The DC term runs first and writes; the others add.
template <typename V>
constexpr bool kWritesSums = std::is_same_v<V, float>;

struct PassParams {
  Lines lines;
  int radius, taps8;  // taps8: 2 radius + 1 rounded up to a multiple of 8
  int steps, ring;    // tiles a block walks, positions its ring holds (walk_steps)
  int first_block, first_other;  // the launch's first block along the lines and first other index
  Term term;
  float* quotient;  // the last term's last pass: numerator / denominator goes here, not the sums
  float g[kPaddedTaps];  // normalised Gaussian taps, index k + radius; zero beyond 2 radius
};

// MODE 0 (the x pass): input f, output V; 1: V -> V; 2: V -> accumulate.
//
// A block takes 32 lines and walks p.steps tiles of 64 outputs along them. Its shared ring holds
// p.ring positions of the 32 lines (slots in order of position, wrapping around): the current
// tile's window of 64 + taps8 positions and, when the block walks, the 64 that the next tile adds,
// fetched while the current tile is computed. So a walk reads every sample once and its loads
// overlap its FMAs.
template <typename V, int MODE>
__global__ void __launch_bounds__(kLines* kPassGroups, sizeof(V) == 4 ? 4 : 2)
    compressive_pass_kernel(const V* __restrict__ in, V* __restrict__ out, const float* __restrict__ f,
                            float* __restrict__ numerator, float* __restrict__ denominator, PassParams p) {
  extern __shared__ float4 shared_tile[];
  V* ring = reinterpret_cast<V*>(shared_tile);  // [slot][line]
  const Lines& L = p.lines;
  const int n_axis = L.length(), n_lines = L.count();
  const int span = kPassTile + p.taps8;  // outputs a .. a + 63 read a - r .. a + 63 - r + taps8
  const int tiles = (n_axis + kPassTile - 1) / kPassTile;
  const int tile0 = (blockIdx.x + p.first_block) * p.steps, steps = min(p.steps, tiles - tile0);
  const int start = tile0 * kPassTile - p.radius;  // the position of relative sample 0 (slot 0)
  const int line0 = blockIdx.y * kLines, other = blockIdx.z + p.first_other;
  const long long stride = MODE == 0 ? 1 : L.address(0, 0, 1) - L.address(0, 0, 0);
  auto wrap = [&](int slot) { return slot < p.ring ? slot : slot - p.ring; };  // for slot < 2 ring
  using Raw = std::conditional_t<MODE == 0, float, V>;

  // A thread loads 8 samples of each 64 positions of the 32 lines: along x the lanes take
  // positions (contiguous in memory) of 4 lines, along y and z the lanes take the lines.
  constexpr int kFetchLines = MODE == 0 ? kChunkLoads / 2 : 1;
  long long fetch_line[kFetchLines];  // lines past the last load a real one and are never stored
#pragma unroll
  for (int i = 0; i < kFetchLines; ++i) {
    const int line = MODE == 0 ? threadIdx.y + kPassGroups * i : threadIdx.x;
    fetch_line[i] = L.address(min(line0 + line, n_lines - 1), other, 0);
  }
  auto fetch_offset = [](int e) { return MODE == 0 ? threadIdx.x + kLines * (e & 1) : threadIdx.y + kPassGroups * e; };
  auto fetch_ring_line = [](int e) { return MODE == 0 ? threadIdx.y + kPassGroups * (e >> 1) : threadIdx.x; };
  // Relative samples rel0 .. rel0 + 63 (those below `limit`) into the slots from slot0: MODE 0
  // loads f into `raw` (its channels go to the ring in `put`), the others copy asynchronously.
  auto fetch = [&](int rel0, int slot0, int limit, Raw(&raw)[kChunkLoads]) {
    auto copy = [&](int e, int position) {
      const long long at = fetch_line[MODE == 0 ? e >> 1 : 0] + position * stride;
      if constexpr (MODE == 0) {
        raw[e] = f[at];
      } else {
        __pipeline_memcpy_async(&ring[wrap(slot0 + fetch_offset(e)) * kPassStride + fetch_ring_line(e)], &in[at],
                                sizeof(V));
      }
    };
    const int p0 = start + rel0;
    if (p0 >= 0 && p0 + kPassTile <= n_axis && rel0 + kPassTile <= limit) {  // block-uniform: no mirror, no limit
#pragma unroll
      for (int e = 0; e < kChunkLoads; ++e) copy(e, p0 + fetch_offset(e));
    } else {
#pragma unroll
      for (int e = 0; e < kChunkLoads; ++e) {
        if (rel0 + fetch_offset(e) < limit) copy(e, mirror(p0 + fetch_offset(e), n_axis));
      }
    }
    if constexpr (MODE != 0) __pipeline_commit();
  };
  auto put = [&](int rel0, int slot0, int limit, const Raw(&raw)[kChunkLoads]) {
    if constexpr (MODE == 0) {
#pragma unroll
      for (int e = 0; e < kChunkLoads; ++e) {
        const int offset = fetch_offset(e);
        if (rel0 + offset < limit) {
          ring[wrap(slot0 + offset) * kPassStride + fetch_ring_line(e)] = channels<V>(raw[e], p.term);
        }
      }
    } else {
      __pipeline_wait_prior(0);
    }
  };

  // The first window (slots 0 .. span - 1); the async copies of all its chunks in flight together.
  for (int rel0 = 0; rel0 < span; rel0 += kPassTile) {
    Raw raw[kChunkLoads];
    fetch(rel0, rel0, span, raw);
    if constexpr (MODE == 0) put(rel0, rel0, span, raw);
  }
  if constexpr (MODE != 0) __pipeline_wait_prior(0);
  __syncthreads();

  const int line = threadIdx.x, first = threadIdx.y * kPassRun;
  const bool line_exists = line0 + line < n_lines;
  const long long out_line = L.address(min(line0 + line, n_lines - 1), other, 0);
  int window_slot = 0, next_slot = span % p.ring;  // slots of relative samples s 64 and s 64 + span
  for (int s = 0; s < steps; ++s) {
    const int a = (tile0 + s) * kPassTile;  // the tile's first output
    const bool more = s + 1 < steps;
    const int next_rel = s * kPassTile + span;  // the 64 samples the next tile adds
    Raw raw[kChunkLoads];
    if (more) fetch(next_rel, next_slot, next_rel + kPassTile, raw);
    // The last pass's other inputs, loaded with the samples: one memory latency, hidden too.
    float fv[kPassRun], num[kPassRun] = {}, den[kPassRun] = {};
    if constexpr (MODE == 2) {
#pragma unroll
      for (int o = 0; o < kPassRun; ++o) {
        const long long at = out_line + min(a + first + o, n_axis - 1) * stride;
        fv[o] = f[at];
        if constexpr (!kWritesSums<V>) {
          num[o] = numerator[at];
          den[o] = denominator[at];
        }
      }
    }

    // Output o at relative sample s 64 + first + o takes tap k from relative sample s 64 + first
    // + o + k. Eight taps at a time: `cur` holds eight samples, `next` the eight after them (a
    // run of eight never wraps: slots, ring and tiles are multiples of 8).
    V acc[kPassRun] = {};
    if (MODE == 0 || line_exists) {
      const V* column = ring + line;
      int slot = wrap(window_slot + first);
      V cur[kPassRun];
#pragma unroll
      for (int o = 0; o < kPassRun; ++o) cur[o] = column[(slot + o) * kPassStride];
      for (int kb = 0; kb < p.taps8; kb += kPassRun) {
        slot = wrap(slot + kPassRun);
        V next[kPassRun];
#pragma unroll
        for (int o = 0; o < kPassRun; ++o) next[o] = column[(slot + o) * kPassStride];
#pragma unroll
        for (int j = 0; j < kPassRun; ++j) {
          const float g = p.g[kb + j];
#pragma unroll
          for (int o = 0; o < kPassRun; ++o) madd(acc[o], g, o + j < kPassRun ? cur[o + j] : next[o + j - kPassRun]);
        }
#pragma unroll
        for (int o = 0; o < kPassRun; ++o) cur[o] = next[o];
      }
    }

    if constexpr (MODE == 0) {
      // Along x a thread's outputs lie on one row: through the slots of the tile's first 64
      // samples (no longer needed), so that a warp writes 32 consecutive positions of a row.
      __syncthreads();
      const int own = wrap(window_slot + first);
#pragma unroll
      for (int o = 0; o < kPassRun; ++o) ring[(own + o) * kPassStride + line] = acc[o];
      __syncthreads();
#pragma unroll
      for (int i = 0; i < kFetchLines; ++i) {
        const int row = threadIdx.y + kPassGroups * i;
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const int position = threadIdx.x + kLines * half;
          if (line0 + row < n_lines && a + position < n_axis) {
            out[fetch_line[i] + a + position] = ring[wrap(window_slot + position) * kPassStride + row];
          }
        }
      }
    } else if (line_exists) {
#pragma unroll
      for (int o = 0; o < kPassRun; ++o) {
        if (a + first + o >= n_axis) continue;
        const long long at = out_line + (a + first + o) * stride;
        if constexpr (MODE == 1) {
          out[at] = acc[o];
        } else {
          const float2 c = contribution(acc[o], fv[o], p.term);
          if (p.quotient != nullptr) {
            p.quotient[at] = (num[o] + c.x) / (den[o] + c.y);
          } else {
            numerator[at] = num[o] + c.x;
            denominator[at] = den[o] + c.y;
          }
        }
      }
    }
    if (more) put(next_rel, next_slot, next_rel + kPassTile, raw);
    window_slot = wrap(window_slot + kPassTile);
    next_slot = wrap(next_slot + kPassTile);
    __syncthreads();
  }
}

struct RecursiveParams {
  Lines lines;
  int pad;
  double B, b1, b2, b3;
  Term term;
};

// The recursion runs in double: with sigma_s in the tens its poles are so close to 1 that float
// rounding, amplified by 1 / B, costs 25 dB (55 dB against the CPU's double at sigma_s 50). The
// pass is memory-bound, so the FP64 arithmetic is free; samples stay float in memory.
template <typename V>
struct State;
template <>
struct State<float> {
  double v;
  __device__ State() = default;
  __device__ explicit State(float x) : v(x) {}
  __device__ float value() const { return float(v); }
  __device__ State step(float x, const State& w2, const State& w3, const RecursiveParams& p) const {
    State r;
    r.v = fma(p.B, double(x), fma(p.b1, v, fma(p.b2, w2.v, p.b3 * w3.v)));
    return r;
  }
};
template <>
struct State<float4> {
  State<float> x, y, z, w;
  __device__ State() = default;
  __device__ explicit State(const float4& s) : x(s.x), y(s.y), z(s.z), w(s.w) {}
  __device__ float4 value() const { return make_float4(x.value(), y.value(), z.value(), w.value()); }
  __device__ State step(const float4& s, const State& w2, const State& w3, const RecursiveParams& p) const {
    State r;
    r.x = x.step(s.x, w2.x, w3.x, p);
    r.y = y.step(s.y, w2.y, w3.y, p);
    r.z = z.step(s.z, w2.z, w3.z, p);
    r.w = w.step(s.w, w2.w, w3.w, p);
    return r;
  }
};

// The recursion's last three outputs: `push` runs one step and returns its output.
template <typename V>
struct Recursion {
  State<V> w1, w2, w3;
  // The steady state of a constant signal x (the start of either pass).
  __device__ void settle(const V& x) { w1 = w2 = w3 = State<V>(x); }
  // The anti-causal pass starts in the steady state of the causal pass's last output.
  __device__ void turn() { w2 = w3 = w1; }
  __device__ V push(const V& x, const RecursiveParams& p) {
    const State<V> w = w1.step(x, w2, w3, p);
    w3 = w2;
    w2 = w1;
    w1 = w;
    return w.value();
  }
};

// Along y and z (MODE 1, 2): one thread per line, neighbouring threads on neighbouring x, so every
// access is coalesced. Positions -pad .. n + pad - 1 (mirror); the causal pass stores its output
// for positions 0 .. n - 1 in `fwd` and for n .. n + pad - 1 in `tail`; the anti-causal pass
// reads them back from the end and writes (MODE 1: into `fwd`, in place) or accumulates (MODE 2).
template <typename V, int MODE>
__global__ void __launch_bounds__(kRecursiveThreads) recursive_pass_kernel(const V* __restrict__ in, V* fwd, V* tail,
                                                                           const float* __restrict__ f,
                                                                           float* __restrict__ numerator,
                                                                           float* __restrict__ denominator,
                                                                           RecursiveParams p) {
  const Lines& L = p.lines;
  const int line = blockIdx.x * kRecursiveThreads + threadIdx.x, other = blockIdx.y;
  const int n = L.length(), n_lines = L.count();
  if (line >= n_lines) return;
  const long long lines_total = (long long)n_lines * L.others();
  V* line_tail = tail + (long long)other * n_lines + line;  // sample k at line_tail[k * lines_total]
  static_assert(MODE == 1 || MODE == 2, "the x pass is recursive_x_kernel");
  auto input = [&](int position) { return in[L.address(line, other, mirror(position, n))]; };
  Recursion<V> r;
  r.settle(input(-p.pad));
  for (int j = -p.pad; j < n + p.pad; ++j) {
    const V w = r.push(input(j), p);
    if (j >= n) {
      line_tail[(j - n) * lines_total] = w;
    } else if (j >= 0) {
      fwd[L.address(line, other, j)] = w;
    }
  }
  r.turn();
  for (int j = n + p.pad - 2; j >= 0; --j) {
    const long long at = j < n ? L.address(line, other, j) : 0;
    const V w = r.push(j >= n ? line_tail[(j - n) * lines_total] : fwd[at], p);
    if (j < n) {
      if constexpr (MODE == 2) {
        const float2 c = contribution(w, f[at], p.term);
        numerator[at] = kWritesSums<V> ? c.x : numerator[at] + c.x;
        denominator[at] = kWritesSums<V> ? c.y : denominator[at] + c.y;
      } else {
        fwd[at] = w;
      }
    }
  }
}

// Along x (the first pass, from f): each warp takes 32 lines (neighbouring y) and walks them in
// chunks of 32 positions, staged through shared memory so that loads and stores run along x
// (coalesced) while each lane runs the recursion of its own line. The tail of each line is kept
// line by line: tail[line * pad + k].
constexpr int kXWarps = 2;

template <typename V>
__global__ void __launch_bounds__(kXWarps * 32) recursive_x_kernel(V* __restrict__ fwd, V* __restrict__ tail,
                                                                   const float* __restrict__ f, RecursiveParams p) {
  __shared__ V tiles[kXWarps][32][33];  // [position in chunk][line], padded: conflict-free both ways
  const Lines& L = p.lines;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int nx = L.nx, ny = L.ny, pad = p.pad, m = nx + 2 * pad;
  const int y0 = (blockIdx.x * kXWarps + warp) * 32, z = blockIdx.y;
  if (y0 >= ny) return;  // whole warps
  V(*t)[33] = tiles[warp];
  const int lines = min(32, ny - y0);
  const long long row0 = ((long long)z * ny + y0) * nx;  // line i starts at row0 + i nx
  V* line_tails = tail + ((long long)z * ny + y0) * pad;
  Recursion<V> r;
  // Each lane runs its line through the chunk's `count` samples, in place.
  auto recurse = [&](int count) {
    __syncwarp();
    for (int q = 0; q < count; ++q) t[q][lane] = r.push(t[q][lane], p);
    __syncwarp();
  };
  for (int c0 = 0; c0 < m; c0 += 32) {  // chunk: positions c0 - pad .. c0 - pad + 31
    const int j = c0 - pad + lane, count = min(32, m - c0);
    if (lane < count) {
      for (int i = 0; i < 32; ++i) t[lane][i] = channels<V>(f[row0 + min(i, lines - 1) * (long long)nx + mirror(j, nx)], p.term);
    }
    __syncwarp();
    if (c0 == 0) r.settle(t[0][lane]);
    recurse(count);
    if (lane < count && j >= 0) {
      for (int i = 0; i < lines; ++i) {
        if (j < nx) {
          fwd[row0 + i * (long long)nx + j] = t[lane][i];
        } else {
          line_tails[i * pad + j - nx] = t[lane][i];
        }
      }
    }
    __syncwarp();
  }
  r.turn();
  for (int hi = nx + pad - 2; hi >= 0; hi -= 32) {  // chunk: positions hi, hi - 1, ... hi - 31
    const int j = hi - lane, count = min(32, hi + 1);
    if (j >= 0) {
      for (int i = 0; i < 32; ++i) {
        const int l = min(i, lines - 1);
        t[lane][i] = j >= nx ? line_tails[l * pad + j - nx] : fwd[row0 + l * (long long)nx + j];
      }
    }
    recurse(count);
    if (j >= 0 && j < nx) {
      for (int i = 0; i < lines; ++i) fwd[row0 + i * (long long)nx + j] = t[lane][i];
    }
    __syncwarp();
  }
}

__global__ void divide_kernel(const float* __restrict__ numerator, const float* __restrict__ denominator,
                              float* __restrict__ out, long long n) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = numerator[i] / denominator[i];
}

int padded_taps(int radius) { return (2 * radius + 1 + kPassRun - 1) / kPassRun * kPassRun; }

// Shared memory of a block of the direct passes holding `ring` positions of its 32 lines.
template <typename V>
std::size_t ring_bytes(int ring) {
  return std::size_t(ring) * kPassStride * sizeof(V);
}
// A block that does not walk holds one window: 64 outputs plus the taps.
template <typename V>
std::size_t pass_bytes(int radius) {
  return ring_bytes<V>(kPassTile + padded_taps(radius));
}

// How many tiles of 64 outputs a block of the direct passes walks along its lines. A walk reads
// each sample once (not 1 + taps / 64 times) and fetches the next tile's samples during the
// current tile's FMAs, but its ring holds 64 positions more than a window, and the grid must still
// give every SM about 8 blocks. The environment variable CTD_COMPRESSIVE_STEPS (a count >= 1) sets
// it, within the line's tiles: for tests and benchmarks (1: no walk).
template <typename V>
int walk_steps(const Lines& L, int taps8) {
  const int tiles = (L.length() + kPassTile - 1) / kPassTile;
  const std::size_t walk_bytes = ring_bytes<V>(2 * kPassTile + taps8), most = max_shared_bytes();
  if (walk_bytes > most) return 1;
  if (const char* forced = std::getenv("CTD_COMPRESSIVE_STEPS")) return std::clamp(std::atoi(forced), 1, tiles);
  if (walk_bytes > most / 2) return 1;  // two blocks per SM, or no walk
  const long long line_groups = (L.count() + kLines - 1) / kLines * (long long)L.others();
  return int(std::clamp(tiles * line_groups / (8LL * sm_count()), 1LL, (long long)tiles));
}

double sigma_voxels(const BilateralParams& params, int axis) {
  return params.spatial_unit == SpatialUnit::Millimetre ? params.sigma_spatial / params.spacing[axis]
                                                        : double(params.sigma_spatial);
}

Lines lines_along(const Dims& dims, int axis) { return {int(dims.nx), int(dims.ny), int(dims.nz), axis}; }

// float4 samples the recursive passes keep beyond the end of every line (the largest axis).
std::size_t recursive_tail_count(const Dims& dims, const BilateralParams& params) {
  if (params.gaussian != BilateralParams::Gaussian::Recursive) return 0;
  std::size_t most = 0;
  for (int axis = 0; axis < (dims.is_2d() ? 2 : 3); ++axis) {
    const Lines L = lines_along(dims, axis);
    const auto pad = std::size_t(detail::RecursiveGaussianCoefficients(sigma_voxels(params, axis)).pad);
    most = std::max(most, std::size_t(L.count()) * std::size_t(L.others()) * pad);
  }
  return most;
}

struct CompressiveWork {
  float4 *a, *b, *tail;  // a, b: n samples each (float4, or float for the DC term)
  float *numerator, *denominator;
};

// The parts of work_floats' workspace for a volume of n voxels.
CompressiveWork compressive_work(float* work, long long n) {
  float4* a = reinterpret_cast<float4*>(work);
  float* sums = reinterpret_cast<float*>(a + 2 * n);
  return CompressiveWork{a, a + n, a + 3 * n, sums, sums + n};
}

// Each axis's pass parameters, the same for every term (which is filled in per launch).
struct AxisPasses {
  PassParams direct;
  RecursiveParams recursive;
};

std::array<AxisPasses, 3> axis_passes(const Dims& dims, const BilateralParams& params,
                                      const std::array<int, 3>& radius) {
  std::array<AxisPasses, 3> passes{};
  for (int axis = 0; axis < (dims.is_2d() ? 2 : 3); ++axis) {
    const Lines L = lines_along(dims, axis);
    if (params.gaussian == BilateralParams::Gaussian::Recursive) {
      const detail::RecursiveGaussianCoefficients c(sigma_voxels(params, axis));
      passes[axis].recursive = RecursiveParams{L, int(c.pad), c.B, c.b1, c.b2, c.b3, Term{}};
      continue;
    }
    PassParams& p = passes[axis].direct;
    p.lines = L;
    p.radius = radius[axis];
    p.taps8 = padded_taps(p.radius);
    const double step = params.spatial_unit == SpatialUnit::Millimetre ? params.spacing[axis] : 1.0;
    std::vector<double> taps;
    for (int i = -p.radius; i <= p.radius; ++i) {
      taps.push_back(std::exp(-(i * step) * (i * step) / (2.0 * params.sigma_spatial * params.sigma_spatial)));
    }
    double total = 0;
    for (double t : taps) total += t;
    for (std::size_t i = 0; i < taps.size(); ++i) p.g[i] = float(taps[i] / total);  // sums to 1: G 1 = 1
  }
  return passes;
}

// Part of a direct pass: the lines' other index (the slice, for the x and y passes of a volume)
// in [first_other, end_other), and the blocks along the lines in [first_block, end_block) of
// `steps` tiles each (0: walk_steps' choice); -1 ends: to the end. Each output is computed alone
// from the same taps in the same order, so a pass cut into parts gives the same bits.
struct PassRange {
  int first_other = 0, end_other = -1;
  int first_block = 0, end_block = -1, steps = 0;
};

template <typename V>
void queue_direct_pass(const float* d_in, const Dims& dims, std::array<AxisPasses, 3> passes, int axis, const Term& term,
                       const CompressiveWork& w, float* quotient, const PassRange& range, cudaStream_t stream) {
  const int axes = dims.is_2d() ? 2 : 3;
  const int mode = axis == 0 ? 0 : axis == axes - 1 ? 2 : 1;
  V* a = reinterpret_cast<V*>(w.a);
  V* b = reinterpret_cast<V*>(w.b);
  const V* in = axis % 2 == 1 ? a : b;  // x reads f; y: a -> b; z: b -> (a)
  V* out = axis % 2 == 1 ? b : a;
  PassParams& p = passes[axis].direct;
  p.term = term;
  p.quotient = mode == 2 ? quotient : nullptr;
  const Lines& L = p.lines;
  const int tiles = (L.length() + kPassTile - 1) / kPassTile;
  p.steps = range.steps > 0 ? std::min(range.steps, tiles) : walk_steps<V>(L, p.taps8);
  p.ring = kPassTile + p.taps8 + (p.steps > 1 ? kPassTile : 0);
  p.first_block = range.first_block;
  p.first_other = range.first_other;
  const int blocks = (tiles + p.steps - 1) / p.steps;
  const int end_block = range.end_block < 0 ? blocks : std::min(range.end_block, blocks);
  const int end_other = range.end_other < 0 ? L.others() : std::min(range.end_other, L.others());
  if (end_block <= range.first_block || end_other <= range.first_other) return;
  const dim3 grid(unsigned(end_block - range.first_block), unsigned((L.count() + kLines - 1) / kLines),
                  unsigned(end_other - range.first_other));
  const std::size_t bytes = ring_bytes<V>(p.ring);
  auto launch = [&](auto kernel) {
    CTD_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
    kernel<<<grid, dim3(kLines, kPassGroups), bytes, stream>>>(in, out, d_in, w.numerator, w.denominator, p);
  };
  if (mode == 0) launch(compressive_pass_kernel<V, 0>);
  if (mode == 1) launch(compressive_pass_kernel<V, 1>);
  if (mode == 2) launch(compressive_pass_kernel<V, 2>);
  CTD_CUDA_CHECK_LAUNCH();
}

// One term of the series through the x, y (and z) passes, V = float for the DC term.
template <typename V>
void compressive_term(const float* d_in, const Dims& dims, std::array<AxisPasses, 3> passes, bool recursive,
                      const Term& term, const CompressiveWork& w, float* quotient, cudaStream_t stream) {
  const int axes = dims.is_2d() ? 2 : 3;
  V* a = reinterpret_cast<V*>(w.a);
  V* b = reinterpret_cast<V*>(w.b);
  for (int axis = 0; axis < axes; ++axis) {
    const int mode = axis == 0 ? 0 : axis == axes - 1 ? 2 : 1;
    const V* in = axis % 2 == 1 ? a : b;  // x reads f; y: a -> b; z: b -> (a)
    V* out = axis % 2 == 1 ? b : a;
    if (recursive) {
      RecursiveParams& p = passes[axis].recursive;
      p.term = term;
      const Lines& L = p.lines;
      V* tail = reinterpret_cast<V*>(w.tail);
      if (mode == 0) {
        const dim3 grid(unsigned((L.ny + 32 * kXWarps - 1) / (32 * kXWarps)), unsigned(L.nz));
        recursive_x_kernel<V><<<grid, 32 * kXWarps, 0, stream>>>(out, tail, d_in, p);
      }
      const dim3 grid(unsigned((L.count() + kRecursiveThreads - 1) / kRecursiveThreads), unsigned(L.others()));
      auto launch = [&](auto kernel) {
        kernel<<<grid, kRecursiveThreads, 0, stream>>>(in, out, tail, d_in, w.numerator, w.denominator, p);
      };
      if (mode == 1) launch(recursive_pass_kernel<V, 1>);
      if (mode == 2) launch(recursive_pass_kernel<V, 2>);
    } else {
      queue_direct_pass<V>(d_in, dims, passes, axis, term, w, quotient, PassRange{}, stream);
    }
    CTD_CUDA_CHECK_LAUNCH();
  }
}

// Term m of the series for the input's least value `lo`.
Term series_term(const BilateralParams& params, const CompressiveSettings& settings, float lo, int m) {
  const double omega = 2.0 * M_PI / settings.period;
  return Term{lo, float(1.0 / settings.period),
              m == 0 ? 1.0f : float(2.0 * std::exp(-0.5 * std::pow(omega * m * params.sigma_range, 2))), m};
}

}  // namespace

std::size_t compressive_work_floats(const Dims& dims, const BilateralParams& params) {
  return 4 * (3 * std::size_t(dims.count()) + recursive_tail_count(dims, params));
}

std::size_t compressive_pass_bytes(int radius) { return pass_bytes<float4>(radius); }

// The compressive filter on device memory.
void compressive_device(const float* d_in, float* d_out, const Dims& dims, const BilateralParams& params,
                        const std::array<int, 3>& radius, const CompressiveSettings& settings, float lo,
                        float* workspace, cudaStream_t stream) {
  const CompressiveWork work = compressive_work(workspace, dims.count());
  const std::array<AxisPasses, 3> passes = axis_passes(dims, params, radius);
  const bool recursive = params.gaussian == BilateralParams::Gaussian::Recursive;
  // The direct passes' last pass of the last term writes the quotient itself (saves 12 B of
  // traffic per voxel); the recursive passes keep a divide kernel (they measured slower with it).
  for (int m = 0; m <= settings.terms; ++m) {  // m = 0 first: it writes numerator and denominator
    const Term term = series_term(params, settings, lo, m);
    float* quotient = m == settings.terms && !recursive ? d_out : nullptr;
    if (m == 0) {
      compressive_term<float>(d_in, dims, passes, recursive, term, work, quotient, stream);
    } else {
      compressive_term<float4>(d_in, dims, passes, recursive, term, work, quotient, stream);
    }
  }
  if (recursive) {
    const long long n = dims.count();
    divide_kernel<<<unsigned((n + 255) / 256), 256, 0, stream>>>(work.numerator, work.denominator, d_out, n);
    CTD_CUDA_CHECK_LAUNCH();
  }
}

// The compressive filter (direct passes, 3D) from host memory in steps beside the copies
// (run_from_host_in_steps): the DC term's x and y passes, which need neither the value range nor
// other slices, run on each slab as it arrives; once all is up, the value range, the DC term's z
// pass and every other term but the last one's z pass; that pass, which writes the output, runs
// in parts along z, each part going down while the next runs. The same bits as in one piece.
template <class T>
HostTimes compressive_from_host_in_steps(ConstVolumeView<T> in, VolumeView<float> out, const BilateralParams& params,
                                         const std::array<int, 3>& radius, int chunks, CompressiveSettings* compressive,
                                         const std::function<void()>& uploaded, bool output_statistics) {
  const Dims& dims = in.dims;
  const long long n = dims.count();
  const std::array<AxisPasses, 3> passes = axis_passes(dims, params, radius);
  // The last pass's parts: about 4, of `steps` tiles of kPassTile slices each.
  const int tiles = (int(dims.nz) + kPassTile - 1) / kPassTile;
  const int last_steps = (tiles + std::min(4, tiles) - 1) / std::min(4, tiles);
  const int last_parts = (tiles + last_steps - 1) / last_steps;
  std::vector<int> slab_z(std::size_t(chunks) + 1);
  for (int k = 0; k <= chunks; ++k) slab_z[std::size_t(k)] = int(std::int64_t(dims.nz) * k / chunks);
  std::vector<HostStep> steps;
  for (int k = 0; k < chunks; ++k) steps.push_back({slab_z[std::size_t(k) + 1], 0});
  steps.push_back({int(dims.nz), 0});
  for (int part = 0; part < last_parts; ++part) {
    steps.push_back({int(dims.nz), int(std::min<std::int64_t>(dims.nz, std::int64_t(part + 1) * last_steps * kPassTile))});
  }
  CompressiveSettings settings;
  Term last_term{};
  const Term dc{0.0f, 0.0f, 1.0f, 0};
  return run_from_host_in_steps(
      in, out, compressive_work_floats(dims, params) * sizeof(float), steps, uploaded,
      output_statistics, [&](int step, const float* d_in, float* d_out, void* work, cudaStream_t stream) {
        const CompressiveWork w = compressive_work(static_cast<float*>(work), n);
        if (step < chunks) {  // the DC term's x and y passes over this slab
          const PassRange slab{slab_z[std::size_t(step)], slab_z[std::size_t(step) + 1]};
          queue_direct_pass<float>(d_in, dims, passes, 0, dc, w, nullptr, slab, stream);
          queue_direct_pass<float>(d_in, dims, passes, 1, dc, w, nullptr, slab, stream);
          return;
        }
        if (step == chunks) {  // everything up to the last term's z pass
          const std::pair<float, float> range = value_range_device(d_in, dims, stream);
          const float least = range.first;
          settings = compressive_settings(params, double(range.second) - double(range.first));
          *compressive = settings;
          last_term = series_term(params, settings, least, settings.terms);
          for (int m = 0; m <= settings.terms; ++m) {
            const Term t = series_term(params, settings, least, m);
            const int first_axis = m == 0 ? 2 : 0, end_axis = m == settings.terms ? 2 : 3;
            for (int axis = first_axis; axis < end_axis; ++axis) {
              if (m == 0) queue_direct_pass<float>(d_in, dims, passes, axis, t, w, nullptr, PassRange{}, stream);
              else queue_direct_pass<float4>(d_in, dims, passes, axis, t, w, nullptr, PassRange{}, stream);
            }
          }
          return;
        }
        const int part = step - chunks - 1;  // the last term's z pass, writing the output
        const PassRange range{0, -1, part, part + 1, last_steps};
        if (settings.terms == 0) queue_direct_pass<float>(d_in, dims, passes, 2, last_term, w, d_out, range, stream);
        else queue_direct_pass<float4>(d_in, dims, passes, 2, last_term, w, d_out, range, stream);
      });
}

template HostTimes compressive_from_host_in_steps(ConstVolumeView<float> in, VolumeView<float> out,
                                                  const BilateralParams& params, const std::array<int, 3>& radius,
                                                  int chunks, CompressiveSettings* compressive,
                                                  const std::function<void()>& uploaded, bool output_statistics);
template HostTimes compressive_from_host_in_steps(ConstVolumeView<std::int16_t> in, VolumeView<float> out,
                                                  const BilateralParams& params, const std::array<int, 3>& radius,
                                                  int chunks, CompressiveSettings* compressive,
                                                  const std::function<void()>& uploaded, bool output_statistics);

}  // namespace ctd::cuda
