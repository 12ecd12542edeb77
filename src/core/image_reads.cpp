// Reads of an image in host memory for the automatic parameters (src/core/image_reads.hpp).

#include "core/image_reads.hpp"

#include "core/robust_stats.hpp"
#include "cpu/thread_pool.hpp"
#if CTD_HAVE_CUDA
#include "cuda/backend.hpp"
#endif

#include <ctdenoise/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace ctd::detail {
namespace {

using i64 = std::int64_t;


// Of float32 or int16 voxels, read where they are: each int16 voxel is converted to float as it
// is read (exactly), not the whole volume first (a float copy of 512 x 512 x 548 voxels was a
// quarter of the noise model's time, and 574 MB of fresh pages).
template <class T>
class HostReads final : public ImageReads {
 public:
  explicit HostReads(ConstVolumeView<T> image) : ImageReads(image.dims), in_(image) {}

  bool on_device() const noexcept override { return false; }

  std::vector<float> every(i64 step, i64 count) const override {
    std::vector<float> out(std::size_t(std::max<i64>(0, count)));
    cpu::for_each_piece(count, i64(1) << 13, 0, [&](i64, i64 begin, i64 end) {
      for (i64 k = begin; k < end; ++k) out[std::size_t(k)] = in_.data[k * step];
    });
    return out;
  }

  std::vector<Residual> residuals(NoiseEstimator estimator, i64 z0, i64 nz, const Excluded& padding,
                                  i64 step) const override {
    const Dims d{dims().nx, dims().ny, nz};
    const T* data = in_.data + z0 * d.nx * d.ny;
    auto u = [&](i64 x, i64 y, i64 z) { return float(data[(z * d.ny + y) * d.nx + x]); };
    auto usable = [&](i64 x, i64 y, i64 z) {
      return usable_voxel(u, x, y, z, d.nx, d.ny, padding.values.data(), int(padding.values.size()), padding.in_regions_only);
    };
    // Each sampled position's slot written in place (vectors grown on many threads at once spent
    // most of the time in the allocator), the unusable ones dropped afterwards.
    auto collect = [&](i64 gx_count, i64 gy_count, i64 gz_count, auto&& at) {
      const i64 positions = std::max<i64>(0, gx_count) * std::max<i64>(0, gy_count) * std::max<i64>(0, gz_count);
      const i64 sampled = (positions + step - 1) / step;
      std::vector<Residual> all(static_cast<std::size_t>(sampled));
      std::vector<unsigned char> kept(static_cast<std::size_t>(sampled));
      cpu::for_each_piece(sampled, i64(1) << 13, 0, [&](i64, i64 begin, i64 end) {
        for (i64 k = begin; k < end; ++k) {
          const i64 position = k * step;
          Residual& r = all[std::size_t(k)];
          kept[std::size_t(k)] =
              at(position % gx_count, (position / gx_count) % gy_count, position / (gx_count * gy_count), r) ? 1 : 0;
        }
      });
      std::size_t used = 0;
      for (std::size_t k = 0; k < all.size(); ++k) {
        if (kept[k]) all[used++] = all[k];
      }
      all.resize(used);
      return all;
    };
    const ResidualGrid grid = residual_grid(estimator, d);
    const double scale = grid.scale;
    const bool flat = grid.in_plane;
    if (estimator == NoiseEstimator::PseudoResidual) {
      return collect(grid.nx, grid.ny, grid.nz, [&](i64 gx, i64 gy, i64 gz, Residual& r) {
        const i64 x = gx + 1, y = gy + 1, z = flat ? gz : gz + 1;
        float neighbours[6] = {u(x - 1, y, z), u(x + 1, y, z), u(x, y - 1, z), u(x, y + 1, z), 0, 0};
        int count = 4;
        if (!flat) {
          neighbours[4] = u(x, y, z - 1);
          neighbours[5] = u(x, y, z + 1);
          count = 6;
        }
        const float centre = u(x, y, z);
        bool ok = usable(x, y, z) && usable(x - 1, y, z) && usable(x + 1, y, z) && usable(x, y - 1, z) && usable(x, y + 1, z) &&
                  (flat || (usable(x, y, z - 1) && usable(x, y, z + 1)));
        double mean = 0;
        float lo = centre, hi = centre;
        for (int i = 0; i < count; ++i) {
          mean += neighbours[i];
          lo = std::min(lo, neighbours[i]);
          hi = std::max(hi, neighbours[i]);
        }
        r.value = scale * (double(centre) - mean / count);
        r.range = double(hi) - lo;
        return ok;
      });
    }
    // Orthonormal Haar: the diagonal detail of each 2x2 (2x2x2) block has the noise's variance.
    return collect(grid.nx, grid.ny, grid.nz, [&](i64 gx, i64 gy, i64 gz, Residual& r) {
      const i64 x = 2 * gx, y = 2 * gy, z = flat ? gz : 2 * gz;
      double detail = 0;
      bool ok = true;
      float lo = u(x, y, z), hi = lo;
      for (int c = 0; c < (flat ? 4 : 8); ++c) {
        const i64 dx = c & 1, dy = (c >> 1) & 1, dz = (c >> 2) & 1;
        const float v = u(x + dx, y + dy, z + dz);
        ok = ok && usable(x + dx, y + dy, z + dz);
        detail += ((dx + dy + dz) % 2 == 0 ? 1.0 : -1.0) * v;
        lo = std::min(lo, v);
        hi = std::max(hi, v);
      }
      r.value = scale * detail;
      r.range = double(hi) - lo;
      return ok;
    });
  }

