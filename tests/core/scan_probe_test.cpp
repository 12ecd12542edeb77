// The scan-like probe of the automatic parameters (src/core/scan_probe.hpp) and the sample's
// margins (src/core/auto_sample.hpp), judged against sweeps of the filter on noise-free
// references.

#include "common/ct_phantom.hpp"
#include "core/auto_sample.hpp"
#include "core/image_reads.hpp"

#include <ctdenoise/auto_params.hpp>
#include <ctdenoise/metrics.hpp>
#include <ctdenoise/simulate.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace {

using i64 = std::int64_t;
using ctd_test::best_psnr;
using ctd_test::ct_phantom;

ctd::Volume filtered(const ctd::Volume& noisy, const ctd::NlmParams& params, double h) {
  ctd::Volume out(noisy.dims());
  ctd::NlmParams p = params;
  p.h = float(h);
  ctd::nlm(noisy.view(), out.view(), p);
  return out;
}

// A scan by ctdenoise's simulator (parallel beam, Poisson counts, FBP) of the phantom at 0.8 mm,
// and the same scan without noise.
struct Scan {
  ctd::Volume reference, noisy;
};
Scan scan(ctd::Dims dims, double photons, ctd::FbpWindow window) {
  ctd::Volume clean = ct_phantom(dims);
  clean.geometry.spacing = {0.8, 0.8, 1.0};
  ctd::LowDoseParams p;
  p.angles = 360;
  p.window = window;
  p.seed = 7;
  p.photons = std::numeric_limits<double>::infinity();
  Scan s{ctd::simulate_low_dose(clean, p), {}};
  p.photons = photons;
  s.noisy = ctd::simulate_low_dose(clean, p);
  return s;
}

TEST(ScanProbe, ScanNoiseIsMadeAsAScannerMakesIt) {
  // The noise of a simulated scan varies with the rays through each voxel; the probe made the
  // same way puts h within 0.3 dB of the best of a sweep (the tile models alone: 1.3 and 0.6 dB
  // under here).
  for (const auto window : {ctd::FbpWindow::Ramp, ctd::FbpWindow::Hann}) {
    const Scan s = scan({224, 200, 1}, 2e4, window);
    ctd::NlmParams params;
    params.search_radius = 5;
    const ctd::AutoChoice h = ctd::auto_nlm_h(s.noisy.view(), params);
    EXPECT_EQ(h.noise_over_image.rfind("scan-like", 0), 0u) << h.noise_over_image;
    EXPECT_GT(h.scan_fit, 0.8);
    EXPECT_GT(h.scan_fit_beyond_intensity, 0.3);
    const double auto_psnr = ctd::psnr(s.reference.view(), filtered(s.noisy, params, h.value).view(), 2000);
    EXPECT_GT(auto_psnr, best_psnr(s.reference, h.value, [&](double v) { return filtered(s.noisy, params, v); }) - 0.3)
        << to_string(window) << " h " << h.value;
  }
}

TEST(ScanProbe, NoiseThatFollowsTheIntensityIsNotTakenForAScans) {
  // Signal-dependent white noise (stronger in the body than in the air) varies over the image with
  // the rays too; each tile's own intensity explains it better.
  const ctd::Volume clean = ct_phantom({224, 200, 1});
  ctd::Volume noisy = clean;
  std::mt19937 rng(5);
  std::normal_distribution<double> normal(0, 1);
  for (i64 i = 0; i < noisy.size(); ++i) {
    if (clean.data()[i] < -1024) continue;
    noisy.data()[i] = float(clean.data()[i] + 40 * std::sqrt(std::max(0.1, (clean.data()[i] + 1024.0) / 1024.0)) * normal(rng));
  }
  const ctd::AutoChoice h = ctd::auto_nlm_h(noisy.view(), ctd::NlmParams{});
  EXPECT_LT(h.scan_fit_beyond_intensity, 0.3);
  EXPECT_EQ(h.noise_over_image.find("scan-like"), std::string::npos) << h.noise_over_image;
}

TEST(ScanProbe, ACropOfABodyHasNoMap) {
  // Rays through a crop are not the image's own: no map, the tile models decide.
  const Scan s = scan({224, 200, 1}, 2e4, ctd::FbpWindow::Ramp);
  ctd::Volume crop({96, 64, 1});
  for (i64 y = 0; y < 64; ++y)
    for (i64 x = 0; x < 96; ++x) crop.view()(x, y, 0) = s.noisy.view()(64 + x, 68 + y, 0);
  const ctd::AutoChoice h = ctd::auto_nlm_h(crop.view(), ctd::NlmParams{});
  EXPECT_TRUE(std::isnan(h.scan_fit));
  EXPECT_EQ(h.noise_over_image.find("scan-like"), std::string::npos);
}

TEST(ScanProbe, StationaryNoiseOnAWholeBodyFollowsNoMap) {
  const ctd::Volume clean = ct_phantom({224, 200, 1});
  ctd::Volume noisy = clean;
  std::mt19937 rng(9);
  std::normal_distribution<double> normal(0, 30);
  for (i64 i = 0; i < noisy.size(); ++i)
    if (clean.data()[i] >= -1024) noisy.data()[i] += float(normal(rng));
  const ctd::AutoChoice h = ctd::auto_nlm_h(noisy.view(), ctd::NlmParams{});
  EXPECT_LT(h.scan_fit, 0.5);
  EXPECT_EQ(h.noise_over_image, "one level");
}

TEST(AutoSample, TheBlocksMarginsDoNotCount) {
  // A large image is sampled in blocks side by side; a voxel within the filter's reach of a
  // block's edge sees the next block's anatomy, so it is filtered but not counted.
  const ctd::Volume image = ct_phantom({512, 480, 1});
  const auto reads = ctd::detail::host_reads(image.view());
  const ctd::detail::SampleLayout layout = ctd::detail::sample_layout(image.dims(), 6, 0, true);
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
  EXPECT_EQ(ctd::detail::sample_layout(image.dims(), 6, 0, false).halo, 0);
}

}  // namespace
