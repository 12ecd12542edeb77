// The automatic parameters' sample (src/core/auto_sample.hpp): its blocks, their margins and
// rims, the order of its candidates, and the noise level read over it (src/core/sample_levels.cpp).

#include "common/ct_phantom.hpp"
#include "common/test_util.hpp"
#include "core/auto_sample.hpp"
#include "core/image_reads.hpp"
#include "core/tile_reads.hpp"

#include <ctdenoise/auto_params.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace {

using i64 = std::int64_t;
using ctd_test::ct_phantom;

// Gaussian values of `sigma` everywhere: no padding, no anatomy, every block a candidate.
ctd::Volume gaussian_volume(const ctd::Dims& d, float sigma, unsigned seed) {
  ctd::Volume v(d);
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0, sigma);
  for (i64 i = 0; i < d.count(); ++i) v.data()[i] = normal(rng);
  return v;
}

// A model that excludes no value as padding.
ctd::NoiseModel model_without_padding() {
  ctd::NoiseModel m;
  m.excluded_value = std::numeric_limits<double>::quiet_NaN();
  return m;
}

TEST(AutoSample, TheBlocksMarginsDoNotCount) {
  // A large image (over kAutoWholeSliceVoxels: a slice up to that size is its own sample) is
  // sampled in blocks side by side; a voxel within the filter's reach of a block's edge sees
  // the next block's anatomy, so it is filtered but not counted.
  const ctd::Volume image = ct_phantom({768, 720, 1});
  ASSERT_GT(image.dims().count(), ctd::kAutoWholeSliceVoxels);
  const auto reads = ctd::detail::host_reads(image.view());
  const ctd::detail::SampleLayout layout = ctd::detail::sample_layout(image.dims(), 6, 0, ctd::detail::Margins::Image);
  ASSERT_FALSE(layout.whole);
  EXPECT_EQ(layout.halo, 6);
  ctd::NoiseModel model;
  model.excluded_value = -3024;
  const ctd::detail::Sample s = ctd::detail::make_sample(*reads, layout, model);
  const ctd::Dims d = s.image.dims();
  i64 counted = 0;
  for (i64 y = 0; y < d.ny; ++y)
    for (i64 x = 0; x < d.nx; ++x) {
      const std::size_t i = std::size_t(y * d.nx + x);
      const i64 bx = x % layout.bxy, by = y % layout.bxy;
      const bool margin = bx < 6 || by < 6 || bx >= layout.bxy - 6 || by >= layout.bxy - 6;
      ASSERT_EQ(s.counted[i], margin ? 0 : s.mask[i]) << x << ", " << y;
      counted += s.counted[i];
    }
  EXPECT_GT(counted, ctd::kAutoSampleVoxels / 2);
  EXPECT_EQ(ctd::detail::sample_layout(image.dims(), 6, 0, ctd::detail::Margins::None).halo, 0);
}

