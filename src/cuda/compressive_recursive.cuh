#pragma once
// The compressive bilateral filter's recursive Gaussian passes on the GPU (Young-van Vliet;
// bilateral_compressive.cu): one thread per line, a causal pass and an anti-causal pass back over
// it, in double.

#include "cuda/compressive_passes.cuh"

namespace ctd::cuda::compressive {

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

}  // namespace ctd::cuda::compressive
