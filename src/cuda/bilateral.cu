// CUDA bilateral filter: the exact filter as `naive`, `tiled` (seed 000) and `fused`, and the
// compressive approximation (seed 002, Algorithm 1). Definition: docs/filters.md (mirror border,
// per-axis radius, sigma in voxels or mm).

#include "cuda/backend.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/device_buffer.hpp"
#include "cuda/device_util.cuh"

#include <ctdenoise/error.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace ctd::cuda {
namespace {

constexpr int kMaxAxisTaps = 255;       // radius up to 127 per axis for the kernels' per-axis tables
constexpr int kMaxConstantTaps = 16384;  // tiled: the whole window in constant memory (64 KiB)
constexpr float kLog2e = 1.4426950408889634f;

__constant__ float c_spatial[kMaxConstantTaps];

struct BfParams {
  int nx, ny, nz, rx, ry, rz;
  float inv_two_sr2;  // 1 / (2 sigma_r^2)
  float scale;        // sqrt(log2(e) / (2 sigma_r^2)): fused works on scaled values, exp2 of -d^2
  // log2 of the spatial factor along each axis, exp(-(k s)^2 / (2 sigma_s^2)), index k + r
  float lx[kMaxAxisTaps], ly[kMaxAxisTaps], lz[kMaxAxisTaps];
};

BfParams make_params(const Dims& dims, const BilateralParams& p, const std::array<int, 3>& radius) {
  BfParams k{};
  k.nx = int(dims.nx);
  k.ny = int(dims.ny);
  k.nz = int(dims.nz);
  k.rx = radius[0];
  k.ry = radius[1];
  k.rz = dims.is_2d() ? 0 : radius[2];
  const double sr = p.sigma_range;
  k.inv_two_sr2 = float(1.0 / (2.0 * sr * sr));
  k.scale = float(std::sqrt(double(kLog2e) / (2.0 * sr * sr)));
  const bool mm = p.spatial_unit == SpatialUnit::Millimetre;
  const double two_ss2 = 2.0 * double(p.sigma_spatial) * p.sigma_spatial;
  float* tables[3] = {k.lx, k.ly, k.lz};
  const int radii[3] = {k.rx, k.ry, k.rz};
  for (int axis = 0; axis < 3; ++axis) {
    const double step = mm ? p.spacing[axis] : 1.0;
    for (int i = -radii[axis]; i <= radii[axis]; ++i) {
      if (i + radii[axis] < kMaxAxisTaps) tables[axis][i + radii[axis]] = float(-(i * step) * (i * step) / two_ss2 * kLog2e);
    }
  }
  return k;
}


__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// ---- naive: one thread per voxel, everything from global memory --------------------------------

__global__ void bf_naive_kernel(const float* __restrict__ u, float* __restrict__ out, const float* __restrict__ spatial,
                                BfParams k) {
  const long long n = (long long)k.nx * k.ny * k.nz;
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const int x = int(i % k.nx), y = int((i / k.nx) % k.ny), z = int(i / ((long long)k.nx * k.ny));
  const float centre = u[i];
  float sum = 0, weight_sum = 0;
  int t = 0;
  for (int kz = -k.rz; kz <= k.rz; ++kz)
    for (int ky = -k.ry; ky <= k.ry; ++ky)
      for (int kx = -k.rx; kx <= k.rx; ++kx, ++t) {
        const float v = u[((long long)mirror(z + kz, k.nz) * k.ny + mirror(y + ky, k.ny)) * k.nx + mirror(x + kx, k.nx)];
        const float d = centre - v;
        const float w = spatial[t] * __expf(-d * d * k.inv_two_sr2);
        sum += w * v;
        weight_sum += w;
      }
  out[i] = sum / weight_sum;
}

// ---- tiled (seed 000): the apron in shared memory, the spatial kernel in constant memory --------

constexpr int kTiledX = 32, kTiledY = 8, kTiledZ3d = 4;

struct TiledLayout {
  int ux, uy, uz;
  std::size_t bytes() const { return std::size_t(ux) * uy * uz * sizeof(float); }
};

__host__ __device__ inline TiledLayout tiled_layout(const BfParams& k) {
  return {kTiledX + 2 * k.rx, kTiledY + 2 * k.ry, (k.rz ? kTiledZ3d : 1) + 2 * k.rz};
}

__global__ void __launch_bounds__(kTiledX* kTiledY) bf_tiled_kernel(const float* __restrict__ u, float* __restrict__ out,
                                                                    BfParams k) {
  extern __shared__ float U[];
  const TiledLayout l = tiled_layout(k);
  const int tz = k.rz ? kTiledZ3d : 1;
  const int x0 = blockIdx.x * kTiledX, y0 = blockIdx.y * kTiledY, z0 = blockIdx.z * tz;
  const int tid = threadIdx.y * kTiledX + threadIdx.x;
  const int count = l.ux * l.uy * l.uz;
  for (int i = tid; i < count; i += kTiledX * kTiledY) {
    const int ix = i % l.ux, iy = (i / l.ux) % l.uy, iz = i / (l.ux * l.uy);
    U[i] = u[((long long)mirror(z0 - k.rz + iz, k.nz) * k.ny + mirror(y0 - k.ry + iy, k.ny)) * k.nx +
             mirror(x0 - k.rx + ix, k.nx)];
  }
  __syncthreads();
  const int x = x0 + threadIdx.x, y = y0 + threadIdx.y;
  if (x >= k.nx || y >= k.ny) return;
  for (int t = 0; t < tz && z0 + t < k.nz; ++t) {
    const float centre = U[((t + k.rz) * l.uy + threadIdx.y + k.ry) * l.ux + threadIdx.x + k.rx];
    float sum = 0, weight_sum = 0;
    int s = 0;
    for (int kz = 0; kz <= 2 * k.rz; ++kz)
      for (int ky = 0; ky <= 2 * k.ry; ++ky) {
        const float* row = U + ((t + kz) * l.uy + threadIdx.y + ky) * l.ux + threadIdx.x;
        for (int kx = 0; kx <= 2 * k.rx; ++kx, ++s) {
          const float v = row[kx];
          const float d = centre - v;
          const float w = c_spatial[s] * __expf(-d * d * k.inv_two_sr2);
          sum += w * v;
          weight_sum += w;
        }
      }
    out[((long long)(z0 + t) * k.ny + y) * k.nx + x] = sum / weight_sum;
  }
}

// ---- fused: each thread 8 outputs down a column, every loaded neighbour used for all of them ----
//
// A row of the window, loaded once (through the read-only cache, no shared memory and no
// barriers), serves the 8 outputs whose windows contain it. Values are scaled by
// sqrt(log2 e / 2 sigma_r^2), so the weight is one exp2 of (log2 spatial - d^2): per pair one
// MUFU and five FP32 operations.

constexpr int kFusedRun = 8, kFusedBx = 32, kFusedBy = 4;

__global__ void __launch_bounds__(kFusedBx* kFusedBy) bf_fused_kernel(const float* __restrict__ u,
                                                                      float* __restrict__ out, BfParams k) {
  const int x = blockIdx.x * kFusedBx + threadIdx.x;
  const int y0 = (blockIdx.y * kFusedBy + threadIdx.y) * kFusedRun, z = blockIdx.z;
  if (x >= k.nx || y0 >= k.ny) return;
  const long long plane = (long long)k.nx * k.ny;
  float centre[kFusedRun], sum[kFusedRun], weight_sum[kFusedRun];
#pragma unroll
  for (int t = 0; t < kFusedRun; ++t) {
    centre[t] = y0 + t < k.ny ? __ldg(u + z * plane + (long long)(y0 + t) * k.nx + x) * k.scale : 0.0f;
    sum[t] = weight_sum[t] = 0.0f;
  }
  const bool inside_x = x - k.rx >= 0 && x + k.rx < k.nx;
  for (int kz = -k.rz; kz <= k.rz; ++kz) {
    const float* slice = u + mirror(z + kz, k.nz) * plane;
    const float lz = k.lz[kz + k.rz];
    for (int j = 0; j < kFusedRun + 2 * k.ry; ++j) {  // row y0 - ry + j
      const float* row = slice + (long long)mirror(y0 - k.ry + j, k.ny) * k.nx;
      float base[kFusedRun];
#pragma unroll
      for (int t = 0; t < kFusedRun; ++t) {
        const int iy = j - t;  // ky + ry of output t
        base[t] = iy >= 0 && iy <= 2 * k.ry ? k.ly[iy] + lz : 0.0f;
      }
      const int t_lo = max(0, j - 2 * k.ry), t_hi = min(kFusedRun - 1, j);
      for (int kx = -k.rx; kx <= k.rx; ++kx) {
        const float v = __ldg(row + (inside_x ? x + kx : mirror(x + kx, k.nx))) * k.scale;
        const float lx = k.lx[kx + k.rx];
#pragma unroll
        for (int t = 0; t < kFusedRun; ++t) {
          if (t < t_lo || t > t_hi) continue;
          const float d = centre[t] - v;
          const float w = fast_exp2(fmaf(-d, d, base[t] + lx));
          sum[t] = fmaf(w, v, sum[t]);
          weight_sum[t] += w;
        }
      }
    }
  }
#pragma unroll
  for (int t = 0; t < kFusedRun; ++t) {
    if (y0 + t < k.ny) out[z * plane + (long long)(y0 + t) * k.nx + x] = sum[t] / (weight_sum[t] * k.scale);
  }
}

// ---- compressive (seed 002): 4M + 2 Gaussian filters as three 1D passes with shared memory ------
//
// Per term m, the four images c f, s f, c, s (c = cos(w m (f - lo)), s = sin(...)) travel
// together as a float4 through a pass along x (generated from f on the fly), along y and along z;
// the last pass adds a_m (c G(cf) + s G(sf)) and a_m (c G(c) + s G(s)) to the numerator and
// denominator. Each pass: a block holds 32 lines x (64 + 2r) samples in shared memory (lines on
// the lanes, so loads are conflict-free), and each thread slides 8 outputs along its line.

constexpr int kLines = 32, kPassRun = 8, kPassGroups = 8, kPassTile = kPassRun * kPassGroups;
constexpr int kPassStride = kLines + 1;  // float4 per position, padded: conflict-free transposed stores

struct PassParams {
  int nx, ny, nz, axis, radius;
  float lo, inv_period, a;  // term: value offset, 1 / T, weight a_m; m = term index
  int m;
  float g[2 * kMaxAxisTaps + 1];  // normalised Gaussian taps, index k + radius
};

__device__ __forceinline__ float4 channels(float f, const PassParams& p) {
  // cos/sin of 2 pi frac(m (f - lo) / T): reduced first, so the fast intrinsics stay accurate.
  const float t = float(p.m) * (f - p.lo) * p.inv_period;
  float s, c;
  __sincosf(6.283185307179586f * (t - floorf(t)), &s, &c);
  return make_float4(c * f, s * f, c, s);
}

// MODE 0: input f (float), output float4; 1: float4 -> float4; 2: float4 -> accumulate.
template <int MODE>
__global__ void __launch_bounds__(kLines* kPassGroups) compressive_pass_kernel(const void* __restrict__ in_ptr,
                                                                               float4* __restrict__ out,
                                                                               const float* __restrict__ f,
                                                                               float* __restrict__ numerator,
                                                                               float* __restrict__ denominator,
                                                                               PassParams p) {
  extern __shared__ float4 tile[];  // [position][line]
  const int n_axis = p.axis == 0 ? p.nx : p.axis == 1 ? p.ny : p.nz;
  const int span = kPassTile + 2 * p.radius;
  const int a0 = blockIdx.x * kPassTile;  // first output along the axis
  // Lines: axis x -> (y, z), 32 consecutive y; axis y -> (x, z), 32 consecutive x; axis z -> (x, y).
  const int line0 = blockIdx.y * kLines, other = blockIdx.z;
  const int n_lines = p.axis == 0 ? p.ny : p.nx;
  auto address = [&](int line, int position) -> long long {
    if (p.axis == 0) return ((long long)other * p.ny + line) * p.nx + position;
    if (p.axis == 1) return ((long long)other * p.ny + position) * p.nx + line;
    return ((long long)position * p.ny + other) * p.nx + line;
  };
  const int tid = threadIdx.y * kLines + threadIdx.x;
  for (int i = tid; i < span * kLines; i += kLines * kPassGroups) {
    // axis x: consecutive threads along the position (contiguous in memory); else along the line.
    const int position = p.axis == 0 ? i % span : i / kLines;
    const int line = p.axis == 0 ? i / span : i % kLines;
    const int l = min(line0 + line, n_lines - 1);
    const long long at = address(l, mirror(a0 - p.radius + position, n_axis));
    float4 v;
    if constexpr (MODE == 0) {
      v = channels(static_cast<const float*>(in_ptr)[at], p);
    } else {
      v = static_cast<const float4*>(in_ptr)[at];
    }
    tile[position * kPassStride + line] = v;
  }
  __syncthreads();
  const int line = threadIdx.x, first = threadIdx.y * kPassRun;
  if (line0 + line >= n_lines) return;
  float4 acc[kPassRun];
#pragma unroll
  for (int o = 0; o < kPassRun; ++o) acc[o] = make_float4(0, 0, 0, 0);
  for (int q = 0; q < kPassRun + 2 * p.radius; ++q) {  // sample first + q - radius feeds outputs o with tap q - o
    const float4 v = tile[(first + q) * kPassStride + line];
#pragma unroll
    for (int o = 0; o < kPassRun; ++o) {
      const int tap = q - o;
      if (tap < 0 || tap > 2 * p.radius) continue;
      const float g = p.g[tap];
      acc[o].x = fmaf(g, v.x, acc[o].x);
      acc[o].y = fmaf(g, v.y, acc[o].y);
      acc[o].z = fmaf(g, v.z, acc[o].z);
      acc[o].w = fmaf(g, v.w, acc[o].w);
    }
  }
#pragma unroll
  for (int o = 0; o < kPassRun; ++o) {
    const int position = a0 + first + o;
    if (position >= n_axis) break;
    const long long at = address(line0 + line, position);
    if constexpr (MODE == 2) {
      const float4 c = channels(f[at], p);  // (c f, s f, c, s) of the centre voxel
      numerator[at] += p.a * (c.z * acc[o].x + c.w * acc[o].y);
      denominator[at] += p.a * (c.z * acc[o].z + c.w * acc[o].w);
    } else {
      out[at] = acc[o];
    }
  }
}

__global__ void divide_kernel(const float* __restrict__ numerator, const float* __restrict__ denominator,
                              float* __restrict__ out, long long n) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = numerator[i] / denominator[i];
}



