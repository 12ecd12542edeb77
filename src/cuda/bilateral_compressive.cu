// CUDA compressive bilateral filter (Yano et al., Algorithm 1): the range kernel as a Fourier
// series, each term filtered by separable Gaussian passes. Definition: docs/filters.md (mirror
// border, per-axis radius, sigma in voxels or mm). bilateral.cu routes to it.

#include "cuda/bilateral_compressive.hpp"

#include "core/recursive_gaussian.hpp"
#include "cuda/compressive_passes.cuh"
#include "cuda/compressive_recursive.cuh"
#include "cuda/cuda_check.hpp"
#include "cuda/device_buffer.hpp"
#include "cuda/device_util.cuh"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <vector>

namespace ctd::cuda {
namespace {

using namespace compressive;

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
