// Robust noise estimation (include/ctdenoise/noise.hpp).

#include "core/robust_stats.hpp"
#include "cpu/thread_pool.hpp"

#include <ctdenoise/error.hpp>
#include <ctdenoise/noise.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace ctd {

using i64 = std::int64_t;
using detail::find_padding;
using detail::robust_sigma;

std::string_view to_string(NoiseEstimator estimator) noexcept {
  switch (estimator) {
    case NoiseEstimator::PseudoResidual: return "pseudo-residual";
    case NoiseEstimator::WaveletMad: return "wavelet-mad";
  }
  return "?";
}

double padding_value(ConstVolumeView<float> image) {
  if (image.dims.count() < 1) return std::numeric_limits<double>::quiet_NaN();
  const std::vector<float> padding = find_padding(image);
  return padding.empty() ? std::numeric_limits<double>::quiet_NaN() : double(padding.front());
}

NoiseEstimate estimate_noise(ConstVolumeView<float> in, NoiseEstimator estimator) {
  const Dims d = in.dims;
  if (d.nx < 1 || d.ny < 1 || d.nz < 1) {
    throw Error(ErrorKind::InvalidArgument, fmt::format("image dimensions must be >= 1, got {}x{}x{}", d.nx, d.ny, d.nz));
  }
  return detail::estimate_noise_without(in, estimator, find_padding(in));
}

NoiseEstimate detail::estimate_noise_without(ConstVolumeView<float> in, NoiseEstimator estimator,
                                             const std::vector<float>& padding, i64 max_samples) {
  const Dims d = in.dims;
  const bool flat = d.is_2d();
  NoiseEstimate result;
  result.excluded_value = padding.empty() ? std::numeric_limits<double>::quiet_NaN() : double(padding.front());
  auto u = [&](i64 x, i64 y, i64 z) { return in.data[(z * d.ny + y) * d.nx + x]; };
  auto usable = [&](float v) {
    return std::isfinite(v) && std::find(padding.begin(), padding.end(), v) == padding.end();
  };

  // Each residual (or detail coefficient) with the value range of the voxels it was made from.
  // Large volumes are sampled: every step-th position, about a million in all (the sigma of a
  // million residuals is within 0.1 % of the truth). Positions are numbered in scan order over
  // the grid (nx, ny, nz positions along x, y, z); the sampled ones are visited directly, in
  // parallel pieces whose results are joined in order.
  struct Sample {
    double value, range;
  };
  auto collect = [&](i64 nx, i64 ny, i64 nz, auto&& at) {
    const i64 positions = std::max<i64>(0, nx) * std::max<i64>(0, ny) * std::max<i64>(0, nz);
    const i64 step = std::max<i64>(1, d.count() / std::max<i64>(1, max_samples));
    const i64 sampled = (positions + step - 1) / step;
    // Each position's slot written in place (vectors grown on many threads at once spent most of
    // the time in the allocator), the unusable ones dropped afterwards.
    std::vector<Sample> all(static_cast<std::size_t>(sampled));
    std::vector<unsigned char> kept(static_cast<std::size_t>(sampled));
    cpu::for_each_piece(sampled, i64(1) << 16, 0, [&](i64, i64 begin, i64 end) {
      for (i64 k = begin; k < end; ++k) {
        const i64 position = k * step;
        Sample& s = all[std::size_t(k)];
        kept[std::size_t(k)] = at(position % nx, (position / nx) % ny, position / (nx * ny), s.value, s.range) ? 1 : 0;
      }
    });
    std::size_t used = 0;
    for (std::size_t k = 0; k < all.size(); ++k) {
      if (kept[k]) all[used++] = all[k];
    }
    all.resize(used);
    return all;
  };
  std::vector<Sample> samples;
  if (estimator == NoiseEstimator::PseudoResidual) {
    // Interior voxels only: every residual uses its full neighbourhood.
    const double scale = flat ? std::sqrt(4.0 / 5.0) : std::sqrt(6.0 / 7.0);
    samples = collect(d.nx - 2, d.ny - 2, flat ? 1 : d.nz - 2, [&](i64 gx, i64 gy, i64 gz, double& value, double& range) {
      const i64 x = gx + 1, y = gy + 1, z = flat ? 0 : gz + 1;
      float neighbours[6] = {u(x - 1, y, z), u(x + 1, y, z), u(x, y - 1, z), u(x, y + 1, z), 0, 0};
      int count = 4;
      if (!flat) {
        neighbours[4] = u(x, y, z - 1);
        neighbours[5] = u(x, y, z + 1);
        count = 6;
      }
      const float centre = u(x, y, z);
      bool ok = usable(centre);
      double mean = 0;
      float lo = centre, hi = centre;
      for (int i = 0; i < count; ++i) {
        ok = ok && usable(neighbours[i]);
        mean += neighbours[i];
        lo = std::min(lo, neighbours[i]);
        hi = std::max(hi, neighbours[i]);
      }
      value = scale * (double(centre) - mean / count);
      range = double(hi) - lo;
      return ok;
    });
  } else {
    // Orthonormal Haar: the diagonal detail of each 2x2 (2x2x2) block has the noise's variance.
    const double scale = flat ? 0.5 : 1.0 / std::sqrt(8.0);
    samples = collect(d.nx / 2, d.ny / 2, flat ? d.nz : d.nz / 2, [&](i64 gx, i64 gy, i64 gz, double& value, double& range) {
      const i64 x = 2 * gx, y = 2 * gy, z = flat ? gz : 2 * gz;
      double detail = 0;
      bool ok = true;
      float lo = u(x, y, z), hi = lo;
      for (int c = 0; c < (flat ? 4 : 8); ++c) {
        const i64 dx = c & 1, dy = (c >> 1) & 1, dz = (c >> 2) & 1;
        const float v = u(x + dx, y + dy, z + dz);
        ok = ok && usable(v);
        detail += ((dx + dy + dz) % 2 == 0 ? 1.0 : -1.0) * v;
        lo = std::min(lo, v);
        hi = std::max(hi, v);
      }
      value = scale * detail;
      range = double(hi) - lo;
      return ok;
    });
  }
  std::vector<double> values(samples.size()), ranges(samples.size());
  cpu::for_each_piece(i64(samples.size()), i64(1) << 16, 0, [&](i64, i64 begin, i64 end) {
    for (i64 i = begin; i < end; ++i) {
      values[std::size_t(i)] = samples[std::size_t(i)].value;
      ranges[std::size_t(i)] = samples[std::size_t(i)].range;
    }
  });
  if (values.size() < 16) {
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("too few usable voxels to estimate noise ({} residuals from a {}x{}x{} image)",
                            values.size(), d.nx, d.ny, d.nz));
  }
  // Edges: neighbourhoods whose values span more than 6 sigma (noise alone rarely does: the
  // range of 7 normal samples exceeds 6 sigma with probability ~0.3%) are left out, then sigma is
  // estimated again from the rest.
  const double first = robust_sigma(values);
  std::vector<double> smooth;
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (ranges[i] <= 6 * first) smooth.push_back(values[i]);
  }
  if (smooth.size() >= 16 && smooth.size() * 2 >= values.size()) values = std::move(smooth);
  result.samples = i64(values.size());
  result.sigma = robust_sigma(std::move(values));
  return result;
}

}  // namespace ctd
