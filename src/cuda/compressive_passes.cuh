#pragma once
// The compressive bilateral filter's direct Gaussian passes on the GPU (bilateral_compressive.cu):
// the terms of the series, their channels, and the pass kernel that filters them along one axis
// with the exact filter's window. The recursive passes are in compressive_recursive.cuh.

#include "cuda/bilateral_compressive.hpp"
#include "cuda/device_util.cuh"

#include <cuda_pipeline.h>

#include <type_traits>

namespace ctd::cuda::compressive {

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

}  // namespace ctd::cuda::compressive
