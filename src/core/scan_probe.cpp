// Noise made as a CT scanner makes it (src/core/scan_probe.hpp).

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

constexpr int kWindowViews = 180;  // views of the whole slice whose model is compared with the image's
constexpr int kFitViews = 90;      // views of the probes that refine the attenuation
// The least paired gain, in standard errors, of the tiles' texture scores for a step of choose_beam's
// walk from the fitted fan source (docs/parameters.md, "Scan-like noise", step 4).
constexpr double kLeastSourceStep = 1.0;
// The sample's probe is back-projected at up to 360 views, fewer where this many voxel-views are
// reached first (at least 90: a 3D sample of a million voxels gets 200).
constexpr i64 kProbeVoxelViews = 200'000'000;
// The in-plane lags whose correlations choose the FBP window.
constexpr std::array<std::array<int, 2>, 6> kWindowLags = {{{1, 0}, {0, 1}, {1, 1}, {1, -1}, {2, 0}, {0, 2}}};

// A pool of filtered unit noise for each FBP window (seed_of(w): window w's seed), made side by
// side: each one's buffer is zeroed and faulted in on one thread.
template <class SeedOf>
std::vector<std::vector<float>> window_pools(i64 pool_length, SeedOf&& seed_of) {
  std::vector<std::vector<float>> pools(kFbpWindows.size());
  cpu::for_each_piece(i64(pools.size()), 1, 0, [&](i64 w, i64, i64) {
    pools[std::size_t(w)] = filtered_rows(kFbpWindows[std::size_t(w)], kPoolRows, pool_length, seed_of(std::size_t(w)));
  });
  return pools;
}

}  // namespace

void refine_attenuation(ScanMap& map, const Sample& s, const NoiseModel& noise, std::uint64_t seed) {
  const Coarse coarse = coarse_of(map.nx, map.ny);
  const i64 pool_length = detector_bins(map) + kPoolSlack;
  const std::vector<float> pool = filtered_rows("ramp", kPoolRows, pool_length, seed + 5);
  const std::vector<Box> boxes = sample_boxes(s, map);
  const std::vector<float> padding = padding_of(noise);
  std::vector<std::size_t> used;
  for (std::size_t t = 0; t < s.tiles.size(); ++t)
    if (s.tiles[t].flat_residual_sigma > 0) used.push_back(t);
  std::vector<std::size_t> slice_of_tile;
  for (std::size_t t : used) slice_of_tile.push_back(map.slice_of_block[s.block_of(s.tiles[t].x0, s.tiles[t].y0)]);
  // The residual variance of the tiles' log levels, image less probe, after the best offset (within
  // each projected slice, as in scan_map), for each P (their probes made in one pass). The probes
  // carry the model's correlation across slices, as the image's noise does: the tiles' levels are
  // read in 3D, where that correlation lowers them by a share that hangs on each tile's texture,
  // and probes white across slices refitted P 10 % low on a polychromatic scan of a real abdomen
  // with noise correlated across slices (NLM 0.8 dB under-smoothed; docs/parameters.md).
  auto residuals = [&](const std::vector<double>& Ps) {
    std::vector<Volume> probes;
    std::vector<Channel> channels;
    for (std::size_t k = 0; k < Ps.size(); ++k) probes.emplace_back(s.image.dims());
    for (std::size_t k = 0; k < Ps.size(); ++k) channels.push_back({&pool, Ps[k], &probes[k]});
    back_project(map, coarse, channels, pool_length, z_taps(noise), kFitViews, seed + 6, boxes);
    std::vector<double> out;
    for (Volume& probe : probes) {
      for (i64 i = 0; i < probe.size(); ++i)
        if (!s.mask[std::size_t(i)]) probe.data()[i] = std::numeric_limits<float>::quiet_NaN();
      std::vector<double> gap(used.size(), std::numeric_limits<double>::quiet_NaN());
      cpu::for_each_piece(i64(used.size()), 1, 0, [&](i64 u, i64, i64) {
        const Sample::Tile& t = s.tiles[used[std::size_t(u)]];
        Volume tile(t.size);
        for (i64 z = 0; z < t.size.nz; ++z)
          for (i64 y = 0; y < t.size.ny; ++y)
            for (i64 x = 0; x < t.size.nx; ++x) tile.view()(x, y, z) = probe.view()(t.x0 + x, t.y0 + y, t.z0 + z);
        const double sigma = flat_residual_sigma(std::move(tile), padding);
        if (sigma > 0) gap[std::size_t(u)] = std::log(t.flat_residual_sigma) - std::log(sigma);
      });
      gap = within_slices(std::move(gap), slice_of_tile, map.slices.size());
      double sum = 0, sum2 = 0, n = 0;
      for (double g : gap)
        if (std::isfinite(g)) sum += g, sum2 += g * g, n += 1;
      out.push_back(n > 1 ? sum2 / n - (sum / n) * (sum / n) : std::numeric_limits<double>::infinity());
    }
    return out;
  };
  // P from `fitted`: steps of 2^(1/4), walking towards the least residual while it sits at an end
  // (within 2^-1 to 2^1), then eighths around the best and a parabola in log P. Returns P and the
  // least residual seen.
  auto refit = [&](double fitted) {
    std::map<double, double> r;
    auto evaluate = [&](const std::vector<double>& ks) {
      std::vector<double> Ps;
      for (double k : ks) Ps.push_back(fitted * std::exp2(k));
      const std::vector<double> values = residuals(Ps);
      for (std::size_t i = 0; i < ks.size(); ++i) r[ks[i]] = values[i];
    };
    evaluate({-0.25, 0.0, 0.25});
    auto least = [&] { return std::min_element(r.begin(), r.end(), [](auto& a, auto& b) { return a.second < b.second; })->first; };
    double best = least();
    while ((best == r.begin()->first && best > -1) || (best == r.rbegin()->first && best < 1)) {
      const double k = best == r.begin()->first ? best - 0.25 : best + 0.25;
      evaluate({k});
      best = least();
    }
    evaluate({best - 0.125, best + 0.125});
    const auto at = r.find(best);
    double k_best = best;
    if (at != r.begin() && std::next(at) != r.end()) {
      const auto lo = std::prev(at), hi = std::next(at);
      k_best = parabola_least(lo->first, lo->second, best, at->second, hi->first, hi->second);
    }
    return std::array<double, 2>{fitted * std::exp2(k_best), at->second};
  };
  map.attenuation = refit(map.attenuation)[0];
}

