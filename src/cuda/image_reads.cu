// Reads of an image on the GPU for the automatic parameters (src/core/image_reads.hpp): each
// kernel computes what the host's reads compute, from the same floats by the same double
// operations in the same order (written with __dadd_rn and friends, which are never fused into
// multiply-adds), so the noise model and the risk sample come out the same to the last bit. Only
// the results are copied back: a million residuals, the areas' sums, the sample's blocks.

#include "cuda/backend.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/device_buffer.hpp"

#include <ctdenoise/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

namespace ctd::cuda {
namespace {

using i64 = std::int64_t;
using detail::Corner;
using detail::Lag;
using detail::LagArea;
using detail::Residual;

// The padding values, by value in each kernel's parameters (an image has a few; find_padding's
// rule allows at most 100: each fills 1 % of the voxels).
struct Padding {
  static constexpr int kMax = 128;
  float values[kMax];
  int count = 0;
  float in_regions_only;  // detail::Excluded::in_regions_only
};
Padding to_padding(const detail::Excluded& padding) {
  if (padding.values.size() > std::size_t(Padding::kMax)) {
    throw Error(ErrorKind::Unsupported,
                fmt::format("{} padding values to leave out on the GPU (at most {})", padding.values.size(), Padding::kMax));
  }
  Padding p{};
  std::copy(padding.values.begin(), padding.values.end(), p.values);
  p.count = int(padding.values.size());
  p.in_regions_only = padding.in_regions_only;
  return p;
}

// detail::usable_voxel of the voxel (x, y, z) of the slices' image `in` (nx, ny in-plane).
template <class T>
__device__ bool usable(const T* __restrict__ in, i64 nx, i64 ny, i64 x, i64 y, i64 z, const Padding& padding) {
  auto at = [&](i64 u, i64 w, i64 s) { return float(in[(s * ny + w) * nx + u]); };
  return detail::usable_voxel(at, x, y, z, nx, ny, padding.values, padding.count, padding.in_regions_only);
}
// std::min and std::max as the host calls them (the first argument where neither is less).
__device__ float min_as_std(float a, float b) { return b < a ? b : a; }
__device__ float max_as_std(float a, float b) { return a < b ? b : a; }

constexpr int kThreads = 256;
unsigned blocks_for(i64 n) { return unsigned(std::max<i64>(1, (n + kThreads - 1) / kThreads)); }

template <class T>
__global__ void every_kernel(const T* __restrict__ in, float* __restrict__ out, i64 step, i64 count) {
  const i64 k = i64(blockIdx.x) * blockDim.x + threadIdx.x;
  if (k < count) out[k] = float(in[k * step]);
}

// One thread per sampled position of the residuals' grid (gnx, gny, gnz) of the slices' image
// `in` (nx, ny, nz), each made within its slice where `flat` (ResidualGrid::in_plane); as
// HostReads::residuals.
template <class T, bool kPseudoResidual>
__global__ void residuals_kernel(const T* __restrict__ in, i64 nx, i64 ny, bool flat, i64 gnx, i64 gny, i64 step,
                                 i64 sampled, double scale, Padding padding, double* __restrict__ values,
                                 double* __restrict__ ranges, unsigned char* __restrict__ kept) {
  const i64 k = i64(blockIdx.x) * blockDim.x + threadIdx.x;
  if (k >= sampled) return;
  const i64 position = k * step;
  const i64 gx = position % gnx, gy = (position / gnx) % gny, gz = position / (gnx * gny);
  auto u = [&](i64 x, i64 y, i64 z) { return float(in[(z * ny + y) * nx + x]); };
  bool ok = true;
  double value = 0, range = 0;
  if (kPseudoResidual) {
    const i64 x = gx + 1, y = gy + 1, z = flat ? gz : gz + 1;
    float neighbours[6] = {u(x - 1, y, z), u(x + 1, y, z), u(x, y - 1, z), u(x, y + 1, z), 0, 0};
    int count = 4;
    if (!flat) {
      neighbours[4] = u(x, y, z - 1);
      neighbours[5] = u(x, y, z + 1);
      count = 6;
    }
    const float centre = u(x, y, z);
    ok = usable(in, nx, ny, x, y, z, padding) && usable(in, nx, ny, x - 1, y, z, padding) &&
         usable(in, nx, ny, x + 1, y, z, padding) && usable(in, nx, ny, x, y - 1, z, padding) &&
         usable(in, nx, ny, x, y + 1, z, padding) &&
         (flat || (usable(in, nx, ny, x, y, z - 1, padding) && usable(in, nx, ny, x, y, z + 1, padding)));
    double mean = 0;
    float lo = centre, hi = centre;
    for (int i = 0; i < count; ++i) {
      mean = __dadd_rn(mean, double(neighbours[i]));
      lo = min_as_std(lo, neighbours[i]);
      hi = max_as_std(hi, neighbours[i]);
    }
    value = __dmul_rn(scale, __dsub_rn(double(centre), __ddiv_rn(mean, double(count))));
    range = __dsub_rn(double(hi), double(lo));
  } else {
    const i64 x = 2 * gx, y = 2 * gy, z = flat ? gz : 2 * gz;
    double detail = 0;
    float lo = u(x, y, z), hi = lo;
    for (int c = 0; c < (flat ? 4 : 8); ++c) {
      const i64 dx = c & 1, dy = (c >> 1) & 1, dz = (c >> 2) & 1;
      const float v = u(x + dx, y + dy, z + dz);
      ok = ok && usable(in, nx, ny, x + dx, y + dy, z + dz, padding);
      detail = __dadd_rn(detail, (dx + dy + dz) % 2 == 0 ? double(v) : -double(v));
      lo = min_as_std(lo, v);
      hi = max_as_std(hi, v);
    }
    value = __dmul_rn(scale, detail);
    range = __dsub_rn(double(hi), double(lo));
  }
  values[k] = value;
  ranges[k] = range;
  kept[k] = ok ? 1 : 0;
}

// One thread per (area, lag): D(p) D(p + shift) summed over the area's voxels in scan order.
template <class T>
__global__ void lag_sums_kernel(const T* __restrict__ in, i64 nx, i64 ny, i64 nz, const LagArea* __restrict__ areas,
                                i64 n_areas, const Lag* __restrict__ lags, int n_lags, Lag shift, Padding padding,
                                double* __restrict__ sums, i64* __restrict__ counts) {
  const i64 index = i64(blockIdx.x) * blockDim.x + threadIdx.x;
  if (index >= n_areas * n_lags) return;
  const LagArea area = areas[index / n_lags];
  const Lag g = lags[index % n_lags];
  // The voxel at (x, y, z) as a double, or false where it is outside the image or not usable.
  auto read = [&](i64 x, i64 y, i64 z, double& v) {
    if (x < 0 || x >= nx || y < 0 || y >= ny || z < 0 || z >= nz) return false;
    v = double(float(in[(z * ny + y) * nx + x]));
    return usable(in, nx, ny, x, y, z, padding);
  };
  // D at (x, y, z), or false where a voxel it needs is outside the image or not usable.
  auto second_difference = [&](i64 x, i64 y, i64 z, double& v) {
    double a, b, c;
    if (!read(x - g.dx, y - g.dy, z - g.dz, a) || !read(x, y, z, b) || !read(x + g.dx, y + g.dy, z + g.dz, c)) return false;
    v = __dadd_rn(__dsub_rn(a, __dmul_rn(2.0, b)), c);
    return true;
  };
  const bool moved = shift.dx != 0 || shift.dy != 0 || shift.dz != 0;
  double sum = 0;
  i64 count = 0;
  for (i64 y = area.y; y < area.y + detail::kLagArea; ++y)
    for (i64 x = area.x; x < area.x + detail::kLagArea; ++x) {
      double v, w;
      if (!second_difference(x, y, area.z, v)) continue;
      if (!moved) {
        w = v;
      } else if (!second_difference(x + shift.dx, y + shift.dy, area.z + shift.dz, w)) {
        continue;
      }
      sum = __dadd_rn(sum, __dmul_rn(v, w));
      ++count;
    }
  sums[index] = sum;
  counts[index] = count;
}

// One thread block per block of the grid: its unusable voxels (an exact integer count).
template <class T>
__global__ void unusable_kernel(const T* __restrict__ in, i64 nx, i64 ny, Corner origin, i64 bxy, i64 bz, i64 cx,
                                i64 cy, float excluded, unsigned long long* __restrict__ bad) {
  const i64 block = blockIdx.x;
  const i64 x0 = origin.x + (block % cx) * bxy, y0 = origin.y + (block / cx) % cy * bxy, z0 = origin.z + block / (cx * cy) * bz;
  unsigned long long count = 0;
  for (i64 i = threadIdx.x; i < bxy * bxy * bz; i += blockDim.x) {
    const i64 x = x0 + i % bxy, y = y0 + (i / bxy) % bxy, z = z0 + i / (bxy * bxy);
    const float v = float(in[(z * ny + y) * nx + x]);
    count += isfinite(v) && !(v == excluded) ? 0 : 1;
  }
  for (int offset = 16; offset > 0; offset /= 2) count += __shfl_down_sync(0xffffffffu, count, offset);
  if ((threadIdx.x & 31) == 0 && count > 0) atomicAdd(&bad[block], count);
}

// One thread per voxel of `out` (onx, ony, onz), which the blocks fill: from the block it lies in.
template <class T>
__global__ void copy_blocks_kernel(const T* __restrict__ in, i64 nx, i64 ny, const Corner* __restrict__ corners,
                                   i64 n_corners, i64 bnx, i64 bny, i64 onx, i64 ony, i64 onz, float* __restrict__ out) {
  const i64 index = i64(blockIdx.x) * blockDim.x + threadIdx.x;
  if (index >= onx * ony * onz) return;
  const i64 x = index % onx, y = (index / onx) % ony, z = index / (onx * ony);
  const i64 b = (y / bny) * (onx / bnx) + x / bnx;
  if (b >= n_corners) return;  // not reached: the blocks fill `out`
  const Corner c = corners[b];
  out[index] = float(in[((c.z + z) * ny + c.y + y % bny) * nx + c.x + x % bnx]);
}

template <class T>
std::vector<T> download(const DeviceBuffer<T>& from, std::size_t count, cudaStream_t stream) {
  std::vector<T> out(count);
  if (count > 0) CTD_CUDA_CHECK(cudaMemcpyAsync(out.data(), from.data(), count * sizeof(T), cudaMemcpyDeviceToHost, stream));
  CTD_CUDA_CHECK(cudaStreamSynchronize(stream));
  return out;
}
template <class T>
DeviceBuffer<T> upload(const std::vector<T>& from, cudaStream_t stream) {
  DeviceBuffer<T> out(from.size());
  if (!from.empty()) {
    CTD_CUDA_CHECK(cudaMemcpyAsync(out.data(), from.data(), from.size() * sizeof(T), cudaMemcpyHostToDevice, stream));
  }
  return out;
}

template <class T>
class DeviceReads final : public detail::ImageReads {
 public:
  DeviceReads(const T* image, const Dims& dims, cudaStream_t stream) : ImageReads(dims), in_(image), stream_(stream) {}
  // From host memory: uploaded into memory of its own, read on a stream of its own.
  explicit DeviceReads(ConstVolumeView<T> host)
      : ImageReads(host.dims), owned_stream_(std::make_unique<Stream>()), owned_(std::size_t(host.dims.count())) {
    stream_ = owned_stream_->get();
    in_ = owned_.data();
    copy_bytes_to_device(owned_.data(), host.data, owned_.size() * sizeof(T), stream_);
  }