TEST(AutoSample, RimsDoNotCountAndLeaveTheBlocksAsWithoutMargins) {
  // The bilateral filter's blocks: the blocks without margins (a 64 x 64 volume holds four a
  // layer; with the image's margins around them, one), each copied whole, its rim within the
  // filter's reach of its edge filtered but not counted: what counts sees its own block.
  const ctd::Dims d{64, 64, 40};
  const ctd::Volume image = gaussian_volume(d, 50, 17);
  const ctd::NoiseModel no_padding = model_without_padding();
  const auto reads = ctd::detail::host_reads(image.view());
  const ctd::detail::SampleLayout rim = ctd::detail::sample_layout(d, 3, 3, ctd::detail::Margins::Rim);
  ASSERT_FALSE(rim.whole);
  ASSERT_EQ(rim.bxy, ctd::detail::sample_layout(d, 3, 3, ctd::detail::Margins::None).bxy);
  ASSERT_EQ(rim.halo, 3);
  EXPECT_EQ(d.nx / ctd::detail::sample_layout(d, 3, 3, ctd::detail::Margins::Image).bxy, 1);
  const ctd::detail::Sample s = ctd::detail::make_sample(*reads, rim, no_padding);
  // The same blocks as plain ones: their tiles read the levels and textures as before.
  const ctd::detail::Sample plain = ctd::detail::make_sample(*reads, ctd::detail::sample_layout(d, 3, 3, ctd::detail::Margins::None), no_padding);
  ASSERT_EQ(s.places.size(), plain.places.size());
  std::set<std::pair<i64, i64>> in_plane;
  const ctd::Dims sd = s.image.dims();
  const i64 bxy = rim.bxy, halo = 3, per_row = sd.nx / bxy;
  for (std::size_t b = 0; b < s.places.size(); ++b) {
    SCOPED_TRACE(b);
    in_plane.insert({s.places[b].x, s.places[b].y});
    ASSERT_EQ(s.places[b].x, plain.places[b].x);
    ASSERT_EQ(s.places[b].y, plain.places[b].y);
    ASSERT_EQ(s.places[b].z, plain.places[b].z);
    const i64 tx = i64(b) % per_row * bxy, ty = i64(b) / per_row * bxy;
    for (i64 z = 0; z < sd.nz; ++z)
      for (i64 y = 0; y < bxy; ++y)
        for (i64 x = 0; x < bxy; ++x) {
          const std::size_t i = std::size_t((z * sd.ny + ty + y) * sd.nx + tx + x);
          ASSERT_EQ(s.image.data()[i], image.view()(s.places[b].x + x, s.places[b].y + y, s.places[b].z + z));
          const bool edge = x < halo || y < halo || x >= bxy - halo || y >= bxy - halo;
          ASSERT_EQ(s.counted[i], edge ? 0 : 1) << x << ", " << y << ", " << z;
        }
  }
  EXPECT_EQ(in_plane.size(), 4u);
}

TEST(AutoSample, TheLayersReachTheFirstAndTheLastSlice) {
  // 24 slices in layers 10 deep: centred, the layers left out slices 0-1 and 22-23, and a dose
  // lowest at both ends was read from the middle slices only (NLM 0.77 x the best h). Every
  // slice is in some layer; where the depth does not divide, the layers overlap.
  for (const i64 nz : {i64(24), i64(20), i64(13)}) {
    SCOPED_TRACE(nz);
    const ctd::Volume image = ct_phantom({160, 160, nz});
    const ctd::detail::SampleLayout layout = ctd::detail::sample_layout(image.dims(), 3, 4, ctd::detail::Margins::None);
    ASSERT_FALSE(layout.whole);
    ASSERT_EQ(layout.bz, 10);
    ctd::NoiseModel model;
    model.excluded_value = -3024;
    const ctd::detail::Sample s = ctd::detail::make_sample(*ctd::detail::host_reads(image.view()), layout, model);
    std::vector<int> covered(std::size_t(nz), 0);
    for (const auto& place : s.places) {
      ASSERT_GE(place.z, 0);
      ASSERT_LE(place.z + layout.bz, nz);
      for (i64 z = place.z; z < place.z + layout.bz; ++z) covered[std::size_t(z)] = 1;
    }
    EXPECT_EQ(covered.front(), 1);
    EXPECT_EQ(covered.back(), 1);
  }
}

