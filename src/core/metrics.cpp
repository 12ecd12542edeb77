// Image quality figures (include/ctdenoise/metrics.hpp).

#include "core/mirror.hpp"
#include "core/ssim_window.hpp"
#include "cpu/thread_pool.hpp"

#include <ctdenoise/error.hpp>
#include <ctdenoise/metrics.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace ctd {
namespace {

using i64 = std::int64_t;

[[noreturn]] void invalid(const std::string& message) { throw Error(ErrorKind::InvalidArgument, message); }

void check_pair(ConstVolumeView<float> a, ConstVolumeView<float> b) {
  if (!(a.dims == b.dims)) {
    invalid(fmt::format("images differ in size: {}x{}x{} and {}x{}x{}", a.dims.nx, a.dims.ny, a.dims.nz, b.dims.nx,
                        b.dims.ny, b.dims.nz));
  }
}

void check_region(const Dims& d, const Region& r) {
  const i64 n[3] = {d.nx, d.ny, d.nz};
  for (int axis = 0; axis < 3; ++axis) {
    if (r.begin[axis] < 0 || r.end[axis] > n[axis] || r.begin[axis] >= r.end[axis]) {
      invalid(fmt::format("region [{},{})x[{},{})x[{},{}) is empty or outside the {}x{}x{} image", r.begin[0], r.end[0],
                          r.begin[1], r.end[1], r.begin[2], r.end[2], d.nx, d.ny, d.nz));
    }
  }
}

}  // namespace

// Separable: along x, y and (in 3D) z.
std::vector<double> detail::ssim_window_mean(const std::vector<double>& in, const Dims& d) {
  constexpr int kRadius = 5;
  double w[2 * kRadius + 1], sum = 0;
  for (int k = -kRadius; k <= kRadius; ++k) sum += w[k + kRadius] = std::exp(-k * k / (2 * 1.5 * 1.5));
  for (double& v : w) v /= sum;
  const i64 n[3] = {d.nx, d.ny, d.nz};
  const i64 stride[3] = {1, d.nx, d.nx * d.ny};
  std::vector<double> a = in, b(in.size());
  for (int axis = 0; axis < (d.is_2d() ? 2 : 3); ++axis) {
    for (i64 z = 0; z < d.nz; ++z)
      for (i64 y = 0; y < d.ny; ++y)
        for (i64 x = 0; x < d.nx; ++x) {
          const i64 p[3] = {x, y, z};
          const i64 base = (z * d.ny + y) * d.nx + x - p[axis] * stride[axis];
          double s = 0;
          for (int k = -kRadius; k <= kRadius; ++k) s += w[k + kRadius] * a[std::size_t(base + detail::mirror(p[axis] + k, n[axis]) * stride[axis])];
          b[std::size_t((z * d.ny + y) * d.nx + x)] = s;
        }
    std::swap(a, b);
  }
  return a;
}

Statistics statistics(ConstVolumeView<float> image) {
  Statistics s;
  const i64 n = image.dims.count();
  if (n <= 0) return s;
  // Sums per fixed piece, added in order; NaN and infinite voxels counted apart (an image that
  // holds some is described, not filtered).
  struct Piece {
    float min, max;
    double sum, sum2;
    i64 non_finite;
  };
  constexpr i64 kPiece = 1 << 20;
  std::vector<Piece> pieces(std::size_t((n + kPiece - 1) / kPiece));
  cpu::for_each_piece(n, kPiece, 0, [&](i64 index, i64 begin, i64 end) {
    const float* v = image.data;
    Piece p{std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(), 0, 0, 0};
    for (i64 i = begin; i < end; ++i) {
      if (!std::isfinite(v[i])) {
        ++p.non_finite;
        continue;
      }
      p.min = std::min(p.min, v[i]);
      p.max = std::max(p.max, v[i]);
      p.sum += v[i];
      p.sum2 += double(v[i]) * v[i];
    }
    pieces[std::size_t(index)] = p;
  });
  double sum = 0, sum2 = 0, low = std::numeric_limits<double>::infinity(), high = -low;
  for (const Piece& p : pieces) {
    low = std::min<double>(low, p.min);
    high = std::max<double>(high, p.max);
    sum += p.sum;
    sum2 += p.sum2;
    s.non_finite += p.non_finite;
  }
  const i64 finite = n - s.non_finite;
  if (finite == 0) return s;
  s.min = low;
  s.max = high;
  s.mean = sum / double(finite);
  s.std = std::sqrt(std::max(0.0, sum2 / double(finite) - s.mean * s.mean));
  return s;
}