  bool on_device() const noexcept override { return true; }

  std::vector<float> every(i64 step, i64 count) const override {
    DeviceBuffer<float> out{std::size_t(std::max<i64>(0, count))};
    if (count > 0) every_kernel<<<blocks_for(count), kThreads, 0, stream_>>>(in_, out.data(), step, count);
    CTD_CUDA_CHECK(cudaGetLastError());
    return download(out, out.size(), stream_);
  }

  std::vector<Residual> residuals(NoiseEstimator estimator, i64 z0, i64 nz, const detail::Excluded& padding,
                                  i64 step) const override {
    const Dims d{dims().nx, dims().ny, nz};
    const bool pseudo = estimator == NoiseEstimator::PseudoResidual;
    const detail::ResidualGrid grid = detail::residual_grid(estimator, d);
    const bool flat = grid.in_plane;  // the residuals are made within each slice
    const i64 gnx = grid.nx, gny = grid.ny;
    const i64 positions = std::max<i64>(0, grid.nx) * std::max<i64>(0, grid.ny) * std::max<i64>(0, grid.nz);
    const i64 sampled = (positions + step - 1) / step;
    if (sampled == 0) return {};
    const double scale = grid.scale;
    DeviceBuffer<double> values{std::size_t(sampled)}, ranges{std::size_t(sampled)};
    DeviceBuffer<unsigned char> kept{std::size_t(sampled)};
    const T* slices = in_ + z0 * d.nx * d.ny;
    auto launch = [&](auto kernel) {
      kernel<<<blocks_for(sampled), kThreads, 0, stream_>>>(slices, d.nx, d.ny, flat, gnx, gny, step, sampled, scale,
                                                             to_padding(padding), values.data(), ranges.data(), kept.data());
    };
    if (pseudo) launch(residuals_kernel<T, true>);
    else launch(residuals_kernel<T, false>);
    CTD_CUDA_CHECK(cudaGetLastError());
    const std::vector<double> v = download(values, values.size(), stream_), r = download(ranges, ranges.size(), stream_);
    const std::vector<unsigned char> k = download(kept, kept.size(), stream_);
    std::vector<Residual> out;
    out.reserve(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (k[i]) out.push_back({v[i], r[i]});
    }
    return out;
  }

