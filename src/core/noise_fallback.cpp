// The noise model's fallbacks, where its flattest blocks are not believed: smooth noise read
// from the first lags (in 3D only where it changes from slice to slice), or white noise of the
// pseudo-residual sigma, correlated across slices where overlapping slices make it so
// (docs/parameters.md, "The noise model", step 4).

#include "core/noise_blocks.hpp"
#include "core/robust_stats.hpp"
#include "core/smooth_noise_fit.hpp"

#include <ctdenoise/error.hpp>

#include <array>
#include <optional>
#include <tuple>

namespace ctd::detail::noise_blocks {
namespace {

constexpr double kLeastSliceCorrelation = 0.2;  // below it, the fallback's slices count as independent
constexpr i64 kMaxFallbackSlices = 64;          // slices whose in-plane sigma the fallback reads
constexpr i64 kLeastResidualsPerSlice = 1 << 14;  // residuals per slice it reads, at least
// Below this correlation with the next voxel the fallback stays white in-plane: in a slice (and
// a volume of two), where nothing but the first lags tells noise from tissue texture, 0.35
// (band-pass noise, 0.30 alone, read 0.39 on the 3.2 mm head, where white noise of the
// pseudo-residual sigma took 0.84 of it; 0.4 until 2026-11-29: NLM up to 1.26 dB
// under-smoothed there). In a volume the fit must also change from slice to slice as noise
// does (changes_across_slices_as_noise), and 0.2 is enough: ramp FBP noise on the 3 mm
// TotalSegmentator crop read 0.24-0.28 and its level within 4 % of the added noise and the
// crop's own (white noise of the pseudo-residual sigma read 0.80-0.84 of the fit's level, NLM
// up to 0.97 dB under-smoothed against the reference, 1.76 against the truth), white noise on
// textured crops 0.03-0.14 (docs/parameters.md, step 4).
constexpr double kLeastSmoothCorrelation = 0.35;
constexpr double kLeastSmoothCorrelationAcrossSlices = 0.2;
constexpr double kMaxSmoothGrain = 2.5;  // largest smooth-fallback sigma / pseudo-residual sigma believed
                                         // without the far lags' confirmation
constexpr double kLevelOff = 0.5;  // largest growth per lag of the far lags' D^2 / its rise from lag 1 to 2
constexpr double kAnatomyFitTolerance = 0.025;  // largest misfit of the far lags' D^2 less anatomy's share
constexpr double kFlattestShare = 0.15;  // the wide smooth fit's second try: the flattest blocks only
constexpr int kMaxSmoothRadius = 8;      // in-plane lags of a smooth-fallback model, at most
constexpr double kLeastNoiseShare = 0.35;  // changes_across_slices_as_noise: the least share believed
constexpr double kDecisiveExcess = 0.05;    // and the least predicted excess / in-plane D^2 it is judged on
constexpr i64 kLeastUnconfirmedBlocks = 32;  // a refused wide fit is reported from this many blocks
                                             // (a 40 x 44 image's one block read anatomy as 43 HU of it)

// Overlapping slices (and z filters) correlate the noise across slices, which the 3D
// pseudo-residual, averaging both slice neighbours, then under-reads; each slice alone does not.
// The fallback models it as white noise smoothed across slices by a kernel [a, 1, a]: correlation
// rho1 = 2a / (1 + 2a^2) with the next slice and rho2 = a^2 / (1 + 2a^2) with the one after. For
// such noise (white in-plane) the 3D pseudo-residual reads sigma^2 (1 - 4 rho1 / 7 + rho2 / 21),
// each slice sigma^2: a is solved from the ratio of the two (0 <= a <= 1/sqrt(2), where rho1 is
// largest). The in-plane sigma is the median over up to max_slices slices spread evenly.
struct SliceCorrelation {
  double in_plane_sigma = 0, rho1 = 0, rho2 = 0;
};
SliceCorrelation slice_correlation(const ImageReads& reads, const detail::Excluded& padding, double sigma_3d,
                                   i64 max_slices) {
  const Dims d = reads.dims();
  const i64 plane = d.nx * d.ny, used = std::min(d.nz, max_slices);
  // About a million residuals in all, as for the whole image (a 1024^2 slice alone has as many).
  const i64 per_slice = std::max<i64>(kLeastResidualsPerSlice, 1000000 / used);
  std::vector<double> sigmas(std::size_t(used), std::numeric_limits<double>::quiet_NaN());
  for (i64 i = 0; i < used; ++i) {
    const i64 z = i * d.nz / used;
    try {
      const NoiseEstimate e =
          detail::estimate_noise_without(reads, NoiseEstimator::PseudoResidual, padding, per_slice, z, 1);
      // A quarter of the slice usable, at least (the residuals are every step-th position's).
      if (e.samples * std::max<i64>(1, plane / per_slice) * 4 >= plane) sigmas[std::size_t(i)] = e.sigma;
    } catch (const Error&) {
      // too few usable voxels in this slice
    }
  }
  std::erase_if(sigmas, [](double v) { return std::isnan(v); });
  if (sigmas.empty() || !(sigma_3d > 0)) return {sigma_3d, 0, 0};
  const double sigma_2d = detail::median(std::move(sigmas));
  const double read = (sigma_3d / sigma_2d) * (sigma_3d / sigma_2d);
  if (read >= 1) return {sigma_2d, 0, 0};
  auto correlations = [](double a) { return std::pair{2 * a / (1 + 2 * a * a), a * a / (1 + 2 * a * a)}; };
  auto reads_3d = [&](double a) {
    const auto [r1, r2] = correlations(a);
    return 1 - 4 * r1 / 7 + r2 / 21;
  };
  double lo = 0, hi = 1 / std::sqrt(2.0);  // reads_3d() falls from 1 over this range
  for (int i = 0; i < 40; ++i) {
    const double mid = (lo + hi) / 2;
    (reads_3d(mid) > read ? lo : hi) = mid;
  }
  const auto [r1, r2] = correlations(lo);
  return {sigma_2d, r1, r2};
}

// Smooth noise, measured where the model falls back (its outer lags hold anatomy): white noise
// smoothed by a Gaussian, fitted to flat blocks' first lags, where anatomy adds least, when it
// is clearly correlated (next voxel `least_correlation` or more) and its level is above
// `floor`, the pseudo-residual sigma (which smooth noise always exceeds). Two ways, the first
// that holds, among `blocks`:
// - Confirmed by the far lags (fit_smooth_and_white_noise, with white noise on top, at lags 1,
//   2 and 4): where the fitted correlation has died out (3 widths and more), the mean D^2 of
//   noise alone stays at the level the fit predicts, while anatomy's keeps rising with the lag.
//   Both far lags must lie within kMaxRise (in sigma) of the prediction, or both below it (the
//   noise's plateau gives the level then: fit_at_plateau). The blocks are chosen
//   by the flatness of the four blocks around them, not their own: an 8 x 8 block holds only a
//   few independent samples of such noise, and the quietest read its level 18 % low.
// - Otherwise fit_smooth_noise at lags 1 and 2 in the flattest blocks at lag 2, up to
//   kMaxSmoothGrain x the pseudo-residual sigma. Hann-filtered noise reads up to 2.4 x; blurred
//   anatomy alone (the noise-free Hann reconstruction of a 3 mm crop) 2.9 x.
// White noise blurred by a Gaussian of 1.2 voxels reads 4.7 x: only the first way finds it.
struct SmoothFit {
  std::optional<detail::SmoothNoise> noise;  // nothing where the first lags show no clearly smooth noise
  std::vector<Block> blocks;                 // the blocks it was read in
  i64 samples = 0;                           // differences per lag, at least
  std::optional<detail::SmoothNoise> unconfirmed;  // the wide fit its far lags refused
};
SmoothFit read_smooth_noise(const BlockReads& image, const std::vector<Block>& blocks, const std::vector<Lag>& lags,
                            double floor, double least_correlation) {
  SmoothFit result;
  const std::vector<Lag> near_lags = ring(lags, 2);
  const std::array<Lag, 2> axis_lag1{{{1, 0, 0}, {0, 1, 0}}}, axis_lag2{{{2, 0, 0}, {0, 2, 0}}},
      axis_lag4{{{4, 0, 0}, {0, 4, 0}}};
  struct AxisSums {
    double lag1 = 0, lag2 = 0, lag4 = 0;
    i64 lag1_count = 0, lag2_count = 0, lag4_count = 0;
  };
  std::vector<double> near_activity(blocks.size()), around_activity(blocks.size());
  std::vector<AxisSums> sums(blocks.size());
  {
    // Each block's own lags: the near ring, then the axes at 1, 2 and 4 voxels.
    std::vector<Lag> own = near_lags;
    for (const auto* axis : {&axis_lag1, &axis_lag2, &axis_lag4}) own.insert(own.end(), axis->begin(), axis->end());
    const LagSums t = image.sums(blocks, own);
    const std::size_t n = near_lags.size();
    for (std::size_t b = 0; b < blocks.size(); ++b) {
      near_activity[b] = activity_of(t, b, 0, n);
      AxisSums& a = sums[b];
      std::tie(a.lag1, a.lag1_count) = t.of(b, n, 2);
      std::tie(a.lag2, a.lag2_count) = t.of(b, n + 2, 2);
      std::tie(a.lag4, a.lag4_count) = t.of(b, n + 4, 2);
    }
    // The four blocks around each (left, right, above, below), along the near ring.
    std::vector<LagArea> around;
    around.reserve(4 * blocks.size());
    for (const Block& k : blocks) {
      for (const auto& [ox, oy] : {std::pair<i64, i64>{-kBlock, 0}, {kBlock, 0}, {0, -kBlock}, {0, kBlock}}) {
        around.push_back({k.x + ox, k.y + oy, k.z});
      }
    }
    const LagSums r = image.sums(around, near_lags);
    for (std::size_t b = 0; b < blocks.size(); ++b) {
      double sum = 0;
      i64 count = 0;
      for (std::size_t side = 0; side < 4; ++side) {
        const auto [side_sum, side_count] = r.of(4 * b + side, 0, n);
        sum += side_sum, count += side_count;
      }
      around_activity[b] = count * 2 >= 4 * kBlock * kBlock * i64(n) && sum > 0
                               ? std::log(sum / double(count))
                               : std::numeric_limits<double>::quiet_NaN();
    }
  }
  // The fit over the blocks that are flat by `flatness` (with a white part or not), and the
  // blocks and the differences per lag it used; nothing where it is not clearly smooth noise.
  struct Fit {
    detail::SmoothNoise noise;
    std::vector<Block> blocks;
    i64 samples = 0;
  };
  auto fit_in = [&](const std::vector<double>& flatness, bool with_white, double share) -> std::optional<Fit> {
    const double anchor = flat_anchor(flatness);
    const double most = share < 1 ? activity_quantile(flatness, share) : std::numeric_limits<double>::infinity();
    AxisSums total;
    Fit out;
    for (std::size_t b = 0; b < blocks.size(); ++b) {
      if (!is_flat(flatness[b], anchor) || flatness[b] > most) continue;
      const AxisSums& n = sums[b];
      total.lag1 += n.lag1, total.lag2 += n.lag2, total.lag4 += n.lag4;
      total.lag1_count += n.lag1_count, total.lag2_count += n.lag2_count, total.lag4_count += n.lag4_count;
      out.blocks.push_back(blocks[b]);
    }
    if (std::min({total.lag1_count, total.lag2_count, total.lag4_count}) < 16) return std::nullopt;
    const double v1 = total.lag1 / double(total.lag1_count), v2 = total.lag2 / double(total.lag2_count);
    const std::optional<detail::SmoothNoise> fit =
        with_white ? detail::fit_smooth_and_white_noise(v1, v2, total.lag4 / double(total.lag4_count)) : detail::fit_smooth_noise(v1, v2);
    if (!fit || fit->correlation(1) < least_correlation || fit->sigma() < floor) return std::nullopt;
    out.noise = *fit;
    out.samples = std::min(total.lag1_count, total.lag2_count);
    return out;
  };
  // The mean D^2 along x and y at `lag` in the fit's blocks over the fit's prediction; agreeing
  // where within kMaxRise (in sigma) of it.
  auto far_ratio = [&](const Fit& fit, int lag) {
    const std::array<Lag, 2> along{{{lag, 0, 0}, {0, lag, 0}}};
    return image.mean_square_along(fit.blocks, along) / fit.noise.mean_square_difference(lag);
  };
  auto agrees = [](double ratio) { return ratio <= kMaxRise * kMaxRise && ratio >= 1 / (kMaxRise * kMaxRise); };  // false for NaN
  // Or the far lags read below the fit, which anatomy (it adds) cannot make them do: noise
  // band-limited below the pixel, whose correlation swings negative past its main lobe where a
  // Gaussian's stays positive, so that the fit at lags 1, 2 and 4 over-reads its level. Past the
  // lobe the mean D^2 is the noise's plateau, 6 C(0): the fit is scaled to the farther lag's
  // reading, where the nearer lag then agrees with it. FBP-like noise (a ramp under Hann's window)
  // cut at 0.18-0.22 cycles per pixel, as at pixels 2.3-2.8 x finer than the detector resolves,
  // was refused and read as white noise of the pseudo-residual sigma, a tenth of its level; now
  // within 6 %. A zoomed fan-beam scan of the Shepp-Logan phantom (Hann's window, the bowtie) read
  // 8.6 where its far lags read 7.5 (the added noise 7.0-7.9) and had fallen back to 1.9: NLM
  // 1.82 dB under-smoothed. No wide fit of the validation sets reads under 1.01 x at its far lags.
  // (at_near and at_far: far_ratio at the two far lags.)
  auto fit_at_plateau = [&](const Fit& fit, double at_near, double at_far) -> std::optional<Fit> {
    if (!(at_far > 0 && at_far < 1 / (kMaxRise * kMaxRise)) || !agrees(at_near / at_far)) return std::nullopt;
    Fit out = fit;
    out.noise.c0 *= at_far, out.noise.white *= at_far;
    if (out.noise.sigma() < floor) return std::nullopt;
    return out;
  };
  // Or smooth noise under anatomy, whose second differences keep rising past the noise's
  // reach (a chest slice's: the far lags read 24-48 % above the fit). Two tests, then the fit
  // again without anatomy's share:
  // - the noise makes a knee: past it the mean D^2 grows per lag by at most kLevelOff of its
  //   rise from lag 1 to 2 (the chest with smooth noise: 0.22-0.45; blurred discs alone: 4-15;
  //   the 3 mm abdomen alone 0.40, with added noise 0.47-0.50);
  // - as in the blocks' model (step 5 of docs/parameters.md), anatomy's share of the mean D^2
  //   is taken as growing with the square of the lag, here at the rate between the far lags,
  //   and taken off lags 1, 2 and 4 before fitting again; then the far lags less that share
  //   must read what the new fit predicts within kAnatomyFitTolerance (the chest: -0.1 to
  //   1.6 %, the Siemens abdomen 2.2 %; the 3 mm abdomen, alone or with noise: 2.9-9 %).
  auto fit_less_anatomy = [&](const Fit& fit, int near) -> std::optional<Fit> {
    const int far = near + 3;
    auto mean_at = [&](int lag) {
      const std::array<Lag, 2> along{{{lag, 0, 0}, {0, lag, 0}}};
      return image.mean_square_along(fit.blocks, along);
    };
    const double v_near = mean_at(near), v_far = mean_at(far);
    const double first_rise = fit.noise.mean_square_difference(2) - fit.noise.mean_square_difference(1);
    if (!((v_far - v_near) / (far - near) <= kLevelOff * first_rise) || !(v_far > v_near)) return std::nullopt;
    const double rate = (v_far - v_near) / double(far * far - near * near);
    const std::optional<detail::SmoothNoise> refit =
        detail::fit_smooth_and_white_noise(mean_at(1) - rate, mean_at(2) - 4 * rate, mean_at(4) - 16 * rate);
    if (!refit || refit->correlation(1) < least_correlation || refit->sigma() < floor) {
      return std::nullopt;
    }
    const double misfit = (v_near - rate * near * near) / refit->mean_square_difference(near) - 1;
    if (!(std::fabs(misfit) <= kAnatomyFitTolerance)) return std::nullopt;
    Fit out = fit;
    out.noise = *refit;
    return out;
  };
  auto accept = [&](const Fit& fit) {
    result.noise = fit.noise;
    result.blocks = fit.blocks;
    result.samples = fit.samples;
    return result;
  };
  // The wide fit, believed where its far lags agree (or at their plateau, or agree less anatomy's share).
  auto confirmed = [&](const std::optional<Fit>& wide) -> std::optional<Fit> {
    if (!wide) return std::nullopt;
    const int near = std::max(5, int(std::ceil(3 * wide->noise.width)) + 1);
    const double at_near = far_ratio(*wide, near), at_far = far_ratio(*wide, near + 3);
    if (agrees(at_near) && agrees(at_far)) return wide;
    if (std::optional<Fit> plateau = fit_at_plateau(*wide, at_near, at_far)) return plateau;
    return fit_less_anatomy(*wide, near);
  };
  const std::optional<Fit> first = fit_in(around_activity, true, 1.0);
  if (const std::optional<Fit> wide = confirmed(first)) return accept(*wide);
  // Strong smooth noise evens out the blocks' activities, so that the flat ones are chosen by
  // the noise rather than by the anatomy: on a chest slice with noise blurred by 1.6-2 voxels
  // over the whole image, the field of view's outside too, at 30 HU 13-15 % of the blocks were
  // flat, at 60 HU 24-34 %, lungs and vessels among them, and the far lags read 21-30 % above
  // the fit. Tried again in the flattest kFlattestShare only: the far lags then read within
  // 12 %. Second, since a tighter choice reads the level a little low (the chosen blocks'
  // neighbours share some of their noise: 3-6 % low for noise blurred by 1.2 voxels). Where
  // the image holds little but the chest (the noise inside the field of view only), neither
  // try reads such noise (docs/parameters.md, "What is not reached").
  // (Nothing new to try where the first choice held no more blocks than that.)
  const std::optional<Fit> flattest = fit_in(around_activity, true, kFlattestShare);
  const bool fewer = flattest && (!first || flattest->blocks.size() < first->blocks.size());
  if (const std::optional<Fit> wide = fewer ? confirmed(flattest) : std::nullopt) return accept(*wide);
  if (first && i64(first->blocks.size()) >= kLeastUnconfirmedBlocks) result.unconfirmed = first->noise;
  const std::optional<Fit> narrow = fit_in(near_activity, false, 1.0);
  if (narrow && std::sqrt(narrow->noise.c0) <= kMaxSmoothGrain * floor) return accept(*narrow);
  return result;
}

// The correlation with the next two slices of noise whose in-plane part is `smooth`, from the
// mean D^2 along z at lags 1 and 2 in the smooth fit's blocks (E[D(1)^2] = C0 (6 - 8 rho1 +
// 2 rho2), E[D(2)^2] = C0 (6 - 8 rho2) with nothing at 4 slices), between 0 and 0.95. Anatomy
// that changes from slice to slice adds to both and errs towards too little correlation.
std::pair<double, double> slice_correlation_of(const BlockReads& image, const std::vector<Block>& smooth_blocks,
                                               const detail::SmoothNoise& smooth) {
  const double c0 = smooth.c0 + smooth.white;
  std::array<double, 2> mean{};
  for (const int dz : {1, 2}) {
    const std::array<Lag, 1> along{{{0, 0, dz}}};
    mean[std::size_t(dz - 1)] = image.mean_square_along(smooth_blocks, along);
  }
  const double rho2 = std::isnan(mean[1]) ? 0.0 : std::clamp((6 - mean[1] / c0) / 8, 0.0, 0.95);
  const double rho1 = std::isnan(mean[0]) ? 0.0 : std::clamp((6 + 2 * rho2 - mean[0] / c0) / 8, 0.0, 0.95);
  return std::pair{rho1, rho2};
}

// Whether the smooth part of a fit in 3D changes from slice to slice as noise does. Noise from
// each slice's reconstruction is separable, C(dx, dy, dz) = C_xy(dx, dy) R(dz), so the mean D^2
// along the oblique lags (1, 0, +-k) and (0, 1, +-k) exceeds that along (1, 0, 0) and (0, 1, 0)
// by c_s (8 g(1) (1 - R(k)) - 2 g(2) (1 - R(2k))), R(1) = rho1 and R(2) = rho2 as
// slice_correlation_of reads them in the fit's blocks (R(4) taken as 0). Tissue texture that
// continues across thin slices (a 3.2 mm head at 1.5 mm slices under white noise of 30 HU: read
// as a smooth part of 25 HU, 1.1 voxels wide) adds nearly alike to both, and the excess stays
// near 0. Judged at the k, 1 or 2 slices (2 only where the volume
// has 5 slices or more), where the prediction is the larger share of the in-plane D^2 (noise
// correlated with the next slice changes little across it), and only where that share is
// kDecisiveExcess or more. Measured share of the prediction: 0.64-1.29 for smooth noise
// (blurred, Hann FBP, band-pass; alone and correlated across slices; on 5 scans), -0.24 to 0.07
// for that head's texture under white noise, alone or correlated across slices.
bool changes_across_slices_as_noise(const BlockReads& image, const std::vector<Block>& fit_blocks,
                                    const detail::SmoothNoise& smooth, double rho1, double rho2) {
  const std::array<Lag, 2> in_plane{{{1, 0, 0}, {0, 1, 0}}};
  const double within = image.mean_square_along(fit_blocks, in_plane);
  auto excess = [&](double r_k, double r_2k) {
    return smooth.c0 * (8 * smooth.correlation(1) * (1 - r_k) - 2 * smooth.correlation(2) * (1 - r_2k));
  };
  const int k = image.reads.dims().nz >= 5 && excess(rho2, 0) > excess(rho1, rho2) ? 2 : 1;
  const double predicted = k == 1 ? excess(rho1, rho2) : excess(rho2, 0);
  if (!(predicted >= kDecisiveExcess * within)) return true;  // also where a mean is NaN
  const std::array<Lag, 4> oblique{{{1, 0, k}, {0, 1, k}, {1, 0, -k}, {0, 1, -k}}};
  return (image.mean_square_along(fit_blocks, oblique) - within) / predicted >= kLeastNoiseShare;
}

// Where the model stays under half the level of a wide fit its far lags refused, that fit is
// reported (NoiseModel::unconfirmed_smooth_sigma).
NoiseModel note_unconfirmed(NoiseModel m, const std::optional<detail::SmoothNoise>& unconfirmed) {
  if (unconfirmed && unconfirmed->sigma() > 2 * m.sigma) {
    m.unconfirmed_smooth_sigma = unconfirmed->sigma();
    m.unconfirmed_smooth_width = unconfirmed->width;
  }
  return m;
}
}  // namespace

NoiseModel fall_back(NoiseModel m, const BlockReads& image, const std::vector<Block>& blocks, const std::vector<Lag>& lags) {
  const Dims d = image.reads.dims();
  m.fell_back_to_white = true;
  m.sigma = m.pseudo_residual_sigma;
  m.radius_z = d.nz >= 3 ? 1 : 0;  // the fallbacks' own reach across slices (below)
  // Smooth in-plane noise, where the first lags show it. In 3D its correlation across slices is
  // read along z in the fit's blocks (slice_correlation assumes noise that is white in-plane,
  // and misses it: white noise blurred by 1.2 voxels in 3D, 0.83 with the next slice, read
  // under 0.2 there); under kLeastSliceCorrelation the slices count as independent.
  // The smooth fit is weighed against the larger of the 3D and the slices' own pseudo-residual
  // sigma. The 3D one averages both slice neighbours, and noise correlated across slices
  // (overlapping slices) makes it read low: Hann FBP noise smoothed by [1 2 1] along z on a
  // 3.2 mm head read 2.5 x it, over kMaxSmoothGrain, and fell back to white noise of less than
  // half its level. The slices' own one misses anatomy that changes from slice to slice, and reads
  // low on thick slices (3 mm abdomen: 14.3 for the 3D 19.0).
  SliceCorrelation z;
  if (m.radius_z > 0) z = slice_correlation(image.reads, image.padding, m.pseudo_residual_sigma, kMaxFallbackSlices);
  const SmoothFit fit = read_smooth_noise(image, blocks, lags, std::max(m.pseudo_residual_sigma, z.in_plane_sigma),
                                          m.radius_z > 0 ? kLeastSmoothCorrelationAcrossSlices : kLeastSmoothCorrelation);
  // In 3D its correlation with the next two slices, and it must change from slice to slice as
  // noise does (not tissue texture).
  std::pair<double, double> across{0, 0};
  if (fit.noise && m.radius_z > 0) across = slice_correlation_of(image, fit.blocks, *fit.noise);
  if (fit.noise &&
      (m.radius_z == 0 || changes_across_slices_as_noise(image, fit.blocks, *fit.noise, across.first, across.second))) {
    const detail::SmoothNoise& smooth = *fit.noise;
    m.flat_blocks = i64(fit.blocks.size());
    m.samples = fit.samples;
    m.fell_back_to_white = false;
    m.read_from_first_lags = true;
    m.sigma = smooth.sigma();
    // Lags out to 3 widths (the correlation there: 0.1), at most kMaxSmoothRadius.
    m.radius_xy = std::clamp(int(std::ceil(3 * smooth.width)), kLagRadiusXy, kMaxSmoothRadius);
    std::array<double, 3> along_z{1, 0, 0};
    if (m.radius_z > 0) {
      const auto [rho1, rho2] = across;
      if (rho1 >= kLeastSliceCorrelation) {
        m.radius_z = d.nz >= 5 ? 2 : 1;
        along_z = {1, rho1, m.radius_z >= 2 ? rho2 : 0};
      }
    }
    const int w = 2 * m.radius_xy + 1;
    m.covariance.assign(std::size_t(w * w * (2 * m.radius_z + 1)), 0.0);
    for (int dz = -m.radius_z; dz <= m.radius_z; ++dz)
      for (int dy = -m.radius_xy; dy <= m.radius_xy; ++dy)
        for (int dx = -m.radius_xy; dx <= m.radius_xy; ++dx) {
          m.covariance[std::size_t(((dz + m.radius_z) * w + dy + m.radius_xy) * w + dx + m.radius_xy)] =
              (smooth.c0 * smooth.correlation(std::hypot(dx, dy)) + (dx == 0 && dy == 0 ? smooth.white : 0)) *
              along_z[std::size_t(std::abs(dz))];
        }
    return note_unconfirmed(m, fit.unconfirmed);
  }
  if (z.rho1 >= kLeastSliceCorrelation) {
    m.sigma = z.in_plane_sigma;
    m.radius_z = d.nz >= 5 ? 2 : 1;
  } else {
    z = {};
  }
  const int w = 2 * m.radius_xy + 1;
  m.covariance.assign(std::size_t(w * w * (2 * m.radius_z + 1)), 0.0);
  const std::size_t centre = m.covariance.size() / 2, next_slice = std::size_t(w * w);
  const double c0 = m.sigma * m.sigma;
  m.covariance[centre] = c0;
  if (m.radius_z >= 1) m.covariance[centre - next_slice] = m.covariance[centre + next_slice] = z.rho1 * c0;
  if (m.radius_z >= 2) m.covariance[centre - 2 * next_slice] = m.covariance[centre + 2 * next_slice] = z.rho2 * c0;
  // A fit refused for not changing across slices is reported as the one its far lags refused:
  // anatomy to the model, and a user whose noise is known to be smooth can give it.
  return note_unconfirmed(m, fit.noise ? fit.noise : fit.unconfirmed);
}

}  // namespace ctd::detail::noise_blocks