double rmse(ConstVolumeView<float> reference, ConstVolumeView<float> test) {
  check_pair(reference, test);
  double se = 0;
  const i64 n = reference.dims.count();
  for (i64 i = 0; i < n; ++i) se += std::pow(double(reference.data[i]) - test.data[i], 2);
  return std::sqrt(se / double(n));
}

double psnr(ConstVolumeView<float> reference, ConstVolumeView<float> test, double data_range) {
  if (!(data_range > 0)) invalid(fmt::format("data range must be > 0, got {}", data_range));
  const double e = rmse(reference, test);
  return e == 0 ? std::numeric_limits<double>::infinity() : 20 * std::log10(data_range / e);
}

double ssim(ConstVolumeView<float> reference, ConstVolumeView<float> test, double data_range) {
  check_pair(reference, test);
  if (!(data_range > 0)) invalid(fmt::format("data range must be > 0, got {}", data_range));
  const Dims d = reference.dims;
  const auto n = std::size_t(d.count());
  std::vector<double> x(reference.data, reference.data + n), y(test.data, test.data + n), xx(n), yy(n), xy(n);
  for (std::size_t i = 0; i < n; ++i) {
    xx[i] = x[i] * x[i];
    yy[i] = y[i] * y[i];
    xy[i] = x[i] * y[i];
  }
  using detail::ssim_window_mean;
  const auto mx = ssim_window_mean(x, d), my = ssim_window_mean(y, d), sxx = ssim_window_mean(xx, d),
             syy = ssim_window_mean(yy, d), sxy = ssim_window_mean(xy, d);
  const double c1 = std::pow(0.01 * data_range, 2), c2 = std::pow(0.03 * data_range, 2);
  double total = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double vx = sxx[i] - mx[i] * mx[i], vy = syy[i] - my[i] * my[i], cov = sxy[i] - mx[i] * my[i];
    total += detail::ssim_from_moments(mx[i] * my[i], mx[i] * mx[i], my[i] * my[i], vx, vy, cov, c1, c2);
  }
  return total / double(n);
}

RegionStats region_stats(ConstVolumeView<float> image, const Region& r) {
  check_region(image.dims, r);
  double sum = 0, sum2 = 0;
  for (i64 z = r.begin[2]; z < r.end[2]; ++z)
    for (i64 y = r.begin[1]; y < r.end[1]; ++y)
      for (i64 x = r.begin[0]; x < r.end[0]; ++x) {
        const double v = image(x, y, z);
        sum += v;
        sum2 += v * v;
      }
  RegionStats s;
  s.voxels = r.count();
  s.mean = sum / double(s.voxels);
  s.std = s.voxels > 1 ? std::sqrt(std::max(0.0, (sum2 - sum * s.mean) / double(s.voxels - 1))) : 0.0;
  return s;
}

double cnr(ConstVolumeView<float> image, const Region& a, const Region& b) {
  const RegionStats sa = region_stats(image, a), sb = region_stats(image, b);
  const double noise = std::sqrt((sa.std * sa.std + sb.std * sb.std) / 2);
  if (noise == 0) invalid("CNR is undefined: both regions are constant");
  return std::fabs(sa.mean - sb.mean) / noise;
}

Region find_flat_region(ConstVolumeView<float> image, std::array<std::int64_t, 3> size, double padding) {
  const Dims d = image.dims;
  const i64 n[3] = {d.nx, d.ny, d.nz};
  Region best;
  double best_std = std::numeric_limits<double>::infinity();
  i64 box[3], step[3];
  for (int axis = 0; axis < 3; ++axis) {
    if (size[axis] < 1) invalid(fmt::format("flat region size must be >= 1, got {}", size[axis]));
    box[axis] = std::min(size[axis], n[axis]);
    step[axis] = std::max<i64>(1, box[axis] / 2);
  }
  for (i64 z0 = 0; z0 + box[2] <= n[2]; z0 += step[2])
    for (i64 y0 = 0; y0 + box[1] <= n[1]; y0 += step[1])
      for (i64 x0 = 0; x0 + box[0] <= n[0]; x0 += step[0]) {
        const Region r{{x0, y0, z0}, {x0 + box[0], y0 + box[1], z0 + box[2]}};
        bool touches_padding = false;
        for (i64 z = z0; z < r.end[2] && !touches_padding; ++z)
          for (i64 y = y0; y < r.end[1] && !touches_padding; ++y)
            for (i64 x = x0; x < r.end[0]; ++x)
              if (double(image(x, y, z)) == padding) {
                touches_padding = true;
                break;
              }
        if (touches_padding) continue;
        const RegionStats s = region_stats(image, r);
        if (s.std < best_std) {
          best_std = s.std;
          best = r;
        }
      }
  if (!std::isfinite(best_std)) invalid("no region of the image is free of padding");
  return best;
}

}  // namespace ctd