  void lag_sums(const std::vector<LagArea>& areas, const std::vector<Lag>& lags, const Lag& shift,
                const detail::Excluded& padding, double* sums, i64* counts) const override {
    const i64 n = i64(areas.size()) * i64(lags.size());
    if (n == 0) return;
    const DeviceBuffer<LagArea> d_areas = upload(areas, stream_);
    const DeviceBuffer<Lag> d_lags = upload(lags, stream_);
    DeviceBuffer<double> d_sums{std::size_t(n)};
    DeviceBuffer<i64> d_counts{std::size_t(n)};
    const Dims d = dims();
    lag_sums_kernel<<<blocks_for(n), kThreads, 0, stream_>>>(in_, d.nx, d.ny, d.nz, d_areas.data(), i64(areas.size()),
                                                             d_lags.data(), int(lags.size()), shift, to_padding(padding),
                                                             d_sums.data(), d_counts.data());
    CTD_CUDA_CHECK(cudaGetLastError());
    CTD_CUDA_CHECK(cudaMemcpyAsync(sums, d_sums.data(), std::size_t(n) * sizeof(double), cudaMemcpyDeviceToHost, stream_));
    CTD_CUDA_CHECK(cudaMemcpyAsync(counts, d_counts.data(), std::size_t(n) * sizeof(i64), cudaMemcpyDeviceToHost, stream_));
    CTD_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }

