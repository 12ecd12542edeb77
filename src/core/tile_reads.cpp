// What a tile of the automatic parameters' sample reads of its noise (src/core/tile_reads.hpp).

#include "core/tile_reads.hpp"

#include "core/image_reads.hpp"
#include "core/robust_stats.hpp"

#include <ctdenoise/error.hpp>
#include <ctdenoise/noise.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

namespace ctd::detail {

using i64 = std::int64_t;

std::vector<i64> even_cuts(i64 n, i64 size) {
  const i64 count = std::max<i64>(1, n / size);
  std::vector<i64> at(std::size_t(count + 1));
  for (i64 k = 0; k <= count; ++k) at[std::size_t(k)] = k * n / count;
  return at;
}

// The tile's flat part: the tile with padding and its busy areas set to NaN, so that what is read
// in it is noise, not anatomy. Each slice is cut into areas of about 8 x 8 voxels; an area's
// activity is its mean squared second difference at lag 2 along x and y, and areas over
// kFlatAreaLimit x the tile's 10th-percentile activity are left out (on FBP noise alone the limit
// keeps 91-98 % of the areas). measure_level reads in it whether the level varies, the one level
// and the tiles' textures, but not the tiles' own levels: where the noise varies within a tile,
// as at a body's edge, the flat part leans to its quiet side and under-read them (whole slices:
// 264 -> 248 of 300 within the goal).
namespace {
constexpr double kFlatAreaLimit = 3;
constexpr i64 kFlatArea = 8;
}  // namespace

void keep_flat_part(Volume& tile, const std::vector<float>& padding) {
  const Dims n = tile.dims();
  for (i64 i = 0; i < n.count(); ++i)
    if (!padding.empty() && tile.data()[i] == padding[0]) tile.data()[i] = std::numeric_limits<float>::quiet_NaN();
  const std::vector<i64> xs = even_cuts(n.nx, kFlatArea), ys = even_cuts(n.ny, kFlatArea);
  const std::size_t ax = xs.size() - 1, ay = ys.size() - 1;
  if (ax * ay < 4) return;
  auto view = tile.view();
  auto area = [&](std::size_t index) {  // the area's (x0, x1, y0, y1, z)
    const std::size_t i = index % ax, j = (index / ax) % ay;
    return std::array<i64, 5>{xs[i], xs[i + 1], ys[j], ys[j + 1], i64(index / (ax * ay))};
  };
  std::vector<double> activity(ax * ay * std::size_t(n.nz), std::numeric_limits<double>::quiet_NaN());
  for (std::size_t index = 0; index < activity.size(); ++index) {
    const auto [x0, x1, y0, y1, z] = area(index);
    double sum = 0;
    i64 count = 0;
    for (i64 y = y0; y < y1; ++y)
      for (i64 x = x0; x < x1; ++x) {
        const float c = view(x, y, z);
        if (x >= 2 && x + 2 < n.nx) {
          const double d = double(view(x - 2, y, z)) - 2.0 * c + view(x + 2, y, z);
          if (std::isfinite(d)) sum += d * d, ++count;
        }
        if (y >= 2 && y + 2 < n.ny) {
          const double d = double(view(x, y - 2, z)) - 2.0 * c + view(x, y + 2, z);
          if (std::isfinite(d)) sum += d * d, ++count;
        }
      }
    if (count >= kFlatArea * kFlatArea / 2) activity[index] = sum / double(count);
  }
  std::vector<double> measured;
  for (double a : activity)
    if (std::isfinite(a)) measured.push_back(a);
  if (measured.size() < 4) return;
  const double limit = kFlatAreaLimit * detail::kth_smallest(measured, measured.size() / 10);
  for (std::size_t index = 0; index < activity.size(); ++index) {
    if (!(activity[index] > limit)) continue;
    const auto [x0, x1, y0, y1, z] = area(index);
    for (i64 y = y0; y < y1; ++y)
      for (i64 x = x0; x < x1; ++x) view(x, y, z) = std::numeric_limits<float>::quiet_NaN();
  }
}

std::optional<NoiseEstimate> residual_estimate(ConstVolumeView<float> tile, const std::vector<float>& padding) {
  try {
    return detail::estimate_noise_without(*host_reads(tile), NoiseEstimator::PseudoResidual, padding);
  } catch (const Error&) {
    return std::nullopt;
  }
}

bool reads_a_tile(const std::optional<NoiseEstimate>& e, i64 voxels) { return e && e->samples * 4 >= voxels; }

double tile_residual_sigma(ConstVolumeView<float> tile, const std::vector<float>& padding) {
  const auto e = residual_estimate(tile, padding);
  return reads_a_tile(e, tile.dims.count()) ? e->sigma : 0.0;
}

double flat_level_scatter(const Volume& flat, const std::vector<float>& padding) {
  constexpr double nan = std::numeric_limits<double>::quiet_NaN();
  auto read = [&](const Volume& v) -> std::array<double, 2> {  // (log sigma, residuals read)
    const auto e = residual_estimate(v.view(), padding);
    if (e && e->sigma > 0 && e->samples * 8 >= v.size()) return {std::log(e->sigma), double(e->samples)};
    return {nan, nan};
  };
  const Dims n = flat.dims();
  const std::vector<i64> xs = even_cuts(n.nx, kFlatArea), ys = even_cuts(n.ny, kFlatArea);
  // The checkerboard is the same in every slice: a 3D pseudo-residual needs both slice neighbours
  // in its half (alternating with the slice, no voxel had them and a volume's tiles read NaN).
  std::array<Volume, 2> halves{flat, flat};
  for (i64 z = 0; z < n.nz; ++z)
    for (std::size_t j = 0; j + 1 < ys.size(); ++j)
      for (std::size_t i = 0; i + 1 < xs.size(); ++i) {
        Volume& other = halves[(i + j) % 2 == 0 ? 1 : 0];
        for (i64 y = ys[j]; y < ys[j + 1]; ++y)
          for (i64 x = xs[i]; x < xs[i + 1]; ++x) other.view()(x, y, z) = std::numeric_limits<float>::quiet_NaN();
      }
  const auto whole = read(flat), a = read(halves[0]), b = read(halves[1]);
  if (!std::isfinite(whole[0]) || !std::isfinite(a[0]) || !std::isfinite(b[0])) return nan;
  // Var(log a - log b) = c / n_a + c / n_b, and the whole's scatter is c / n_whole.
  return (a[0] - b[0]) * (a[0] - b[0]) / whole[1] / (1 / a[1] + 1 / b[1]);
}

double flat_residual_sigma(Volume tile, const std::vector<float>& padding) {
  keep_flat_part(tile, padding);
  return tile_residual_sigma(tile.view(), padding);
}

FlatReading read_flat_part(Volume tile, const std::vector<float>& padding) {
  keep_flat_part(tile, padding);  // padding is NaN from here on
  FlatReading reading;
  reading.residual_sigma = tile_residual_sigma(tile.view(), padding);
  constexpr i64 lag = 2;
  const Dims n = tile.dims();
  const auto view = tile.view();
  std::vector<double> differences;
  differences.reserve(std::size_t(2 * n.count()));
  for (i64 z = 0; z < n.nz; ++z)
    for (i64 y = 0; y < n.ny; ++y)
      for (i64 x = 0; x < n.nx; ++x) {
        const double c = 2.0 * view(x, y, z);
        if (x >= lag && x + lag < n.nx) {
          const double d = double(view(x - lag, y, z)) - c + view(x + lag, y, z);
          if (std::isfinite(d)) differences.push_back(d);
        }
        if (y >= lag && y + lag < n.ny) {
          const double d = double(view(x, y - lag, z)) - c + view(x, y + lag, z);
          if (std::isfinite(d)) differences.push_back(d);
        }
      }
  // As tile_residual_sigma: at least a quarter of the tile's voxels' worth.
  if (differences.size() * 4 >= std::size_t(n.count())) reading.second_difference_sigma = detail::robust_sigma(std::move(differences));
  return reading;
}

std::vector<float> padding_of(const NoiseModel& noise) {
  return std::isnan(noise.excluded_value) ? std::vector<float>{} : std::vector<float>{float(noise.excluded_value)};
}

// The noise alone rarely counts (the difference of two 3 x 3 box means of white noise has a
// sigma of 0.47), nor do edges of high contrast (air and body), which NLM keeps whatever h; what
// it can blur (a sphere 140 HU from its surroundings under noise of 20-50 HU) counts. The block's
// own sigma, not the model's: the model's, read in the quiet air of a scan, ranked the blocks by
// their noise level instead.
std::int64_t low_contrast_structure(ConstVolumeView<float> slice, const std::vector<float>& padding, double gain) {
  constexpr double kLeast = 1.4, kMost = 8;  // the differences counted, in the block's noise sigma
  const double sigma = gain > 0 ? tile_residual_sigma(slice, padding) / std::sqrt(gain) : 0.0;
  if (!(sigma > 0)) return 0;
  const std::int64_t nx = slice.dims.nx, ny = slice.dims.ny;
  if (nx < 3 || ny < 3) return 0;
  // 3 x 3 box means (sums of three along x, then of three of those along y), NaN where a voxel
  // is not usable.
  const std::int64_t mx = nx - 2, my = ny - 2;
  std::vector<double> along_x(std::size_t(mx * ny)), box(std::size_t(mx * my));
  for (std::int64_t y = 0; y < ny; ++y)
    for (std::int64_t x = 0; x < mx; ++x) {
      double sum = 0;
      for (std::int64_t xx = x; xx < x + 3; ++xx) {
        const float v = slice(xx, y, 0);
        sum += std::isfinite(v) && (padding.empty() || v != padding[0]) ? double(v) : std::numeric_limits<double>::quiet_NaN();
      }
      along_x[std::size_t(y * mx + x)] = sum;
    }
  for (std::int64_t y = 0; y < my; ++y)
    for (std::int64_t x = 0; x < mx; ++x) {
      const std::size_t i = std::size_t(y * mx + x);
      box[i] = (along_x[i] + along_x[i + std::size_t(mx)] + along_x[i + 2 * std::size_t(mx)]) / 9;
    }
  auto counts = [&](double a, double b) {
    const double difference = std::fabs(b - a);
    return difference >= kLeast * sigma && difference <= kMost * sigma;  // false for NaN
  };
  std::int64_t count = 0;
  for (std::int64_t y = 0; y < my; ++y)
    for (std::int64_t x = 0; x < mx; ++x) {
      const std::size_t i = std::size_t(y * mx + x);
      if (x + 3 < mx && counts(box[i], box[i + 3])) ++count;
      if (y + 3 < my && counts(box[i], box[i + 3 * std::size_t(mx)])) ++count;
    }
  return count;
}

}  // namespace ctd::detail
