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
constexpr double kMostTextureMisfit = 1.25;  // the transformed sample's level against the one predicted, either way
// A dose per slice is fitted where the tiles' centres span kLeastDoseSlices slices or more, and
// kept where its F ratio (the misfit it removes per term over the misfit left per degree of
// freedom) is at least kLeastDoseF: 710-3800 on phantoms whose dose falls from 2 x to 0.5 x over
// the slices, at most 1.8 on them with one dose and 5.5 on the validation sets' 3D crops; FBP
// noise in whole volumes, whose level does change with the slice, up to 26 (the values' tests
// then refuse the fit).
constexpr double kLeastDoseSlices = 4;
constexpr double kLeastDoseF = 20;

}  // namespace

double IntensityLevels::dose(double z) const {
  const double t = std::clamp((z - z_mid) / z_half, -t_reach, t_reach);
  return std::exp(c1 * t + c2 * t * t);
}

double IntensityLevels::level(double u, double z) const { return std::sqrt(std::max(0.0, a + b * u) * dose(z)); }

namespace {

// The tiles the fit reads, one entry each: the median value u of its flat part, that part's
// variance v (the level squared) and its log, the tile's centre (z: its slice in the image) and
// depth in slices, and its weight w, the residuals its level was read from.
struct TileReadings {
  std::vector<double> u, v, log_v, z, depth, w;
  std::vector<std::array<double, 3>> at;
  std::size_t size() const { return u.size(); }
};

// The least-squares line var = a + b x through (x, y), or nullopt where x does not vary or b <= 0.
std::optional<std::array<double, 2>> fit_line(const std::vector<double>& x, const std::vector<double>& y) {
  const double n = double(x.size());
  double mx = 0, my = 0;
  for (std::size_t i = 0; i < x.size(); ++i) mx += x[i] / n, my += y[i] / n;
  double sxx = 0, sxy = 0;
  for (std::size_t i = 0; i < x.size(); ++i) sxx += (x[i] - mx) * (x[i] - mx), sxy += (x[i] - mx) * (y[i] - my);
  if (!(sxx > 0) || !(sxy > 0)) return std::nullopt;
  return std::array<double, 2>{my - sxy / sxx * mx, sxy / sxx};
}

// The fit of the tiles' variances' logs log v by log(a + b u) + c1 t + c2 t^2 (`terms` = 0:
// no dose; 1: c1 alone; 2: both), each tile weighted by the residuals its level was read from
// (the chance variance of its log goes as one over their number): Gauss-Newton from `start`,
// each step halved until the misfit falls and a + b u stays positive. The fit and its weighted
// misfit in log sigma (infinite where the start is not positive: then no step is taken).
struct LogFit {
  IntensityLevels fit;
  double misfit;
};
LogFit fit_logs(const TileReadings& r, const std::vector<double>& t, IntensityLevels start, int terms) {
  constexpr double kU = 1000;  // u in thousands: the normal equations' columns alike in size
  const std::vector<double>&u = r.u, &y = r.log_v, &w = r.w;
  const std::size_t n = r.size();
  const int m = 2 + terms;
  // Tile i's log variance less the fit's (its base a + b u must be positive).
  auto log_residual = [&](const IntensityLevels& f, std::size_t i, double base) {
    return y[i] - std::log(base) - f.c1 * t[i] - f.c2 * t[i] * t[i];
  };
  auto misfit = [&](const IntensityLevels& f) {
    double sum = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const double base = f.a + f.b * u[i];
      if (!(base > 0)) return std::numeric_limits<double>::infinity();
      const double e = 0.5 * log_residual(f, i, base);  // in log sigma
      sum += w[i] * e * e;
    }
    return sum;
  };
  LogFit best{start, misfit(start)};
  for (int iteration = 0; iteration < 50; ++iteration) {
    double normal[4][5] = {};
    const IntensityLevels& f = best.fit;
    for (std::size_t i = 0; i < n; ++i) {
      const double base = f.a + f.b * u[i];
      const double e = log_residual(f, i, base);
      const double j[4] = {1 / base, u[i] / kU / base, t[i], t[i] * t[i]};
      for (int row = 0; row < m; ++row) {
        for (int col = 0; col < m; ++col) normal[row][col] += w[i] * j[row] * j[col];
        normal[row][4] += w[i] * j[row] * e;
      }
    }
    for (int row = 0; row < m; ++row) {  // Gauss-Jordan with partial pivoting
      int pivot = row;
      for (int k = row + 1; k < m; ++k)
        if (std::abs(normal[k][row]) > std::abs(normal[pivot][row])) pivot = k;
      std::swap(normal[row], normal[pivot]);
      if (!(std::abs(normal[row][row]) > 0)) return best;
      for (int k = 0; k < m; ++k) {
        if (k == row) continue;
        const double factor = normal[k][row] / normal[row][row];
        for (int col = row; col < 5; ++col) normal[k][col] -= factor * normal[row][col];
      }
    }
    double step[4] = {};
    for (int row = 0; row < m; ++row) step[row] = normal[row][4] / normal[row][row];
    bool improved = false;
    for (double scale = 1; scale > 1e-3 && !improved; scale /= 2) {
      IntensityLevels next = f;
      next.a += scale * step[0], next.b += scale * step[1] / kU, next.c1 += scale * step[2], next.c2 += scale * step[3];
      const double e = misfit(next);
      if (e < best.misfit) best = {next, e}, improved = true;
    }
    if (!improved) break;
  }
  return best;
}

