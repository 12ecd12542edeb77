// Low-dose simulation: noiseless round trip through projection and FBP, noise that scales as
// 1/sqrt(I0), determinism, and parameter checks.

#include "common/test_util.hpp"

#include <ctdenoise/metrics.hpp>
#include <ctdenoise/simulate.hpp>

namespace {

// A water disc (0 HU) in air (-1000 HU), 1 mm pixels.
ctd::Volume disc(std::int64_t n, std::int64_t slices = 1) {
  ctd::Volume v({n, n, slices});
  for (std::int64_t z = 0; z < slices; ++z)
    for (std::int64_t y = 0; y < n; ++y)
      for (std::int64_t x = 0; x < n; ++x) {
        const double r = std::hypot(x - (n - 1) / 2.0, y - (n - 1) / 2.0);
        v.view()(x, y, z) = r < 0.4 * n ? 0.0f : -1000.0f;
      }
  return v;
}

const ctd::Region kCentre{{54, 54, 0}, {74, 74, 1}};  // inside the disc of a 128 image

TEST(Simulate, NoiselessProjectionAndFbpGiveTheImageBack) {
  const ctd::Volume clean = disc(128);
  ctd::LowDoseParams p;
  p.photons = 1e15;  // Poisson noise negligible
  p.angles = 180;
  const ctd::Volume recon = ctd::simulate_low_dose(clean, p);
  const auto centre = ctd::region_stats(recon.view(), kCentre);
  EXPECT_NEAR(centre.mean, 0.0, 15.0);
  EXPECT_LT(centre.std, 10.0);
  const auto air = ctd::region_stats(recon.view(), {{2, 2, 0}, {12, 12, 1}});
  EXPECT_NEAR(air.mean, -1000.0, 40.0);
}

TEST(Simulate, NoiseGrowsAsOneOverSqrtPhotonsAndTheWindowSmooths) {
  const ctd::Volume clean = disc(128);
  ctd::LowDoseParams p;
  p.photons = 1e5;
  const double high = ctd::region_stats(ctd::simulate_low_dose(clean, p).view(), kCentre).std;
  p.photons = 1e4;
  const double low = ctd::region_stats(ctd::simulate_low_dose(clean, p).view(), kCentre).std;
  EXPECT_NEAR(low / high, std::sqrt(10.0), 0.25 * std::sqrt(10.0));
  p.window = ctd::FbpWindow::Hann;
  EXPECT_LT(ctd::region_stats(ctd::simulate_low_dose(clean, p).view(), kCentre).std, 0.8 * low);
  p.window = ctd::FbpWindow::Ramp;
  p.electronic_sigma = 30;
  EXPECT_GT(ctd::region_stats(ctd::simulate_low_dose(clean, p).view(), kCentre).std, low);
}

TEST(Simulate, SameSeedSameNoiseAndEverySliceSimulated) {
  const ctd::Volume clean = disc(64, 3);
  ctd::LowDoseParams p;
  p.photons = 1e4;
  p.angles = 45;
  const ctd::Volume a = ctd::simulate_low_dose(clean, p), b = ctd::simulate_low_dose(clean, p);
  EXPECT_TRUE(testing_util::bit_identical(a, b));
  p.seed = 2;
  EXPECT_FALSE(testing_util::bit_identical(a, ctd::simulate_low_dose(clean, p)));
  for (std::int64_t z = 0; z < 3; ++z) {
    EXPECT_NE(a.view()(32, 32, z), clean.view()(32, 32, z)) << "slice " << z;
  }
}

TEST(Simulate, GaussianNoiseAndParameterChecks) {
  const ctd::Volume clean = disc(128);
  const ctd::Volume noisy = ctd::add_gaussian_noise(clean, 25, 3);
  EXPECT_NEAR(ctd::region_stats(noisy.view(), kCentre).std, 25, 3);
  ctd::LowDoseParams p;
  p.angles = 0;
  EXPECT_TRUE(testing_util::throws_kind([&] { ctd::simulate_low_dose(clean, p); }, ctd::ErrorKind::InvalidArgument));
  p = {};
  p.photons = -1;
  EXPECT_TRUE(testing_util::throws_kind([&] { ctd::simulate_low_dose(clean, p); }, ctd::ErrorKind::InvalidArgument));
  EXPECT_TRUE(testing_util::throws_kind([&] { ctd::add_gaussian_noise(clean, 0, 1); }, ctd::ErrorKind::InvalidArgument));
  EXPECT_TRUE(testing_util::throws_kind([] { ctd::fbp_window_from_string("cosine"); }, ctd::ErrorKind::InvalidArgument));
}

}  // namespace
