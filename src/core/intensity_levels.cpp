// Noise whose level follows the image's values (src/core/intensity_levels.hpp).
#include "core/intensity_levels.hpp"

#include "core/image_reads.hpp"
#include "core/robust_stats.hpp"
#include "cpu/thread_pool.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <utility>

namespace ctd::detail {
namespace {

using i64 = std::int64_t;

// Noise whose variance follows the image's values (var = a + b u: Poisson counts read in the
// image's own units, as image-domain low-dose simulations make it): where the tiles' flat parts'
// levels vary, their squares are fitted to the parts' median values; where the fit (over
// kLeastIntensityTiles tiles or more) explains at least kLeastIntensityFit of the variance of the
// levels' logs and leaves at most kMostIntensityResidual of what the tiles' neighbours leave, each
// voxel takes the level the fit gives its neighbourhood's mean (fit_intensity_levels).
constexpr double kLeastIntensityFit = 0.9;
constexpr std::size_t kLeastIntensityTiles = 16;
constexpr double kMostIntensityResidual = 0.5;
constexpr double kMostTextureMisfit = 1.25;  // the divided sample's level against the one predicted, either way

}  // namespace

double IntensityLevels::level(double u) const { return std::sqrt(std::max(0.0, a + b * u)); }

// The fit var = a + b u of the tiles' flat parts' levels (squared) to their median values u, where
// b > 0, the fit is positive at every tile, explains at least kLeastIntensityFit of the variance
// of the levels' logs, and leaves at most kMostIntensityResidual of what each tile's 8 nearest
// others (their median) leave: the values tell the level better than the place does. Else nullopt.
// Measured in numpy on the tiles of 2D images (R^2, then the ratio of the two residuals):
// image-domain Poisson noise over digital phantoms (air at -1000 HU, so its noise is a fortieth
// of water's in variance) 0.98-1.00 and 0.01-0.11; white noise whose variance follows the
// attenuation 0.94-0.99 and 0.02-0.34; FBP noise, whose level follows the rays rather than the
// values, 0.15-0.72 and 0.77-7.4 (whole slices); stationary noise under 0.5. Two values alone
// (air and a body of one value) fit any line: a body whose noise is 1.4 x stronger on one side
// reads 0.93 and 0.52, 2 x 0.73 and 2.0.
std::optional<IntensityLevels> fit_intensity_levels(const std::vector<Sample::Tile>& tiles, double gain) {
  std::vector<double> u, v;
  std::vector<std::array<double, 3>> at;
  for (const Sample::Tile& t : tiles) {
    if (t.thin_flat_residual_sigma > 0 && std::isfinite(t.flat_median)) {
      u.push_back(t.flat_median);
      v.push_back(t.thin_flat_residual_sigma * t.thin_flat_residual_sigma / gain);
      at.push_back(t.centre);
    }
  }
  const std::size_t n = u.size();
  if (n < kLeastIntensityTiles) return std::nullopt;
  double mu = 0, mv = 0;
  for (std::size_t i = 0; i < n; ++i) mu += u[i], mv += v[i];
  mu /= double(n), mv /= double(n);
  double suu = 0, suv = 0;
  for (std::size_t i = 0; i < n; ++i) suu += (u[i] - mu) * (u[i] - mu), suv += (u[i] - mu) * (v[i] - mv);
  if (!(suu > 0) || !(suv > 0)) return std::nullopt;
  const IntensityLevels fit{mv - suv / suu * mu, suv / suu};
  std::vector<double> log_level(n);
  double mean_log = 0;
  for (std::size_t i = 0; i < n; ++i) log_level[i] = 0.5 * std::log(v[i]), mean_log += log_level[i] / double(n);
  double total = 0, by_value = 0, by_place = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double predicted = fit.a + fit.b * u[i];
    if (!(predicted > 0)) return std::nullopt;
    total += (log_level[i] - mean_log) * (log_level[i] - mean_log);
    by_value += (log_level[i] - 0.5 * std::log(predicted)) * (log_level[i] - 0.5 * std::log(predicted));
    std::vector<double> near;  // the 8 nearest others
    for (const std::size_t j : nearest_tiles(at[i], at)) {
      if (j != i && near.size() < 8) near.push_back(log_level[j]);
    }
    const double place = detail::median(near);
    by_place += (log_level[i] - place) * (log_level[i] - place);
  }
  if (!(total > 0) || 1 - by_value / total < kLeastIntensityFit || !(by_value <= kMostIntensityResidual * by_place)) {
    return std::nullopt;
  }
  return fit;
}