// `fit` with a dose per slice where the tiles lie in slices kLeastDoseSlices apart or more and the
// dose explains their levels better than chance would (an F test on the logs' residuals, each
// tile weighted by the residuals it was read from); else `fit` as it is. Both fits, with and
// without the dose, are made alike (fit_logs): the plain line fitted to the variances, judged on
// the logs, read a false dose on a one-dose phantom (F 9 for a like-for-like 0.9).
IntensityLevels with_dose_where_it_shows(const IntensityLevels& fit, const TileReadings& r) {
  const std::vector<double>&u = r.u, &v = r.v, &z = r.z;
  const std::size_t n = r.size();
  const auto [z_low, z_high] = std::minmax_element(z.begin(), z.end());
  std::vector<double> slices(z);
  std::sort(slices.begin(), slices.end());
  const std::size_t layers = std::size_t(std::unique(slices.begin(), slices.end()) - slices.begin());
  if (layers < 2 || *z_high - *z_low < kLeastDoseSlices) return fit;
  IntensityLevels start = fit;  // positive at every tile: at least half the lowest variance read
  const auto lowest = std::min_element(u.begin(), u.end());
  start.a = std::max(start.a, 0.5 * *std::min_element(v.begin(), v.end()) - start.b * *lowest);
  start.z_mid = 0.5 * (*z_low + *z_high), start.z_half = 0.5 * (*z_high - *z_low);
  // The outer tiles' outer slices are in the sample too: the dose is followed to them. Held at the
  // outer centres, a steep dose (4 x in variance over 12 slices) was under-read by up to 1.4 x in
  // sigma in the end slices, the noisiest, and NLM was under-smoothed by up to 2.3 dB.
  for (std::size_t i = 0; i < n; ++i) start.t_reach = std::max(start.t_reach, (std::abs(z[i] - start.z_mid) + r.depth[i] / 2) / start.z_half);
  std::vector<double> t(n);
  for (std::size_t i = 0; i < n; ++i) t[i] = (z[i] - start.z_mid) / start.z_half;
  const int terms = layers >= 3 ? 2 : 1;
  const LogFit without = fit_logs(r, t, start, 0), with = fit_logs(r, t, without.fit, terms);
  const double f_ratio = (without.misfit - with.misfit) / terms / (with.misfit / (double(n) - 2 - terms));
  return std::isfinite(with.misfit) && f_ratio >= kLeastDoseF ? with.fit : fit;
}

}  // namespace

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
// In 3D a dose per slice d(z) multiplies the fit where it explains the levels better than chance
// would (an F test on the logs' residuals, each tile weighted by the residuals it was read from):
// image-domain Poisson noise whose dose falls from 2 x to 0.5 x over a phantom's slices was
// under-smoothed by up to 8 dB without it.
std::optional<IntensityLevels> fit_intensity_levels(const std::vector<Sample::Tile>& tiles, double gain) {
  TileReadings r;
  for (const Sample::Tile& t : tiles) {
    if (t.thin_flat_residual_sigma > 0 && std::isfinite(t.flat_median)) {
      r.u.push_back(t.flat_median);
      r.v.push_back(t.thin_flat_residual_sigma * t.thin_flat_residual_sigma / gain);
      r.log_v.push_back(std::log(r.v.back()));
      r.z.push_back(t.centre[2]);
      r.depth.push_back(double(t.size.nz));
      r.w.push_back(double(std::max<std::int64_t>(1, t.thin_flat_residuals)));
      r.at.push_back(t.centre);
    }
  }
  const std::size_t n = r.size();
  if (n < kLeastIntensityTiles) return std::nullopt;
  const auto line = fit_line(r.u, r.v);
  if (!line) return std::nullopt;
  const IntensityLevels fit = with_dose_where_it_shows({(*line)[0], (*line)[1]}, r);
  // The gates judge the values on the levels the dose leaves (the levels themselves where there is
  // none): the held-out check's head (headsq) with Hann FBP noise, whose level falls towards the
  // top of the head, took a dose (F 34-157) that left the values little to explain (R^2 at most
  // 0.32), and with the dose counted as their explanation the fit came near passing (0.86-0.88).
  std::vector<double> level_in_slice(n);
  double mean_in_slice = 0;
  for (std::size_t i = 0; i < n; ++i) {
    level_in_slice[i] = 0.5 * (r.log_v[i] - std::log(fit.dose(r.z[i])));
    mean_in_slice += level_in_slice[i] / double(n);
  }
  double total = 0, by_value = 0, by_place = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double base = fit.a + fit.b * r.u[i];
    if (!(base > 0)) return std::nullopt;
    total += (level_in_slice[i] - mean_in_slice) * (level_in_slice[i] - mean_in_slice);
    by_value += (level_in_slice[i] - 0.5 * std::log(base)) * (level_in_slice[i] - 0.5 * std::log(base));
    std::vector<double> near;  // the 8 nearest others
    for (const std::size_t j : nearest_tiles(r.at[i], r.at)) {
      if (j != i && near.size() < 8) near.push_back(level_in_slice[j]);
    }
    const double place = detail::median(std::move(near));
    by_place += (level_in_slice[i] - place) * (level_in_slice[i] - place);
  }
  if (!(total > 0) || 1 - by_value / total < kLeastIntensityFit || !(by_value <= kMostIntensityResidual * by_place)) {
    return std::nullopt;
  }
  return fit;
}

