// Noise estimation on synthetic images of known noise: edges, air and padding must not bias it.

#include "common/test_util.hpp"

#include <ctdenoise/auto_params.hpp>
#include <ctdenoise/noise.hpp>

#include "core/robust_stats.hpp"

#include <algorithm>
#include <cmath>
#include <random>

namespace {

// A CT-like phantom (air, soft tissue, bone, sharp edges) with padding outside a circular field
// of view, plus Gaussian noise of the given sigma inside the field of view.
ctd::Volume phantom(ctd::Dims dims, double sigma, std::uint32_t seed) {
  ctd::Volume v(dims);
  std::mt19937 rng(seed);
  std::normal_distribution<double> noise(0.0, sigma);
  for (std::int64_t z = 0; z < dims.nz; ++z)
    for (std::int64_t y = 0; y < dims.ny; ++y)
      for (std::int64_t x = 0; x < dims.nx; ++x) {
        const double fx = (x - dims.nx / 2.0) / (dims.nx / 2.0), fy = (y - dims.ny / 2.0) / (dims.ny / 2.0);
        double value = -1000;                                      // air
        if (fx * fx / 0.6 + fy * fy / 0.4 < 1) value = 40;         // body
        if ((fx - 0.2) * (fx - 0.2) + fy * fy < 0.03) value = 900;  // bone
        if (fx * fx + fy * fy > 0.95) {
          v.view()(x, y, z) = -3024;  // padding outside the field of view: no noise
          continue;
        }
        v.view()(x, y, z) = float(value + noise(rng));
      }
  return v;
}

TEST(Noise, BothEstimatorsRecoverTheNoiseDespiteEdgesAndPadding) {
  for (ctd::Dims dims : {ctd::Dims{256, 256, 1}, ctd::Dims{96, 96, 24}, ctd::Dims{128, 112, 2}}) {
    for (double sigma : {5.0, 20.0, 60.0}) {
      const ctd::Volume v = phantom(dims, sigma, 7);
      for (auto method : {ctd::NoiseEstimator::PseudoResidual, ctd::NoiseEstimator::WaveletMad}) {
        const auto e = ctd::estimate_noise(v.view(), method);
        EXPECT_NEAR(e.sigma, sigma, 0.05 * sigma) << ctd::to_string(method) << " nz=" << dims.nz;
        EXPECT_EQ(e.excluded_value, -3024.0);
        EXPECT_GT(e.samples, 1000);
      }
    }
  }
}

TEST(Noise, NoiselessImageGivesZeroAndTinyImagesAreRefused) {
  ctd::Volume flat_image({64, 64, 1});
  for (std::int64_t i = 0; i < flat_image.size(); ++i) flat_image.data()[i] = float(i % 64 < 32 ? 0 : 500);
  EXPECT_EQ(ctd::estimate_noise(flat_image.view()).sigma, 0.0);
  ctd::Volume tiny({2, 2, 1});
  EXPECT_TRUE(testing_util::throws_kind([&] { ctd::estimate_noise(tiny.view()); }, ctd::ErrorKind::InvalidArgument));
}

// A few NaN voxels among padding (a mask that marked them): the padding is still found and the
// noise still read (a NaN once broke the padding search's sort and ran it out of memory), and
// the automatic parameters end on the filters' clear refusal.
TEST(Noise, NonFiniteVoxelsDoNotStopThePaddingSearchOrTheModel) {
  ctd::Volume v = phantom({96, 96, 6}, 20.0, 5);
  for (std::int64_t i : {std::int64_t(0), v.size() / 3, v.size() - 1}) v.data()[i] = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> padding = ctd::detail::find_padding(*ctd::detail::host_reads(v.view())).values;
  ASSERT_FALSE(padding.empty());
  EXPECT_EQ(padding.front(), -3024.0f);
  const ctd::NoiseModel m = ctd::estimate_noise_model(v.view());
  EXPECT_NEAR(m.sigma, 20.0, 2.0);
  try {
    ctd::auto_nlm_h(v.view(), ctd::NlmParams{});
    FAIL() << "no throw";
  } catch (const ctd::Error& e) {
    EXPECT_EQ(e.kind(), ctd::ErrorKind::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("3 NaN or infinite"), std::string::npos) << e.what();
  }
}

// Padding fills regions; air clipped at the lowest stored value lies scattered among the air's
// noise. The first is left out of every reading, the second read as values (its tiles' levels
// are left out by the automatic parameters: ScanProbe.AirClippedAtItsLowestValueIsStillAir).
TEST(Noise, AClipFloorIsNotTakenForPadding) {
  for (const ctd::Dims dims : {ctd::Dims{160, 128, 1}, ctd::Dims{64, 72, 12}}) {
    ctd::Volume clipped = phantom(dims, 30.0, 11), region = clipped;
    std::int64_t floor = 0;
    for (std::int64_t i = 0; i < clipped.size(); ++i) {
      float& v = clipped.data()[i];
      if (v > -2000 && v < -1024) v = -1024, ++floor;
      if (region.data()[i] > -2000 && region.data()[i] < -900) region.data()[i] = -1024;  // air set to one value
    }
    ASSERT_GT(floor, clipped.size() / 50);  // the air is clipped, as a scanner stores it
    const ctd::detail::SpikeValues spikes = ctd::detail::find_spikes(*ctd::detail::host_reads(clipped.view()));
    EXPECT_EQ(spikes.padding.values, std::vector<float>{-3024.0f});
    EXPECT_TRUE(std::isnan(spikes.padding.in_regions_only));
    EXPECT_EQ(spikes.clipped, std::vector<float>{-1024.0f});
    const ctd::NoiseModel m = ctd::estimate_noise_model(clipped.view());
    EXPECT_EQ(m.excluded_value, -3024.0);
    EXPECT_EQ(m.clipped_value, -1024.0);
    const ctd::detail::SpikeValues set = ctd::detail::find_spikes(*ctd::detail::host_reads(region.view()));
    EXPECT_TRUE(set.clipped.empty());
    EXPECT_NE(std::find(set.padding.values.begin(), set.padding.values.end(), -1024.0f), set.padding.values.end());
    EXPECT_TRUE(std::isnan(ctd::estimate_noise_model(phantom(dims, 30.0, 11).view()).clipped_value));
    // The same floor outside the field of view too, as some scanners store it: padding in its
    // regions only, a clip floor elsewhere; the noise model then reads the air's level as where
    // the outside is another value.
    ctd::Volume both = clipped;
    for (std::int64_t i = 0; i < both.size(); ++i)
      if (both.data()[i] == -3024) both.data()[i] = -1024;
    const ctd::detail::SpikeValues mixed = ctd::detail::find_spikes(*ctd::detail::host_reads(both.view()));
    EXPECT_EQ(mixed.padding.values, std::vector<float>{-1024.0f});
    EXPECT_EQ(mixed.padding.in_regions_only, -1024.0f);
    EXPECT_EQ(mixed.clipped, std::vector<float>{-1024.0f});
    const ctd::NoiseModel mb = ctd::estimate_noise_model(both.view());
    EXPECT_EQ(mb.excluded_value, -1024.0);
    EXPECT_EQ(mb.clipped_value, -1024.0);
    EXPECT_NEAR(mb.sigma, m.sigma, 0.03 * m.sigma);
    EXPECT_NEAR(mb.pseudo_residual_sigma, m.pseudo_residual_sigma, 0.03 * m.pseudo_residual_sigma);
  }
}

TEST(NoiseEstimate, ASmallerSampleOfResidualsReadsTheSameLevel) {
  // The noise model reads each of many slices from a share of about a million residuals: every
  // step-th interior position, step = voxels / max_samples.
  const ctd::Volume v = testing_util::random_volume({301, 203, 5}, 17, -40, 40);  // uniform: sigma 40 / sqrt(3)
  const double truth = 80 / std::sqrt(12.0);
  const ctd::NoiseEstimate all = ctd::detail::estimate_noise_without(*ctd::detail::host_reads(v.view()), ctd::NoiseEstimator::PseudoResidual, {});
  const ctd::NoiseEstimate some =
      ctd::detail::estimate_noise_without(*ctd::detail::host_reads(v.view()), ctd::NoiseEstimator::PseudoResidual, {}, 30000);
  const std::int64_t interior = 299 * 201 * 3, step = v.size() / 30000;
  EXPECT_EQ(all.samples, interior);
  EXPECT_NEAR(double(some.samples), double(interior) / double(step), 2.0);
  EXPECT_NEAR(all.sigma, truth, 0.02 * truth);
  EXPECT_NEAR(some.sigma, truth, 0.04 * truth);
}

}  // namespace