TEST(AutoSample, ALongVolumesLayersAreSpreadFromItsFirstSliceToItsLast) {
  // Every block of every layer was looked at and scored: a 1024^3 volume's 75 000 took 0.43 s on
  // 16 cores. A long volume's candidates come from most_candidates blocks, in at least
  // kLeastLayers layers that still reach its first and last slices.
  const ctd::Dims d{160, 160, 120};
  const ctd::Volume image = gaussian_volume(d, 20, 5);
  ctd::detail::SampleLayout layout = ctd::detail::sample_layout(d, 3, 2, ctd::detail::Margins::None);
  ASSERT_FALSE(layout.whole);
  ASSERT_EQ(layout.bz, 6);  // 20 layers
  auto layers_of = [&](const ctd::detail::SampleLayout& l) {
    const ctd::detail::Sample s = ctd::detail::make_sample(*ctd::detail::host_reads(image.view()), l, model_without_padding(),
                                                           ctd::detail::BlockOrder::Place);
    std::set<i64> zs;
    for (const auto& place : s.places) zs.insert(place.z);
    return zs;
  };
  EXPECT_EQ(layers_of(layout).size(), 20u);
  layout.most_candidates = 1;
  const std::set<i64> spread = layers_of(layout);
  EXPECT_LE(spread.size(), std::size_t(ctd::detail::kLeastLayers));
  EXPECT_GE(spread.size(), std::size_t(ctd::detail::kLeastLayers) - 2);
  EXPECT_EQ(*spread.begin(), 0);
  EXPECT_EQ(*spread.rbegin(), d.nz - layout.bz);
}

TEST(AutoSample, TheBlocksSpreadOverTheImageInEveryLayer) {
  // 3 layers of 5 x 5 candidate blocks (no padding), 12 blocks taken: evenly spaced through the
  // candidates at one offset, they fell on four places of the diagonal, the same in every layer,
  // and the tiles' nearest others were the same places in other layers.
  const ctd::Dims d{160, 160, 24};
  const ctd::Volume image = gaussian_volume(d, 20, 11);
  ctd::detail::SampleLayout layout = ctd::detail::sample_layout(d, 3, 4, ctd::detail::Margins::None);
  ASSERT_EQ(layout.bxy, 32);
  layout.wanted = 12;  // as the filter's sample held before it took 16 blocks at least
  const ctd::detail::Sample s = ctd::detail::make_sample(*ctd::detail::host_reads(image.view()), layout, model_without_padding());
  ASSERT_EQ(s.places.size(), 12u);
  std::vector<std::array<i64, 2>> in_plane;
  std::vector<i64> layers;
  for (const auto& place : s.places) in_plane.push_back({place.x, place.y}), layers.push_back(place.z);
  std::sort(in_plane.begin(), in_plane.end());
  std::sort(layers.begin(), layers.end());
  EXPECT_GE(std::unique(in_plane.begin(), in_plane.end()) - in_plane.begin(), 9);
  EXPECT_EQ(std::unique(layers.begin(), layers.end()) - layers.begin(), 3);
}

TEST(AutoSample, TheStructureScoreCountsLowContrastEdgesOnly) {
  // A 32 x 32 slice of white noise (sigma 20) alone, with a disc 140 HU above its surroundings
  // (what NLM can blur), and with an edge of 1040 HU (air and body: NLM keeps it whatever h).
  // Only the disc scores: noise alone passes 1.4 sigma between two box means 3 voxels apart
  // (a difference of sigma 0.47) at 3 places in 1000, the edge's differences are all over 8 sigma.
  const ctd::Dims d{32, 32, 1};
  std::mt19937 rng(29);
  std::normal_distribution<float> normal(0, 20);
  ctd::Volume noise(d), disc(d), edge(d);
  for (i64 y = 0; y < d.ny; ++y)
    for (i64 x = 0; x < d.nx; ++x) {
      const float n = normal(rng);
      noise.view()(x, y, 0) = 40 + n;
      disc.view()(x, y, 0) = ((x - 15.5) * (x - 15.5) + (y - 15.5) * (y - 15.5) < 64 ? 180.0f : 40.0f) + n;
      edge.view()(x, y, 0) = (x < 16 ? -1000.0f : 40.0f) + n;
    }
  const std::vector<float> no_padding;
  const i64 alone = ctd::detail::low_contrast_structure(noise.view(), no_padding, 1.0);
  const i64 with_disc = ctd::detail::low_contrast_structure(disc.view(), no_padding, 1.0);
  const i64 with_edge = ctd::detail::low_contrast_structure(edge.view(), no_padding, 1.0);
  EXPECT_LT(alone, 20);
  EXPECT_LT(with_edge, 20);
  EXPECT_GT(with_disc, 100);
  // Padding (or NaN) in a box leaves that box out.
  ctd::Volume padded = disc;
  for (i64 y = 0; y < d.ny; ++y)
    for (i64 x = 16; x < d.nx; ++x) padded.view()(x, y, 0) = -3024;
  EXPECT_LT(ctd::detail::low_contrast_structure(padded.view(), {-3024.0f}, 1.0), with_disc);
  // No sigma read (a flat slice): 0.
  ctd::Volume flat(d);
  for (i64 i = 0; i < flat.size(); ++i) flat.data()[i] = 40;
  EXPECT_EQ(ctd::detail::low_contrast_structure(flat.view(), no_padding, 1.0), 0);
}