namespace {

// The probe's middle slice of each block, and the tiles read there (2D: all of them): the
// texture is read in-plane, and one slice is enough to tell the beam and the filter.
struct MiddleSlice {
  std::vector<Box> boxes;
  std::vector<std::size_t> tiles;
  i64 z;
};
MiddleSlice middle_slice(const Sample& s, const ScanMap& map) {
  MiddleSlice m;
  m.z = s.image.dims().nz / 2;
  for (Box b : sample_boxes(s, map)) {
    b.z0 = m.z, b.iz += m.z, b.n.nz = 1;
    m.boxes.push_back(b);
  }
  for (std::size_t t = 0; t < s.tiles.size(); ++t)
    if (s.tiles[t].z0 <= m.z && m.z < s.tiles[t].z0 + s.tiles[t].size.nz) m.tiles.push_back(t);
  return m;
}

// Each of those tiles' texture in `v` (the sample or a probe over it), read in the slice's flat
// part: log(pseudo-residual sigma / second-difference sigma), NaN where unread.
std::vector<double> tile_textures(const Volume& v, const Sample& s, const MiddleSlice& m, const std::vector<float>& padding) {
  std::vector<double> out(m.tiles.size(), std::numeric_limits<double>::quiet_NaN());
  cpu::for_each_piece(i64(m.tiles.size()), 1, 0, [&](i64 index, i64, i64) {
    const Sample::Tile& t = s.tiles[m.tiles[std::size_t(index)]];
    const FlatReading r = read_flat_part(masked_part(v, s, t.x0, t.y0, m.z, Dims{t.size.nx, t.size.ny, 1}), padding);
    if (r.residual_sigma > 0 && r.second_difference_sigma > 0) out[std::size_t(index)] = std::log(r.residual_sigma / r.second_difference_sigma);
  });
  return out;
}

}  // namespace