  void lag_sums(const std::vector<LagArea>& areas, const std::vector<Lag>& lags, const Lag& shift, const Excluded& padding,
                double* sums, i64* counts) const override {
    const Dims d = dims();
    auto u = [&](i64 x, i64 y, i64 z) { return float(in_.data[(z * d.ny + y) * d.nx + x]); };
    int rx = 0, ry = 0, rz = 0;
    for (const Lag& g : lags) rx = std::max(rx, std::abs(g.dx)), ry = std::max(ry, std::abs(g.dy)), rz = std::max(rz, std::abs(g.dz));
    rx += std::abs(shift.dx), ry += std::abs(shift.dy), rz += std::abs(shift.dz);
    // Each area's neighbourhood copied once with NaN where the image ends or a voxel is not
    // usable: D is then NaN exactly where a voxel it needs is, and every lag reads the copy.
    const i64 hw = kLagArea + 2 * rx, hh = kLagArea + 2 * ry, hs = 2 * rz + 1;
    const std::size_t n_lags = lags.size();
    // Two areas a piece: a call on a few chosen blocks with many lags is all in a few areas.
    cpu::for_each_piece(i64(areas.size()), 2, 0, [&](i64, i64 begin, i64 end) {
      std::vector<double> hood(std::size_t(hw * hh * hs));
      for (i64 a = begin; a < end; ++a) {
        const LagArea& area = areas[std::size_t(a)];
        for (i64 s = 0; s < hs; ++s)
          for (i64 y = 0; y < hh; ++y)
            for (i64 x = 0; x < hw; ++x) {
              const i64 ix = area.x - rx + x, iy = area.y - ry + y, iz = area.z - rz + s;
              double v = std::numeric_limits<double>::quiet_NaN();
              if (ix >= 0 && ix < d.nx && iy >= 0 && iy < d.ny && iz >= 0 && iz < d.nz) {
                if (usable_voxel(u, ix, iy, iz, d.nx, d.ny, padding.values.data(), int(padding.values.size()),
                                 padding.in_regions_only)) {
                  v = u(ix, iy, iz);
                }
              }
              hood[std::size_t((s * hh + y) * hw + x)] = v;
            }
        const i64 moved = (i64(shift.dz) * hh + shift.dy) * hw + shift.dx;
        for (std::size_t l = 0; l < n_lags; ++l) {
          const Lag& g = lags[l];
          const i64 step = (i64(g.dz) * hh + g.dy) * hw + g.dx;
          double sum = 0;
          i64 count = 0;
          for (i64 y = 0; y < kLagArea; ++y) {
            const double* row = hood.data() + (rz * hh + ry + y) * hw + rx;
            for (i64 x = 0; x < kLagArea; ++x) {
              const double v = row[x - step] - 2.0 * row[x] + row[x + step];
              const double w = moved == 0 ? v : row[x + moved - step] - 2.0 * row[x + moved] + row[x + moved + step];
              if (!std::isnan(v) && !std::isnan(w)) {
                sum += v * w;
                ++count;
              }
            }
          }
          sums[std::size_t(a) * n_lags + l] = sum;
          counts[std::size_t(a) * n_lags + l] = count;
        }
      }
    });
  }