std::size_t pass_bytes(int radius) { return std::size_t(kPassTile + 2 * radius) * kPassStride * sizeof(float4); }

void check_memory(std::size_t bytes) {
  std::size_t free_bytes = 0, total_bytes = 0;
  CTD_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  if (bytes > free_bytes) {
    throw Error(ErrorKind::OutOfMemory, "the filter needs " + std::to_string(bytes >> 20) + " MiB of device memory, " +
                                            std::to_string(free_bytes >> 20) + " MiB are free");
  }
}

// The compressive filter on device memory; `work` holds 2 n float4 and 2 n floats.
void compressive_device(const float* d_in, float* d_out, const Dims& dims, const BilateralParams& params,
                        const std::array<int, 3>& radius, const CompressiveSettings& settings, float lo, float4* work,
                        cudaStream_t stream) {
  const long long n = dims.count();
  float4* a = work;
  float4* b = work + n;
  float* numerator = reinterpret_cast<float*>(work + 2 * n);
  float* denominator = numerator + n;
  CTD_CUDA_CHECK(cudaMemsetAsync(numerator, 0, 2 * n * sizeof(float), stream));
  const bool flat = dims.is_2d();
  const bool mm = params.spatial_unit == SpatialUnit::Millimetre;
  PassParams axis_params[3];
  for (int axis = 0; axis < (flat ? 2 : 3); ++axis) {
    PassParams& p = axis_params[axis];
    p = PassParams{};
    p.nx = int(dims.nx);
    p.ny = int(dims.ny);
    p.nz = int(dims.nz);
    p.axis = axis;
    p.radius = radius[axis];
    p.lo = lo;
    p.inv_period = float(1.0 / settings.period);
    const double step = mm ? params.spacing[axis] : 1.0;
    std::vector<double> taps;
    for (int i = -p.radius; i <= p.radius; ++i) {
      taps.push_back(std::exp(-(i * step) * (i * step) / (2.0 * params.sigma_spatial * params.sigma_spatial)));
    }
    double total = 0;
    for (double t : taps) total += t;
    for (std::size_t i = 0; i < taps.size(); ++i) p.g[i] = float(taps[i] / total);  // sums to 1: G 1 = 1
  }
  auto launch = [&](auto kernel, const void* in, float4* out, PassParams p) {
    const int n_axis = p.axis == 0 ? p.nx : p.axis == 1 ? p.ny : p.nz;
    const int n_lines = p.axis == 0 ? p.ny : p.nx;
    const int others = p.axis == 2 ? p.ny : p.nz;
    const dim3 grid(unsigned((n_axis + kPassTile - 1) / kPassTile), unsigned((n_lines + kLines - 1) / kLines),
                    unsigned(others));
    const std::size_t bytes = pass_bytes(p.radius);
    CTD_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
    kernel<<<grid, dim3(kLines, kPassGroups), bytes, stream>>>(in, out, d_in, numerator, denominator, p);
    CTD_CUDA_CHECK_LAUNCH();
  };
  const double omega = 2.0 * M_PI / settings.period;
  for (int m = 0; m <= settings.terms; ++m) {  // m = 0: the DC term, G f and G 1
    const float weight = m == 0 ? 1.0f : float(2.0 * std::exp(-0.5 * std::pow(omega * m * params.sigma_range, 2)));
    for (PassParams& p : axis_params) {
      p.m = m;
      p.a = weight;
    }
    launch(compressive_pass_kernel<0>, d_in, a, axis_params[0]);
    if (flat) {
      launch(compressive_pass_kernel<2>, a, nullptr, axis_params[1]);
    } else {
      launch(compressive_pass_kernel<1>, a, b, axis_params[1]);
      launch(compressive_pass_kernel<2>, b, nullptr, axis_params[2]);
    }
  }
  divide_kernel<<<unsigned((n + 255) / 256), 256, 0, stream>>>(numerator, denominator, d_out, n);
  CTD_CUDA_CHECK_LAUNCH();
}

}  // namespace

