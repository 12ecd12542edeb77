// CUDA bilateral filter: the exact filter as `naive`, `tiled` (Mueller et al.) and `fused`; the
// compressive approximation (Yano et al., Algorithm 1) lives in bilateral_compressive.cu.
// Definition: docs/filters.md (mirror border, per-axis radius, sigma in voxels or mm).

#include "core/recursive_gaussian.hpp"
#include "cuda/backend.hpp"
#include "cuda/bilateral_compressive.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/device_buffer.hpp"
#include "cuda/device_util.cuh"
#include "cuda/host_call.hpp"

#include <ctdenoise/error.hpp>
#include <ctdenoise/exec.hpp>

#include <cuda_pipeline.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

namespace ctd::cuda {
namespace {

constexpr int kMaxConstantTaps = 16384;  // tiled: the whole window in constant memory (64 KiB)
constexpr float kLog2e = 1.4426950408889634f;

__constant__ float c_spatial[kMaxConstantTaps];

// c_spatial is one copy per device, shared by every stream and host thread, and a kernel reads it
// while it runs: a call on another stream that rewrote it meanwhile would change that kernel's
// weights (seen on the H100 with two streams while other work shared the GPU). Each tiled call
// therefore queues on its own stream a wait for the previous tiled kernel (on whatever stream),
// then its copy, its kernel and the mark the next call waits for. Tiled calls on different
// streams run one after the other on the device; the host never waits.
class ConstantTableTurn {
 public:
  // Call with the lock held, before the copy: the stream waits for the previous tiled kernel.
  void wait(cudaStream_t stream, int device) {
    cudaEvent_t& done = done_[device];
    if (done == nullptr) {
      CTD_CUDA_CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
    } else {
      CTD_CUDA_CHECK(cudaStreamWaitEvent(stream, done, 0));
    }
  }
  // After the kernel is queued, lock still held.
  void mark(cudaStream_t stream, int device) { CTD_CUDA_CHECK(cudaEventRecord(done_[device], stream)); }
  std::mutex mutex;

 private:
  std::map<int, cudaEvent_t> done_;  // per device ordinal; kept for the life of the process
};

ConstantTableTurn& constant_table_turn() {
  static ConstantTableTurn* turn = new ConstantTableTurn;  // never destroyed: no CUDA calls at exit
  return *turn;
}

struct BfParams {
  int nx, ny, nz, rx, ry, rz;
  int z0;  // fused: the first output slice (a slab's); the grid's z counts from it
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

// ---- tiled (Mueller et al.): the apron in shared memory, the spatial kernel in constant memory --------

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

// The fused kernels' outputs: one thread's run of 8 down a column, values scaled as above.
struct FusedRun {
  float centre[kFusedRun], sum[kFusedRun], weight_sum[kFusedRun];

  __device__ FusedRun(const float* u, const BfParams& k, long long plane, int x, int y0, int z) {
#pragma unroll
    for (int t = 0; t < kFusedRun; ++t) {
      centre[t] = y0 + t < k.ny ? __ldg(u + z * plane + (long long)(y0 + t) * k.nx + x) * k.scale : 0.0f;
      sum[t] = weight_sum[t] = 0.0f;
    }
  }
  __device__ void store(float* out, const BfParams& k, long long plane, int x, int y0, int z) const {
#pragma unroll
    for (int t = 0; t < kFusedRun; ++t) {
      if (y0 + t < k.ny) out[z * plane + (long long)(y0 + t) * k.nx + x] = sum[t] / (weight_sum[t] * k.scale);
    }
  }
};

__global__ void __launch_bounds__(kFusedBx* kFusedBy) bf_fused_kernel(const float* __restrict__ u,
                                                                      float* __restrict__ out, BfParams k) {
  const int x = blockIdx.x * kFusedBx + threadIdx.x;
  const int y0 = (blockIdx.y * kFusedBy + threadIdx.y) * kFusedRun, z = k.z0 + int(blockIdx.z);
  if (x >= k.nx || y0 >= k.ny) return;
  const long long plane = (long long)k.nx * k.ny;
  FusedRun r(u, k, plane, x, y0, z);
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
          const float d = r.centre[t] - v;
          const float w = fast_exp2(fmaf(-d, d, base[t] + lx));
          r.sum[t] = fmaf(w, v, r.sum[t]);
          r.weight_sum[t] += w;
        }
      }
    }
  }
  r.store(out, k, plane, x, y0, z);
}