TEST(AutoSample, BlocksByContentHoldARareLowContrastEdge) {
  // Spheres of 300, -100 and 1000 HU in a cylinder of 40 HU in air, white noise of 20 HU. At
  // NLM's default reach a sample of 2^17 voxels holds 9 blocks of 14 slices; in the image's order
  // they held the cylinder's edge and none of the -100 HU sphere (in 5 of the 64 candidates), the
  // one edge NLM blurs, and NLM was 8.2 dB over-smoothed. Ordered by their low-contrast structure,
  // the same 9 blocks take it; and a sample now holds 16 blocks at least.
  const ctd::Dims d{128, 128, 48};
  ctd::Volume clean(d), noisy(d);
  std::mt19937 rng(23);
  std::normal_distribution<float> normal(0, 20);
  auto in_sphere = [](i64 x, i64 y, i64 z, double cx, double cy, double cz, double r) {
    return (x - cx) * (x - cx) + (y - cy) * (y - cy) + (z - cz) * (z - cz) < r * r;
  };
  for (i64 z = 0; z < d.nz; ++z)
    for (i64 y = 0; y < d.ny; ++y)
      for (i64 x = 0; x < d.nx; ++x) {
        float v = (x - 64.0) * (x - 64.0) + (y - 64.0) * (y - 64.0) < 56.0 * 56.0 ? 40.0f : -1000.0f;
        if (in_sphere(x, y, z, 44, 60, 24, 12)) v = 300;
        if (in_sphere(x, y, z, 84, 70, 20, 9)) v = -100;
        if (in_sphere(x, y, z, 64, 90, 30, 7)) v = 1000;
        clean.view()(x, y, z) = v;
        noisy.view()(x, y, z) = v + normal(rng);
      }
  ctd::NoiseModel noise = model_without_padding();
  noise.sigma = 20;
  noise.covariance = {400};
  ctd::detail::SampleLayout layout = ctd::detail::sample_layout(d, 6, 6, ctd::detail::Margins::None);
  ASSERT_EQ(layout.bz, 14);
  EXPECT_EQ(layout.wanted, 16);
  layout.wanted = 9;
  const auto reads = ctd::detail::host_reads(noisy.view());
  auto sphere_voxels = [&](const ctd::detail::Sample& s) {
    i64 count = 0;
    for (const auto& p : s.places)
      for (i64 z = p.z; z < p.z + layout.bz; ++z)
        for (i64 y = p.y; y < p.y + layout.bxy; ++y)
          for (i64 x = p.x; x < p.x + layout.bxy; ++x) count += clean.view()(x, y, z) == -100.0f ? 1 : 0;
    return count;
  };
  const ctd::detail::Sample by_content = ctd::detail::make_sample(*reads, layout, noise, ctd::detail::BlockOrder::Content);
  ASSERT_EQ(by_content.places.size(), 9u);
  EXPECT_GT(sphere_voxels(by_content), 500);
  // Its blocks are still the image's blocks, each copied whole.
  for (std::size_t b = 0; b < by_content.places.size(); ++b) {
    const i64 sx = i64(b % std::size_t(by_content.blocks_per_row)) * by_content.block;
    const i64 sy = i64(b / std::size_t(by_content.blocks_per_row)) * by_content.block;
    const auto& p = by_content.places[b];
    EXPECT_EQ(by_content.image.view()(sx + 31, sy + 2, 13), noisy.view()(p.x + 31, p.y + 2, p.z + 13));
  }
}

