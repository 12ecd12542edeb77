#pragma once
// What the noise model reads of an image: second differences summed over 8 x 8 blocks, and the
// blocks judged flat by them. Shared by the model from flat blocks (noise_model.cpp) and its
// fallbacks (noise_fallback.cpp).

#include "core/image_reads.hpp"

#include <ctdenoise/noise.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <span>
#include <utility>
#include <vector>

namespace ctd::detail::noise_blocks {

using i64 = std::int64_t;

constexpr int kLagRadiusXy = 4;    // in-plane lags of the model
constexpr int kBlock = 8;          // in-plane size of the blocks judged flat or not
constexpr double kMaxRise = 1.10;  // largest sigma(lag 5) / sigma(lag 3) believed to be noise

// Each area's sums of D^2 (or of D(p) D(p + shift)) along each lag (ImageReads::lag_sums).
struct LagSums {
  std::size_t lags = 0;
  std::vector<double> sums;
  std::vector<i64> counts;
  // Area a's sum over lags [first, first + n) (in lag order) and its count.
  std::pair<double, i64> of(std::size_t a, std::size_t first, std::size_t n) const {
    double sum = 0;
    i64 count = 0;
    for (std::size_t l = first; l < first + n; ++l) sum += sums[a * lags + l], count += counts[a * lags + l];
    return {sum, count};
  }
  // Lags [first, first + n)'s sum over every area (each area's lags added in order, then the
  // areas in order) and its count.
  std::pair<double, i64> over_areas(std::size_t first, std::size_t n = 1) const {
    double sum = 0;
    i64 count = 0;
    for (std::size_t a = 0; a * lags < sums.size(); ++a) {
      const auto [area_sum, area_count] = of(a, first, n);
      sum += area_sum, count += area_count;
    }
    return {sum, count};
  }
  // That sum's mean, or NaN from fewer than 256 differences.
  double mean_over_areas(std::size_t first, std::size_t n = 1) const {
    const auto [sum, count] = over_areas(first, n);
    return count >= 256 ? sum / double(count) : std::numeric_limits<double>::quiet_NaN();
  }
};
inline LagSums lag_sums(const ImageReads& reads, std::span<const LagArea> areas, std::span<const Lag> lags,
                        const detail::Excluded& padding, const Lag& shift = {0, 0, 0}) {
  LagSums out{lags.size(), std::vector<double>(areas.size() * lags.size()), std::vector<i64>(areas.size() * lags.size())};
  if (!areas.empty() && !lags.empty()) {
    reads.lag_sums({areas.begin(), areas.end()}, {lags.begin(), lags.end()}, shift, padding, out.sums.data(),
                   out.counts.data());
  }
  return out;
}

// The activity under which `share` of the judged blocks (activity not NaN) lie; NaN when none
// was judged.
inline double activity_quantile(const std::vector<double>& activity, double share) {
  std::vector<double> judged;
  for (double a : activity) {
    if (!std::isnan(a)) judged.push_back(a);
  }
  if (judged.empty()) return std::numeric_limits<double>::quiet_NaN();
  const auto at = judged.begin() + std::ptrdiff_t(double(judged.size()) * share);
  std::nth_element(judged.begin(), at, judged.end());
  return *at;
}
// The flattest blocks: within a factor 1.5 of the activity of the 10th percentile block, among
// those judged (activity not NaN). Not the lowest blocks (smoothed or clipped background), not the
// most common ones (lung, bone and edges outnumber flat tissue in many slices). The anchor is NaN
// when no block was judged.
inline double flat_anchor(const std::vector<double>& activity) { return activity_quantile(activity, 0.1); }
inline bool is_flat(double activity, double anchor) { return !std::isnan(activity) && std::fabs(activity - anchor) <= std::log(1.5); }

using Block = LagArea;

// An area's activity over lags [first, first + n) of `sums`: the log of its mean D^2, NaN when
// over a quarter of its differences are missing (padding, borders) or all are 0 (not judged).
inline double activity_of(const LagSums& sums, std::size_t a, std::size_t first, std::size_t n) {
  const auto [sum, count] = sums.of(a, first, n);
  return count * 4 >= 3 * kBlock * kBlock * i64(n) && sum > 0 ? std::log(sum / double(count))
                                                              : std::numeric_limits<double>::quiet_NaN();
}

// The in-plane lags of `lags` at `radius` voxels (the larger of |dx| and |dy|), in their order.
inline std::vector<Lag> ring(const std::vector<Lag>& lags, int radius) {
  std::vector<Lag> in_plane;
  for (const Lag& g : lags) {
    if (g.dz == 0 && std::max(std::abs(g.dx), std::abs(g.dy)) == radius) in_plane.push_back(g);
  }
  return in_plane;
}

// What the model reads of the image: sums of D^2 over areas, padding left out.
struct BlockReads {
  const ImageReads& reads;
  const detail::Excluded& padding;
  LagSums sums(std::span<const LagArea> areas, std::span<const Lag> lags, const Lag& shift = {0, 0, 0}) const {
    return lag_sums(reads, areas, lags, padding, shift);
  }
  // The mean D^2 along the given lags over the given blocks (each block's lags added in order,
  // then the blocks in order), or NaN from fewer than 256 differences.
  double mean_square_along(const std::vector<Block>& where, std::span<const Lag> along) const {
    return sums(where, along).mean_over_areas(0, along.size());
  }
};

// The model when the blocks are not believed (or too few to judge): smooth in-plane noise when
// the first lags show it (in 3D where it changes from slice to slice as noise does), with its
// correlation across slices in 3D; otherwise white in-plane, and
// in 3D correlated with the next two slices as overlapping slices make it (noise_fallback.cpp).
// `m` holds what was read so far, its pseudo-residual sigma among it; `blocks` are the judged
// blocks and `lags` the model's (half of them: D is even in d).
NoiseModel fall_back(NoiseModel m, const BlockReads& image, const std::vector<Block>& blocks,
                     const std::vector<Lag>& lags);

}  // namespace ctd::detail::noise_blocks
