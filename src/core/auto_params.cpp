// Automatic h and sigma_range by Monte Carlo SURE with the image's noise covariance
// (include/ctdenoise/auto_params.hpp, docs/parameters.md).

#include "core/auto_sample.hpp"
#include "core/exec_internal.hpp"
#include "core/scan_probe.hpp"
#include "core/robust_stats.hpp"
#include "core/noise_synthesis.hpp"
#include "cpu/thread_pool.hpp"

#include <ctdenoise/auto_params.hpp>
#include <ctdenoise/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <functional>
#include <future>
#include <limits>
#include <map>
#include <optional>

namespace ctd {
namespace {

using i64 = std::int64_t;

using detail::Sample;
using detail::SampleLayout;

[[noreturn]] void invalid(const std::string& message) { throw Error(ErrorKind::InvalidArgument, message); }

// The share of the variance of the tiles' log noise levels that the image's own rays must explain
// for the probe to be made as a scanner makes noise (docs/parameters.md, "Scan-like noise").
constexpr double kLeastScanFit = 0.5;
constexpr double kLeastScanFitBeyondIntensity = 0.3;  // ... and of what each tile's own intensity leaves
constexpr double kMostScanTextureDistance = 0.05;  // the nearest FBP filter's texture, at most this far (FBP noise: 0.002-0.014)

// Scales the scan-like probe so that the tiles' flat parts read the image's noise level in it, in
// the median (read alike, so that the estimator's bias on correlated noise cancels, and in the
// flat parts, where fine anatomy adds least: the sigma of the whole sample, lungs' vessels
// included, over-smoothed a chest by 1.4 x), and sets the sample's level to the probe's root mean
// square. The level is read as second differences two voxels apart, which see the noise's
// variance nearly whatever its texture: read with the pseudo-residual sigma, a probe a little
// finer than the image's noise (a fan's source fitted too near, or Hamming's window for Hann's)
// took 0.8 x the variance and under-smoothed NLM by up to 2 dB (docs/parameters.md).
void scale_to_image(Volume& b, Sample& s, const NoiseModel& noise) {
  const std::vector<float> padding = detail::padding_of(noise);
  std::vector<double> ratios(s.tiles.size(), 0.0);
  cpu::for_each_piece(i64(s.tiles.size()), 1, 0, [&](i64 index, i64, i64) {
    const Sample::Tile& t = s.tiles[std::size_t(index)];
    if (!(t.flat_residual_sigma > 0)) return;
    const double image_sigma =
        detail::read_flat_part(detail::masked_part(s.image, s, t.x0, t.y0, t.z0, t.size), padding).second_difference_sigma;
    const double probe_sigma =
        detail::read_flat_part(detail::masked_part(b, s, t.x0, t.y0, t.z0, t.size), padding).second_difference_sigma;
    if (image_sigma > 0 && probe_sigma > 0) ratios[std::size_t(index)] = image_sigma / probe_sigma;
  });
  std::erase(ratios, 0.0);
  const double gain = ratios.empty() ? 0.0 : detail::median(std::move(ratios));
  const auto [sum2, count] = cpu::sum_in_pieces<2>(b.size(), [&](i64 i, std::array<double, 2>& t) {
    b.data()[i] = float(b.data()[i] * gain);
    if (s.counted[std::size_t(i)]) t[0] += double(b.data()[i]) * b.data()[i], t[1] += 1;
  });
  s.level = float(std::sqrt(sum2 / std::max(1.0, count)));
}

// The filter at each strength of `values` into outs[k]; its output is read in `needed` alone
// (empty: everywhere).
using Filter = std::function<void(ConstVolumeView<float> in, std::span<const VolumeView<float>> outs,
                                  std::span<const double> values, std::span<const cpu::OutputBox> needed)>;

// Minimises SURE over value = scale * 2^k: k = -1..1, extended while the least risk sits at an
// end, then refined by half and then quarter steps around the best and a parabola in log(value)
// through the best point and its neighbours. A model that claims more noise than the image holds
// is scaled down first (the consistency rule below).
AutoChoice choose(const detail::ImageReads& image, const NoiseModel& given, double scale, int reach_xy, int reach_z,
                  detail::Margins margins, const Filter& filter, const ExecContext& context, double strength,
                  const char* what) {
  const auto start = std::chrono::steady_clock::now();
  // Padding and a clip floor are the image's, whatever image the model was measured on: a model
  // from a water phantom or a noise-only image carries that image's (none), and the image's
  // padding would be read as noise-free voxels of the sample.
  NoiseModel noise = given;
  detail::set_spike_values(noise, image.spikes());
  if (!(std::isfinite(strength) && strength > 0)) invalid(fmt::format("strength must be a finite value > 0, got {}", strength));
  if (!(noise.sigma > 0) || !(scale > 0)) {
    invalid(fmt::format("{} auto: the image shows no noise (noise sigma {:.4g}); give a value", what, noise.sigma));
  }
  // The probe: noise of the model's correlation at the sample's level, shaped from white noise
  // drawn (on one core, 0.03-0.04 s for a 3D sample) while the sample is taken and its tiles'
  // levels measured: enough for the largest sample, of which the sample takes the first values.
  // Blocks side by side have seams, where the filter averages another block's anatomy and the
  // risk grows with the strength: noise too smooth for the tiles wants h of 3-4 sigma, and on
  // plain blocks a phantom with white noise blurred by 2 voxels took h 174 (whole image 216,
  // best 247). Such noise gets blocks with margins, as the scan-like probe does; other noise the
  // filter's own `margins`.
  const bool too_smooth = detail::too_smooth_for_plain_blocks(noise);
  const SampleLayout layout = detail::sample_layout(image.dims(), reach_xy, reach_z, too_smooth ? detail::Margins::Image : margins);
  const std::size_t normals = detail::white_noise_size(noise, layout.whole ? image.dims() : layout.dims(layout.wanted));
  std::future<std::vector<float>> drawn = std::async(std::launch::async, [&] { return detail::unit_normals(0x5EED, normals); });
  Sample sample = detail::make_sample(image, layout, noise, detail::BlockOrder::Content);
  // Float rounding of noise-free values (a smooth ramp) reads as noise some 1e-8 of them: none.
  float largest = 0;
  for (i64 i = 0; i < sample.image.size(); ++i)
    if (sample.mask[std::size_t(i)]) largest = std::max(largest, std::fabs(sample.image.data()[i]));
  if (noise.sigma <= 1e-6 * largest) {
    invalid(fmt::format("{} auto: the image shows no noise (noise sigma {:.4g} for values up to {:.4g}); give a value", what,
                        noise.sigma, largest));
  }
  detail::measure_level(sample, noise);
  // Noise made as a scanner makes it where the tiles' levels follow the image's own rays
  // (scan_probe.hpp), on a sample whose blocks have margins; else the model's noise at the tiles'
  // levels (and textures).
  // The map is told from at least kLeastMapBlocks blocks' tiles where the image has them: the
  // filter's sample of a mid-sized volume holds fewer (16 of a 256 x 256 x 20 volume at search
  // radius 3), too few tiles to tell a fan's source and fit (NLM took "one level" there and was
  // 4.9 dB under-smoothed, h 0.5 x the best; with 64 blocks within 0.01 dB). Reading tiles costs
  // no filter run.
  // Its blocks are kMapBlockSlices deep in 3D whatever the filter's reach, so that whether the
  // noise is taken for a scan's does not hang on the filter's settings: with the filter's own
  // depth (6-16 slices), CThead's 40 slices with ramp noise correlated across slices were taken
  // for a scan at search radius 3 (10 slices: within 0.05 dB of the best h) and not at the CLI's
  // default 5 (14 slices: 1.77 dB over-smoothed), as the tiles' levels beyond their intensity
  // fitted the rays 0.43 and 0.12 (docs/validation.md, "Settings the matrix leaves out").
  // Plain blocks where the filter's have rims: the map's tiles are whole blocks.
  SampleLayout map_layout = too_smooth ? layout : detail::sample_layout(image.dims(), reach_xy, reach_z, detail::Margins::None);
  if (!layout.whole) {
    if (!image.dims().is_2d()) map_layout.bz = std::min<i64>(detail::kMapBlockSlices, image.dims().nz);
    map_layout.wanted = std::max(layout.wanted, detail::kLeastMapBlocks);
  }
  std::optional<Sample> map_sample;
  if (map_layout != layout) {
    map_sample = detail::make_sample(image, map_layout, noise, detail::BlockOrder::Place);
    detail::measure_level(*map_sample, noise);
  }
  std::optional<detail::ScanMap> map = detail::scan_map(image, map_sample ? *map_sample : sample, noise);
  std::optional<detail::ScanProbe> probe;
  double texture_distance = std::numeric_limits<double>::quiet_NaN();
  if (map && map->fit >= kLeastScanFit && map->fit_beyond_intensity >= kLeastScanFitBeyondIntensity) {
    const SampleLayout with_margins = detail::sample_layout(image.dims(), reach_xy, reach_z, detail::Margins::Image);
    // The filter's sample becomes the probe's, spread in space as the map's, whether or not the
    // probe is kept: where the rays explain the levels, they vary with the place. Ordered by
    // content, the Siemens series with z-correlated ramp noise of 60 HU lost 4 of its 5 cases
    // (NLM 1.84 dB under-smoothed at search radius 3, patch radius 2); and where the probe was
    // refused, the sample held too few of a body's noisiest blocks (noise inserted under a soft
    // kernel into the Siemens series at 60 HU, 29 in the air and 64 in the body: the risk's noise
    // variance 1359 for the image's 1954, NLM h 0.65 x the best, 1.86 dB under; spread, 1911 and
    // 0.79 x).
    if (!with_margins.whole && with_margins != layout) {
      sample = detail::make_sample(image, with_margins, noise, detail::BlockOrder::Place);
      detail::measure_level(sample, noise);
    }
    // In a volume the filter's sample holds few tiles (14-15 of the 3 mm TotalSegmentator
    // volume's at search radius 3), too few to refit the attenuation: it went from the map's 8.5
    // to 4.7 or 9.3 with the patch radius, and h with it. The map's sample holds at least
    // kLeastMapBlocks blocks whatever the filter. And the image's model pools the flattest
    // blocks of many slices, where the probe's texture is then read too (scan_probe).
    const bool volume = !image.dims().is_2d();
    const Sample& refit_sample = volume && map_sample ? *map_sample : sample;
    detail::assign_slices(*map, refit_sample);
    detail::refine_attenuation(*map, refit_sample, noise, 0x5EED);
    detail::assign_slices(*map, sample);
    const std::string window = detail::choose_beam(*map, sample, noise, 0x5EED);
    probe = detail::scan_probe(sample, noise, *map, window,
                               volume ? detail::flat_places(image) : std::vector<detail::LagArea>{}, 0x5EED);
    texture_distance = probe->texture_distance;
    if (probe->texture_distance > kMostScanTextureDistance) {
      // Not an FBP filter's texture, but the rays explain the levels: they vary over the image.
      probe.reset();
      if (sample.nearly_one_level()) detail::measure_level(sample, noise, true);
    }
  }
  // The map's sample, spread in space over more blocks, may see the level vary where the rays do
  // not explain it well enough for the map, and the filter's, ordered by content, reads one level
  // in the quietest places: noise inserted into 20 CThead slices at each pixel's FBP level (quieter
  // in the air) read at the air's level, NLM h 0.55 x the best, 1.28 dB under; now 1.15 x.
  if (!probe && map_sample && sample.noise_over_image == Sample::kOneLevel && map_sample->tile_levels())
    detail::measure_level(sample, noise, true);
  const bool scan_like = probe.has_value();
  const Dims sd = sample.image.dims();
  Volume b;
  if (scan_like) {
    b = std::move(probe->noise);
    scale_to_image(b, sample, noise);
    using Kind = detail::ScanMap::Orbit::Kind;
    const Kind orbit = map->orbit.kind;
    sample.noise_over_image = fmt::format("scan-like ({} filter{}{})", probe->window, std::isfinite(map->source) ? ", fan beam" : "",
                                          orbit == Kind::OffsetDetector ? ", offset detector"
                                          : orbit == Kind::ShortScan    ? ", short scan"
                                                                        : "");
  } else {
    const NoiseModel& shape = sample.texture ? *sample.texture : noise;
    const detail::WhiteNoise white = detail::white_noise_for(shape, sd, 0x5EED, drawn.get());
    const std::vector<NoiseModel> image_model{shape};
    b = detail::synthesize_noise_by_region(sample.tile_models.empty() ? image_model : sample.tile_models, sample.tile_of,
                                           sd, white, &sample.mask);
  }
  // The risk reads the filter's output where it counts voxels: inside the blocks' margins.
  const std::vector<cpu::OutputBox> needed = detail::counted_boxes(sample);
  constexpr double kEps = 0.02;  // the probe's size, as a fraction of the noise: small, yet well above float rounding
  Volume perturbed(sd);
  const float* y = sample.image.data();
  const bool scaled = !scan_like && sample.tile_models.empty();
  const i64 counted = i64(cpu::sum_in_pieces<1>(sd.count(), [&](i64 i, std::array<double, 1>& n) {
    if (scaled) b.data()[i] *= float(sample.level_at[std::size_t(i)] / noise.sigma);
    perturbed.data()[i] = float(y[i] + kEps * b.data()[i]);
    n[0] += sample.counted[std::size_t(i)];
  })[0]);
  if (counted < 16) invalid(fmt::format("{} auto: too few usable voxels to estimate the filter strength", what));
  const double c0 = double(sample.level) * sample.level;
  const double sample_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  double filter_seconds = 0;

  AutoChoice choice;
  choice.noise = noise;
  choice.noise_over_image = sample.noise_over_image;
  choice.strength = strength;
  choice.sample = sd;
  choice.noisy_mse = c0;
  constexpr double nan = std::numeric_limits<double>::quiet_NaN();
  choice.scan_fit = map ? map->fit : nan;
  choice.scan_fit_beyond_intensity = map ? map->fit_beyond_intensity : nan;
  choice.scan_texture_distance = texture_distance;
  choice.scan_source = !map ? nan : std::isfinite(map->source) ? map->source : 0.0;
  // Per k (log2 of value / scale): the residual |f - y|^2 and the Monte Carlo tr(C J), per voxel.
  struct Terms {
    double residual, divergence;
  };
  std::map<double, Terms> terms;
  double alpha = 1;  // the share of the model's noise the image can hold (see below)
  auto risk = [&](const Terms& t) { return t.residual + alpha * (2 * t.divergence - c0); };
  auto best_k = [&] {
    return std::min_element(terms.begin(), terms.end(), [&](auto& a, auto& b2) { return risk(a.second) < risk(b2.second); })
        ->first;
  };
  constexpr int kPlannedEvaluations = 8;
  // The strengths scale * 2^k of `ks` not evaluated yet, in one pass where the filter can (the CPU
  // NLM shares the patch distances among them; each output is as it would be alone).
  auto evaluate = [&](std::vector<double> ks) {
    std::erase_if(ks, [&](double k) { return terms.count(k) > 0; });
    if (ks.empty()) return;
    if (context.progress) context.progress(std::min(1.0, double(terms.size()) / kPlannedEvaluations));
    std::vector<double> values;
    std::vector<Volume> f0, f1;
    std::vector<VolumeView<float>> f0_views, f1_views;
    for (const double k : ks) values.push_back(scale * std::exp2(k)), f0.emplace_back(sd), f1.emplace_back(sd);
    for (std::size_t j = 0; j < ks.size(); ++j) f0_views.push_back(f0[j].view()), f1_views.push_back(f1[j].view());
    const auto filter_start = std::chrono::steady_clock::now();
    filter(sample.image.view(), f0_views, values, needed);
    filter(perturbed.view(), f1_views, values, needed);
    filter_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - filter_start).count();
    for (std::size_t j = 0; j < ks.size(); ++j) {
      const float* g0 = f0[j].data();
      const float* g1 = f1[j].data();
      const auto [residual, divergence] = cpu::sum_in_pieces<2>(sd.count(), [&](i64 i, std::array<double, 2>& s) {
        if (!sample.counted[std::size_t(i)]) return;
        const double r = double(g0[i]) - y[i];
        s[0] += r * r;
        s[1] += double(b.data()[i]) * (double(g1[i]) - g0[i]);
      });
      terms[ks[j]] = {residual / double(counted), divergence / kEps / double(counted)};
    }
  };
  // Coarse steps of 2x, extended while the least risk sits at an end, then half steps around it.
  auto search = [&] {
    for (int step = 0; step < 7; ++step) {  // up to k = -8 or 8
      const double k = best_k();
      if (k == terms.begin()->first) evaluate({k - 1});
      else if (k == terms.rbegin()->first) evaluate({k + 1});
      else break;
    }
    const double k = best_k();
    evaluate({k - 0.5, k + 0.5});
  };
  // The risk curve is unimodal in k: three values bracket most optima, and the walk finds the
  // others (k = -2 and 2 up front cost 2-4 filter runs; of 705 recorded curves, one best point
  // moved without them, through the noise share below).
  evaluate({-1, 0, 1});
  search();
  // Consistency: a noise model that claims more noise than the image holds (anatomy read as
  // noise, e.g. in a resampled or already smooth scan) makes the estimated error at the best
  // value implausibly small, even negative. A filter removes at most 95 % of the noise's mean
  // square (13 dB), so the model's covariance is scaled by the largest alpha <= 1 that keeps every
  // estimate at or above 5 % of alpha c0, and the search repeated.
  constexpr double kLeastRiskShare = 0.05;
  for (int round = 0; round < 3; ++round) {
    double limit = 1;
    for (const auto& [k, t] : terms) {
      const double gain = kLeastRiskShare * c0 - (2 * t.divergence - c0);
      if (gain > 0) limit = std::min(limit, t.residual / gain);
    }
    if (limit >= alpha * 0.999) break;
    alpha = std::max(limit, 1e-3);
    search();
  }
  // Quarter steps around the best: the risk rises more steeply below its least than above it, and
  // a parabola through half steps put the least too high (the 96 x 96 x 12 Siemens crop with white
  // noise of 45 HU, NLM search 3 patch 2: 53.0 where the risk, read finely, is least near 46; 49.5
  // with quarter steps). One more pass of two values (docs/parameters.md, "Search").
  if (const double k = best_k(); k != terms.begin()->first && k != terms.rbegin()->first) evaluate({k - 0.25, k + 0.25});
  std::vector<std::pair<double, double>> risks;  // (k, risk) in increasing k
  for (const auto& [k, t] : terms) risks.emplace_back(k, risk(t));
  const auto best = std::min_element(risks.begin(), risks.end(), [](auto& a, auto& b2) { return a.second < b2.second; });
  double k_opt = best->first;
  if (best != risks.begin() && std::next(best) != risks.end()) {
    // A parabola in log(value) through the best point and its neighbours.
    const auto lo = std::prev(best), hi = std::next(best);
    k_opt = detail::parabola_least(lo->first, lo->second, best->first, best->second, hi->first, hi->second);
  }
  if (context.progress) context.progress(1.0);
  for (const auto& [k, r] : risks) choice.curve.push_back({scale * std::exp2(k), r});
  choice.noise_share = alpha;
  choice.noisy_mse = alpha * c0;
  choice.optimum = scale * std::exp2(k_opt);
  choice.value = choice.optimum * strength;
  choice.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  choice.sample_seconds = sample_seconds;
  choice.filter_seconds = filter_seconds;
  return choice;
}

// The root mean semivariance of the noise over the lags of a window of half-width r (r_z along z),
// the centre left out: E[(n(p) - n(q))^2] = 2 x its square.
double pair_sigma(const NoiseModel& noise, int r, int r_z) {
  double sum = 0;
  i64 count = 0;
  for (int dz = -r_z; dz <= r_z; ++dz)
    for (int dy = -r; dy <= r; ++dy)
      for (int dx = -r; dx <= r; ++dx) {
        if (dx == 0 && dy == 0 && dz == 0) continue;
        sum += noise.semivariance(dx, dy, dz);
        ++count;
      }
  return std::sqrt(std::max(0.0, sum / double(count)));
}

}  // namespace

