// The automatic parameters' sample of blocks (src/core/auto_sample.hpp); the noise level over it
// is read in src/core/sample_levels.cpp.

#include "core/auto_sample.hpp"

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

constexpr std::int64_t kLeastSampleBlocks = 64;  // blocks in the sample of a large image, at least
constexpr std::int64_t kLeastBlocks = 16;        // blocks in any sample of blocks, at least (where the image has them)

// The candidates' structure scores (make_sample's BlockOrder::Content): low_contrast_structure of
// each one's middle slice. One slice a block: the score orders, and costs a copy of a slice of
// every candidate.
std::vector<i64> structure_scores(const ImageReads& reads, const std::vector<Corner>& candidates, i64 bxy, i64 bz,
                                  const NoiseModel& noise) {
  const i64 n = i64(candidates.size());
  std::vector<Corner> middles;
  middles.reserve(candidates.size());
  for (const Corner& c : candidates) middles.push_back({c.x, c.y, c.z + bz / 2});
  // One block a row of blocks: each slice lies whole in memory, read in place.
  Volume slices(Dims{bxy, bxy * n, 1});
  reads.copy_blocks(middles, {bxy, bxy, 1}, slices.view());
  const double gain = pseudo_residual_gain(noise, false);
  const std::vector<float> padding = padding_of(noise);
  std::vector<i64> scores(candidates.size(), 0);
  cpu::for_each_piece(n, 1, 0, [&](i64 b, i64, i64) {
    const ConstVolumeView<float> slice{slices.data() + b * bxy * bxy, Dims{bxy, bxy, 1}};
    scores[std::size_t(b)] = low_contrast_structure(slice, padding, gain);
  });
  return scores;
}

}  // namespace

SampleLayout sample_layout(const Dims& d, int reach_xy, int reach_z, Margins margins) {
  SampleLayout l;
  // A slice is used whole up to kAutoWholeSliceVoxels. On blocks side by side the filter
  // averages another block's anatomy across each seam, a residual that grows with the strength:
  // where the best is a nearly linear smoothing (the bilateral filter at 100-150 HU of white or
  // ramp noise), the choice fell to 0.35-0.55 x the best on the Catphan slice (0.9 dB under).
  // Margins instead (as the scan-like probe has) left a body inside padding few blocks, none at
  // its edge, and the choice ran away (the 384 abdomen phantom at 150 HU: 107 000 for a best of
  // 810). The whole slice costs the choice about twice as much (0.25 -> 0.45 s for 512 x 512 on 2
  // CPU cores).
  if (d.count() <= kAutoSampleVoxels || (d.is_2d() && d.count() <= kAutoWholeSliceVoxels)) return l;
  l.whole = false;
  // Blocks wide enough that most of their voxels see a whole window of their own. With `margins`,
  // each has a margin of the filter's reach around the part that counts (`inner`): a voxel's
  // output there depends only on the image around it, so the risk estimated on it is the image's.
  // Without them the filter at the seams between blocks sees other blocks' anatomy as
  // neighbours, its residual there grows with the strength, and the choice falls low: with the
  // scan-like probe, 295 for h on a simulated scan of a 512 x 512 abdomen phantom, 369 with the
  // margins, 374 on the whole image (best 417). The tile models' rules were set without them, and
  // with margins the held-out set lost 6 cases (over-smoothed volumes with stationary noise), so
  // only the scan-like probe has them (docs/parameters.md, "Scan-like noise").
  // A rim (the bilateral filter's) is the same inside each block: the blocks are those without
  // margins, which fit where the image's own need room around them (a 64 x 64 volume: one a layer
  // with margins, four without), and what counts sees its own block only.
  const i64 inner = std::clamp<i64>(3 * i64(reach_xy), 32, 64);
  if (margins == Margins::Rim) {
    l.bxy = std::min({inner, d.nx, d.ny});
    l.halo = std::clamp<i64>(reach_xy, 0, std::max<i64>(0, (l.bxy - 8) / 2));
  } else {
    l.halo = margins == Margins::Image ? std::clamp<i64>(reach_xy, 0, std::max<i64>(0, (std::min(d.nx, d.ny) - 16) / 2)) : 0;
    l.bxy = std::min({inner + 2 * l.halo, d.nx, d.ny});
  }
  l.bz = d.is_2d() ? 1 : std::min<i64>(std::clamp<i64>(2 * i64(reach_z) + 2, 6, 16), d.nz);
  // kAutoSampleVoxels that count, but at least kLeastSampleBlocks blocks where their counted parts
  // are at most an eighth of the image. In 3D a block is 6-16 slices deep, and 2^17 voxels held
  // 12 blocks of a 512 x 512 x 20 volume at search radius 3, too few for a body whose noise
  // changes several fold across it (NLM up to 7.7 dB under-smoothed on that volume with FBP
  // noise; with 64 blocks within 0.81 dB). The eighth bounds the cost: the 14-18 filter runs of
  // the choice then cost about four runs on the whole image.
  // A rim counts here as if it counted: the blocks are then those of plain blocks, whose tiles tell
  // the levels and textures as they did (with blocks to make up for the rims, 16 -> 24 of a 160 x
  // 160 x 24 phantom, the tiles' nearest others told their levels as well as the values did,
  // "intensity levels" was refused, and the bilateral filter fell to 0.59 x the best).
  const i64 inside = margins == Margins::Rim ? l.bxy : l.bxy - 2 * l.halo;
  const i64 counted = inside * inside * l.bz;
  // And at least kLeastBlocks blocks, whatever the eighth: a mid-sized volume (48 x 128 x 128
  // spheres in a cylinder) fits 9 blocks of 2^17 voxels at NLM's default reach, too few to hold
  // its rare edges (BlockOrder::Content).
  l.wanted = std::max({kLeastBlocks, kAutoSampleVoxels / counted, std::min(kLeastSampleBlocks, d.count() / (8 * counted))});
  return l;
}