TEST(AutoSample, NoBlockIsTakenTwiceWhereTheCandidatesAreFew) {
  // The scan-like map's sample asks for 64 blocks of 10 slices; this volume has 75 candidates
  // (5 x 5 in-plane, 3 layers). Evenly spaced runs of 75 / 64 candidates, each at an offset moved
  // by the golden ratio, took 10 candidates twice (54 distinct places). The held-out headsq
  // volume's map sample (40 candidates) held 36 places, 29 of them distinct.
  const ctd::Dims d{160, 160, 24};
  const ctd::Volume image = gaussian_volume(d, 20, 13);
  ctd::detail::SampleLayout layout = ctd::detail::sample_layout(d, 3, 4, ctd::detail::Margins::None);
  layout.bz = 10;
  layout.wanted = 64;
  const ctd::detail::Sample s = ctd::detail::make_sample(*ctd::detail::host_reads(image.view()), layout, model_without_padding());
  ASSERT_EQ(s.places.size(), 64u);
  std::vector<std::array<i64, 3>> places;
  for (const auto& place : s.places) places.push_back({place.x, place.y, place.z});
  std::sort(places.begin(), places.end());
  EXPECT_EQ(std::unique(places.begin(), places.end()) - places.begin(), 64);
  // Each block holds the image's voxels at its place.
  for (std::size_t b = 0; b < s.places.size(); ++b) {
    const i64 sx = i64(b % std::size_t(s.blocks_per_row)) * s.block, sy = i64(b / std::size_t(s.blocks_per_row)) * s.block;
    EXPECT_EQ(s.image.view()(sx + 3, sy + 5, 7), image.view()(s.places[b].x + 3, s.places[b].y + 5, s.places[b].z + 7));
  }
}

TEST(AutoSample, FlatPartsReadTheVarianceWhateverTheTexture) {
  // White noise and the same noise blurred by [1 2 1] / 4 along x and y: the second differences
  // two voxels apart read sqrt(6) sigma of white noise and, for the blurred noise, the root of
  // the sum of squares of that operator convolved with the blur (computed here); the
  // pseudo-residual sigma falls far more with the blur (finer noise reads higher).
  const ctd::Dims d{96, 80, 1};
  std::mt19937_64 rng(5);
  std::normal_distribution<double> normal(0.0, 10.0);
  ctd::Volume white(d), blurred(d);
  for (i64 i = 0; i < d.count(); ++i) white.data()[i] = float(normal(rng));
  const std::array<double, 3> k{0.25, 0.5, 0.25};
  for (i64 y = 0; y < d.ny; ++y)
    for (i64 x = 0; x < d.nx; ++x) {
      double sum = 0;
      for (int j = -1; j <= 1; ++j)
        for (int i = -1; i <= 1; ++i) {
          const i64 xx = (x + i + d.nx) % d.nx, yy = (y + j + d.ny) % d.ny;  // periodic: stationary
          sum += k[std::size_t(i + 1)] * k[std::size_t(j + 1)] * white.view()(xx, yy, 0);
        }
      blurred.view()(x, y, 0) = float(sum);
    }
  // The operator [1 0 -2 0 1] along x convolved with the separable blur: (along x) [1 0 -2 0 1] * k, times k along y.
  std::array<double, 7> along{};
  const std::array<double, 5> second{1, 0, -2, 0, 1};
  for (int a = 0; a < 5; ++a)
    for (int b = 0; b < 3; ++b) along[std::size_t(a + b)] += second[std::size_t(a)] * k[std::size_t(b)];
  double energy = 0;
  for (double v : along)
    for (double w : k) energy += v * v * w * w;
  const ctd::detail::FlatReading w = ctd::detail::read_flat_part(white, {});
  const ctd::detail::FlatReading b = ctd::detail::read_flat_part(blurred, {});
  EXPECT_NEAR(w.second_difference_sigma, std::sqrt(6.0) * 10, 0.04 * std::sqrt(6.0) * 10);
  EXPECT_NEAR(b.second_difference_sigma, std::sqrt(energy) * 10, 0.04 * std::sqrt(energy) * 10);
  EXPECT_NEAR(w.residual_sigma, 10, 0.4);
  // Relative to the second differences, the pseudo-residual sigma of the blurred noise is lower.
  EXPECT_LT(b.residual_sigma / b.second_difference_sigma, 0.8 * w.residual_sigma / w.second_difference_sigma);
}