// Each voxel's level from the fit at the mean of its 3 x 3 in-plane neighbours in the sample's
// mask, between the tiles' own lowest and (a quarter above) highest levels: not the model's sigma,
// which the quietest values' anatomy may raise (a chest's lungs: 31 for 20). The model's texture
// was read in its flattest blocks, the quietest values' (the lungs, whose vessels read as
// correlated noise): it is read again on the sample divided by these levels, where the noise is
// alike everywhere and the flattest blocks are those without anatomy (Sample::texture). The tiles'
// pseudo-residuals were converted to levels with the model's texture (gain): the levels are
// converted again with the new one.
void use_intensity_levels(Sample& s, const IntensityLevels& fit, const NoiseModel& noise, double gain) {
  double lowest = std::numeric_limits<double>::infinity(), highest = 0;
  for (const Sample::Tile& t : s.tiles) {
    if (!(t.thin_flat_residual_sigma > 0)) continue;
    lowest = std::min(lowest, t.thin_flat_residual_sigma / std::sqrt(gain));
    highest = std::max(highest, t.thin_flat_residual_sigma / std::sqrt(gain));
  }
  const Dims d = s.image.dims();
  cpu::for_each_piece(d.nz * d.ny, 1, 0, [&](i64 row, i64, i64) {
    const i64 z = row / d.ny, y = row % d.ny;
    for (i64 x = 0; x < d.nx; ++x) {
      double sum = 0;
      int count = 0;
      for (i64 yy = std::max<i64>(0, y - 1); yy <= std::min(d.ny - 1, y + 1); ++yy)
        for (i64 xx = std::max<i64>(0, x - 1); xx <= std::min(d.nx - 1, x + 1); ++xx) {
          const i64 i = (z * d.ny + yy) * d.nx + xx;
          if (s.mask[std::size_t(i)]) sum += s.image.data()[i], ++count;
        }
      const double level = count > 0 ? fit.level(sum / count) : lowest;
      s.level_at[std::size_t((z * d.ny + y) * d.nx + x)] = float(std::clamp(level, lowest, 1.25 * highest));
    }
  });
  s.noise_over_image = "intensity levels";
  Volume unit(d);
  for (i64 i = 0; i < d.count(); ++i) {
    unit.data()[i] = s.mask[std::size_t(i)] ? s.image.data()[i] / s.level_at[std::size_t(i)] : std::numeric_limits<float>::quiet_NaN();
  }
  // Believed where the divided sample reads the level the new gain predicts for it (its sigma over
  // the rescale near 1: CT1's chest and whole slices 0.99-1.01); a 3D phantom's sample, whose
  // air's fitted level is near 0 and follows each voxel's noisy neighbourhood, read 3.4 (a
  // correlation of 0.66, levels 1.7 x too high and the bilateral filter 2.4 x the best): it keeps
  // the model's texture and levels.
  NoiseModel texture = detail::estimate_noise_model(*detail::host_reads(unit.view()));
  const double texture_gain = texture.sigma > 0 ? pseudo_residual_gain(texture) : 0.0;
  const double candidate = texture_gain > 0 ? std::sqrt(gain / texture_gain) : 0.0;
  double rescale = 1;
  if (candidate > 0 && texture.sigma / candidate >= 1 / kMostTextureMisfit && texture.sigma / candidate <= kMostTextureMisfit) {
    rescale = candidate;
    const double to_model = noise.sigma / texture.sigma;
    for (double& c : texture.covariance) c *= to_model * to_model;
    texture.sigma = noise.sigma;
    s.texture = std::move(texture);
  }
  double sum2 = 0;
  i64 counted = 0;
  for (i64 i = 0; i < d.count(); ++i) {
    s.level_at[std::size_t(i)] = float(s.level_at[std::size_t(i)] * rescale);
    if (s.counted[std::size_t(i)]) sum2 += double(s.level_at[std::size_t(i)]) * s.level_at[std::size_t(i)], ++counted;
  }
  if (counted > 0) s.level = float(std::sqrt(sum2 / double(counted)));
}

}  // namespace ctd::detail
