// The image's rays and how well its noise levels follow them: the map of the scan-like probe
// (src/core/scan_probe.hpp).

#include "core/scan_probe.hpp"

#include "core/scan_rays.hpp"

#include "core/fbp.hpp"
#include "core/robust_stats.hpp"
#include "cpu/thread_pool.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <stdexcept>

namespace ctd::detail {
namespace {

using i64 = std::int64_t;
using namespace scan;

constexpr std::size_t kMapSlices = 16;  // slices projected, at most (3D: spread over the sample's blocks)
// A body cut by the scanner's field of view (CT1's chest: its circle meets the image's edges)
// leaves 9-10 % of the border ring body; at 0.9 that scan's map came and went with the noise's
// dose (its fan-beam scan at 2.5e4 photons: 907 of 1008 blocks air, one level, NLM 0.97 dB
// under-smoothed). A crop of a body leaves far less air; the map's fits judge the rest.
constexpr double kLeastAirBorder = 0.8;
// Air and the body in HU: air under -500 and the body's 90th percentile 500 or more above it (a
// crop inside a body, whose lowest values are fat, gets no map). Or in units of attenuation
// (1 / mm or 1 / cm, as an iterative reconstruction holds them, or HU + 1024 as stored): the
// border ring's air (its median, on 4 x 4 means) within kMostAirShare of the body's attenuation
// from 0.
constexpr double kMostAir = -500, kLeastBody = 500, kMostAirShare = 0.1;
constexpr std::size_t kLeastTiles = 8;
// The least spread (standard deviation) of the tiles' log noise levels for a map to be looked for:
// stationary noise spreads 0.02 (a 512 x 512 x 548 volume with white noise), scans 0.2-0.4.
constexpr double kLeastLevelSpread = 0.05;
constexpr int kFitFanViews = 90;   // views of a turn whose rays fit a fan beam's map to the tiles
// The fan beams tried: the source's distance from the centre in half-diagonals of the slice (a
// scanner's 540-600 mm over fields of view of 500 down to 250 mm: 1.5-3.4), and how much better
// than a parallel beam's a fan's fit must be to be taken.
constexpr std::array<double, 6> kFanSources = {1.4, 1.75, 2.2, 2.75, 3.4, 4.3};
constexpr double kLeastFanGain = 0.8;
// A fan's orbit other than a full turn is taken where it leaves this share of the full turn's
// residual or less (net of the levels' chance scatter).
constexpr double kLeastOrbitGain = 0.85;
// A short scan, only where a full turn explains less than this share of the levels' spread (the
// map's fit): its redundancy weights make the noise so lopsided that a full turn explains little
// of it (simulated fan-beam short scans of three objects, both windows, two doses, with and
// without a bowtie: 0.02-0.31, 24 scans), while unevenness of another kind that a short scan fits
// a little better lies where a full turn explains most (a real 3 mm volume's own noise under a
// parallel beam's: 0.74-0.89, its short scans' residual 0.39-0.52 x the full turn's, and the
// bilateral filter's h 1.44 x the best).
constexpr double kMostFullTurnFitForShortScan = 0.5;
// The offset detectors tried: the overlap's half-width as a share of the fan's half-width at the
// centre (a CBCT's half-fan overlaps the centre by some 2-6 cm of a 20-25 cm field's radius), on
// either side; and the short scans' first views, every 22.5 degrees.
constexpr std::array<double, 3> kOverlapShares = {0.1, 0.2, 0.35};
constexpr int kShortScanStarts = 16;
// An offset detector is taken where its mirror image (the other side) leaves at least this share
// of its gain over the full turn (scan_map).
constexpr double kLeastOffsetHandedness = 0.5;

// The orbits tried for the map's fan from a source at distance D: offset detectors
// (kOverlapShares, either side) and short scans (kShortScanStarts first views).
std::vector<ScanMap::Orbit> orbit_candidates(const ScanMap& map, double D) {
  using Kind = ScanMap::Orbit::Kind;
  const double fan = fan_half_angle(map, D), half_width = D * std::tan(fan);
  std::vector<ScanMap::Orbit> orbits;
  for (double side : {1.0, -1.0})
    for (double share : kOverlapShares) orbits.push_back({Kind::OffsetDetector, side, share * half_width, 0, 0});
  for (int k = 0; k < kShortScanStarts; ++k) orbits.push_back({Kind::ShortScan, 1, 0, 2 * M_PI * k / kShortScanStarts, fan});
  return orbits;
}

double quantile(std::vector<double> v, double q) { return kth_smallest(v, std::size_t(q * double(v.size() - 1))); }

// The slice's attenuation: its values less its air (air_value of its usable values),
// padding and NaN 0; nullopt where it is not a body in air: less than kLeastAirBorder of its
// border ring air or padding (air: under a quarter of the attenuation's 90th percentile), as in a
// crop of a body, or air and body neither in HU nor in units of attenuation (kMostAir,
// kLeastBody, kMostAirShare).
struct Attenuation {
  std::vector<double> values;
  double air, body;  // the slice's air, and the 90th percentile of its attenuation
};
std::optional<Attenuation> attenuation_of(ConstVolumeView<float> slice, float padding) {
  const Dims d = slice.dims;
  auto usable = [&](float v) { return std::isfinite(v) && v != padding; };
  std::vector<double> values;
  for (i64 i = 0; i < d.nx * d.ny; ++i)
    if (usable(slice.data[i])) values.push_back(slice.data[i]);
  if (values.size() < 64) return std::nullopt;
  const double air = air_value(values);
  std::vector<double> a(std::size_t(d.nx * d.ny), 0.0);
  for (i64 i = 0; i < d.nx * d.ny; ++i)
    if (usable(slice.data[i])) a[std::size_t(i)] = double(slice.data[i]) - air;
  for (double& v : values) v = std::max(0.0, v - air);
  const double body = quantile(values, 0.9);
  if (!(body > 0)) return std::nullopt;
  // The ring's air judged on means of 4 x 4 voxels, so that strong noise in the air (a very
  // low dose) does not make it look like tissue.
  constexpr i64 k = 4;
  const i64 bx = (d.nx + k - 1) / k, by = (d.ny + k - 1) / k;
  const i64 ring = std::max<i64>(1, std::min(bx, by) / 64);
  i64 border = 0, airy = 0;
  std::vector<double> ring_means;
  for (i64 j = 0; j < by; ++j)
    for (i64 i = 0; i < bx; ++i) {
      if (i >= ring && j >= ring && i < bx - ring && j < by - ring) continue;
      double sum = 0;
      i64 n = 0;
      for (i64 y = j * k; y < std::min(d.ny, (j + 1) * k); ++y)
        for (i64 x = i * k; x < std::min(d.nx, (i + 1) * k); ++x) sum += a[std::size_t(y * d.nx + x)], ++n;
      ++border;
      airy += sum < 0.25 * body * double(n);
      ring_means.push_back(sum / double(n));
    }
  if (double(airy) < kLeastAirBorder * double(border)) return std::nullopt;
  const bool hu = air <= kMostAir && body >= kLeastBody;
  const bool attenuation_units = std::abs(air + quantile(ring_means, 0.5)) <= kMostAirShare * body;
  if (!(hu || attenuation_units)) return std::nullopt;
  return Attenuation{std::move(a), air, body};
}


}  // namespace

double air_value(std::vector<double> values) {
  if (values.empty()) throw std::invalid_argument("air_value: no values");
  // Near the lowest: within a quarter of the way from the 5th to the 90th percentile. Not the
  // lowest themselves: strong noise puts the 5th percentile 1.6 sigma under the air (read from
  // there and clipped at 0, every air voxel added about 1.7 sigma of attenuation to each ray
  // through it, the rays' contrast from view to view shrank, and the probe's streaks with it: a
  // 512 abdomen's fan-beam scan at 2.5 x 10^4 photons, noise of 146 HU: NLM's h 355 where the
  // true error is least near 390-420; now 393).
  const double lowest = quantile(values, 0.05), top = quantile(values, 0.9);
  std::erase_if(values, [&](double v) { return v - lowest > 0.25 * (top - lowest); });
  // Not their median either: that takes lung and fat with the air (the 3 mm TotalSegmentator
  // volume with noise of 30 HU: its air, -985 to -995, read 5-18 HU high, and the probe's
  // texture moved across the line that takes it). Medians of windows around the middle, each
  // reaching as far below it as the 5th percentile lies (the air's own spread), walk to its mode.
  constexpr int kModeSteps = 5;
  double air = quantile(values, 0.5);
  std::vector<double> around;
  for (int step = 0; step < kModeSteps; ++step) {
    const double reach = std::max(air - lowest, 0.02 * (top - lowest));
    around.clear();
    for (const double v : values)
      if (std::abs(v - air) <= reach) around.push_back(v);
    if (around.empty()) break;
    air = quantile(around, 0.5);
  }
  return air;
}

void assign_slices(ScanMap& map, const Sample& s) {
  const i64 depth = s.image.dims().nz;
  map.slice_of_block.clear();
  for (const auto& place : s.places) {
    const i64 z = place.z + depth / 2;
    const auto nearest = std::min_element(map.slices.begin(), map.slices.end(),
                                          [&](i64 a, i64 b) { return std::abs(a - z) < std::abs(b - z); });
    map.slice_of_block.push_back(std::size_t(nearest - map.slices.begin()));
  }
}

std::optional<ScanMap> scan_map(const ImageReads& image, const Sample& s, const NoiseModel& noise) {
  const Dims d = image.dims();
  if (s.tiles.size() < kLeastTiles || s.places.empty()) return std::nullopt;
  const float padding = std::isnan(noise.excluded_value) ? std::numeric_limits<float>::quiet_NaN() : float(noise.excluded_value);
  // The slices projected: each block's middle slice, at most kMapSlices of them spread evenly.
  const i64 depth = s.image.dims().nz;
  std::vector<i64> middles;
  for (const auto& place : s.places) middles.push_back(std::min(d.nz - 1, place.z + depth / 2));
  std::vector<i64> distinct = middles;
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  // Only slices that hold a body in air are projected: an end slice where the body reaches the
  // border (the TotalSegmentator abdomen's lowest, 77 % of its border air) has no rays to tell,
  // and its blocks take the nearest projected slice's. Where fewer than half are, the image is a
  // crop of a body, not a scan's field of view: no map.
  ScanMap map;
  std::vector<Attenuation> attenuations;
  const std::size_t candidates = std::min(kMapSlices, distinct.size());
  // Read in one copy, then side by side: one after another, the 16 slices of a 1024^3 volume
  // took 0.31 s on 16 cores.
  std::vector<i64> zs;
  std::vector<Corner> corners;
  for (std::size_t k = 0; k < candidates; ++k) {
    zs.push_back(distinct[k * distinct.size() / candidates]);
    corners.push_back({0, 0, zs.back()});
  }
  Volume slices(Dims{d.nx, d.ny * i64(candidates), 1});
  image.copy_blocks(corners, Dims{d.nx, d.ny, 1}, slices.view());
  std::vector<std::optional<Attenuation>> read(candidates);
  cpu::for_each_piece(i64(candidates), 1, 0, [&](i64 k, i64, i64) {
    read[std::size_t(k)] = attenuation_of({slices.data() + k * d.nx * d.ny, Dims{d.nx, d.ny, 1}}, padding);
  });
  for (std::size_t k = 0; k < candidates; ++k)
    if (read[k]) map.slices.push_back(zs[k]), attenuations.push_back(std::move(*read[k]));
  if (2 * map.slices.size() < candidates) return std::nullopt;
  assign_slices(map, s);
  map.nx = d.nx, map.ny = d.ny;
  // The tiles' log pseudo-residual sigmas (flat parts). Where they spread less than
  // kLeastLevelSpread, no map can be told from the estimates' own scatter: none is made (nor its
  // projections paid for, most of the cost of a volume with stationary noise).
  std::vector<double> logs;
  std::vector<const Sample::Tile*> used;
  for (const Sample::Tile& t : s.tiles) {
    if (!(t.flat_residual_sigma > 0) || !std::isfinite(t.flat_median)) continue;
    logs.push_back(std::log(t.flat_residual_sigma));
    used.push_back(&t);
  }
  if (logs.size() < kLeastTiles) return std::nullopt;
  // Each tile's projected slice. Where several are projected, the levels are compared within
  // each slice: each slice may have a dose of its own (a fan-beam abdomen whose dose went from
  // 0.5 to 2 x over 20 slices fitted 0.40 across them and lost the probe: NLM 7.3 dB under).
  std::vector<std::size_t> slice_of_tile;
  for (const Sample::Tile* t : used) slice_of_tile.push_back(map.slice_of_block[s.block_of(t->x0, t->y0)]);
  const std::size_t slice_count = map.slices.size();
  auto within = [&](std::vector<double> v) { return within_slices(std::move(v), slice_of_tile, slice_count); };
  const std::vector<double> centred_logs = within(logs);
  const double mean_log = std::accumulate(centred_logs.begin(), centred_logs.end(), 0.0) / double(logs.size());
  double total = 0;
  for (double l : centred_logs) total += (l - mean_log) * (l - mean_log);
  // Some of that spread is the estimates' own scatter (flat_level_scatter), which no map explains:
  // the fit below is the share of the rest that the map explains.
  double scatter = 0, scattered = 0;
  for (const Sample::Tile* t : used)
    if (std::isfinite(t->flat_level_scatter)) scatter += t->flat_level_scatter, scattered += 1;
  scatter = scattered > 0 ? scatter * double(logs.size()) / scattered : 0.0;
  if (!(total > kLeastLevelSpread * kLeastLevelSpread * double(logs.size()))) return std::nullopt;

  const Coarse coarse = coarse_of(d.nx, d.ny);
  double largest = 0;
  for (const Attenuation& a : attenuations) {
    map.integrals.push_back(project(a.values, d.nx, d.ny, coarse));
    largest = std::max(largest, *std::max_element(map.integrals.back().begin(), map.integrals.back().end()));
  }
  if (!(largest > 0)) return std::nullopt;
  for (auto& p : map.integrals)
    for (double& v : p) v /= largest;
  std::vector<double> intensities;  // each tile's attenuation relative to its slice's body (log)
  for (std::size_t t = 0; t < used.size(); ++t) {
    const std::size_t slice = slice_of_tile[t];
    intensities.push_back(std::log(std::max(0.1, (used[t]->flat_median - attenuations[slice].air) / attenuations[slice].body)));
  }

  // Each tile's log level against the map's log noise level there: half the log of the mean over
  // the views of each view's weight times exp(P p), over the rays through 3 x 3 points of its
  // middle slice (parallel beam: every other view of the map; fan beam: every 4 degrees of a turn).
  const double cx = (double(d.nx) - 1) / 2, cy = (double(d.ny) - 1) / 2;
  // Per tile, its rays' (log weight, p) for a source at distance D (infinite: parallel beam).
  using Rays = std::vector<std::vector<std::array<double, 2>>>;
  // The fits below run a few hundred short loops over the tiles: on one pool.
  cpu::ThreadPool pool(int(std::min<i64>(cpu::hardware_threads(), i64(used.size()))));
  auto rays_for = [&](double D, const ScanMap::Orbit& orbit = {}) {
    Rays rays(used.size());
    cpu::for_each_piece(pool, i64(used.size()), 1, [&](i64 index, i64, i64) {
      const Sample::Tile& t = *used[std::size_t(index)];
      auto& r = rays[std::size_t(index)];
      for (int j = 0; j < 3; ++j)
        for (int i = 0; i < 3; ++i) {
          const i64 x = t.x0 + (2 * i + 1) * t.size.nx / 6, y = t.y0 + (2 * j + 1) * t.size.ny / 6;
          const auto at = s.origin_of(x, y, t.z0 + t.size.nz / 2);
          const std::vector<double>& p = map.integrals[map.slice_of_block[s.block_of(x, y)]];
          const double px = at[0] - cx, py = at[1] - cy;
          if (!std::isfinite(D)) {
            for (i64 view = 0; view < kMapViews; view += 2) {
              const double theta = M_PI * double(view) / kMapViews;
              r.push_back({0.0, relative_integral(p, coarse, view, px * std::cos(theta) + py * std::sin(theta))});
            }
            continue;
          }
          for (int view = 0; view < kFitFanViews; ++view) {
            const double beta = 2 * M_PI * view / kFitFanViews, c = std::cos(beta), sn = std::sin(beta);
            const FanPoint f = fan_point(px, py, c, sn, D);
            const Line line = line_through(D * c, D * sn, px, py);
            const double gain = redundancy_gain(orbit, beta, f.u, D);  // 0: a log weight of -inf, no variance
            r.push_back({2 * std::log(f.cos_gamma) - 4 * std::log(f.U) + 2 * std::log(gain),
                         relative_integral(p, coarse, line.view, line.offset)});
          }
        }
    });
    return rays;
  };
  // Each tile's log level less the map's at attenuation P.
  auto gaps = [&](const Rays& rays, double P) {
    std::vector<double> gap(logs.size());
    cpu::for_each_piece(pool, i64(logs.size()), 1, [&](i64 t, i64, i64) {
      double sum = 0;
      for (const auto& [log_weight, p] : rays[std::size_t(t)]) sum += std::exp(log_weight + P * p);
      gap[std::size_t(t)] = logs[std::size_t(t)] - 0.5 * std::log(sum / double(rays[std::size_t(t)].size()));
    });
    return gap;
  };
  // The residual variance after the best offset, at attenuation P.
  auto residual = [&](const Rays& rays, double P) {
    const std::vector<double> gap = within(gaps(rays, P));
    const double mean = std::accumulate(gap.begin(), gap.end(), 0.0) / double(gap.size());
    double r = 0;
    for (double g : gap) r += (g - mean) * (g - mean);
    return r;
  };
  // P on steps of 2^(1/4) from 1/4 to 32, then a parabola in log P through the best and its
  // neighbours: (log2 P, residual).
  auto fit_attenuation = [&](const Rays& rays) {
    std::vector<double> ks, rs;
    for (int k = -8; k <= 20; ++k) ks.push_back(k / 4.0), rs.push_back(residual(rays, std::exp2(k / 4.0)));
    const std::size_t best = std::size_t(std::min_element(rs.begin(), rs.end()) - rs.begin());
    double k_best = ks[best], r_best = rs[best];
    if (best > 0 && best + 1 < ks.size()) {
      const double k = parabola_least(ks[best - 1], rs[best - 1], ks[best], rs[best], ks[best + 1], rs[best + 1]);
      if (k != ks[best]) {
        const double r = residual(rays, std::exp2(k));
        if (r < r_best) k_best = k, r_best = r;
      }
    }
    return std::array<double, 2>{k_best, r_best};
  };
  // The beam: parallel, unless a fan's source at one of kFanSources half-diagonals from the
  // centre explains the levels clearly better (its residual under kLeastFanGain of the parallel
  // beam's: a distant source's fan is nearly parallel, and chance should not pick it).
  Rays rays = rays_for(std::numeric_limits<double>::infinity());
  auto [k_best, r_best] = fit_attenuation(rays);
  const double half_diagonal = std::hypot(double(d.nx), double(d.ny)) / 2;
  double fan_least = std::numeric_limits<double>::infinity(), fan_source = 0, fan_k = 0;
  for (double f : kFanSources) {
    const auto [k, r] = fit_attenuation(rays_for(f * half_diagonal));
    map.fan_sources.push_back(f * half_diagonal);
    if (r < fan_least) fan_least = r, fan_source = f * half_diagonal, fan_k = k;
  }
  if (fan_least < kLeastFanGain * r_best) {
    map.source = fan_source, k_best = fan_k, r_best = fan_least;
    rays = rays_for(fan_source);
  }
  // The orbit: a full turn, unless a fan's offset detector or short scan (orbit_candidates) at the
  // best fan's source explains the levels clearly better than the beam taken (its residual under
  // kLeastOrbitGain of that beam's, both net of the levels' chance scatter, which no orbit
  // explains), with the sources tried again on that orbit. A short scan's noise is lopsided, and
  // a full turn's fan need not fit it better than a parallel beam does; nor is a short scan
  // taken where that beam already explains most (kMostFullTurnFitForShortScan). Each candidate's P is
  // looked for near the full turn's (half octaves, an octave each way; the whole range for the
  // one taken): the whole range for each doubled the map's time.
  auto near_fit = [&](const Rays& r) {
    double least = std::numeric_limits<double>::infinity();
    for (double dk = -1; dk <= 1; dk += 0.5) least = std::min(least, residual(r, std::exp2(fan_k + dk)));
    return least;
  };
  ScanMap::Orbit best_orbit;
  double orbit_least = std::numeric_limits<double>::infinity();
  std::array<double, 2> side_least = {orbit_least, orbit_least};  // the offset detectors' least, per side (+1, -1)
  for (const ScanMap::Orbit& orbit : orbit_candidates(map, fan_source)) {
    const double r = near_fit(rays_for(fan_source, orbit));
    if (r < orbit_least) orbit_least = r, best_orbit = orbit;
    if (orbit.kind == ScanMap::Orbit::Kind::OffsetDetector) {
      double& least = side_least[orbit.side > 0 ? 0 : 1];
      least = std::min(least, r);
    }
  }
  // An offset detector is told by its side: noise stronger towards the edge on both sides alike
  // is a bowtie's or the map's misfit, which the wrong side fits as well (full-turn fan-beam scans
  // of the Shepp-Logan head with a bowtie: either side 0.6-0.7 x the full turn's residual).
  // The other side must leave at least kLeastOffsetHandedness of the gain over the full turn.
  const bool offset_told =
      best_orbit.kind != ScanMap::Orbit::Kind::OffsetDetector ||
      side_least[best_orbit.side > 0 ? 1 : 0] - orbit_least >= kLeastOffsetHandedness * (r_best - orbit_least);
  // The share of the levels' spread, net of their chance scatter, that a residual r leaves explained.
  auto fit_of = [&](double r) { return total > scatter ? std::max(0.0, 1 - std::max(0.0, r - scatter) / (total - scatter)) : 0.0; };
  const bool lopsided_enough =
      best_orbit.kind != ScanMap::Orbit::Kind::ShortScan || fit_of(r_best) < kMostFullTurnFitForShortScan;
  // The best candidate at each fan's source, its P then fitted over the whole range.
  if (offset_told && lopsided_enough) {
    ScanMap::Orbit chosen = best_orbit;
    double chosen_source = fan_source;
    for (double D : map.fan_sources) {
      const ScanMap::Orbit orbit = orbit_at_source(best_orbit, map, fan_source, D);
      if (const double r = near_fit(rays_for(D, orbit)); r < orbit_least) orbit_least = r, chosen = orbit, chosen_source = D;
    }
    Rays orbit_rays = rays_for(chosen_source, chosen);
    if (const auto [k, r] = fit_attenuation(orbit_rays); r - scatter < kLeastOrbitGain * (r_best - scatter)) {
      map.source = chosen_source, map.orbit = chosen, k_best = k, r_best = r;
      rays = std::move(orbit_rays);
    }
  }
  map.attenuation = std::exp2(k_best);
  {
    const std::vector<double> means = slice_means(gaps(rays, map.attenuation), slice_of_tile, slice_count);
    map.slice_gains.assign(slice_count, 1.0);
    if (slice_count > 1)
      for (std::size_t k = 0; k < slice_count; ++k) map.slice_gains[k] = std::exp(means[k] - means[slice_count / 2]);
  }
  map.fit = fit_of(r_best);
  // Beyond each tile's own intensity (signal-dependent noise varies with the rays too: the body
  // is noisier than the air): the share of what a straight line in the log of the tiles'
  // attenuation (relative to the body's, at least 0.1 of it) leaves that the map explains, at
  // the P (eighths of an octave, 1/4 to 32) where it explains most. Scan noise varies within air
  // and within tissue alike, with the rays.
  auto after_intensity = [&](const std::vector<double>& v) {  // the residual of v's line in the intensities
    const double mean_i = std::accumulate(intensities.begin(), intensities.end(), 0.0) / double(v.size());
    const double mean_v = std::accumulate(v.begin(), v.end(), 0.0) / double(v.size());
    double sii = 0, siv = 0, svv = 0;
    for (std::size_t t = 0; t < v.size(); ++t) {
      sii += (intensities[t] - mean_i) * (intensities[t] - mean_i);
      siv += (intensities[t] - mean_i) * (v[t] - mean_v);
      svv += (v[t] - mean_v) * (v[t] - mean_v);
    }
    return sii > 0 ? svv - siv * siv / sii : svv;
  };
  const double intensity_residual = after_intensity(centred_logs);
  double least = intensity_residual;
  for (double k = -2; k <= 5; k += 0.125) least = std::min(least, after_intensity(within(gaps(rays, std::exp2(k)))));
  map.fit_beyond_intensity = intensity_residual > 0 ? std::max(0.0, 1 - least / intensity_residual) : 0.0;
  return map;
}

}  // namespace ctd::detail