// ---- fused with the window's rows in registers (y radius up to kMaxColumnRadius) -----------------
//
// For each (kz, kx) a thread loads the 8 + 2 RY values of its column once into registers; with RY
// a template parameter every (output, ky) pair then reads a register, and no iteration is wasted
// at the run's ends (the general kernel above predicates them off). Per pair: FADD, FFMA, exp2,
// FFMA, FADD. The exp2 runs on the MUFU pipe (16 per SM and clock) for 7 of the 8 outputs and as
// a polynomial on the FMA pipe for the last one, so neither pipe waits for the other.

constexpr int kMaxColumnRadius = 10;

// 2^x for x <= 0 on the FMA pipe: x = j + f with j an integer and |f| <= 1/2, 2^f by its Taylor
// polynomial of degree 6 (relative error below 1.3e-7, as ex2.approx), 2^j added to the exponent.
__device__ __forceinline__ float exp2_fma(float x) {
  x = fmaxf(x, -126.0f);
  const float shifted = x + 12582912.0f;  // 1.5 * 2^23: x rounded to an integer in the low mantissa bits
  const float f = x - (shifted - 12582912.0f);
  float p = 1.5403530393381606e-4f;
  p = fmaf(p, f, 1.3333558146428443e-3f);
  p = fmaf(p, f, 9.6181291076284772e-3f);
  p = fmaf(p, f, 5.5504108664821580e-2f);
  p = fmaf(p, f, 2.4022650695910071e-1f);
  p = fmaf(p, f, 6.9314718055994531e-1f);
  p = fmaf(p, f, 1.0f);
  return __int_as_float(__float_as_int(p) + (__float_as_int(shifted) << 23));
}

// BYTE_ROWS: the rows' offsets in a plane as unsigned byte counts (a plane under 4 GiB), so each
// load's address is one 64-bit add instead of six instructions. Measured on the H100: 3D B2 / B3
// 2% / 7% faster (issue-bound), 2D B1 7% slower (the compiler then issues the whole column's loads
// before the arithmetic, and B1, 1.5 waves of blocks, is latency-bound); so 3D only.
template <int RY, bool BYTE_ROWS>
__global__ void __launch_bounds__(kFusedBx* kFusedBy, 5) bf_fused_column_kernel(const float* __restrict__ u,
                                                                             float* __restrict__ out, BfParams k) {
  constexpr int kColumn = kFusedRun + 2 * RY;
  const int x = blockIdx.x * kFusedBx + threadIdx.x;
  const int y0 = (blockIdx.y * kFusedBy + threadIdx.y) * kFusedRun, z = k.z0 + int(blockIdx.z);
  if (x >= k.nx || y0 >= k.ny) return;
  const long long plane = (long long)k.nx * k.ny;
  FusedRun r(u, k, plane, x, y0, z);
  using Offset = std::conditional_t<BYTE_ROWS, unsigned, int>;
  Offset row[kColumn];  // offsets of rows y0 - RY ... y0 + 7 + RY (mirrored): bytes or floats
#pragma unroll
  for (int j = 0; j < kColumn; ++j) {
    row[j] = Offset(mirror(y0 - RY + j, k.ny)) * Offset(k.nx) * Offset(BYTE_ROWS ? sizeof(float) : 1);
  }
  const bool inside_x = x - k.rx >= 0 && x + k.rx < k.nx;
  for (int kz = -k.rz; kz <= k.rz; ++kz) {
    const float* slice = u + mirror(z + kz, k.nz) * plane;
    const float lz = k.lz[kz + k.rz];
    for (int kx = -k.rx; kx <= k.rx; ++kx) {
      const float* column = slice + (inside_x ? x + kx : mirror(x + kx, k.nx));
      float v[kColumn];
#pragma unroll
      for (int j = 0; j < kColumn; ++j) {
        const float* at = BYTE_ROWS ? reinterpret_cast<const float*>(reinterpret_cast<const char*>(column) + row[j])
                                    : column + row[j];
        v[j] = __ldg(at) * k.scale;
      }
      const float lxz = k.lx[kx + k.rx] + lz;
#pragma unroll
      for (int ky = 0; ky <= 2 * RY; ++ky) {
        const float spatial = k.ly[ky] + lxz;
#pragma unroll
        for (int t = 0; t < kFusedRun; ++t) {
          const float d = r.centre[t] - v[t + ky];
          const float a = fmaf(-d, d, spatial);
          const float w = t == kFusedRun - 1 ? exp2_fma(a) : fast_exp2(a);
          r.sum[t] = fmaf(w, v[t + ky], r.sum[t]);
          r.weight_sum[t] += w;
        }
      }
    }
  }
  r.store(out, k, plane, x, y0, z);
}