double auto_nlm_noise_sigma(const NoiseModel& noise, const NlmParams& params, const Dims& dims) {
  return pair_sigma(noise, params.search_radius, dims.is_2d() ? 0 : params.search_radius);
}

// The model and the choice read one image's reads (its padding is searched once).
AutoChoice auto_nlm_h(ConstVolumeView<float> image, const NlmParams& params, const ExecContext& context, double strength) {
  const auto reads = detail::host_reads(image);
  return detail::auto_nlm_h(*reads, params, detail::estimate_noise_model(*reads), context, strength);
}

AutoChoice auto_bilateral_sigma_range(ConstVolumeView<float> image, const BilateralParams& params,
                                      const ExecContext& context, double strength) {
  const auto reads = detail::host_reads(image);
  return detail::auto_bilateral_sigma_range(*reads, params, detail::estimate_noise_model(*reads), context, strength);
}

AutoChoice detail::auto_nlm_h(const ImageReads& image, const NlmParams& params, const NoiseModel& noise,
                              const ExecContext& context, double strength) {
  NlmParams p = params;
  p.h = 1;  // validated with a placeholder: h is what is being chosen
  validate(p);
  const bool flat = image.dims().is_2d();
  // The scale of h at which two noise-only patches weigh exp(-2) of the centre (white noise's
  // optimum is near it); for L1 the same for the mean absolute difference Zhang et al. weigh.
  double scale = auto_nlm_noise_sigma(noise, p, image.dims());
  if (p.distance == PatchDistance::L1) {
    double g_sum = 0;
    i64 taps = 0;
    const int r = p.patch_radius, rz = flat ? 0 : r;
    for (int z = -rz; z <= rz; ++z)
      for (int y = -r; y <= r; ++y)
        for (int x = -r; x <= r; ++x) {
          g_sum += (x == 0 && y == 0 && z == 0) ? std::sqrt(2.0) : 1.0 / std::sqrt(double(x * x + y * y + z * z));
          ++taps;
        }
    scale *= g_sum / double(taps) / std::sqrt(M_PI);
  }
  ExecContext inner = context;
  inner.progress = nullptr;
  const Filter filter = [&](ConstVolumeView<float> in, std::span<const VolumeView<float>> outs,
                            std::span<const double> values, std::span<const cpu::OutputBox> needed) {
    detail::nlm_in_boxes(in, outs, values, p, inner, needed);
  };
  const int reach = p.search_radius + p.patch_radius;
  // Plain blocks (the bilateral filter's have rims, below): with the image's margins the choice
  // rose where the seams' bias had offset the model's over-reading, and the held-out check lost 6
  // cases; rims, which would leave NLM's reach a quarter to a half of each block, are untried
  // (docs/parameters.md, "The bilateral filter's blocks with rims").
  return choose(image, noise, scale, reach, flat ? 0 : reach, detail::Margins::None, filter, context, strength, "--h");
}

