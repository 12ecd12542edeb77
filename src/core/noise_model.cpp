// The noise model (include/ctdenoise/noise.hpp, NoiseModel): the covariance measured by second
// differences in the image's flattest blocks (noise synthesised from it: noise_synthesis.cpp).

#include "core/noise_blocks.hpp"
#include "core/robust_stats.hpp"

#include <ctdenoise/error.hpp>
#include <ctdenoise/noise.hpp>

#include <algorithm>
#include <cmath>
#include <future>
#include <limits>
#include <optional>
#include <vector>

namespace ctd {
namespace {

using namespace detail::noise_blocks;

constexpr i64 kMaxBlocks = 16384;    // blocks judged (evenly spread over larger images)
constexpr i64 kMaxTriples = 400000;  // second differences pooled per lag, at most
constexpr double kMaxGrain = 3.0;    // largest sigma / pseudo-residual sigma believed
constexpr double kLeastSecondSliceCorrelation = 0.05;  // below it, the model keeps one slice either way
constexpr double kFarReach = 0.15;  // a farthest lag's correlation from which the noise was cut short (cut_short)
constexpr double kCutShort = -0.1;  // and under which it may have been

using detail::ImageReads;
using detail::Lag;

}  // namespace

double NoiseModel::covariance_at(int dx, int dy, int dz) const noexcept {
  if (std::abs(dx) > radius_xy || std::abs(dy) > radius_xy || std::abs(dz) > radius_z || covariance.empty()) return 0;
  const int w = 2 * radius_xy + 1;
  return covariance[std::size_t(((dz + radius_z) * w + (dy + radius_xy)) * w + (dx + radius_xy))];
}

double NoiseModel::correlation(int dx, int dy, int dz) const noexcept {
  return sigma > 0 ? covariance_at(dx, dy, dz) / (sigma * sigma) : 0;
}

NoiseModel estimate_noise_model(ConstVolumeView<float> in) {
  return detail::estimate_noise_model(*detail::host_reads(in));
}

NoiseModel estimate_noise_model(ConstVolumeView<float> image, const ExecContext& context) {
  return detail::estimate_noise_model(*detail::reads_for(image, context));
}

NoiseModel estimate_noise_model(ConstVolumeView<std::int16_t> image, const ExecContext& context) {
  return detail::estimate_noise_model(*detail::reads_for(image, context));
}

NoiseModel estimate_noise_model_device(const float* device_image, const Dims& dims, CudaStream stream) {
  return detail::estimate_noise_model(*detail::device_reads(device_image, dims, stream));
}

namespace {

// Half of the lags (D is even in d) of the box one voxel wider than the model in-plane, with
// radius_z slices either way.
std::vector<Lag> lags_of(int radius_z) {
  const int outer = kLagRadiusXy + 1;
  std::vector<Lag> lags;
  for (int dz = 0; dz <= radius_z; ++dz)
    for (int dy = -outer; dy <= outer; ++dy)
      for (int dx = -outer; dx <= outer; ++dx)
        if (dz > 0 || dy > 0 || (dy == 0 && dx > 0)) lags.push_back({dx, dy, dz});
  return lags;
}

// The image's blocks in scan order, at most kMaxBlocks of them evenly spread.
std::vector<Block> blocks_of(const Dims& d) {
  const i64 per_row = d.nx / kBlock, per_slice = per_row * (d.ny / kBlock), all_blocks = per_slice * d.nz;
  const i64 judged_blocks = std::min(all_blocks, kMaxBlocks);
  std::vector<Block> blocks(static_cast<std::size_t>(judged_blocks));
  for (i64 i = 0; i < judged_blocks; ++i) {
    const i64 b = i * all_blocks / judged_blocks;
    blocks[std::size_t(i)] = {b % per_row * kBlock, b % per_slice / per_row * kBlock, b / per_slice};
  }
  return blocks;
}

// The blocks judged flat: anatomy adds to the second differences wherever the image is not flat,
// so the noise is read in the blocks whose activity (mean D^2 over the in-plane lags one voxel
// past the model's, 6 C(0) for noise alone) is low (flat_anchor, is_flat). Where the noise level
// varies (it is lower in the air around a body than in its middle), this reads the quieter parts:
// under-reading the noise errs towards too little smoothing, never towards erased anatomy.
// nullopt when no block could be judged.
std::optional<std::vector<Block>> flat_of(const BlockReads& block_reads, const std::vector<Block>& blocks) {
  const std::vector<Lag> shell_lags = ring(lags_of(0), kLagRadiusXy + 1);
  std::vector<double> activity(blocks.size());
  const LagSums shell = block_reads.sums(blocks, shell_lags);
  for (std::size_t b = 0; b < blocks.size(); ++b) activity[b] = activity_of(shell, b, 0, shell_lags.size());
  const double anchor = flat_anchor(activity);
  if (std::isnan(anchor)) return std::nullopt;
  std::vector<Block> flat;
  for (std::size_t b = 0; b < blocks.size(); ++b) {
    if (is_flat(activity[b], anchor)) flat.push_back(blocks[b]);
  }
  return flat;
}

// The noise's part of the mean D^2 along (0, 0, k) over `where`, k = 1 ... radius_z (NaN where
// it is not read). Anatomy that changes from slice to slice but is smooth in-plane adds to D
// along z even in blocks flat in-plane, and alike to D(p)^2 and to D(p) D(p + e) at an in-plane
// shift e; noise made slice by slice (C = C_xy R(dz)) adds rho_xy(e) times as much to the second.
// So the noise's part is (E[D^2] - E[D(p) D(p + e)]) / (1 - rho_xy(e)): the mean over e 3 voxels
// along x and along y, whose noise correlations are rho_x and rho_y (one of 0.5 or more, where
// 1 / (1 - rho) magnifies the sampling error, is not used). Anatomy finer than 3 voxels in-plane
// stays in it.
std::vector<double> across_slices_without_anatomy(const BlockReads& image, const std::vector<Block>& where, int radius_z,
                                                  double rho_x, double rho_y) {
  constexpr int kShift = 3;
  constexpr double kMostShiftCorrelation = 0.5;
  std::vector<Lag> across;
  for (int k = 1; k <= radius_z; ++k) across.push_back({0, 0, k});
  // Each lag's mean over the blocks (in block order), NaN from fewer than 256 differences.
  auto means = [&](const Lag& shift) {
    const LagSums t = image.sums(where, across, shift);
    std::vector<double> out(across.size());
    for (std::size_t k = 0; k < across.size(); ++k) out[k] = t.mean_over_areas(k);
    return out;
  };
  const std::vector<double> squares = means({0, 0, 0});
  std::vector<double> noise_part(across.size(), 0.0);
  int directions = 0;
  for (const auto& [shift, rho] : {std::pair{Lag{kShift, 0, 0}, rho_x}, std::pair{Lag{0, kShift, 0}, rho_y}}) {
    if (!(rho < kMostShiftCorrelation)) continue;
    const std::vector<double> products = means(shift);
    for (std::size_t k = 0; k < across.size(); ++k) noise_part[k] += (squares[k] - products[k]) / (1 - rho);
    ++directions;
  }
  for (double& n : noise_part) n = directions > 0 ? n / directions : std::numeric_limits<double>::quiet_NaN();
  return noise_part;
}

// The lags straight across slices keep no more than their noise's part (after the in-plane
// anatomy's share is taken off): on CThead, white noise averaged over 5 slices (correlation 0.80
// with the next) read 0.62 with that anatomy, 0.71 without.
void take_off_anatomy_across_slices(const NoiseModel& m, const BlockReads& block_reads, const std::vector<Block>& chosen,
                                    const std::vector<Lag>& lags, std::vector<double>& variance) {
  const std::vector<double> noise_part =
      across_slices_without_anatomy(block_reads, chosen, m.radius_z, m.correlation(3, 0, 0), m.correlation(0, 3, 0));
  for (std::size_t l = 0; l < lags.size(); ++l) {
    if (lags[l].dx != 0 || lags[l].dy != 0 || lags[l].dz == 0) continue;
    const double part = noise_part[std::size_t(lags[l].dz - 1)];
    if (part < variance[l]) variance[l] = part;
  }
}

// Noise made slice by slice is separable, C(dx, dy, dz) = C(dx, dy, 0) C(0, 0, dz) / C(0), and
// the model's lags across slices off the axis are taken so. Read one by one they hold anatomy
// that changes in-plane and across at once, which neither correction above takes off: on CThead,
// white noise averaged over 3 slices read -0.045 at (1, 0, 1) for 0, and NLM chose h 1.41 x the
// best (1.09 x with these lags separable).
void make_separable(NoiseModel& m) {
  const int w = 2 * m.radius_xy + 1;
  const double c0 = m.covariance_at(0, 0, 0);
  if (!(c0 > 0)) return;
  for (int dz = -m.radius_z; dz <= m.radius_z; ++dz) {
    if (dz == 0) continue;
    const double across = m.covariance_at(0, 0, dz) / c0;
    for (int dy = -m.radius_xy; dy <= m.radius_xy; ++dy)
      for (int dx = -m.radius_xy; dx <= m.radius_xy; ++dx) {
        m.covariance[std::size_t(((dz + m.radius_z) * w + (dy + m.radius_xy)) * w + (dx + m.radius_xy))] =
            m.covariance_at(dx, dy, 0) * across;
      }
  }
}

// Whether the model cut the noise short: along x or y its farthest lag reads a correlation that
// has not died out, kFarReach or more, or under kCutShort and under the lag before it. A fan-beam
// scan reconstructed with Hann's window at pixels half its detector's bins read -0.11 and -0.20
// at lags 3 and 4 along x, and its level 6.4 for 8.8 (its streaks reach past the lags along the
// rays and swing negative across them). A noise's own negative lobe (ramp and Hann kernels)
// turns back by the farthest lag: -0.33 and -0.16 on a whole slice with Hann noise, read so
// from the added noise alone too. No model of the validation sets read more than 0.09 at lag 4.
bool cut_short(const NoiseModel& m) {
  const int r = m.radius_xy;
  auto along = [&](int ax, int ay) {
    const double last = m.correlation(r * ax, r * ay, 0);
    return last >= kFarReach || (last < kCutShort && last < m.correlation((r - 1) * ax, (r - 1) * ay, 0));
  };
  return along(1, 0) || along(0, 1);
}

}  // namespace

std::vector<detail::LagArea> detail::flat_places(const ImageReads& reads) {
  const BlockReads block_reads{reads, reads.spikes().padding};
  return flat_of(block_reads, blocks_of(reads.dims())).value_or(std::vector<Block>{});
}

NoiseModel detail::estimate_noise_model(const ImageReads& reads, const std::vector<LagArea>* places) {
  const Dims d = reads.dims();
  NoiseModel m;
  m.radius_xy = kLagRadiusXy;
  // Two slices either way where there are five: noise smoothed or overlapped across slices is
  // correlated with the second slice too (a [1 2 1] kernel: 1/6), and solving for the first
  // slice's correlation with the second's taken as 0 read it 0.04-0.05 low.
  m.radius_z = d.nz >= 5 ? 2 : d.nz >= 3 ? 1 : 0;
  const detail::SpikeValues& spikes = reads.spikes();
  const detail::Excluded& padding = spikes.padding;
  detail::set_spike_values(m, spikes);
  // The pseudo-residual sigma (a million residuals and two serial medians) is only needed at the
  // end: it is measured on a thread of its own while the blocks are judged.
  std::future<double> pseudo_residual = std::async(std::launch::async, [&] {
    return detail::estimate_noise_without(reads, NoiseEstimator::PseudoResidual, padding).sigma;
  });
  auto pseudo_residual_sigma = [&] {
    if (pseudo_residual.valid()) m.pseudo_residual_sigma = pseudo_residual.get();
    return m.pseudo_residual_sigma;
  };

  // Second differences D(p) = u(p+d) - 2u(p) + u(p-d) along half of the lags (D is even in d) of
  // the box one voxel wider than the model. They cancel the image's linear trends, and for noise
  // of covariance C, E[D(d)^2] = 6 C(0) - 8 C(d) + 2 C(2d). Each is read over 8 x 8 areas of a
  // slice (ImageReads::lag_sums), left out where it needs a voxel outside the image or padding.
  const int outer = m.radius_xy + 1;
  const std::vector<Lag> lags = lags_of(m.radius_z);

  static_assert(kBlock == detail::kLagArea);
  const i64 bx = kBlock, by = kBlock;
  const std::vector<Block> blocks = places ? *places : blocks_of(d);
  const BlockReads block_reads{reads, padding};
  auto fall_back_model = [&] {
    pseudo_residual_sigma();
    return fall_back(m, block_reads, blocks, lags);
  };
  const std::optional<std::vector<Block>> judged = places ? std::optional(*places) : flat_of(block_reads, blocks);
  if (!judged || judged->empty()) return fall_back_model();
  const std::vector<Block>& flat = *judged;
  m.flat_blocks = i64(flat.size());
  // At most about kMaxTriples differences per lag: every step-th flat block.
  const std::size_t step = std::max<std::size_t>(1, std::size_t(i64(flat.size()) * bx * by / kMaxTriples));

  // Every lag over the chosen blocks, added block by block in order.
  std::vector<Block> chosen;
  for (std::size_t b = 0; b < flat.size(); b += step) chosen.push_back(flat[b]);
  const LagSums t = block_reads.sums(chosen, lags);
  std::vector<double> variance(lags.size());
  std::vector<i64> pairs(lags.size());
  for (std::size_t l = 0; l < lags.size(); ++l) {
    const auto [sum, count] = t.over_areas(l);
    pairs[l] = count;
    variance[l] = count > 0 ? sum / double(count) : 0;
  }
  m.samples = *std::min_element(pairs.begin(), pairs.end());
  if (m.samples < 16) return fall_back_model();

  auto norm = [](const Lag& g) { return std::max({std::abs(g.dx), std::abs(g.dy), std::abs(g.dz)}); };
  // Beyond the model's lags C = 0, so E[D^2] = 6 C(0) on the outer in-plane shell: its median gives
  // the noise variance. Inside, C(d) = (6 C(0) + 2 C(2d) - E[D(d)^2]) / 8, from the outside in.
  std::vector<double> shell;
  for (std::size_t l = 0; l < lags.size(); ++l) {
    if (lags[l].dz == 0 && std::max(std::abs(lags[l].dx), std::abs(lags[l].dy)) == outer) shell.push_back(variance[l] / 6);
  }
  // Noise correlated over a few voxels gives second differences whose mean square levels off
  // (6 C(0)) once the lag is past its reach; anatomy's keep growing with the lag. Where the outer
  // shell reads more than kMaxRise x the level at lag 3, the flattest blocks still hold anatomy
  // (a coarse, resampled scan), and the model does not believe them.
  const double measured = detail::median(std::move(shell));
  std::vector<double> inner;
  for (std::size_t l = 0; l < lags.size(); ++l) {
    if (lags[l].dz == 0 && std::max(std::abs(lags[l].dx), std::abs(lags[l].dy)) == 3) inner.push_back(variance[l] / 6);
  }
  const double at_lag3 = detail::median(std::move(inner));
  if (measured > kMaxRise * kMaxRise * at_lag3) return fall_back_model();
  // A level over kMaxGrain x the pseudo-residual sigma (robust, and blind to anything coarser
  // than one voxel) is not believed at once: smooth reconstruction kernels make the two differ
  // (2.4 x for a Hann-apodised FBP at fine pixels), but a larger gap may be anatomy read as noise
  // at the outer lags, and then the measured correlation is anatomy's too. The fallback's smooth
  // fit is tried first (white noise blurred by 1.2 voxels, 3-4.3 x: its Gaussian reaches past
  // these lags, and the fit reads its level 2-20 % higher, nearer the truth). Where that finds
  // no smooth noise, the level that levelled off stands: a reconstruction at pixels finer than
  // its detector's bins (Hann's window at half their pitch: 4 x) fell back to white noise of
  // the pseudo-residual sigma, a fourth of its level (NLM up to 2.2 dB under-smoothed).
  if (measured > kMaxGrain * kMaxGrain * pseudo_residual_sigma() * pseudo_residual_sigma()) {
    if (NoiseModel smooth = fall_back_model(); !smooth.fell_back_to_white) return smooth;
  }
  // What rise there is, within that limit, is the flat blocks' anatomy (their noise has levelled
  // off). Its share of E[D^2] is taken as growing with the square of the lag, at the rate measured
  // between lags 3 and 5, and taken off every lag, so that neither the level nor the correlation
  // counts it. (With white noise of sigma 30 on a chest scan, the level read 37.3; now 34.7, the
  // scan's own noise included. A share in proportion to the lag took off too much at the short
  // lags: smooth-kernel noise then read as more correlated than it is.)
  const double anatomy_per_lag2 = std::max(0.0, 6 * (measured - at_lag3) / (outer * outer - 9));
  for (std::size_t l = 0; l < lags.size(); ++l) variance[l] -= anatomy_per_lag2 * norm(lags[l]) * norm(lags[l]);
  const double c0 = measured - anatomy_per_lag2 * outer * outer / 6;
  m.sigma = std::sqrt(c0);
  // Solved from the outside in, for the lags within radius_xy in-plane and radius_z across.
  auto solve = [&] {
    const int w = 2 * m.radius_xy + 1;
    m.covariance.assign(std::size_t(w * w * (2 * m.radius_z + 1)), 0.0);
    auto at = [&](int dx, int dy, int dz) -> double& {
      return m.covariance[std::size_t(((dz + m.radius_z) * w + (dy + m.radius_xy)) * w + (dx + m.radius_xy))];
    };
    at(0, 0, 0) = c0;
    std::vector<std::size_t> order;
    for (std::size_t l = 0; l < lags.size(); ++l) {
      if (std::max(std::abs(lags[l].dx), std::abs(lags[l].dy)) <= m.radius_xy && lags[l].dz <= m.radius_z) order.push_back(l);
    }
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return norm(lags[a]) > norm(lags[b]); });
    for (const std::size_t l : order) {
      const Lag g = lags[l];
      const double c = (6 * c0 + 2 * m.covariance_at(2 * g.dx, 2 * g.dy, 2 * g.dz) - variance[l]) / 8;
      at(g.dx, g.dy, g.dz) = at(-g.dx, -g.dy, -g.dz) = c;
    }
  };
  solve();
  if (m.radius_z > 0) {
    take_off_anatomy_across_slices(m, block_reads, chosen, lags, variance);
    solve();
  }
  // The second slice's correlation is believed where it is clearly positive, as smoothing or
  // overlapping slices make it (a [1 2 1] kernel: 1/6). Anatomy that changes from slice to slice
  // reads as a negative one (white noise on CThead's 40 slices: -0.16), which the in-plane
  // anatomy rate above does not take off; the model then keeps one slice either way, as before.
  if (m.radius_z == 2 && !(m.covariance_at(0, 0, 2) >= kLeastSecondSliceCorrelation * c0)) {
    m.radius_z = 1;
    solve();
  }
  make_separable(m);
  // Noise that reaches past the model's lags is cut short by the solve, which takes C = 0 beyond
  // them: its level reads low. The smooth fit reaches 3 widths (up to 8 lags) and is tried there,
  // and taken where it finds smooth noise at a higher level.
  if (cut_short(m)) {
    if (NoiseModel smooth = fall_back_model(); !smooth.fell_back_to_white && smooth.sigma > m.sigma) return smooth;
  }
  return m;
}

}  // namespace ctd
