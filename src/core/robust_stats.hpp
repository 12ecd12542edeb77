#pragma once
// Robust statistics shared by the noise estimators (noise.cpp, noise_model.cpp), and the least of
// a parabola that the automatic choices refine their searches with.

#include "core/image_reads.hpp"
#include "cpu/thread_pool.hpp"

#include <ctdenoise/noise.hpp>
#include <ctdenoise/volume.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <utility>
#include <vector>

namespace ctd::detail {

// The k-th smallest of v (0-based: the value std::nth_element puts at v[k]). Large v on all
// cores: the values between two bounds read from a sorted sample of v are gathered in parallel,
// and the selection runs on those alone (a sixteenth of v); where the k-th smallest is not among
// them, on the whole of v. The noise estimates take medians of a million residuals, which took
// a single core 20 ms each. v may be reordered.
inline double kth_smallest(std::vector<double>& v, std::size_t k) {
  using i64 = std::int64_t;
  const std::size_t n = v.size();
  constexpr std::size_t kSerialBelow = 1 << 16, kSample = 4096, kMargin = 128;
  if (n < kSerialBelow) {
    std::nth_element(v.begin(), v.begin() + std::ptrdiff_t(k), v.end());
    return v[k];
  }
  std::vector<double> sample(kSample);
  for (std::size_t i = 0; i < kSample; ++i) sample[i] = v[i * n / kSample];
  std::sort(sample.begin(), sample.end());
  const std::size_t at = k * kSample / n;
  const double lo = at >= kMargin ? sample[at - kMargin] : -std::numeric_limits<double>::infinity();
  const double hi = at + kMargin < kSample ? sample[at + kMargin] : std::numeric_limits<double>::infinity();
  constexpr i64 kPiece = 1 << 13;  // a 512 x 512 slice in 32 pieces: 16 cores take part
  std::vector<std::vector<double>> between(std::size_t((i64(n) + kPiece - 1) / kPiece));
  std::vector<std::size_t> below(between.size(), 0);
  cpu::for_each_piece(i64(n), kPiece, 0, [&](i64 piece, i64 begin, i64 end) {
    std::size_t count = 0;
    for (i64 i = begin; i < end; ++i) {
      const double x = v[std::size_t(i)];
      if (x < lo) ++count;
      else if (x <= hi) between[std::size_t(piece)].push_back(x);
    }
    below[std::size_t(piece)] = count;
  });
  std::size_t smaller = 0, gathered = 0;
  for (std::size_t p = 0; p < between.size(); ++p) smaller += below[p], gathered += between[p].size();
  if (k < smaller || k >= smaller + gathered) {
    std::nth_element(v.begin(), v.begin() + std::ptrdiff_t(k), v.end());
    return v[k];
  }
  std::vector<double> middle;
  middle.reserve(gathered);
  for (const auto& part : between) middle.insert(middle.end(), part.begin(), part.end());
  const auto kth = middle.begin() + std::ptrdiff_t(k - smaller);
  std::nth_element(middle.begin(), kth, middle.end());
  return *kth;
}

// How the voxels of `value` lie: whether they fill regions (padding: a quarter of them or more lie
// in 4 x 4 blocks that hold at most one other voxel) rather than lie scattered among other values
// (a clip floor: noisy air stored at its lowest value, -1024 HU), and whether a region's value is
// scattered too (a scanner that stores -1024 outside its field of view and in its clipped air):
// a twentieth of its voxels or more in blocks that it fills at most half of, with no filled
// block within two blocks (a region's edge has filled blocks next to it). Measured on whole
// slices with FBP noise: clipped air reads 0.001 in filled blocks with a fifth of it clipped,
// 0.04-0.12 with half of it; a ring of padding 4 voxels wide 0.22, 6 wide 0.50. Read on up to 16
// slices spread evenly.
struct ValueLayout {
  bool fills_regions = false, also_scattered = false;
};
inline ValueLayout value_layout(const ImageReads& reads, float value) {
  using i64 = std::int64_t;
  const Dims d = reads.dims();
  constexpr i64 kSide = 4, kMaxSlices = 16, kReach = 2;
  const i64 side = std::min({kSide, d.nx, d.ny});
  const i64 cx = d.nx / side, cy = d.ny / side, slices = std::min(d.nz, kMaxSlices);
  i64 all = 0, in_full = 0, scattered = 0;
  for (i64 i = 0; i < slices; ++i) {
    const i64 z = i * d.nz / slices;
    const std::vector<i64> counts = reads.unusable_per_block({0, 0, z}, side, 1, cx, cy, 1, value);
    auto full = [&](i64 bx, i64 by) { return counts[std::size_t(by * cx + bx)] + 1 >= side * side; };
    for (i64 by = 0; by < cy; ++by)
      for (i64 bx = 0; bx < cx; ++bx) {
        const i64 count = counts[std::size_t(by * cx + bx)];
        all += count;
        if (full(bx, by)) in_full += count;
        if (count == 0 || count * 2 > side * side) continue;
        bool near_full = false;
        for (i64 y = std::max<i64>(0, by - kReach); y <= std::min(cy - 1, by + kReach) && !near_full; ++y)
          for (i64 x = std::max<i64>(0, bx - kReach); x <= std::min(cx - 1, bx + kReach) && !near_full; ++x) near_full = full(x, y);
        if (!near_full) scattered += count;
      }
  }
  return {in_full * 4 >= all, scattered * 20 >= all};
}

// Spikes in the histogram: values that fill at least 1% of the voxels and at least 10 times as
// many as all but one of the three nearest values on either side, not merely common values of
// quantised data. Counted on a sample of at most a million voxels. Those that fill regions
// (value_layout) are padding (-3024 HU outside a CT's field of view, a region set to air) and
// left out of every reading; the others are clipped values (air stored at its lowest value,
// -1024 HU), read as values (their noise is censored: measure_level leaves their tiles' levels
// out, and the risk their voxels).
// (SpikeValues: image_reads.hpp.)
inline SpikeValues find_spikes(const ImageReads& reads) {
  using i64 = std::int64_t;
  const i64 n = reads.dims().count();
  const i64 step = std::max<i64>(1, n / 1000000);
  std::vector<float> sample = reads.every(step, (n + step - 1) / step);
  // NaN would break the sort's order and the runs below; no padding value is non-finite.
  std::erase_if(sample, [](float v) { return !std::isfinite(v); });
  // Sorted in pieces on all cores, then merged: the same order as one sort.
  constexpr i64 kPiece = 1 << 13;
  const i64 size = i64(sample.size());
  cpu::for_each_piece(size, kPiece, 0, [&](i64, i64 begin, i64 end) { std::sort(sample.begin() + begin, sample.begin() + end); });
  for (i64 width = kPiece; width < size; width *= 2) {
    cpu::for_each_piece((size + 2 * width - 1) / (2 * width), 1, 0, [&](i64 pair, i64, i64) {
      const i64 begin = pair * 2 * width, middle = std::min(size, begin + width), end = std::min(size, begin + 2 * width);
      std::inplace_merge(sample.begin() + begin, sample.begin() + middle, sample.begin() + end);
    });
  }
  std::vector<std::pair<float, std::size_t>> runs;  // (value, count) in increasing value
  for (std::size_t i = 0; i < sample.size();) {
    std::size_t j = i;
    while (j < sample.size() && sample[j] == sample[i]) ++j;
    runs.emplace_back(sample[i], j - i);
    i = j;
  }
  // A constant image has no padding: its one value is the image (and shows no noise).
  if (runs.size() < 2) return {};
  std::vector<std::pair<std::size_t, float>> spikes;  // (count, value)
  for (std::size_t i = 0; i < runs.size(); ++i) {
    if (runs[i].second * 100 < sample.size() || runs[i].second < 2) continue;
    // The second largest of the neighbours' counts: one of them may be a spike of its own (padding
    // at -3024 next to air clipped at -1024, with no value between them).
    std::array<std::size_t, 2> largest{0, 0};
    for (std::size_t j = i >= 3 ? i - 3 : 0; j <= std::min(runs.size() - 1, i + 3); ++j) {
      if (j == i) continue;
      if (runs[j].second > largest[0]) largest = {runs[j].second, largest[0]};
      else largest[1] = std::max(largest[1], runs[j].second);
    }
    if (runs[i].second >= 10 * largest[1]) spikes.emplace_back(runs[i].second, runs[i].first);
  }
  std::sort(spikes.rbegin(), spikes.rend());
  SpikeValues values;
  std::size_t padded = 0;
  for (const auto& [count, value] : spikes) {
    const ValueLayout layout = value_layout(reads, value);
    (layout.fills_regions ? values.padding.values : values.clipped).push_back(value);
    padded += layout.fills_regions ? count : 0;
    // The largest spike both padding and scattered is left out in its regions only, and read as
    // a clip floor elsewhere.
    if (layout.fills_regions && layout.also_scattered && std::isnan(values.padding.in_regions_only)) {
      values.padding.in_regions_only = value;
      values.clipped.insert(values.clipped.begin(), value);
    }
  }
  // Regions of a few values and nothing else (a noise-free piecewise constant image): the image.
  if (padded == sample.size()) values.padding = {};
  return values;
}
inline Excluded find_padding(const ImageReads& reads) { return reads.spikes().padding; }

// The median (of an even count, the upper middle value). `v` is taken by value: the selection
// reorders it, and a caller that read its vector afterwards by position read it scrambled.
inline double median(std::vector<double> v) { return kth_smallest(v, v.size() / 2); }

// Where the parabola through (x0, y0), (x1, y1), (x2, y2) (x0 < x1 < x2) is least, within
// [x0, x2]; x1 where the points do not curve upwards.
inline double parabola_least(double x0, double y0, double x1, double y1, double x2, double y2) {
  const double denom = (x0 - x1) * (x0 - x2) * (x1 - x2);
  const double a = (x2 * (y1 - y0) + x1 * (y0 - y2) + x0 * (y2 - y1)) / denom;
  const double b = (x2 * x2 * (y0 - y1) + x1 * x1 * (y2 - y0) + x0 * x0 * (y1 - y2)) / denom;
  return a > 0 ? std::clamp(-b / (2 * a), x0, x2) : x1;
}

// How much smaller `after` is than `before`, entry by entry: the mean of before[i] - after[i] over
// the entries finite in both, in units of its standard error (paired differences). 0 where fewer
// than two entries are paired; +-infinity where they all differ alike.
inline double paired_gain_in_standard_errors(const std::vector<double>& before, const std::vector<double>& after) {
  double sum = 0, sum2 = 0, n = 0;
  for (std::size_t i = 0; i < std::min(before.size(), after.size()); ++i)
    if (std::isfinite(before[i]) && std::isfinite(after[i])) {
      const double d = before[i] - after[i];
      sum += d, sum2 += d * d, n += 1;
    }
  if (n < 2) return 0;
  const double mean = sum / n, variance = std::max(0.0, sum2 / n - mean * mean) * n / (n - 1);
  if (variance == 0) return mean == 0 ? 0 : std::copysign(std::numeric_limits<double>::infinity(), mean);
  return mean / std::sqrt(variance / n);
}

// 1.4826 x MAD, then refined as the standard deviation of the residuals within 3 sigma of the
// median (corrected for that truncation): the MAD alone drifts up when edges add outliers.
inline double robust_sigma(std::vector<double> values) {
  using i64 = std::int64_t;
  const double m = kth_smallest(values, values.size() / 2);  // the median, in place: values is ours
  const i64 n = i64(values.size());
  std::vector<double> deviations(values.size());
  cpu::for_each_piece(n, i64(1) << 13, 0, [&](i64, i64 begin, i64 end) {
    for (i64 i = begin; i < end; ++i) deviations[std::size_t(i)] = std::fabs(values[std::size_t(i)] - m);
  });
  double sigma = 1.4826 * median(std::move(deviations));
  constexpr double kTruncatedStd = 0.986581;  // std of a unit normal cut at +-3
  for (int iteration = 0; iteration < 3 && sigma > 0; ++iteration) {
    const auto [sum2, kept] = cpu::sum_in_pieces<2>(n, [&](i64 i, std::array<double, 2>& s) {
      const double dv = values[std::size_t(i)] - m;
      if (std::fabs(dv) <= 3 * sigma) s[0] += dv * dv, s[1] += 1;
    });
    sigma = std::sqrt(sum2 / kept) / kTruncatedStd;
  }
  return sigma;
}

// estimate_noise with the padding values given, from about max_samples residuals (every step-th
// position of larger images), of the slices [z0, z0 + nz) as an image of their own (nz < 0: to
// the last slice).
NoiseEstimate estimate_noise_without(const ImageReads& reads, NoiseEstimator estimator, const Excluded& padding,
                                     std::int64_t max_samples = 1000000, std::int64_t z0 = 0, std::int64_t nz = -1);

// estimate_noise_model of the image `reads` reads (src/core/noise_model.cpp); with `places`, the
// noise read in those 8 x 8 blocks instead of the image's flattest.
NoiseModel estimate_noise_model(const ImageReads& reads, const std::vector<LagArea>* places = nullptr);
// The 8 x 8 blocks whose noise estimate_noise_model reads: the image's flattest (none where none
// could be judged).
std::vector<LagArea> flat_places(const ImageReads& reads);

}  // namespace ctd::detail