TEST(AutoSample, TheLevelsChanceScatterIsReadFromEachTileAlone) {
  // Many tiles of stationary noise, white and blurred by [1 2 1] / 4 along x (fewer independent
  // residuals: more scatter): the log of each one's flat-part sigma scatters by chance alone, and
  // the mean of flat_level_scatter, read in each tile on its own, estimates that variance. In a
  // slice and in a 4-slice tile of a volume (until 2026-11-29 its halves alternated with the
  // slice, no voxel kept both slice neighbours, and the 3D reading was NaN).
  constexpr int kTiles = 400;
  std::mt19937_64 rng(11);
  std::normal_distribution<double> normal(0.0, 10.0);
  for (const ctd::Dims d : {ctd::Dims{32, 32, 1}, ctd::Dims{32, 32, 4}})
    for (const bool blur : {false, true}) {
      std::vector<double> logs;
      double scatter = 0;
      for (int t = 0; t < kTiles; ++t) {
        ctd::Volume tile(d);
        std::vector<double> row(std::size_t(d.nx) + 2);
        for (i64 z = 0; z < d.nz; ++z)
          for (i64 y = 0; y < d.ny; ++y) {
            for (double& v : row) v = normal(rng);
            for (i64 x = 0; x < d.nx; ++x) {
              const std::size_t i = std::size_t(x) + 1;
              tile.view()(x, y, z) = float(blur ? 0.25 * row[i - 1] + 0.5 * row[i] + 0.25 * row[i + 1] : row[i]);
            }
          }
        logs.push_back(std::log(ctd::detail::flat_residual_sigma(tile, {})));
        scatter += ctd::detail::flat_level_scatter(tile, {}) / kTiles;
      }
      double mean = 0, variance = 0;
      for (double l : logs) mean += l / kTiles;
      for (double l : logs) variance += (l - mean) * (l - mean) / (kTiles - 1);
      SCOPED_TRACE(std::string(blur ? "blurred" : "white") + (d.nz > 1 ? ", 3D" : ", 2D"));
      EXPECT_GT(variance, 0.0);
      EXPECT_NEAR(scatter / variance, 1.0, 0.3) << "estimated " << scatter << ", across the tiles " << variance;
    }
}

TEST(AutoSample, ALevelKnownToVaryIsReadTileByTile) {
  // Every 32 x 32 tile of a 128 x 128 slice holds quiet noise (sigma 10) in its left half and
  // loud noise (sigma 40) in its right half, as a shrunk scan's tiles hold air and body. Their flat
  // parts lean to the quiet half, so the level is one, the quiet one; where the image's rays are
  // known to explain the tiles' levels (scan_map), each tile's own level is read: the mix.
  const ctd::Dims d{128, 128, 1};
  std::mt19937_64 rng(13);
  std::normal_distribution<double> normal(0.0, 1.0);
  ctd::Volume image(d);
  for (i64 y = 0; y < d.ny; ++y)
    for (i64 x = 0; x < d.nx; ++x) image.view()(x, y, 0) = float((x % 32 < 16 ? 10.0 : 40.0) * normal(rng));
  ctd::NoiseModel model = model_without_padding();
  model.sigma = 10;
  model.pseudo_residual_sigma = 10;
  const auto reads = ctd::detail::host_reads(image.view());
  const ctd::detail::SampleLayout layout = ctd::detail::sample_layout(d, 6, 0, ctd::detail::Margins::None);
  ASSERT_TRUE(layout.whole);
  ctd::detail::Sample one = ctd::detail::make_sample(*reads, layout, model);
  ctd::detail::measure_level(one, model);
  EXPECT_EQ(one.noise_over_image, "one level");
  EXPECT_NEAR(one.level, 10.0, 2.0);
  ctd::detail::Sample varied = ctd::detail::make_sample(*reads, layout, model);
  ctd::detail::measure_level(varied, model, true);
  EXPECT_EQ(varied.noise_over_image.rfind("tile levels", 0), 0u) << varied.noise_over_image;
  // The root mean square of the two halves' levels is 29.2; a tile's robust reading of the mix
  // lies between the halves.
  EXPECT_GT(varied.level, 1.5 * one.level);
  EXPECT_LT(varied.level, 40.0);
}