void check_bilateral_supported(const Dims& dims, const BilateralParams& params, const std::array<int, 3>& radius,
                               BilateralAlgorithm algorithm) {
  require_device();
  if (algorithm == BilateralAlgorithm::Direct || algorithm == BilateralAlgorithm::Auto) {
    throw Error(ErrorKind::Unsupported, "the bilateral algorithm '" + std::string(to_string(algorithm)) +
                                            "' is not available on CUDA (available: naive, tiled, fused, compressive)");
  }
  if (dims.count() >= (std::int64_t(1) << 31)) {
    throw Error(ErrorKind::Unsupported, "volumes of 2^31 voxels or more are not supported on CUDA yet");
  }
  const int rz = dims.is_2d() ? 0 : radius[2];
  // The exact kernels tabulate each axis (kMaxAxisTaps), the compressive passes their 1D Gaussian
  // (2 kMaxAxisTaps + 1 taps: sigma_s up to 85 voxels).
  const int max_radius = algorithm == BilateralAlgorithm::Compressive ? kMaxAxisTaps : (kMaxAxisTaps - 1) / 2;
  if (std::max({radius[0], radius[1], rz}) > max_radius) {
    throw Error(ErrorKind::Unsupported, "a bilateral window radius above " + std::to_string(max_radius) + " voxels is "
                                        "not supported by the CUDA " + std::string(to_string(algorithm)) + " filter");
  }
  if (algorithm == BilateralAlgorithm::Tiled) {
    const BfParams k = make_params(dims, params, radius);
    const long long taps = (2LL * k.rx + 1) * (2LL * k.ry + 1) * (2LL * k.rz + 1);
    if (taps > kMaxConstantTaps || tiled_layout(k).bytes() > max_shared_bytes()) {
      throw Error(ErrorKind::Unsupported, "the tiled kernel keeps the window in constant memory (at most " +
                                              std::to_string(kMaxConstantTaps) + " taps) and its apron in shared "
                                              "memory; this window is too large: use --algorithm fused");
    }
  }
  if (algorithm == BilateralAlgorithm::Compressive) {
    if (params.gaussian == BilateralParams::Gaussian::Recursive) {
      throw Error(ErrorKind::Unsupported, "the recursive Gaussian of the compressive filter runs on the CPU only; on "
                                          "CUDA use the direct passes (--gaussian direct)");
    }
    for (int axis = 0; axis < (dims.is_2d() ? 2 : 3); ++axis) {
      if (pass_bytes(radius[axis]) > max_shared_bytes()) {
        throw Error(ErrorKind::Unsupported, "the compressive filter's window radius " + std::to_string(radius[axis]) +
                                                " is too large for shared memory on this device");
      }
    }
  }
}