std::string choose_beam(ScanMap& map, const Sample& s, const NoiseModel& noise, std::uint64_t seed) {
  const std::vector<float> padding = padding_of(noise);
  const MiddleSlice middle = middle_slice(s, map);
  const std::vector<double> image = tile_textures(s.image, s, middle, padding);
  const bool fan = std::isfinite(map.source);
  std::vector<double> sources = fan ? map.fan_sources : std::vector<double>{map.source};
  const Coarse coarse = coarse_of(map.nx, map.ny);
  ScanMap trial = map;
  trial.source = *std::min_element(sources.begin(), sources.end());  // the widest detector
  const i64 pool_length = detector_bins(trial) + kPoolSlack;
  const std::vector<std::vector<float>> pools = window_pools(pool_length, [&](std::size_t w) { return seed + 7 + w; });
  // Each tile's squared difference of textures, probe less image (at most 0.5^2: a tile whose
  // flat part still holds anatomy should not decide; NaN unread); a pair's score is their mean.
  std::map<std::pair<double, std::size_t>, std::vector<double>> tile_scores;
  // Every window's probe at a source in one pass (each as alone), when the first is asked for.
  auto tiles_of = [&](double source, std::size_t w) -> const std::vector<double>& {
    const auto key = std::make_pair(source, w);
    if (const auto found = tile_scores.find(key); found != tile_scores.end()) return found->second;
    trial.source = source;
    trial.orbit = orbit_at_source(map.orbit, map, map.source, source);
    std::vector<Volume> probes;
    std::vector<Channel> channels;
    for (std::size_t k = 0; k < kFbpWindows.size(); ++k) probes.emplace_back(s.image.dims());
    for (std::size_t k = 0; k < kFbpWindows.size(); ++k) channels.push_back({&pools[k], trial.attenuation, &probes[k]});
    back_project(trial, coarse, channels, pool_length, {1.0}, kFitViews, seed + 6, middle.boxes);
    for (std::size_t k = 0; k < kFbpWindows.size(); ++k) {
      const std::vector<double> textures = tile_textures(probes[k], s, middle, padding);
      std::vector<double>& each = tile_scores[std::make_pair(source, k)];
      each.assign(textures.size(), std::numeric_limits<double>::quiet_NaN());
      for (std::size_t t = 0; t < textures.size(); ++t)
        if (std::isfinite(textures[t]) && std::isfinite(image[t])) each[t] = std::min(0.25, std::pow(textures[t] - image[t], 2));
    }
    return tile_scores.at(key);
  };
  auto score = [&](double source, std::size_t w) {
    double sum = 0, n = 0;
    for (double d : tiles_of(source, w))
      if (std::isfinite(d)) sum += d, n += 1;
    return n > 0 ? sum / n : std::numeric_limits<double>::infinity();
  };
  // Each window with the source walked from the fitted one while its score falls (a sharper
  // window and a farther source read alike in the median, so the two are chosen together: one
  // after the other stopped at Shepp-Logan's window and the fitted source on a ramp scan). A step
  // is taken only where the tiles come nearer by kLeastSourceStep standard errors of their paired
  // differences: a volume's middle slice holds 13-16 tiles, and chance walked a wide cone's
  // source from the fitted 198 px to 158 px (true 231.5; NLM 2.3 dB under-smoothed), a step of
  // 0.15 standard errors, where the right steps of fan-beam slices are 3.5-4.
  auto nearer = [&](double to, double from, std::size_t w) {
    return paired_gain_in_standard_errors(tiles_of(from, w), tiles_of(to, w)) >= kLeastSourceStep;
  };
  std::sort(sources.begin(), sources.end());
  const std::size_t fitted = std::size_t(std::find(sources.begin(), sources.end(), map.source) - sources.begin());
  if (fitted == sources.size()) throw std::logic_error("choose_beam: the fitted source is not among the map's fan sources");
  std::size_t window = 0;
  double source = map.source;
  for (std::size_t w = 0; w < kFbpWindows.size(); ++w) {
    std::size_t at = fitted;
    while (at > 0 && nearer(sources[at - 1], sources[at], w)) --at;
    while (at + 1 < sources.size() && nearer(sources[at + 1], sources[at], w)) ++at;
    if (score(sources[at], w) < score(source, window)) window = w, source = sources[at];
  }
  map.orbit = orbit_at_source(map.orbit, map, map.source, source);
  map.source = source;
  return std::string(kFbpWindows[window]);
}

