// The sample the automatic parameters estimate their risk on, and the noise level (and texture)
// over it (src/core/auto_sample.cpp, src/core/sample_levels.cpp; docs/parameters.md, "The strength").
#pragma once

#include "core/image_reads.hpp"
#include "core/tile_reads.hpp"
#include "cpu/backend.hpp"

#include <ctdenoise/auto_params.hpp>
#include <ctdenoise/noise.hpp>
#include <ctdenoise/volume.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ctd::detail {

// The part of the image the risk is estimated on: the image itself when small, else blocks
// spread evenly over it (those mostly free of padding), tiled side by side in-plane. `mask` is 1
// on usable voxels (not padding, finite); `counted` on those the risk counts (usable and not in a
// block's margin).
struct Sample {
  Volume image;
  std::vector<unsigned char> mask, counted;
  float level = 0;  // the noise sigma the risk is estimated for: the root mean square of level_at
  std::vector<float> level_at;  // per voxel of the sample (see measure_level)
  // Where the noise varies over the image: each tile's own model (its level and texture) and the
  // tile of each voxel; else empty (the image's model at level_at).
  std::vector<NoiseModel> tile_models;
  std::vector<std::uint32_t> tile_of;
  // One level for all, or where the level varies only mildly, each tile's leaning toward its flat
  // part's (measure_level): levels a later reading that knows they vary may read again.
  static constexpr const char* kOneLevel = "one level";
  static constexpr const char* kMildTileLevels = "tile levels (mild)";
  static constexpr const char* kTileLevels = "tile levels";
  static constexpr const char* kTileLevelsAndTextures = "tile levels and textures";
  std::string noise_over_image = kOneLevel;  // AutoChoice::noise_over_image
  bool nearly_one_level() const { return noise_over_image == kOneLevel || noise_over_image == kMildTileLevels; }
  // Each tile at its own level (measure_level's `varies`), not leaning part of the way (mild).
  bool tile_levels() const { return noise_over_image == kTileLevels || noise_over_image == kTileLevelsAndTextures; }
  // Where the level follows the image's values ("intensity levels"): the noise's correlation read
  // on the sample in units of its levels (their variance-stabilising transform), at the image's
  // model's sigma (measure_level); else none.
  std::optional<NoiseModel> texture;
  // Where the sample's voxels lie in the image: (x, y, z) of sample voxel (0, 0, 0) of each block
  // of `block` voxels in-plane, blocks running x then y (the image itself: one block at 0).
  struct Place {
    std::int64_t x, y, z;
  };
  std::vector<Place> places;
  std::int64_t block = 0, blocks_per_row = 1;
  std::int64_t halo = 0;  // each block's margin in-plane that the risk does not count (SampleLayout::halo)
  std::int64_t tile_xy = 32;  // in-plane size of the tiles whose noise level measure_level reads
  // Those tiles: each one's first voxel and size in the sample, its centre in the image, and the
  // pseudo-residual sigma of its flat part (0 where too few of its voxels were usable), the same
  // read from a thinner flat part too (for the levels that follow the values: intensity_levels.hpp),
  // the median of its values there and that sigma's chance scatter in log (flat_level_scatter), and
  // the number of residuals the thin reading rests on.
  struct Tile {
    std::int64_t x0, y0, z0;
    Dims size;
    std::array<double, 3> centre;
    double flat_residual_sigma, thin_flat_residual_sigma, flat_median, flat_level_scatter;
    std::int64_t thin_flat_residuals = 0;
  };
  std::vector<Tile> tiles;
  // The block (index into places) that holds the sample's voxel (x, y, any z).
  std::size_t block_of(std::int64_t x, std::int64_t y) const { return std::size_t((y / block) * blocks_per_row + x / block); }
  std::array<double, 3> origin_of(std::int64_t x, std::int64_t y, std::int64_t z) const {
    const Place& p = places[block_of(x, y)];
    return {double(p.x + x % block), double(p.y + y % block), double(p.z + z)};
  }
};

constexpr std::int64_t kMostCandidates = 4096;
constexpr std::int64_t kLeastLayers = 16;