Sample make_sample(const ImageReads& reads, const SampleLayout& layout, const NoiseModel& noise, BlockOrder order) {
  const Dims d = reads.dims();
  const float excluded = float(noise.excluded_value);
  auto usable = [&](float v) { return std::isfinite(v) && !(v == excluded); };
  // The risk does not count clipped voxels: a clipped value is no noisy value (y = x + n), so
  // SURE's residual there grows with the smoothing as no noise's would (a simulated scan with a
  // third of its air clipped at -1024 HU: NLM's h 0.77 x the best, 0.4 dB under; with them left
  // out, 0.98 x).
  auto mask_of = [&](Sample& s) {
    s.mask.resize(std::size_t(s.image.dims().count()));
    s.counted.resize(s.mask.size());
    for (std::size_t i = 0; i < s.mask.size(); ++i) {
      const float v = s.image.data()[i];
      s.mask[i] = usable(v) ? 1 : 0;
      s.counted[i] = s.mask[i] && !(double(v) == noise.clipped_value) ? 1 : 0;
    }
  };
  Sample s;
  if (layout.whole) {
    s.image = Volume(d);
    reads.copy_blocks({{0, 0, 0}}, d, s.image.view());
    mask_of(s);
    s.places = {{0, 0, 0}};
    s.block = std::max(d.nx, d.ny);
    return s;
  }
  const i64 bxy = layout.bxy, bz = layout.bz;
  const i64 cx = d.nx / bxy, cy = d.ny / bxy;
  // In-plane, blocks centred in the image (what they leave out is its edge, mostly air or
  // padding). Along z, layers from the first slice to the last, overlapping where the depth does
  // not divide: the noise may change from slice to slice, and layers centred in the volume left
  // its end slices out (a dose lowest at both ends of 24 slices, NLM 0.77 x the best).
  const i64 x0 = (d.nx - cx * bxy) / 2, y0 = (d.ny - cy * bxy) / 2;
  // Layers of a long volume are spread over it, layout.most_candidates blocks at most but never
  // fewer than kLeastLayers layers: every block of all its layers was looked at (below) and
  // scored, and for a 1024^3 volume that took 0.43 s of a 4.7 s command on 16 cores (75 000
  // blocks; the sample takes 64).
  const i64 layers =
      std::min((d.nz + bz - 1) / bz, std::max(kLeastLayers, (layout.most_candidates + cx * cy - 1) / (cx * cy)));
  // Every block of those layers is looked at: it is a candidate when padding fills at most a
  // tenth of it.
  std::vector<Corner> candidates;
  for (i64 layer = 0; layer < layers; ++layer) {
    const i64 z0 = layers == 1 ? (d.nz - bz) / 2 : (layer * (d.nz - bz) + (layers - 1) / 2) / (layers - 1);
    const std::vector<i64> bad = reads.unusable_per_block({x0, y0, z0}, bxy, bz, cx, cy, 1, excluded);
    for (i64 block = 0; block < cx * cy; ++block) {
      if (bad[std::size_t(block)] * 10 <= bxy * bxy * bz) candidates.push_back({x0 + (block % cx) * bxy, y0 + block / cx * bxy, z0});
    }
  }
  if (candidates.empty()) {
    throw Error(ErrorKind::InvalidArgument, "the image has no region free of padding to estimate the filter strength on");
  }
  // By content: the candidates ordered by their structure score (ties in the image's order), so
  // that the runs below take blocks of every kind in the image's proportions. A sample in the
  // image's order spreads well in space but may miss what few blocks hold: the spheres in a
  // cylinder (48 x 128 x 128, white noise) sampled 9 blocks, all on the cylinder's edge and none
  // on the -100 HU sphere that 5 of 64 candidates hold, and NLM was 8.2 dB over-smoothed. And
  // which blocks a small sample holds moved the choice: with the golden-ratio sequence started
  // at 1, 2 or 3 instead of 0 the held-out 3D cases were 77, 74 and 72 within the goal instead
  // of 82, the worst 4.48 dB over-smoothed; by content, with kLeastBlocks blocks, 75-78 and
  // 1.13 dB (bench/results/2026-11-30-sample-by-content.md).
  if (order == BlockOrder::Content) {
    const std::vector<i64> scores = structure_scores(reads, candidates, bxy, bz, noise);
    std::vector<std::size_t> by_score(candidates.size());
    for (std::size_t i = 0; i < by_score.size(); ++i) by_score[i] = i;
    std::stable_sort(by_score.begin(), by_score.end(), [&](std::size_t a, std::size_t b) { return scores[a] < scores[b]; });
    std::vector<Corner> sorted;
    sorted.reserve(candidates.size());
    for (const std::size_t i : by_score) sorted.push_back(candidates[i]);
    candidates = std::move(sorted);
  }
  const i64 count = std::min<i64>(layout.wanted, i64(candidates.size()));
  const Dims sd = layout.dims(count);
  const i64 gx = sd.nx / bxy, used = gx * (sd.ny / bxy);
  s.image = Volume(sd);
  s.block = bxy;
  s.blocks_per_row = gx;
  // One block from each of `used` equal runs of the candidates (in the image's order: x, then y,
  // then z), at an offset into its run that moves by the golden ratio from one run to the next.
  // At one offset for all (each run's first) the blocks fell into a lattice wherever the runs'
  // length was near a multiple of a row: the 24-slice abdomen phantom's sample held four places
  // of its 5 x 5, on the diagonal, in every layer, and nearness in place then told the tiles'
  // noise levels as well as their values did ("intensity levels" refused, NLM 6.5 dB under).
  // Each pick comes after the one before it: where the runs are under two candidates long (a
  // map sample of 64 blocks from fewer than 128 candidates), an offset near 1 and the next run's
  // near 0 took one candidate twice (headsq's map sample: 36 places, 29 of them distinct).
  constexpr double kGoldenRatioFraction = 0.6180339887498949;  // (sqrt 5 - 1) / 2
  std::vector<Corner> chosen;
  const i64 n = i64(candidates.size());
  const double run = double(n) / double(used);
  i64 previous = -1;
  for (i64 b = 0; b < used; ++b) {
    const double offset = std::fmod(double(b) * kGoldenRatioFraction, 1.0);
    const i64 at = std::clamp<i64>(i64(std::floor((double(b) + offset) * run)), previous + 1, n - used + b);
    previous = at;
    const Corner& c = candidates[std::size_t(at)];
    chosen.push_back(c);
    s.places.push_back({c.x, c.y, c.z});
  }
  reads.copy_blocks(chosen, {bxy, bxy, bz}, s.image.view());
  mask_of(s);
  // The margins do not count.
  const i64 halo = layout.halo;
  s.halo = halo;
  for (i64 z = 0; z < sd.nz; ++z)
    for (i64 y = 0; y < sd.ny; ++y)
      for (i64 x = 0; x < sd.nx; ++x) {
        const i64 bx = x % bxy, by = y % bxy;
        if (bx < halo || by < halo || bx >= bxy - halo || by >= bxy - halo) s.counted[std::size_t((z * sd.ny + y) * sd.nx + x)] = 0;
      }
  s.tile_xy = bxy;
  return s;
}

std::vector<cpu::OutputBox> counted_boxes(const Sample& s) {
  const Dims d = s.image.dims();
  if (s.halo == 0) return {};
  // Each row of blocks within its margins along y, and across the row along x, margins between
  // blocks included: the filter's loops run along x, and rows of one block (32-64 voxels) took
  // longer than the whole sample (bench/NOTES.md, 2026-11-28). At most 16 rows a box, so that the
  // threads share the work.
  constexpr i64 kRows = 16;
  std::vector<cpu::OutputBox> boxes;
  for (i64 y = 0; y + s.block <= d.ny; y += s.block)
    for (i64 y0 = y + s.halo; y0 < y + s.block - s.halo; y0 += kRows)
      boxes.push_back({s.halo, y0, 0, d.nx - s.halo, std::min(y0 + kRows, y + s.block - s.halo), d.nz});
  return boxes;
}

}  // namespace ctd::detail