namespace {

// The integral of 1 / L(v) over v from p to q, where L(v) = sqrt((a + b v) dose) is the fit's
// level clamped to [lo, hi]: the fit's variance-stabilising transform (Anscombe's, for Poisson
// counts), which takes noise of level L(v) at the value v to noise of level 1. Linear where L is
// clamped; 2 (sqrt(a + b q) - sqrt(a + b p)) / (b sqrt(dose)) between, written without that
// difference, which a b near 0 would cancel away.
double stabilised(const IntensityLevels& fit, double dose, double lo, double hi, double p, double q) {
  const double root = std::sqrt(dose);
  if (!(fit.b > 0)) return (q - p) / std::clamp(root * std::sqrt(std::max(0.0, fit.a)), lo, hi);  // one level (not fitted so)
  const double v_lo = ((lo / root) * (lo / root) - fit.a) / fit.b, v_hi = ((hi / root) * (hi / root) - fit.a) / fit.b;
  const double sign = q < p ? -1 : 1;
  if (q < p) std::swap(p, q);
  auto piece = [&](double x0, double x1) {
    if (!(x1 > x0)) return 0.0;
    const double mid = 0.5 * (x0 + x1);
    if (mid <= v_lo) return (x1 - x0) / lo;
    if (mid >= v_hi) return (x1 - x0) / hi;
    return 2 * (x1 - x0) / (root * (std::sqrt(std::max(0.0, fit.a + fit.b * x1)) + std::sqrt(std::max(0.0, fit.a + fit.b * x0))));
  };
  const double to_lo = std::clamp(v_lo, p, q), to_hi = std::clamp(v_hi, p, q);
  return sign * (piece(p, to_lo) + piece(to_lo, to_hi) + piece(to_hi, q));
}

}  // namespace

// Each voxel's level from the fit at the mean of its 3 x 3 in-plane neighbours in the sample's
// mask, between the tiles' own lowest and (a quarter above) highest levels: not the model's sigma,
// which the quietest values' anatomy may raise (a chest's lungs: 31 for 20). The model's texture
// was read in its flattest blocks, the quietest values' (the lungs, whose vessels read as
// correlated noise): it is read again on the sample taken through the fit's variance-stabilising
// transform, where the noise is alike everywhere and the flattest blocks are those without
// anatomy (Sample::texture). The tiles' pseudo-residuals were converted to levels with the
// model's texture (gain): the levels are converted again with the new one.
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
      const double slice = s.origin_of(x, y, z)[2] + 0.5;  // as the tiles' centres count
      const double level = count > 0 ? fit.level(sum / count, slice) : lowest;
      s.level_at[std::size_t((z * d.ny + y) * d.nx + x)] = float(std::clamp(level, lowest, 1.25 * highest));
    }
  });
  s.noise_over_image = "intensity levels";
  // Each value through the transform, from the sample's median value (any origin reads the same
  // differences; this one keeps the floats small). Divided by its level instead, the sample read a
  // texture that hung on where the values' zero lies: the same noise in HU, in HU + 1024 (as
  // stored) and in attenuation gave NLM h 0.90-1.27 x apart.
  std::vector<double> inside;
  for (i64 i = 0; i < d.count(); ++i)
    if (s.mask[std::size_t(i)]) inside.push_back(s.image.data()[i]);
  const double origin = inside.empty() ? 0.0 : detail::median(std::move(inside));
  Volume unit(d);
  cpu::for_each_piece(d.nz * d.ny, 1, 0, [&](i64 row, i64, i64) {
    const i64 z = row / d.ny, y = row % d.ny;
    for (i64 x = 0; x < d.nx; ++x) {
      const i64 i = (z * d.ny + y) * d.nx + x;
      const double dose = fit.dose(s.origin_of(x, y, z)[2] + 0.5);
      unit.data()[i] = s.mask[std::size_t(i)] ? float(stabilised(fit, dose, lowest, 1.25 * highest, origin, s.image.data()[i]))
                                              : std::numeric_limits<float>::quiet_NaN();
    }
  });
  // Believed where the transformed sample reads the level the new gain predicts for it (its sigma over
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