  std::vector<i64> unusable_per_block(const Corner& origin, i64 bxy, i64 bz, i64 cx, i64 cy, i64 cz,
                                      float excluded) const override {
    const i64 n = cx * cy * cz;
    if (n == 0) return {};
    DeviceBuffer<unsigned long long> bad{std::size_t(n)};
    CTD_CUDA_CHECK(cudaMemsetAsync(bad.data(), 0, std::size_t(n) * sizeof(unsigned long long), stream_));
    unusable_kernel<<<unsigned(n), kThreads, 0, stream_>>>(in_, dims().nx, dims().ny, origin, bxy, bz, cx, cy, excluded,
                                                         bad.data());
    CTD_CUDA_CHECK(cudaGetLastError());
    const std::vector<unsigned long long> counts = download(bad, bad.size(), stream_);
    return std::vector<i64>(counts.begin(), counts.end());
  }

  void copy_blocks(const std::vector<Corner>& corners, const Dims& block, VolumeView<float> out) const override {
    const i64 n = out.dims.count();
    if (n == 0 || corners.empty()) return;
    const DeviceBuffer<Corner> d_corners = upload(corners, stream_);
    DeviceBuffer<float> d_out{std::size_t(n)};
    copy_blocks_kernel<<<blocks_for(n), kThreads, 0, stream_>>>(in_, dims().nx, dims().ny, d_corners.data(),
                                                                i64(corners.size()), block.nx, block.ny, out.dims.nx,
                                                                out.dims.ny, out.dims.nz, d_out.data());
    CTD_CUDA_CHECK(cudaGetLastError());
    CTD_CUDA_CHECK(cudaMemcpyAsync(out.data, d_out.data(), std::size_t(n) * sizeof(float), cudaMemcpyDeviceToHost, stream_));
    CTD_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }

 private:
  std::unique_ptr<Stream> owned_stream_;
  DeviceBuffer<T> owned_;
  const T* in_ = nullptr;
  cudaStream_t stream_ = nullptr;
};

}  // namespace

std::unique_ptr<detail::ImageReads> device_reads(const float* image, const Dims& dims, CudaStream stream) {
  return std::make_unique<DeviceReads<float>>(image, dims, stream);
}

std::unique_ptr<detail::ImageReads> uploaded_reads(ConstVolumeView<float> image) {
  return std::make_unique<DeviceReads<float>>(image);
}

std::unique_ptr<detail::ImageReads> uploaded_reads(ConstVolumeView<std::int16_t> image) {
  return std::make_unique<DeviceReads<std::int16_t>>(image);
}

}  // namespace ctd::cuda