TEST(AutoSample, SmoothNoiseKnownToVaryIsReadTileByTile) {
  // As above, with the noise blurred by a Gaussian and the image's left half quiet (sigma 10),
  // its right half loud (40). Blurred by 1.2 voxels, pseudo-residuals see 4 % of the noise's
  // variance, too little for a tile's level to be believed where nothing else says the level
  // varies (a scan's own finer noise or anatomy, magnified 5 x, can make it seem to); where the
  // image's rays explain the tiles' levels, they are read (a zoomed fan-beam reconstruction with
  // Hann's window: 5.4 %). Blurred by 2 voxels (0.6 %) the model's level stands even then.
  const ctd::Dims d{128, 128, 1};
  for (const double width : {1.2, 2.0}) {
    const std::vector<double> field = testing_util::filtered_noise(d, testing_util::gaussian_taps(width), 19);
    ctd::Volume image(d);
    for (i64 y = 0; y < d.ny; ++y)
      for (i64 x = 0; x < d.nx; ++x) {
        const i64 i = y * d.nx + x;
        image.data()[i] = float((x < 64 ? 10.0 : 40.0) * field[std::size_t(i)]);
      }
    // The quiet noise's own model, read on a field of it alone.
    const ctd::Volume quiet = testing_util::smooth_field({256, 256, 1}, testing_util::gaussian_taps(width), 10, 23);
    const ctd::NoiseModel model = ctd::estimate_noise_model(quiet.view());
    const double gain = ctd::detail::pseudo_residual_gain(model);
    ASSERT_LT(gain, width < 1.5 ? 0.06 : 0.03) << width;
    ASSERT_GT(gain, width < 1.5 ? 0.03 : 0.0) << width;
    const auto reads = ctd::detail::host_reads(image.view());
    const ctd::detail::SampleLayout layout = ctd::detail::sample_layout(d, 6, 0, ctd::detail::Margins::None);
    ctd::detail::Sample one = ctd::detail::make_sample(*reads, layout, model);
    ctd::detail::measure_level(one, model);
    EXPECT_EQ(one.noise_over_image, "one level") << width;
    EXPECT_NEAR(one.level, model.sigma, 1e-3) << width;
    ctd::detail::Sample varied = ctd::detail::make_sample(*reads, layout, model);
    ctd::detail::measure_level(varied, model, true);
    if (width < 1.5) {
      // Each tile at its level, with the model's texture: the halves' root mean square is 29.2.
      EXPECT_EQ(varied.noise_over_image, "tile levels");
      EXPECT_GT(varied.level, 2 * one.level);
      EXPECT_LT(varied.level, 40.0);
    } else {
      EXPECT_EQ(varied.noise_over_image, "one level");
      EXPECT_NEAR(varied.level, model.sigma, 1e-3);
    }
  }
}