// The sample's blocks: their size, and how many make_sample takes where the image has enough
// candidates (whole: the image itself is the sample).
struct SampleLayout {
  bool whole = true;
  std::int64_t bxy = 0, bz = 0, wanted = 0;
  std::int64_t halo = 0;  // in-plane margin (around or, with rims, inside each block) that the risk does not count
  // The candidate blocks make_sample looks at, at most, in at least kLeastLayers layers spread
  // from the first slice to the last (a long volume's).
  std::int64_t most_candidates = kMostCandidates;
  // The sample's size with `count` blocks: as square an arrangement as fits.
  Dims dims(std::int64_t count) const {
    const std::int64_t gx = std::max<std::int64_t>(1, std::int64_t(std::floor(std::sqrt(double(count)))));
    const std::int64_t gy = std::max<std::int64_t>(1, count / gx);
    return {gx * bxy, gy * bxy, bz};
  }
  bool operator==(const SampleLayout&) const = default;
};
// What of each block of a sample counts: all of it (blocks side by side: the filter near a seam
// sees the next block), all of it with a margin of the image around it that does not count, or
// all but its own rim within the filter's reach of its edge.
enum class Margins { None, Image, Rim };
SampleLayout sample_layout(const Dims& d, int reach_xy, int reach_z, Margins margins);
// Blocks whose tiles the scan-like map is fitted to, at least (where the image has them).
constexpr std::int64_t kLeastMapBlocks = 64;
// Slices of those blocks in 3D (the filter's own blocks at NLM search radius 3, patch radius 1).
constexpr std::int64_t kMapBlockSlices = 10;

// How make_sample picks its blocks among the candidates: one from each equal run of them, the
// candidates in the image's order (Place: spread in space, for samples whose tiles tell where the
// noise is stronger) or ordered by how much low-contrast structure each holds (Content: every
// kind of block in the image's proportions, for the filter's risk; a rare edge that NLM can blur
// is then in the sample).
enum class BlockOrder { Place, Content };

// The image's blocks (or the image itself) copied side by side, with the mask; the noise level is
// left at its defaults until measure_level.
Sample make_sample(const ImageReads& reads, const SampleLayout& layout, const NoiseModel& noise,
                   BlockOrder order = BlockOrder::Place);

// The indices of the 9 points of `at` nearest `where` (ties: the lower index; `where` itself
// among them where it is one of `at`): a tile's neighbourhood, whose median levels smooth.
std::vector<std::size_t> nearest_tiles(const std::array<double, 3>& where, const std::vector<std::array<double, 3>>& at);

// var(pseudo-residual) / sigma^2 under the model's correlation: what estimate_noise reads of the
// noise, over the faces in-plane and, where the model has lags across slices and `across_slices`,
// across them too.
double pseudo_residual_gain(const NoiseModel& m, bool across_slices = true);

// Whether the model's noise is so smooth in-plane that pseudo-residuals there see under 6 % of its
// variance (white noise blurred by about 1.2 voxels or more): the sample's blocks, side by side
// in-plane, then get margins (auto_params.cpp). Where that holds across slices too, measure_level
// takes the model's level instead of the tiles' (in 3D, noise blurred in-plane alone is seen by
// pseudo-residuals across slices, but the filter wants as large an h).
bool too_smooth_for_plain_blocks(const NoiseModel& noise);

// Sets the sample's level (and, where the noise varies over the image, each tile's level and
// model) from the tiles' pseudo-residual sigma and semivariances. `known_to_vary`: the image's rays
// explain its tiles' levels (scan_map), so the level varies whatever the tiles' flat parts show.
void measure_level(Sample& s, const NoiseModel& noise, bool known_to_vary = false);

// A copy of the box of `v` (a volume of the sample's size: the sample or noise over it) whose
// first voxel is (x0, y0, z0), NaN where the sample's mask is 0.
Volume masked_part(const Volume& v, const Sample& s, std::int64_t x0, std::int64_t y0, std::int64_t z0, const Dims& size);

// Boxes of the sample that hold every voxel the risk may count (those within the blocks' margins);
// empty where the blocks have none (every voxel may count).
std::vector<cpu::OutputBox> counted_boxes(const Sample& s);

// auto_nlm_h and auto_bilateral_sigma_range of the image `image` reads (src/core/auto_params.cpp).
AutoChoice auto_nlm_h(const ImageReads& image, const NlmParams& params, const NoiseModel& noise,
                      const ExecContext& context, double strength);
AutoChoice auto_bilateral_sigma_range(const ImageReads& image, const BilateralParams& params, const NoiseModel& noise,
                                      const ExecContext& context, double strength);

}  // namespace ctd::detail