AutoChoice detail::auto_bilateral_sigma_range(const ImageReads& image, const BilateralParams& params,
                                              const NoiseModel& noise, const ExecContext& context, double strength) {
  BilateralParams p = params;
  p.sigma_range = 1;
  validate(p);
  const auto radius = bilateral_radius(p, image.dims());
  ExecContext inner = context;
  inner.progress = nullptr;
  const Filter filter = [&](ConstVolumeView<float> in, std::span<const VolumeView<float>> outs,
                            std::span<const double> values, std::span<const cpu::OutputBox>) {
    BilateralParams q = p;
    q.radius = {radius[0], radius[1], std::max(radius[2], 1)};  // the whole image's window (z unused in 2D)
    for (std::size_t k = 0; k < values.size(); ++k) {
      q.sigma_range = float(values[k]);
      bilateral(in, outs[k], q, inner);
    }
  };
  // The range kernel's scale: twice the noise sigma, the spread of a noise-only difference.
  // Blocks with rims that do not count: on blocks side by side the filter averages across each
  // seam, most where the best is a nearly linear smoothing (white noise of 150 HU on the Siemens
  // series: 0.77 x the best sigma_r, SSIM 0.027 under).
  return choose(image, noise, 2 * noise.sigma, std::max(radius[0], radius[1]), radius[2], detail::Margins::Rim,
                filter, context, strength, "--sigma-range");
}