namespace {

// The distance of the image's model from a whole slice of each window's noise, made with the map:
// the squared differences of their correlations at kWindowLags (the windows' slices made in one
// pass, each as alone).
std::vector<double> window_distances(const ScanMap& map, const NoiseModel& noise, const std::vector<LagArea>& image_places,
                                     std::uint64_t seed) {
  const i64 pool_length = detector_bins(map) + kPoolSlack;
  const std::size_t middle = map.slices.size() / 2;
  const Box whole{0, 0, 0, Dims{map.nx, map.ny, 1}, 0, 0, map.slices[middle], middle};
  const std::vector<std::vector<float>> pools = window_pools(pool_length, [&](std::size_t) { return seed + 1; });
  std::vector<Volume> slices;
  for (std::size_t w = 0; w < kFbpWindows.size(); ++w) slices.emplace_back(whole.n);
  std::vector<Channel> channels;
  for (std::size_t w = 0; w < kFbpWindows.size(); ++w) channels.push_back({&pools[w], map.attenuation, &slices[w]});
  back_project(map, coarse_of(map.nx, map.ny), channels, pool_length, {1.0}, kWindowViews, seed + 2, {whole});
  // Each slice's model read in the image's flattest blocks (every slice's brought to this one),
  // where given; else in the slice's own.
  std::vector<LagArea> places = image_places;
  for (LagArea& p : places) p.z = 0;
  // The five slices' models side by side: each has stretches on one thread (16 host cores idle).
  std::vector<double> distances(slices.size());
  cpu::for_each_piece(i64(slices.size()), 1, 0, [&](i64 w, i64, i64) {
    const NoiseModel model = estimate_noise_model(*host_reads(slices[std::size_t(w)].view()), places.empty() ? nullptr : &places);
    double distance = 0;
    for (const auto& [dx, dy] : kWindowLags) distance += std::pow(model.correlation(dx, dy, 0) - noise.correlation(dx, dy, 0), 2);
    distances[std::size_t(w)] = distance;
  });
  return distances;
}

}  // namespace

ScanProbe scan_probe(const Sample& s, const NoiseModel& noise, const ScanMap& map, std::string_view window,
                     const std::vector<LagArea>& image_places, std::uint64_t seed) {
  const Coarse coarse = coarse_of(map.nx, map.ny);
  const i64 pool_length = detector_bins(map) + kPoolSlack;
  ScanProbe probe;
  probe.window = window;
  // Whether the image's texture is an FBP filter's at all: the nearest window's distance (the
  // chosen window's own was over 0.05 on the Catphan's own noise, which the nearest reads at
  // 0.01 and whose scan-like probe it then lost).
  const std::vector<double> distances = window_distances(map, noise, image_places, seed);
  probe.texture_distance = *std::min_element(distances.begin(), distances.end());
  const Dims sd = s.image.dims();
  const int views = int(std::clamp<i64>(kProbeVoxelViews / sd.count(), 90, 360));
  probe.noise = Volume(sd);
  const std::vector<Box> boxes = sample_boxes(s, map);
  back_project(map, coarse, filtered_rows(probe.window, kPoolRows, pool_length, seed + 3), pool_length, z_taps(noise), views,
               seed + 4, boxes, probe.noise);
  // Each block at its slice's level.
  for (const Box& b : boxes) {
    const float gain = float(map.slice_gains[b.slice]);
    if (gain == 1.0f) continue;
    for (i64 z = 0; z < b.n.nz; ++z)
      for (i64 y = 0; y < b.n.ny; ++y)
        for (i64 x = 0; x < b.n.nx; ++x) probe.noise.view()(b.x0 + x, b.y0 + y, b.z0 + z) *= gain;
  }
  for (i64 i = 0; i < sd.count(); ++i)
    if (!s.mask[std::size_t(i)]) probe.noise.data()[i] = 0;
  return probe;
}

}  // namespace ctd::detail