template <int RY = 0>
void launch_fused(int ry, dim3 grid, dim3 block, cudaStream_t stream, const float* in, float* out, const BfParams& k) {
  if constexpr (RY <= kMaxColumnRadius) {
    if (ry == RY) {
      if (k.nz > 1 && (long long)k.nx * k.ny * sizeof(float) < (1LL << 32)) {
        bf_fused_column_kernel<RY, true><<<grid, block, 0, stream>>>(in, out, k);
      } else {
        bf_fused_column_kernel<RY, false><<<grid, block, 0, stream>>>(in, out, k);
      }
      return;
    }
    launch_fused<RY + 1>(ry, grid, block, stream, in, out, k);
  } else {
    bf_fused_kernel<<<grid, block, 0, stream>>>(in, out, k);  // larger y radius: rows streamed
  }
}


}  // namespace

void check_bilateral_supported(const Dims& dims, const BilateralParams& params, const std::array<int, 3>& radius,
                               BilateralAlgorithm algorithm) {
  require_device();
  if (algorithm == BilateralAlgorithm::Direct || algorithm == BilateralAlgorithm::Auto) {
    throw Error(ErrorKind::Unsupported, "the bilateral algorithm '" + std::string(to_string(algorithm)) +
                                            "' is not available on CUDA (available: naive, tiled, fused, compressive)");
  }
  if (dims.count() > kMaxCudaVoxels) {
    throw Error(ErrorKind::Unsupported, "volumes of 2^31 voxels or more are not supported on CUDA yet");
  }
  const int rz = dims.is_2d() ? 0 : radius[2];
  const bool recursive = algorithm == BilateralAlgorithm::Compressive &&
                         params.gaussian == BilateralParams::Gaussian::Recursive;  // no window
  // The exact kernels tabulate each axis (kMaxAxisTaps), the compressive passes their 1D Gaussian
  // (2 kMaxAxisTaps + 1 taps: sigma_s up to 85 voxels).
  const int max_radius = algorithm == BilateralAlgorithm::Compressive ? kMaxAxisTaps : (kMaxAxisTaps - 1) / 2;
  if (!recursive && std::max({radius[0], radius[1], rz}) > max_radius) {
    throw Error(ErrorKind::Unsupported, "a bilateral window radius above " + std::to_string(max_radius) + " voxels is "
                                        "not supported by the CUDA " + std::string(to_string(algorithm)) + " filter" +
                                        (algorithm == BilateralAlgorithm::Compressive ? " (--gaussian recursive has no "
                                                                                        "window)" : ""));
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
  if (algorithm == BilateralAlgorithm::Compressive && !recursive) {
    for (int axis = 0; axis < (dims.is_2d() ? 2 : 3); ++axis) {
      if (compressive_pass_bytes(radius[axis]) > max_shared_bytes()) {
        throw Error(ErrorKind::Unsupported, "the compressive filter's window radius " + std::to_string(radius[axis]) +
                                                " is too large for shared memory on this device (--gaussian recursive "
                                                "has no window)");
      }
    }
  }
}

namespace {

// Device memory a variant needs beyond its input and output, in floats: the compressive filter's
// a, b (n float4 each), numerator, denominator (n floats each) and recursive tails; the naive
// kernel's spatial table.
std::size_t work_floats(const Dims& dims, const BilateralParams& params, const std::array<int, 3>& radius,
                        BilateralAlgorithm algorithm) {
  if (algorithm == BilateralAlgorithm::Compressive) {
    return compressive_work_floats(dims, params);
  }
  if (algorithm == BilateralAlgorithm::Naive) {
    const int rz = dims.is_2d() ? 0 : radius[2];
    return std::size_t(2 * radius[0] + 1) * (2 * radius[1] + 1) * (2 * rz + 1);
  }
  return 0;
}

// Queues the variant on `stream` over device memory; `work` holds work_floats' floats (float4
// aligned).
// The fused filter's output slices [z0, z1): each voxel is computed alone, so any cut into slabs
// gives the same bits.
void queue_fused(const float* d_in, float* d_out, BfParams k, int z0, int z1, cudaStream_t stream) {
  k.z0 = z0;
  const dim3 grid(unsigned((k.nx + kFusedBx - 1) / kFusedBx),
                  unsigned((k.ny + kFusedBy * kFusedRun - 1) / (kFusedBy * kFusedRun)), unsigned(z1 - z0));
  launch_fused(k.ry, grid, dim3(kFusedBx, kFusedBy), stream, d_in, d_out, k);
}

void run_bilateral(const float* d_in, float* d_out, const Dims& dims, const BilateralParams& params,
                   const std::array<int, 3>& radius, BilateralAlgorithm algorithm, const CompressiveSettings& settings,
                   float lo, float* work, cudaStream_t stream) {
  const long long n = dims.count();
  const BfParams k = make_params(dims, params, radius);
  std::unique_lock<std::mutex> turn_lock;  // tiled: held from the wait until the mark
  int device = 0;
  if (algorithm == BilateralAlgorithm::Tiled) {
    turn_lock = std::unique_lock<std::mutex>(constant_table_turn().mutex);
    CTD_CUDA_CHECK(cudaGetDevice(&device));
    constant_table_turn().wait(stream, device);
  }
  if (algorithm == BilateralAlgorithm::Naive || algorithm == BilateralAlgorithm::Tiled) {
    std::vector<float> table;
    table.reserve(std::size_t(2 * k.rx + 1) * (2 * k.ry + 1) * (2 * k.rz + 1));
    for (int kz = 0; kz <= 2 * k.rz; ++kz)
      for (int ky = 0; ky <= 2 * k.ry; ++ky)
        for (int kx = 0; kx <= 2 * k.rx; ++kx) table.push_back(std::exp2(k.lx[kx] + k.ly[ky] + k.lz[kz]));
    // From pageable memory both copies return once `table` has been read, so it may go out of scope.
    if (algorithm == BilateralAlgorithm::Naive) {
      CTD_CUDA_CHECK(cudaMemcpyAsync(work, table.data(), table.size() * sizeof(float), cudaMemcpyHostToDevice, stream));
    } else {
      CTD_CUDA_CHECK(cudaMemcpyToSymbolAsync(c_spatial, table.data(), table.size() * sizeof(float), 0,
                                             cudaMemcpyHostToDevice, stream));
    }
  }
  switch (algorithm) {
    case BilateralAlgorithm::Naive:
      bf_naive_kernel<<<unsigned((n + 255) / 256), 256, 0, stream>>>(d_in, d_out, work, k);
      break;
    case BilateralAlgorithm::Tiled: {
      const TiledLayout l = tiled_layout(k);
      CTD_CUDA_CHECK(cudaFuncSetAttribute(bf_tiled_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(l.bytes())));
      const int tz = k.rz ? kTiledZ3d : 1;
      const dim3 grid(unsigned((k.nx + kTiledX - 1) / kTiledX), unsigned((k.ny + kTiledY - 1) / kTiledY),
                      unsigned((k.nz + tz - 1) / tz));
      bf_tiled_kernel<<<grid, dim3(kTiledX, kTiledY), l.bytes(), stream>>>(d_in, d_out, k);
      CTD_CUDA_CHECK_LAUNCH();
      constant_table_turn().mark(stream, device);
      break;
    }
    case BilateralAlgorithm::Fused:
      queue_fused(d_in, d_out, k, 0, k.nz, stream);
      break;
    case BilateralAlgorithm::Compressive: {
      compressive_device(d_in, d_out, dims, params, radius, settings, lo, work, stream);
      break;
    }
    default: throw Error(ErrorKind::Unsupported, "internal: no CUDA bilateral variant " + std::string(to_string(algorithm)));
  }
  CTD_CUDA_CHECK_LAUNCH();
}

}  // namespace

std::pair<float, float> value_range_device(const float* d_in, const Dims& dims, cudaStream_t stream) {
  const Statistics s = statistics_device(d_in, std::size_t(dims.count()), stream);
  return {float(s.min), float(s.max)};
}

void bilateral_device(const float* d_in, float* d_out, const Dims& dims, const BilateralParams& params,
                      const std::array<int, 3>& radius, BilateralAlgorithm algorithm, const CompressiveSettings& settings,
                      float lo, CudaStream stream) {
  const std::size_t floats = work_floats(dims, params, radius, algorithm);
  float* work = floats > 0 ? stream_workspace(floats, stream) : nullptr;
  run_bilateral(d_in, d_out, dims, params, radius, algorithm, settings, lo, work, stream);
}

namespace {

template <class T>
HostTimes bilateral_from_host(ConstVolumeView<T> in, VolumeView<float> out, const BilateralParams& params,
                              const std::array<int, 3>& radius, BilateralAlgorithm algorithm,
                              CompressiveSettings* compressive, const std::function<void()>& uploaded,
                              bool output_statistics) {
  if (algorithm == BilateralAlgorithm::Fused) {
    const int slabs = slab_count(in.dims, radius[2]);
    if (slabs > 1) {
      const BfParams k = make_params(in.dims, params, radius);
      return run_from_host_in_slabs(in, out, k.rz, slabs, uploaded, output_statistics,
                                    [&](const float* d_in, float* d_out, int z0, int z1, cudaStream_t stream) {
                                      queue_fused(d_in, d_out, k, z0, z1, stream);
                                    });
    }
  }
  if (algorithm == BilateralAlgorithm::Compressive && params.gaussian == BilateralParams::Gaussian::Direct &&
      !in.dims.is_2d()) {
    const int chunks = step_chunks(in.dims);
    if (chunks > 1) return compressive_from_host_in_steps(in, out, params, radius, chunks, compressive, uploaded, output_statistics);
  }
  return run_from_host(in, out, work_floats(in.dims, params, radius, algorithm) * sizeof(float), uploaded, output_statistics,
                       [&](const float* d_in, float* d_out, void* work, cudaStream_t stream) {
                         CompressiveSettings settings;
                         float lo = 0;
                         if (algorithm == BilateralAlgorithm::Compressive) {
                           // On the device: a pass over the uploaded input instead of one over host memory.
                           const auto [least, greatest] = value_range_device(d_in, in.dims, stream);
                           lo = least;
                           settings = compressive_settings(params, double(greatest) - double(least));
                           *compressive = settings;
                         }
                         run_bilateral(d_in, d_out, in.dims, params, radius, algorithm, settings, lo,
                                       static_cast<float*>(work), stream);
                       });
}

}  // namespace

HostTimes bilateral_host(ConstVolumeView<float> in, VolumeView<float> out, const BilateralParams& params,
                         const std::array<int, 3>& radius, BilateralAlgorithm algorithm, CompressiveSettings* compressive,
                         const std::function<void()>& uploaded, bool output_statistics) {
  return bilateral_from_host(in, out, params, radius, algorithm, compressive, uploaded, output_statistics);
}

HostTimes bilateral_host(ConstVolumeView<std::int16_t> in, VolumeView<float> out, const BilateralParams& params,
                         const std::array<int, 3>& radius, BilateralAlgorithm algorithm, CompressiveSettings* compressive,
                         const std::function<void()>& uploaded, bool output_statistics) {
  return bilateral_from_host(in, out, params, radius, algorithm, compressive, uploaded, output_statistics);
}

}  // namespace ctd::cuda