BilateralTimes bilateral_host(ConstVolumeView<float> in, VolumeView<float> out, const BilateralParams& params,
                              const std::array<int, 3>& radius, BilateralAlgorithm algorithm,
                              const CompressiveSettings& settings, float lo) {
  const long long n = in.dims.count();
  const BfParams k = make_params(in.dims, params, radius);
  const long long taps = (2LL * k.rx + 1) * (2LL * k.ry + 1) * (2LL * k.rz + 1);
  const bool compressive = algorithm == BilateralAlgorithm::Compressive;
  const std::size_t work_bytes = compressive ? std::size_t(n) * (2 * sizeof(float4) + 2 * sizeof(float)) : 0;
  check_memory(2 * std::size_t(n) * sizeof(float) + work_bytes + std::size_t(taps) * sizeof(float));
  Stream stream;
  DeviceBuffer<float> d_in{std::size_t(n)}, d_out{std::size_t(n)};
  DeviceBuffer<float4> work(compressive ? std::size_t(n) * 3 : 0);  // 2 n float4 + 2 n float = 3 n float4
  DeviceBuffer<float> spatial(algorithm == BilateralAlgorithm::Naive ? std::size_t(taps) : 0);
  Event start, stop;
  CTD_CUDA_CHECK(cudaMemcpyAsync(d_in.data(), in.data, n * sizeof(float), cudaMemcpyHostToDevice, stream.get()));
  if (algorithm == BilateralAlgorithm::Naive || algorithm == BilateralAlgorithm::Tiled) {
    std::vector<float> table;
    table.reserve(std::size_t(taps));
    for (int kz = 0; kz <= 2 * k.rz; ++kz)
      for (int ky = 0; ky <= 2 * k.ry; ++ky)
        for (int kx = 0; kx <= 2 * k.rx; ++kx) table.push_back(std::exp2(k.lx[kx] + k.ly[ky] + k.lz[kz]));
    if (algorithm == BilateralAlgorithm::Naive) {
      CTD_CUDA_CHECK(cudaMemcpyAsync(spatial.data(), table.data(), table.size() * sizeof(float), cudaMemcpyHostToDevice,
                                     stream.get()));
    } else {
      CTD_CUDA_CHECK(cudaMemcpyToSymbolAsync(c_spatial, table.data(), table.size() * sizeof(float), 0,
                                             cudaMemcpyHostToDevice, stream.get()));
    }
  }
  start.record(stream.get());
  switch (algorithm) {
    case BilateralAlgorithm::Naive:
      bf_naive_kernel<<<unsigned((n + 255) / 256), 256, 0, stream.get()>>>(d_in.data(), d_out.data(), spatial.data(), k);
      break;
    case BilateralAlgorithm::Tiled: {
      const TiledLayout l = tiled_layout(k);
      CTD_CUDA_CHECK(cudaFuncSetAttribute(bf_tiled_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(l.bytes())));
      const int tz = k.rz ? kTiledZ3d : 1;
      const dim3 grid(unsigned((k.nx + kTiledX - 1) / kTiledX), unsigned((k.ny + kTiledY - 1) / kTiledY),
                      unsigned((k.nz + tz - 1) / tz));
      bf_tiled_kernel<<<grid, dim3(kTiledX, kTiledY), l.bytes(), stream.get()>>>(d_in.data(), d_out.data(), k);
      break;
    }
    case BilateralAlgorithm::Fused: {
      const dim3 grid(unsigned((k.nx + kFusedBx - 1) / kFusedBx),
                      unsigned((k.ny + kFusedBy * kFusedRun - 1) / (kFusedBy * kFusedRun)), unsigned(k.nz));
      bf_fused_kernel<<<grid, dim3(kFusedBx, kFusedBy), 0, stream.get()>>>(d_in.data(), d_out.data(), k);
      break;
    }
    case BilateralAlgorithm::Compressive:
      compressive_device(d_in.data(), d_out.data(), in.dims, params, radius, settings, lo, work.data(), stream.get());
      break;
    default: throw Error(ErrorKind::Unsupported, "internal: no CUDA bilateral variant " + std::string(to_string(algorithm)));
  }
  CTD_CUDA_CHECK_LAUNCH();
  stop.record(stream.get());
  CTD_CUDA_CHECK(cudaMemcpyAsync(out.data, d_out.data(), n * sizeof(float), cudaMemcpyDeviceToHost, stream.get()));
  stream.synchronize();
  return {double(stop.elapsed_since(start))};
}

}  // namespace ctd::cuda