  std::vector<i64> unusable_per_block(const Corner& origin, i64 bxy, i64 bz, i64 cx, i64 cy, i64 cz,
                                      float excluded) const override {
    const Dims d = dims();
    std::vector<i64> bad(std::size_t(cx * cy * cz), 0);
    // By rows of blocks, each image line read from end to end (a block's own lines are too short
    // for the prefetchers: block by block this scan took 0.05 s on 512 x 512 x 548).
    cpu::for_each_piece(cy * cz, 1, 0, [&](i64 row, i64, i64) {
      const i64 y0 = origin.y + (row % cy) * bxy, z0 = origin.z + (row / cy) * bz;
      i64* row_bad = bad.data() + row * cx;
      for (i64 z = 0; z < bz; ++z)
        for (i64 y = 0; y < bxy; ++y) {
          const T* line = in_.data + ((z0 + z) * d.ny + y0 + y) * d.nx + origin.x;
          for (i64 bx = 0; bx < cx; ++bx) {
            i64 count = 0;
            for (i64 x = 0; x < bxy; ++x) {
              const float v = float(line[bx * bxy + x]);
              count += std::isfinite(v) && !(v == excluded) ? 0 : 1;
            }
            row_bad[bx] += count;
          }
        }
    });
    return bad;
  }

  void copy_blocks(const std::vector<Corner>& corners, const Dims& block, VolumeView<float> out) const override {
    const Dims d = dims(), o = out.dims;
    const i64 per_row = o.nx / block.nx;
    cpu::for_each_piece(i64(corners.size()), 1, 0, [&](i64 b, i64, i64) {
      const Corner& c = corners[std::size_t(b)];
      const i64 tx = (b % per_row) * block.nx, ty = (b / per_row) * block.ny;
      for (i64 z = 0; z < block.nz; ++z)
        for (i64 y = 0; y < block.ny; ++y) {
          const T* from = in_.data + ((c.z + z) * d.ny + c.y + y) * d.nx + c.x;
          std::copy(from, from + block.nx, out.data + (z * o.ny + ty + y) * o.nx + tx);
        }
    });
  }

 private:
  ConstVolumeView<T> in_;
};

}  // namespace

// Every read of an image starts here: an empty one is refused once, for all of them.
void require_dims(const Dims& d) {
  if (d.nx < 1 || d.ny < 1 || d.nz < 1) {
    throw Error(ErrorKind::InvalidArgument, fmt::format("image dimensions must be >= 1, got {}x{}x{}", d.nx, d.ny, d.nz));
  }
}

std::unique_ptr<ImageReads> host_reads(ConstVolumeView<float> image) {
  require_dims(image.dims);
  return std::make_unique<HostReads<float>>(image);
}

template <class T>
std::unique_ptr<ImageReads> reads_where_filters_run(ConstVolumeView<T> image, const ExecContext& context) {
  require_dims(image.dims);
#if CTD_HAVE_CUDA
  if (available_device(context.device) == Device::Cuda) return cuda::uploaded_reads(image);
#else
  (void)context;
#endif
  return std::make_unique<HostReads<T>>(image);
}
std::unique_ptr<ImageReads> reads_for(ConstVolumeView<float> image, const ExecContext& context) {
  return reads_where_filters_run(image, context);
}
std::unique_ptr<ImageReads> reads_for(ConstVolumeView<std::int16_t> image, const ExecContext& context) {
  return reads_where_filters_run(image, context);
}

std::unique_ptr<ImageReads> device_reads(const float* image, const Dims& dims, CudaStream stream) {
  require_dims(dims);
#if CTD_HAVE_CUDA
  return cuda::device_reads(image, dims, stream);
#else
  (void)image, (void)dims, (void)stream;
  throw Error(ErrorKind::Unsupported, "this build of ctdenoise has no CUDA backend");
#endif
}

const SpikeValues& ImageReads::spikes() const {
  std::call_once(spikes_found_, [&] { spikes_ = find_spikes(*this); });
  return spikes_;
}

}  // namespace ctd::detail