TEST(AutoSample, ALevelThatRisesMildlyLeansTileByTile) {
  // Noise whose level rises toward the slice's middle, as FBP noise's does in a body: by `rise`
  // times at the centre, over a Gaussian of 48 voxels. With no rise the tiles' flat parts agree
  // and one level stands. Where their levels, smoothed over each tile's nearest, span 1.15 to 1.5
  // (a rise of 0.8: about 1.2), smooth noise (as Hann's window makes: white noise blurred by 0.8
  // voxels here) has each tile's level lean toward its own, so the middle is read louder than the
  // corner, by less than the noise is; fine-grained noise (white) keeps one level, as few views'
  // streaks vary its flat parts with anatomy. Where they span more (a rise of 3: about 1.65) the
  // tiles' levels are read as they are.
  const ctd::Dims d{192, 192, 1};
  auto level_of = [&](double x, double y, double rise) {
    const double dx = x - 95.5, dy = y - 95.5;
    return 30.0 * (1.0 + rise * std::exp(-(dx * dx + dy * dy) / (2 * 48.0 * 48.0)));
  };
  auto tile_level = [&](i64 x0, i64 y0, double rise) {  // the root mean square over a 32 x 32 tile
    double sum2 = 0;
    for (i64 y = y0; y < y0 + 32; ++y)
      for (i64 x = x0; x < x0 + 32; ++x) sum2 += level_of(double(x), double(y), rise) * level_of(double(x), double(y), rise);
    return std::sqrt(sum2 / (32 * 32));
  };
  for (const bool smooth : {false, true}) {
    const std::vector<double> field =
        smooth ? testing_util::blurred_noise(d, 0.8, 31) : testing_util::filtered_noise(d, std::vector<double>{1.0}, 31);
    for (const double rise : {0.0, 0.8, 3.0}) {
      SCOPED_TRACE(std::string(smooth ? "smooth" : "white") + " noise, rise " + std::to_string(rise));
      ctd::Volume image(d);
      for (i64 y = 0; y < d.ny; ++y)
        for (i64 x = 0; x < d.nx; ++x)
          image.view()(x, y, 0) = float(level_of(double(x), double(y), rise) * field[std::size_t(y * d.nx + x)]);
      const ctd::NoiseModel model = ctd::estimate_noise_model(image.view());
      const double gain = ctd::detail::pseudo_residual_gain(model);
      if (smooth) {
        ASSERT_GT(gain, 0.1);
        ASSERT_LT(gain, 0.3);
      } else {
        ASSERT_GT(gain, 0.8);
      }
      const auto reads = ctd::detail::host_reads(image.view());
      const ctd::detail::SampleLayout layout = ctd::detail::sample_layout(d, 5, 0, ctd::detail::Margins::None);
      ASSERT_TRUE(layout.whole);
      ctd::detail::Sample s = ctd::detail::make_sample(*reads, layout, model);
      ctd::detail::measure_level(s, model);
      ASSERT_EQ(s.tiles.size(), 36u);  // 32 x 32 each
      const double middle = s.level_at[std::size_t(100 * d.nx + 100)], corner = s.level_at[std::size_t(4 * d.nx + 4)];
      const double true_middle = tile_level(96, 96, rise), true_corner = tile_level(0, 0, rise);
      if (rise == 0.0 || (rise < 1.0 && !smooth)) {
        EXPECT_EQ(s.noise_over_image, "one level");
        EXPECT_EQ(middle, corner);
      } else if (rise < 1.0) {
        EXPECT_EQ(s.noise_over_image, ctd::detail::Sample::kMildTileLevels);
        EXPECT_GT(middle / corner, 1.1) << middle << " / " << corner;
        EXPECT_LT(middle / corner, true_middle / true_corner) << middle << " / " << corner;
      } else {
        EXPECT_EQ(s.noise_over_image.rfind("tile levels", 0), 0u) << s.noise_over_image;
        EXPECT_NE(s.noise_over_image, ctd::detail::Sample::kMildTileLevels);
        EXPECT_GT(middle / corner, 1.5) << middle << " / " << corner;
      }
      if (rise == 0.0) {
        EXPECT_NEAR(s.level, model.sigma, 0.05 * model.sigma);
      }
      if (rise > 0.0 && s.noise_over_image != "one level") {
        EXPECT_GT(corner, 0.9 * true_corner);
        EXPECT_LT(middle, 1.1 * true_middle);
      }
    }
  }
}

}  // namespace
