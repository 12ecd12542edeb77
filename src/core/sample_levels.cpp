// The noise level over the automatic parameters' sample: each tile's level and texture, read in
// its flat part (src/core/auto_sample.hpp, measure_level; docs/parameters.md, "The level").

#include "core/auto_sample.hpp"
#include "core/intensity_levels.hpp"

#include "core/robust_stats.hpp"
#include "cpu/thread_pool.hpp"

#include <ctdenoise/auto_params.hpp>
#include <ctdenoise/error.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <optional>

namespace ctd::detail {
namespace {

using i64 = std::int64_t;

// A tile's level: at most this x the model's sigma. The model reads the flattest blocks, often
// the quiet air, and a body's noise can be ten times that: scikit-image's SART (an unfiltered
// back-projection, its noise coarse and spread along the rays) of an abdomen read 10.4 x, and
// at 6 x NLM was under-smoothed by up to 4.6 dB (bench/iterative_recon_check.py). No case of
// the validation sets reads over 6 x.
constexpr double kMaxTileLevel = 16;
constexpr double kLeastLevelSpread = 1.5;  // tile levels smoothed over neighbours are used where they vary this much
// Where the flat parts' smoothed levels span kLeastFlatLevelSpread to kLeastLevelSpread, each tile's
// level moves kFlatLevelShare of the way (in log) from their median to its flat part's (measure_level).
// Before the gain's upper limit (kMostFlatLevelsGain), all the way put the matrix's 2D crops at 180
// of 225 within the goal and its worst case at 2.11 dB (90-view crops, whose references keep their
// streaks); three quarters at 182 and 1.99 dB.
constexpr double kLeastFlatLevelSpread = 1.15;
constexpr double kFlatLevelShare = 0.75;
constexpr double kLeastFlatLevelsGain = 0.1;
// ... and at most this: smooth noise (Hann's window: 0.13-0.18). Ramp FBP noise reads 0.4-0.76,
// white 0.8-1; there one level was within the goal but on 3 of the matrix's crops (h 0.9 x the
// best), and the lean raised h on 90-view crops already over-smoothed against references that
// keep their streaks, 3 of them below the noisy input on SSIM (measure_level).
constexpr double kMostFlatLevelsGain = 0.3;
// A flat part under a quarter of its tile (a thin ring of air between a body and the padding, in
// a 3D tile whose end slices give no residuals) is read from this many residuals, for the levels
// that follow the values alone (Sample::Tile::thin_flat_residual_sigma).
constexpr std::int64_t kLeastThinFlatResiduals = 256;
// The least share of the model's noise variance that a tile's pseudo-residuals must see for their
// sigma to be its level (below: the model's level for all, measure_level; and, in-plane, blocks
// with margins, too_smooth_for_plain_blocks). White noise blurred by 1.2 voxels gives 0.04-0.06 with a scan's own
// finer noise on top, 1.3 voxels 0.05 (CT1's chest, whose tiles then read its own noise 4.5 x:
// NLM 2 x the best h), 2 voxels 0.006 (docs/parameters.md, "The level").
constexpr double kLeastTileReadingGain = 0.06;
// Where the image's rays explain the tiles' levels (measure_level's known_to_vary: the scan-like
// map fits them, and its probe was refused), the tiles are read from this gain, each at the
// model's texture. A fan-beam scan reconstructed with Hann's window at pixels half its detector's
// bins reads 0.054 (its noise 16 HU in the air, 21 in the body): one level, the air's, and NLM
// was under-smoothed by up to 1.06 dB (h 0.56 x the best). No image of the validation sets has its
// level known to vary at a gain under kLeastTileReadingGain.
constexpr double kLeastKnownTileReadingGain = 0.03;

// The one level where fewer than this share of the tiles' flat parts read (one_level).
constexpr double kLeastReadFlatShare = 0.05;

// The level for one level over the image: the median of the tiles' flat levels, unless fewer than
// kLeastReadFlatShare of the flat parts read. Then that median is the model's sigma, which leans
// to the quietest blocks (the air), while the whole tiles hold anatomy and read high, and the
// noise lies between: headsq (3.2 mm voxels, flat parts 19-65 % of a tile, under the quarter a
// reading asks) with 720-view Hann noise across slices read 25 for noise of 26-49 by slice, and
// NLM was under-smoothed by up to 1.13 dB (h 0.32-0.39 x the best). There each unread tile takes
// the geometric mean of the two bounds (in log, as far from either), a read tile its flat level,
// and the level is their rms: 0.66 dB at worst. Where more flat parts read, they say the level:
// the read ones alone over-smoothed Bonsai, whose leaves' voxel-scale texture they carry (held-out
// set 147 -> 133 of 180), and the bracket for any share unread, 126.
double one_level(const Sample& s, const std::vector<double>& levels, const std::vector<double>& flat_levels, double model_sigma) {
  std::vector<double> read;
  for (std::size_t t = 0; t < levels.size(); ++t)
    if (s.tiles[t].flat_residual_sigma > 0) read.push_back(flat_levels[t]);
  if (double(read.size()) >= kLeastReadFlatShare * double(levels.size())) return detail::median(flat_levels);
  const double low = read.empty() ? model_sigma : detail::median(read);
  double sum2 = 0;
  for (std::size_t t = 0; t < levels.size(); ++t) {
    const double level = s.tiles[t].flat_residual_sigma > 0 ? flat_levels[t] : std::sqrt(low * std::max(levels[t], low));
    sum2 += level * level;
  }
  return std::sqrt(sum2 / double(levels.size()));
}

// A per-tile value smoothed over the image: each tile takes the median of its own value and its
// nearest neighbours' (kLevelNeighbours in all, by the distance between the tiles' centres in the
// image). A tile that anatomy inflates, alone among quieter ones, takes theirs; a region whose
// noise is stronger keeps its level.
constexpr std::size_t kLevelNeighbours = 9;
double median_at(const std::vector<std::size_t>& indices, const std::vector<double>& levels) {
  std::vector<double> near(indices.size());
  for (std::size_t j = 0; j < indices.size(); ++j) near[j] = levels[indices[j]];
  return detail::median(std::move(near));
}
std::vector<double> median_of_nearest(const std::vector<std::array<double, 3>>& at, const std::vector<double>& levels) {
  std::vector<double> out(levels.size());
  for (std::size_t i = 0; i < levels.size(); ++i) out[i] = median_at(nearest_tiles(at[i], at), levels);
  return out;
}

// Where the image is clipped (NoiseModel::clipped_value), the noise of the voxels near the clip is
// censored: the clipped ones read the same value, and their neighbours' noise is cut too. A tile
// with more than kMostClippedShare of its voxels clipped reads a level too low (by 4 % at 5 %
// clipped, 9 % at 10 % for Gaussian noise) and a texture too flat; its level is taken from its
// nearest uncensored tiles instead (fill_censored). Whole slices clipped at -1024 HU lost up to
// 0.87 dB (NLM under-smoothed) when those tiles' levels were read as any other's.
constexpr double kMostClippedShare = 0.02;
void fill_censored(const std::vector<std::array<double, 3>>& at, const std::vector<unsigned char>& censored,
                   std::vector<double>& levels, std::vector<double>& flat_levels) {
  std::vector<std::array<double, 3>> kept_at;
  std::vector<double> kept_levels, kept_flat;
  for (std::size_t t = 0; t < censored.size(); ++t)
    if (!censored[t]) kept_at.push_back(at[t]), kept_levels.push_back(levels[t]), kept_flat.push_back(flat_levels[t]);
  if (kept_at.empty() || kept_at.size() == censored.size()) return;
  for (std::size_t t = 0; t < censored.size(); ++t) {
    if (!censored[t]) continue;
    const std::vector<std::size_t> near = nearest_tiles(at[t], kept_at);
    levels[t] = median_at(near, kept_levels);
    flat_levels[t] = median_at(near, kept_flat);
  }
}

}  // namespace

std::vector<std::size_t> nearest_tiles(const std::array<double, 3>& where, const std::vector<std::array<double, 3>>& at) {
  const std::size_t n = at.size();
  std::vector<std::pair<double, std::size_t>> by_distance(n);
  for (std::size_t j = 0; j < n; ++j) {
    const double dx = at[j][0] - where[0], dy = at[j][1] - where[1], dz = at[j][2] - where[2];
    by_distance[j] = {dx * dx + dy * dy + dz * dz, j};
  }
  const std::size_t k = std::min(n, kLevelNeighbours);
  std::partial_sort(by_distance.begin(), by_distance.begin() + std::ptrdiff_t(k), by_distance.end());
  std::vector<std::size_t> out(k);
  for (std::size_t j = 0; j < k; ++j) out[j] = by_distance[j].second;
  return out;
}

double pseudo_residual_gain(const NoiseModel& m, bool across_slices) {
  struct Face {
    int dx, dy, dz;
  };
  std::vector<Face> faces = {{1, 0, 0}, {-1, 0, 0}, {0, 1, 0}, {0, -1, 0}};
  if (across_slices && m.radius_z > 0) faces.insert(faces.end(), {{0, 0, 1}, {0, 0, -1}});
  const double n = double(faces.size());
  double v = 1;
  for (const Face& a : faces) {
    v -= 2 / n * m.correlation(a.dx, a.dy, a.dz);
    for (const Face& b : faces) v += m.correlation(a.dx - b.dx, a.dy - b.dy, a.dz - b.dz) / (n * n);
  }
  return v * n / (n + 1);
}

namespace {

// The in-plane lags whose semivariances a tile reads (one of each pair +-d): first those of one
// voxel (x, y and the two diagonals: what texture_change compares), then the others within two
// voxels and three along x and y, where smooth FBP noise is still correlated.
constexpr std::size_t kLagsOfOne = 4;
constexpr std::array<std::array<int, 2>, 14> kTileLags = {
    {{1, 0}, {0, 1}, {1, 1}, {1, -1}, {2, 0}, {0, 2}, {2, 1}, {1, 2}, {2, -1}, {1, -2}, {2, 2}, {2, -2}, {3, 0}, {0, 3}}};
using Semivariances = std::array<double, kTileLags.size()>;

// The image's model's semivariances at kTileLags per unit variance: 1 - its correlation there.
Semivariances unit_semivariances(const NoiseModel& noise) {
  Semivariances out{};
  for (std::size_t k = 0; k < kTileLags.size(); ++k) out[k] = 1 - noise.correlation(kTileLags[k][0], kTileLags[k][1], 0);
  return out;
}

struct TileBox {
  i64 x0, y0, z0;
  Dims size;
};

// A tile's semivariances at kTileLags: half the robust variance of the differences u(p + d) - u(p)
// within each slice, padding left out (robust: an edge's few large differences do not count).
// None where fewer than a quarter of the tile's voxels give a difference.
std::optional<Semivariances> tile_semivariances(ConstVolumeView<float> image, const TileBox& t, const std::vector<float>& padding) {
  auto usable = [&](float v) { return std::isfinite(v) && (padding.empty() || v != padding[0]); };
  Semivariances out{};
  for (std::size_t k = 0; k < kTileLags.size(); ++k) {
    const int dx = kTileLags[k][0], dy = kTileLags[k][1];
    std::vector<double> differences;
    differences.reserve(std::size_t(t.size.count()));
    for (i64 z = t.z0; z < t.z0 + t.size.nz; ++z)
      for (i64 y = t.y0 + std::max(0, -dy); y < t.y0 + t.size.ny - std::max(0, dy); ++y)
        for (i64 x = t.x0; x < t.x0 + t.size.nx - dx; ++x) {
          const float a = image(x, y, z), b = image(x + dx, y + dy, z);
          if (usable(a) && usable(b)) differences.push_back(double(b) - a);
        }
    if (differences.size() * 4 < std::size_t(t.size.count())) return std::nullopt;
    const double sigma = detail::robust_sigma(std::move(differences));
    out[k] = sigma * sigma / 2;
  }
  return out;
}

// A tile's own model at `level`. Its variance relative to its semivariances is pinned by the mean
// correlation at one voxel, taken from the image's model (it does not change where the texture
// only turns or stretches): at kTileLags the correlations 1 - semivariance / that variance, so
// that their spread over the directions and lags is the tile's own; across slices the image's
// model's correlation times the in-plane one; 0 at the other lags. (With the lags of one voxel alone, smooth Hann FBP
// noise, correlated 0.5-0.8 two and three voxels along the body's streaks, was under-smoothed by up
// to 1 dB on a whole slice and 2 dB on a whole volume.)
NoiseModel tile_model(const NoiseModel& image, const Semivariances& semivariance, double level) {
  const Semivariances unit = unit_semivariances(image);
  double unit_one = 0, measured_one = 0;
  for (std::size_t k = 0; k < kLagsOfOne; ++k) unit_one += unit[k] / kLagsOfOne, measured_one += semivariance[k] / kLagsOfOne;
  NoiseModel m = image;
  m.radius_xy = std::max(m.radius_xy, 1);
  const int r = m.radius_xy, rz = m.radius_z, w = 2 * r + 1;
  m.covariance.assign(std::size_t(w * w * (2 * rz + 1)), 0.0);
  const double c0 = level * level;
  auto set = [&](int dx, int dy, int dz, double v) {
    m.covariance[std::size_t(((dz + rz) * w + dy + r) * w + dx + r)] = v;
  };
  set(0, 0, 0, c0);
  for (std::size_t k = 0; k < kTileLags.size(); ++k) {
    const int dx = kTileLags[k][0], dy = kTileLags[k][1];
    if (std::max(std::abs(dx), std::abs(dy)) > r) continue;
    const double rho = measured_one > 0 ? std::clamp(1 - unit_one * semivariance[k] / measured_one, -0.9, 0.95) : 1 - unit[k];
    set(dx, dy, 0, rho * c0);
    set(-dx, -dy, 0, rho * c0);
  }
  // Across slices: the image's model's correlation, times the tile's own in-plane correlation
  // where the lag also moves in-plane (noise reconstructed slice by slice and then filtered or
  // overlapped along z is separable so).
  for (int dz = 1; dz <= rz; ++dz) {
    const double along_z = image.correlation(0, 0, dz);
    for (int dy = -r; dy <= r; ++dy)
      for (int dx = -r; dx <= r; ++dx) {
        const double in_plane = m.covariance_at(dx, dy, 0) / c0;
        set(dx, dy, dz, along_z * in_plane * c0);
        set(-dx, -dy, -dz, along_z * in_plane * c0);
      }
  }
  m.sigma = level;
  return m;
}

// Where the level varies over the image, the texture may too: in a whole slice with FBP noise the
// streaks of the body's long rays lie along them, so the noise in the middle of the body is
// correlated along one axis (0.7-0.85 with the next voxel) and in the air around it along the
// other. One texture for all (the model's, from its flattest, often quietest, blocks) put the
// risk's minimum at 0.4 x the best h there. Each tile's semivariances at one voxel
// (tile_semivariances, smoothed over its neighbours like the levels) tell how its texture
// differs from the model's: their spread over the four directions against the model's. Where
// the median tile differs by kLeastTextureChange or more, each tile gets a model of its own
// (tile_model), and its pseudo-residual sigma is converted to a level with that texture. Elsewhere
// the image's model at each tile's level. Measured with tile models forced wherever the level
// varies (whole tiles): crops whose levels vary only with anatomy (lung, bone) read 0.12-0.31 in
// the median and lost up to 2.7 dB; the whole Siemens slice with FBP noise read 0.62-0.78 and
// gained up to 3.1 dB, the whole Catphan slice 0.36-0.42 and up to 1.1 dB. Read in whole tiles,
// the CThead slice's skull bent its texture to 0.33-0.43 and the limit had to be 0.45, above the
// Catphan's; read in the flat parts, 0.33 gains the Catphan slice (whole slices 265 -> 278 of 300
// within the goal, with the flat parts' say on whether the level varies).
constexpr double kLeastTextureChange = 0.33;

double texture_change(const Semivariances& model, const Semivariances& semivariance) {
  double mean = 0, model_mean = 0;
  for (std::size_t k = 0; k < kLagsOfOne; ++k) mean += semivariance[k] / kLagsOfOne, model_mean += model[k] / kLagsOfOne;
  if (!(mean > 0) || !(model_mean > 0)) return 0;
  double change = 0;
  for (std::size_t k = 0; k < kLagsOfOne; ++k) change = std::max(change, std::fabs(semivariance[k] / mean - model[k] / model_mean));
  return change;
}

// Sets s.tile_models and s.tile_of (and the tiles' levels in `chosen`) where the texture changes
// over the image; else leaves them empty. The semivariances are read in the tiles' flat parts: a
// skull's edge bends a whole tile's (the whole CThead slice with FBP noise read a texture change
// of 0.33-0.43 in whole tiles, 0.19-0.39 in their flat parts; the Catphan, without such edges,
// 0.36-0.42 in both).
void use_tile_textures(Sample& s, const NoiseModel& noise, const std::vector<Volume>& flat_tiles,
                       const std::vector<double>& levels, const std::vector<std::array<double, 3>>& centres,
                       const std::vector<float>& padding, std::vector<double>& chosen) {
  const Semivariances unit = unit_semivariances(noise);
  std::vector<std::optional<Semivariances>> measured(flat_tiles.size());
  cpu::for_each_piece(i64(flat_tiles.size()), 1, 0, [&](i64 t, i64, i64) {
    const Volume& flat = flat_tiles[std::size_t(t)];
    measured[std::size_t(t)] = tile_semivariances(flat.view(), TileBox{0, 0, 0, flat.dims()}, padding);
  });
  std::array<std::vector<double>, kTileLags.size()> by_lag;
  for (std::size_t t = 0; t < flat_tiles.size(); ++t) {
    // A tile without semivariances: what the image's model predicts at the tile's level.
    for (std::size_t k = 0; k < kTileLags.size(); ++k) {
      by_lag[k].push_back(measured[t] ? (*measured[t])[k] : levels[t] * levels[t] * unit[k]);
    }
  }
  for (auto& v : by_lag) v = median_of_nearest(centres, v);
  std::vector<Semivariances> smoothed(flat_tiles.size());
  std::vector<double> changes(flat_tiles.size());
  for (std::size_t t = 0; t < flat_tiles.size(); ++t) {
    for (std::size_t k = 0; k < kTileLags.size(); ++k) smoothed[t][k] = by_lag[k][t];
    changes[t] = texture_change(unit, smoothed[t]);
  }
  if (detail::median(std::move(changes)) < kLeastTextureChange) return;
  const double gain = pseudo_residual_gain(noise);
  for (std::size_t t = 0; t < flat_tiles.size(); ++t) {
    const double own_gain = pseudo_residual_gain(tile_model(noise, smoothed[t], 1.0));
    const double level = own_gain > 0 ? chosen[t] * std::sqrt(gain / own_gain) : chosen[t];
    s.tile_models.push_back(tile_model(noise, smoothed[t], std::clamp(level, noise.sigma, kMaxTileLevel * noise.sigma)));
    chosen[t] = s.tile_models.back().sigma;
  }
  // Voxels of no tile (a strip under 3 voxels wide): the image's model at the lags a tile reads.
  s.tile_models.push_back(tile_model(noise, unit, noise.sigma));
  s.tile_of.assign(s.level_at.size(), std::uint32_t(flat_tiles.size()));
}

}  // namespace

bool too_smooth_for_plain_blocks(const NoiseModel& noise) { return pseudo_residual_gain(noise, false) < kLeastTileReadingGain; }

Volume masked_part(const Volume& v, const Sample& s, i64 x0, i64 y0, i64 z0, const Dims& size) {
  Volume part(size);
  for (i64 z = 0; z < size.nz; ++z)
    for (i64 y = 0; y < size.ny; ++y)
      for (i64 x = 0; x < size.nx; ++x) {
        const i64 i = v.view().index(x0 + x, y0 + y, z0 + z);
        part.view()(x, y, z) = s.mask[std::size_t(i)] ? v.data()[i] : std::numeric_limits<float>::quiet_NaN();
      }
  return part;
}

// The noise level varies over a reconstruction: highest in the middle of the body, lowest in the
// air around it (on a whole abdominal slice with FBP noise, 17-25 HU in the air and 40-96 in the
// body), while the model holds the level of its flattest, often quietest, blocks. Each tile of
// the sample (about 32 x 32 in-plane, up to 4 slices) reads its robust pseudo-residual sigma,
// converted by the model's correlation and kept between the model's sigma and kMaxTileLevel x it.
// - Where the noise varies over the image, the risk is estimated for that variation: each tile
//   gets its level smoothed over its neighbours (median_of_nearest), used when the tiles' flat
//   parts (keep_flat_part), smoothed alike, span a factor kLeastLevelSpread or more. Whole
//   slices with FBP noise were under-smoothed by 3-5 dB with one level for all. A skull or a
//   lung's vessels made whole tiles' levels vary under noise that does not (white noise blurred by
//   1.2 voxels on the CThead slice: a spread of 2.2-3.2 in whole tiles, 1.22-1.26 in flat parts),
//   and the tile levels over-smoothed by up to 1.1 dB. Where the image's rays explain the
//   tiles' levels (`known_to_vary`: the scan-like map fits, and its probe was refused as no FBP
//   filter's texture) the level varies whatever the flat parts show: on scans shrunk to 128 x 128
//   (3.9 mm) their 32-voxel tiles' flat parts lean to the quiet air around the body (levels
//   9-95 HU over the slice), and one level under-smoothed by up to 3.8 dB
//   (bench/coarse_scan_check.py).
// - Otherwise one level for all, the median of the tiles' flat parts (keep_flat_part): anatomy
//   inflates a busy tile's pseudo-residuals, and per-tile levels over-smoothed crops full of
//   texture (measured: 74 -> 121 of the 405 matrix cases missed the goal, five below the noisy
//   input). The whole tiles' median over-smoothed crops with blurred or sharpened white noise
//   (robustness textures: 349 -> 360 of 450 within the goal with the flat parts).
void measure_level(Sample& s, const NoiseModel& noise, bool known_to_vary) {
  const i64 tile_xy = s.tile_xy;
  const Dims d = s.image.dims();
  s.level = float(noise.sigma);
  s.level_at.assign(std::size_t(d.count()), float(noise.sigma));
  const double gain = pseudo_residual_gain(noise);
  if (!(gain > 0)) return;
  const std::vector<float> padding = padding_of(noise);
  const i64 tz = d.is_2d() ? 1 : std::min<i64>(4, d.nz);
  // Tiles cover the sample (even_cuts): a thin remainder left out kept the model's level and
  // texture (the quiet parts') there, e.g. the last two of a 3D sample's ten slices at search
  // radius 3 and patch radius 1, and the risk under-read the noise.
  const std::vector<i64> xs = even_cuts(d.nx, tile_xy), ys = even_cuts(d.ny, tile_xy), zs = even_cuts(d.nz, tz);
  std::vector<TileBox> tiles;
  for (std::size_t k = 0; k + 1 < zs.size(); ++k)
    for (std::size_t j = 0; j + 1 < ys.size(); ++j)
      for (std::size_t i = 0; i + 1 < xs.size(); ++i) {
        const Dims size{xs[i + 1] - xs[i], ys[j + 1] - ys[j], zs[k + 1] - zs[k]};
        if (size.nx < 3 || size.ny < 3 || (!d.is_2d() && size.nz < 3)) continue;
        tiles.push_back({xs[i], ys[j], zs[k], size});
      }
  std::vector<double> levels(tiles.size(), noise.sigma), flat_levels(tiles.size(), noise.sigma);
  std::vector<unsigned char> censored(tiles.size(), 0);  // per tile (not vector<bool>: written by several threads)
  std::vector<Volume> flat_tiles(tiles.size());
  std::vector<std::array<double, 3>> centres(tiles.size());
  auto residual_sigma = [&](ConstVolumeView<float> tile) { return tile_residual_sigma(tile, padding); };
  // Its level: that sigma converted by the model's correlation, kept between the model's sigma
  // and kMaxTileLevel x it (the model's sigma where it has none).
  auto level_of = [&](double sigma) { return std::clamp(sigma / std::sqrt(gain), noise.sigma, kMaxTileLevel * noise.sigma); };
  s.tiles.resize(tiles.size());
  // Each tile on one core (a 3D sample holds a few hundred): its level, then its flat part and that
  // part's level.
  cpu::for_each_piece(i64(tiles.size()), 1, 0, [&](i64 t, i64, i64) {
    const TileBox& k = tiles[std::size_t(t)];
    Volume& tile = flat_tiles[std::size_t(t)];
    tile = Volume(k.size);
    for (i64 z = 0; z < k.size.nz; ++z)
      for (i64 y = 0; y < k.size.ny; ++y)
        for (i64 x = 0; x < k.size.nx; ++x) tile.view()(x, y, z) = s.image.view()(k.x0 + x, k.y0 + y, k.z0 + z);
    levels[std::size_t(t)] = level_of(residual_sigma(tile.view()));
    i64 usable = 0, clipped = 0;
    for (i64 i = 0; i < tile.size(); ++i) {
      usable += std::isfinite(tile.data()[i]) ? 1 : 0;
      clipped += double(tile.data()[i]) == noise.clipped_value ? 1 : 0;
    }
    censored[std::size_t(t)] = clipped > kMostClippedShare * double(usable);
    keep_flat_part(tile, padding);
    const auto flat_estimate = residual_estimate(tile.view(), padding);
    const double flat_sigma = reads_a_tile(flat_estimate, tile.size()) ? flat_estimate->sigma : 0.0;
    const double thin_sigma = flat_estimate && flat_estimate->samples >= kLeastThinFlatResiduals ? flat_estimate->sigma : flat_sigma;
    flat_levels[std::size_t(t)] = level_of(flat_sigma);
    std::array<double, 3> c = s.origin_of(k.x0, k.y0, k.z0);
    c[0] += double(k.size.nx) / 2, c[1] += double(k.size.ny) / 2, c[2] += double(k.size.nz) / 2;
    centres[std::size_t(t)] = c;
    std::vector<double> values;
    for (i64 i = 0; i < tile.size(); ++i)
      if (std::isfinite(tile.data()[i])) values.push_back(tile.data()[i]);
    const double flat_median = values.empty() ? std::numeric_limits<double>::quiet_NaN() : detail::median(std::move(values));
    s.tiles[std::size_t(t)] = {k.x0, k.y0, k.z0, k.size, c, flat_sigma, thin_sigma, flat_median, flat_level_scatter(tile, padding),
                               thin_sigma > 0 ? flat_estimate->samples : 0};
  });
  if (levels.empty()) return;
  fill_censored(centres, censored, levels, flat_levels);
  for (std::size_t t = 0; t < tiles.size(); ++t)
    if (censored[t]) s.tiles[t].flat_residual_sigma = s.tiles[t].thin_flat_residual_sigma = 0;  // not read by the scan-like map and probe
  // The whole tiles' smoothed levels where the flat parts' smoothed levels vary by kLeastLevelSpread
  // or more; else (a crop, or noise about as strong everywhere) the median of the flat parts, one
  // level for all. Only the flat parts, free of anatomy, say whether the level varies: until
  // 2026-11-27 the whole tiles had to vary that much too, and anatomy that raises the quiet tiles
  // (organs' edges near a body's surface) hid a variation the flat parts saw (a simulated scan of
  // a 3D abdomen: flat parts 1.54, whole tiles 1.47; one level under-smoothed it by 6.8 dB).
  auto spread = [](const std::vector<double>& v) {
    const auto [low, high] = std::minmax_element(v.begin(), v.end());
    return *high / *low;
  };
  // Noise so smooth that pseudo-residuals see little of it (white noise blurred by 1.2 voxels and
  // more: a gain of 0.04 at 1.2, 0.013 at 1.6, 0.006 at 2) leaves a tile's reading to whatever
  // finer content it holds, the scan's own noise or anatomy, magnified by 1 / sqrt(gain) (4-13 x):
  // a chest slice with such noise of 30 HU read tile levels of 31-150 and NLM was over-smoothed by
  // up to 2.5 dB (h 2-4.4 x the best). Its level is the model's, whose fit holds that finer part
  // apart.
  const bool weak_reading = gain < kLeastTileReadingGain;
  const bool readable = !weak_reading || (known_to_vary && gain >= kLeastKnownTileReadingGain);
  // Levels that follow the values are looked for wherever the flat parts' own levels vary, before
  // the smoothing over neighbours: a volume's sample of 12 blocks (24 tiles), half in a phantom's
  // air and half in its body, took each tile's nearest 9 for one level, the body's, and NLM was
  // 12 dB under-smoothed (h 0.27 x the best). Their levels as read, thin parts too, not kept at
  // or above the model's sigma: the model's flattest blocks may lie in the quiet values (a chest's
  // lungs) or in the noisy ones (a body beside a thin ring of air, 6.5 dB under-smoothed while
  // only levels above the model's could vary).
  std::vector<double> thin_levels;
  for (const Sample::Tile& t : s.tiles)
    if (t.thin_flat_residual_sigma > 0) thin_levels.push_back(t.thin_flat_residual_sigma);
  if (readable && !thin_levels.empty() && spread(thin_levels) >= kLeastLevelSpread) {
    if (const std::optional<IntensityLevels> fit = fit_intensity_levels(s.tiles, gain)) {
      use_intensity_levels(s, *fit, noise, gain);
      return;
    }
  }
  const std::vector<double> flat_smoothed = median_of_nearest(centres, flat_levels);
  const double flat_spread = spread(flat_smoothed);
  const bool varies = readable && (known_to_vary || flat_spread >= kLeastLevelSpread);
  std::vector<double> chosen(tiles.size(), readable ? one_level(s, levels, flat_levels, noise.sigma) : noise.sigma);
  s.noise_over_image = Sample::kOneLevel;
  if (varies) {
    chosen = median_of_nearest(centres, levels);
    // Not where the reading is weak: a level from a tile's texture goes as 1 / sqrt(its gain), and
    // on that fan-beam scan (the local gain 0.02 in the body's middle, 0.11 in the air's corners)
    // the textured levels read 1.17 x the noise's at the median tile and up to 1.9 x; NLM was
    // over-smoothed by up to 0.97 dB (h 2 x the best). With the model's texture: 0.79-0.98 x.
    if (!weak_reading) use_tile_textures(s, noise, flat_tiles, levels, centres, padding, chosen);
    s.noise_over_image = s.tile_models.empty() ? Sample::kTileLevels : Sample::kTileLevelsAndTextures;
  } else if (gain >= kLeastFlatLevelsGain && gain <= kMostFlatLevelsGain && flat_spread >= kLeastFlatLevelSpread) {
    // Where the flat parts span kLeastFlatLevelSpread but not kLeastLevelSpread, each tile's level
    // leans toward its flat part's smoothed level (kFlatLevelShare of the way, in log): crops of a
    // body with smooth FBP noise (Hann's window) whose level rises toward the body's middle (60 HU
    // on the Siemens crop: 1.39; on the Catphan's: 1.19) were under-smoothed by one level for all,
    // the quietest tiles' (h 0.75-0.92 x the best). White noise on those crops spans 1.03-1.06.
    // Not where the reading is weak (kLeastFlatLevelsGain): a lung's vessels vary a chest's flat
    // parts under noise blurred by 0.7-1.2 voxels (1.19-1.41, gain 0.065 at 1.2), and the levels
    // over-smoothed it. Nor for fine-grained noise (kMostFlatLevelsGain), where few views' streaks
    // vary the flat parts' levels with the anatomy that casts them (90 views: 1.2-1.4).
    for (std::size_t t = 0; t < tiles.size(); ++t) chosen[t] *= std::pow(flat_smoothed[t] / chosen[t], kFlatLevelShare);
    s.noise_over_image = Sample::kMildTileLevels;
  }
  double sum2 = 0;
  i64 counted = 0;
  for (std::size_t t = 0; t < tiles.size(); ++t) {
    const TileBox& k = tiles[t];
    for (i64 z = 0; z < k.size.nz; ++z)
      for (i64 y = 0; y < k.size.ny; ++y)
        for (i64 x = 0; x < k.size.nx; ++x) {
          const i64 i = ((k.z0 + z) * d.ny + k.y0 + y) * d.nx + k.x0 + x;
          s.level_at[std::size_t(i)] = float(chosen[t]);
          if (!s.tile_of.empty()) s.tile_of[std::size_t(i)] = std::uint32_t(t);
          if (s.counted[std::size_t(i)]) sum2 += chosen[t] * chosen[t], ++counted;
        }
  }
  if (counted > 0) s.level = float(std::sqrt(sum2 / double(counted)));
}

}  // namespace ctd::detail