AutoChoice auto_nlm_h(ConstVolumeView<float> image, const NlmParams& params, const NoiseModel& noise,
                      const ExecContext& context, double strength) {
  return detail::auto_nlm_h(*detail::host_reads(image), params, noise, context, strength);
}

AutoChoice auto_bilateral_sigma_range(ConstVolumeView<float> image, const BilateralParams& params,
                                      const NoiseModel& noise, const ExecContext& context, double strength) {
  return detail::auto_bilateral_sigma_range(*detail::host_reads(image), params, noise, context, strength);
}

AutoInput::AutoInput(ConstVolumeView<float> image, const ExecContext& context) : reads_(detail::reads_for(image, context)) {}
AutoInput::AutoInput(ConstVolumeView<std::int16_t> image, const ExecContext& context)
    : reads_(detail::reads_for(image, context)) {}
AutoInput::~AutoInput() = default;
AutoInput::AutoInput(AutoInput&&) noexcept = default;
AutoInput& AutoInput::operator=(AutoInput&&) noexcept = default;

const Dims& AutoInput::dims() const { return reads_->dims(); }
bool AutoInput::on_device() const noexcept { return reads_->on_device(); }

NoiseModel AutoInput::noise_model() const { return detail::estimate_noise_model(*reads_); }

AutoChoice AutoInput::nlm_h(const NlmParams& params, const NoiseModel& noise, const ExecContext& context,
                            double strength) const {
  return detail::auto_nlm_h(*reads_, params, noise, context, strength);
}

AutoChoice AutoInput::bilateral_sigma_range(const BilateralParams& params, const NoiseModel& noise,
                                            const ExecContext& context, double strength) const {
  return detail::auto_bilateral_sigma_range(*reads_, params, noise, context, strength);
}

AutoChoice auto_nlm_h_device(const float* device_image, const Dims& dims, const NlmParams& params, const NoiseModel& noise,
                             const ExecContext& context, double strength, CudaStream stream) {
  return detail::auto_nlm_h(*detail::device_reads(device_image, dims, stream), params, noise, context, strength);
}

AutoChoice auto_bilateral_sigma_range_device(const float* device_image, const Dims& dims, const BilateralParams& params,
                                             const NoiseModel& noise, const ExecContext& context, double strength,
                                             CudaStream stream) {
  return detail::auto_bilateral_sigma_range(*detail::device_reads(device_image, dims, stream), params, noise, context,
                                            strength);
}

}  // namespace ctd
