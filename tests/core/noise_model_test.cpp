// The noise model (ctd::estimate_noise_model), on synthetic images of known noise: white, white
// smoothed by a known kernel in-plane or across slices, or synthesised with a given covariance;
// its readings are checked against the noise's definition and the test's own measurements.

#include "common/ct_phantom.hpp"
#include "common/test_util.hpp"
#include "core/image_reads.hpp"
#include "core/noise_synthesis.hpp"
#include "core/robust_stats.hpp"

#include <ctdenoise/error.hpp>
#include <ctdenoise/noise.hpp>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <random>

namespace {

using i64 = std::int64_t;
using ctd_test::ct_phantom;
using testing_util::add_noise;
using testing_util::gaussian_taps;
using testing_util::noise_inside;
using testing_util::smooth_field;

double empirical_correlation(const ctd::Volume& v, int dx, int dy) {
  const ctd::Dims d = v.dims();
  double sxy = 0, sxx = 0;
  for (i64 z = 0; z < d.nz; ++z)
    for (i64 y = 0; y + dy < d.ny; ++y)
      for (i64 x = 0; x + dx < d.nx; ++x) {
        const double a = v.view()(x, y, z), b = v.view()(x + dx, y + dy, z);
        sxy += a * b;
        sxx += a * a;
      }
  return sxy / sxx;
}

// A smooth texture (taps of width 31: structure coarser than the model's lags), 150 HU: its
// second differences keep growing with the lag, so no block's outer lags are believed to be noise.
ctd::Volume coarse_texture() {
  std::vector<double> taps(31);
  for (int k = 0; k < 31; ++k) taps[std::size_t(k)] = std::exp(-0.5 * (k - 15) * (k - 15) / 36.0);
  return smooth_field({192, 176, 1}, taps, 150, 23);
}

// The coarse texture under noise smoothed by `taps` along x and y (sigma 30), and that noise.
std::pair<ctd::Volume, ctd::Volume> under_coarse_texture(const std::vector<double>& taps, std::uint32_t seed) {
  ctd::Volume noisy = coarse_texture();
  const ctd::Volume noise = smooth_field(noisy.dims(), taps, 30, seed);
  for (i64 i = 0; i < noisy.size(); ++i) noisy.data()[i] += noise.data()[i];
  return {noisy, noise};
}

}  // namespace

TEST(NoiseModel, WhiteNoiseIsMeasuredWhite) {
  for (ctd::Dims dims : {ctd::Dims{256, 224, 1}, ctd::Dims{160, 144, 8}}) {
    for (double sigma : {10.0, 40.0}) {
      const ctd::Volume noisy = add_noise(ct_phantom(dims), sigma, false, 3);
      const ctd::NoiseModel m = ctd::estimate_noise_model(noisy.view());
      EXPECT_NEAR(m.sigma, sigma, 0.07 * sigma) << "nz " << dims.nz;
      EXPECT_NEAR(m.correlation(1, 0, 0), 0.0, 0.06);
      EXPECT_NEAR(m.correlation(0, 1, 0), 0.0, 0.06);
      EXPECT_NEAR(m.correlation(0, 0, 0), 1.0, 1e-9);
      // Slices independent: no second slice's correlation to believe, one slice either way.
      EXPECT_EQ(m.radius_z, dims.nz >= 3 ? 1 : 0);
      EXPECT_NEAR(m.correlation(0, 0, 1), 0.0, 0.06);
      EXPECT_EQ(m.excluded_value, -3024.0);
      EXPECT_GT(m.flat_blocks, 4);
      EXPECT_FALSE(m.fell_back_to_white);
      EXPECT_FALSE(m.read_from_first_lags);
    }
  }
}

TEST(NoiseModel, CorrelatedNoiseIsMeasuredWithItsCorrelation) {
  // [1 4 1] / 6 along x: rho(1, 0) = 8 / 18, rho(2, 0) = 1 / 18, rho(0, 1) = 0.
  const ctd::Volume noisy = add_noise(ct_phantom({256, 224, 1}), 30, true, 5);
  const ctd::NoiseModel m = ctd::estimate_noise_model(noisy.view());
  EXPECT_NEAR(m.sigma, 30, 0.08 * 30);
  EXPECT_NEAR(m.correlation(1, 0, 0), 8.0 / 18, 0.06);
  EXPECT_NEAR(m.correlation(2, 0, 0), 1.0 / 18, 0.06);
  EXPECT_NEAR(m.correlation(0, 1, 0), 0.0, 0.06);
  EXPECT_LT(m.pseudo_residual_sigma, 0.9 * m.sigma);  // the neighbour-difference sigma under-reads it
}

TEST(NoiseModel, SynthesisedNoiseHasTheModelsCovariance) {
  const ctd::Volume noisy = add_noise(ct_phantom({256, 224, 1}), 30, true, 9);
  const ctd::NoiseModel m = ctd::estimate_noise_model(noisy.view());
  const ctd::Volume n = ctd::synthesize_noise(m, {200, 180, 1}, 11);
  double sum2 = 0;
  for (i64 i = 0; i < n.size(); ++i) sum2 += double(n.data()[i]) * n.data()[i];
  EXPECT_NEAR(std::sqrt(sum2 / double(n.size())), m.sigma, 0.05 * m.sigma);
  EXPECT_NEAR(empirical_correlation(n, 1, 0), m.correlation(1, 0, 0), 0.05);
  EXPECT_NEAR(empirical_correlation(n, 0, 1), m.correlation(0, 1, 0), 0.05);
  // The mask zeroes voxels; the seed fixes the noise.
  std::vector<unsigned char> mask(std::size_t(n.size()), 1);
  mask[5] = 0;
  const ctd::Volume masked = ctd::synthesize_noise(m, {200, 180, 1}, 11, &mask);
  EXPECT_EQ(masked.data()[5], 0.0f);
  EXPECT_EQ(masked.data()[6], n.data()[6]);
}

TEST(NoiseModel, NoiseSynthesisedByRegionHasEachRegionsCovariance) {
  // Left half: sigma 10, correlated 0.5 along x; right half: sigma 30, correlated 0.5 along y.
  auto model = [](double sigma, double along_x, double along_y) {
    ctd::NoiseModel m;
    m.sigma = sigma;
    m.radius_xy = 1;
    m.covariance.assign(9, 0.0);
    m.covariance[4] = sigma * sigma;
    m.covariance[3] = m.covariance[5] = along_x * sigma * sigma;
    m.covariance[1] = m.covariance[7] = along_y * sigma * sigma;
    return m;
  };
  const ctd::Dims d{240, 200, 1};
  std::vector<std::uint32_t> region(std::size_t(d.count()));
  for (i64 i = 0; i < d.count(); ++i) region[std::size_t(i)] = (i % d.nx) < d.nx / 2 ? 0 : 1;
  const ctd::Volume n = ctd::detail::synthesize_noise_by_region({model(10, 0.5, 0), model(30, 0, 0.5)}, region, d, 13);
  // Each half's sigma and correlations, away from the border between them.
  for (int half = 0; half < 2; ++half) {
    double s00 = 0, s10 = 0, s01 = 0;
    i64 count = 0;
    for (i64 y = 0; y + 1 < d.ny; ++y)
      for (i64 x = half == 0 ? 0 : d.nx / 2 + 8; x < (half == 0 ? d.nx / 2 - 8 : d.nx - 1); ++x) {
        const double a = n.view()(x, y, 0);
        s00 += a * a, s10 += a * n.view()(x + 1, y, 0), s01 += a * n.view()(x, y + 1, 0);
        ++count;
      }
    EXPECT_NEAR(std::sqrt(s00 / double(count)), half == 0 ? 10 : 30, half == 0 ? 0.5 : 1.5);
    EXPECT_NEAR(s10 / s00, half == 0 ? 0.5 : 0.0, 0.05) << "half " << half;
    EXPECT_NEAR(s01 / s00, half == 0 ? 0.0 : 0.5, 0.05) << "half " << half;
  }
  // Models with different lags cannot share one field.
  ctd::NoiseModel wider = model(10, 0, 0);
  wider.radius_xy = 2;
  wider.covariance.assign(25, 0.0);
  wider.covariance[12] = 100;
  EXPECT_TRUE(testing_util::throws_kind([&] { ctd::detail::synthesize_noise_by_region({model(10, 0, 0), wider}, region, d, 1); },
                                        ctd::ErrorKind::InvalidArgument));
  // White noise made ahead gives the same noise as the seed it was made from, and is refused for
  // other lags or dimensions.
  const ctd::detail::WhiteNoise white = ctd::detail::white_noise_for(model(10, 0, 0), d, 13);
  const ctd::Volume again = ctd::detail::synthesize_noise_by_region({model(10, 0.5, 0), model(30, 0, 0.5)}, region, d, white);
  EXPECT_TRUE(std::equal(n.data(), n.data() + d.count(), again.data()));
  // Drawn ahead for a larger image, the stream's first values are the same field; too few are drawn anew.
  const std::size_t size = ctd::detail::white_noise_size(model(10, 0, 0), d);
  for (const std::size_t drawn : {size + 1000, size - 1}) {
    const auto ahead = ctd::detail::white_noise_for(model(10, 0, 0), d, 13, ctd::detail::unit_normals(13, drawn));
    EXPECT_EQ(ahead.values, white.values) << drawn;
  }
  EXPECT_TRUE(testing_util::throws_kind([&] { ctd::detail::synthesize_noise_by_region({wider}, {}, d, white); },
                                        ctd::ErrorKind::InvalidArgument));
  EXPECT_TRUE(testing_util::throws_kind(
      [&] { ctd::detail::synthesize_noise_by_region({model(10, 0, 0)}, {}, ctd::Dims{d.nx, d.ny - 1, 1}, white); },
      ctd::ErrorKind::InvalidArgument));
}

TEST(NoiseModel, WithoutFlatRegionsItFallsBackToWhiteNoiseOfThePseudoResidualSigma) {
  // A small phantom: every block holds an edge, so the outer lags read anatomy.
  const ctd::Volume noisy = add_noise(ct_phantom({96, 80, 1}), 10, false, 3);
  const ctd::NoiseModel m = ctd::estimate_noise_model(noisy.view());
  EXPECT_TRUE(m.fell_back_to_white);
  EXPECT_EQ(m.sigma, m.pseudo_residual_sigma);
  EXPECT_NEAR(m.sigma, 10, 1);
  EXPECT_EQ(m.correlation(1, 0, 0), 0.0);
}

TEST(NoiseModel, SmoothNoiseIsBelievedFarAboveThePseudoResidualSigma) {
  // Binomial taps [1 2 1] (a smooth reconstruction kernel's texture): the neighbour
  // differences see under half of the noise, the model sees all of it.
  const ctd::Volume clean = ct_phantom({256, 224, 1});
  const ctd::Volume noise = smooth_field(clean.dims(), {1, 2, 1}, 30, 21);
  const ctd::Volume noisy = noise_inside(clean, noise);
  const ctd::NoiseModel m = ctd::estimate_noise_model(noisy.view());
  EXPECT_FALSE(m.fell_back_to_white);
  EXPECT_LT(m.pseudo_residual_sigma, 0.5 * m.sigma);
  EXPECT_NEAR(m.sigma, 30, 0.1 * 30);
  EXPECT_NEAR(m.correlation(1, 0, 0), empirical_correlation(noise, 1, 0), 0.08);
}

TEST(NoiseModel, BandLimitedNoiseFarAboveThePseudoResidualSigmaIsBelieved) {
  // Noise band-limited at 0.2 cycles per voxel (a Hann-windowed sinc along x and y), as a
  // reconstruction at pixels finer than its detector's bins leaves it: the neighbour differences
  // see under a third of it, and it is no Gaussian blur, so the smooth fallback finds no fit. Its
  // second differences level off within the model's lags, so their level stands (white noise of
  // the pseudo-residual sigma, as before, read 7 for 30).
  std::vector<double> taps;
  for (int k = -6; k <= 6; ++k) {
    const double x = 0.4 * k * std::numbers::pi;
    taps.push_back((k == 0 ? 1.0 : std::sin(x) / x) * (0.5 + 0.5 * std::cos(std::numbers::pi * k / 7.0)));
  }
  const ctd::Volume clean = ct_phantom({256, 224, 1});
  const ctd::Volume noise = smooth_field(clean.dims(), taps, 30, 41);
  const ctd::Volume noisy = noise_inside(clean, noise);
  const ctd::NoiseModel m = ctd::estimate_noise_model(noisy.view());
  EXPECT_FALSE(m.fell_back_to_white);
  EXPECT_LT(m.pseudo_residual_sigma, m.sigma / 3);
  EXPECT_NEAR(m.sigma, 30, 0.15 * 30);
  EXPECT_NEAR(m.correlation(1, 0, 0), empirical_correlation(noise, 1, 0), 0.1);
}

TEST(NoiseModel, NoiseReachingPastTheLagsIsNotCutShort) {
  // Streaks as a zoomed fan-beam reconstruction leaves them: smooth along y (a Gaussian of 2.5
  // voxels: correlation 0.5 at 4 voxels) and band-pass along x (a difference of Gaussians of 1.5
  // and 4 voxels), plus white noise of 0.3 times their amplitude, 30 HU in all. The 4-lag model
  // takes C = 0 beyond its lags: it read the level 18-25 % low (three seeds), its farthest lag
  // 0.40-0.47 along y and -0.09 to -0.16 along x (after -0.01). The smooth fit reaches farther
  // and is tried where the model cuts the noise so short.
  const ctd::Volume clean = ct_phantom({256, 224, 1});
  std::vector<double> band_pass;
  for (int k = -14; k <= 14; ++k) band_pass.push_back(std::exp(-k * k / 4.5) - 0.9 * 1.5 / 4 * std::exp(-k * k / 32.0));
  for (const std::uint32_t seed : {17u, 29u, 41u}) {
    const std::vector<double> streaks = testing_util::filtered_noise(clean.dims(), band_pass, gaussian_taps(2.5), seed);
    std::mt19937 rng(seed + 1);
    std::normal_distribution<double> white(0, 1);
    ctd::Volume noisy = clean;
    double sum = 0;
    i64 count = 0;
    for (i64 i = 0; i < noisy.size(); ++i) {
      if (clean.data()[i] <= -1024) continue;  // padding outside the field of view
      const double n = 30 * (std::sqrt(1 - 0.3 * 0.3) * streaks[std::size_t(i)] + 0.3 * white(rng));
      noisy.data()[i] += float(n);
      sum += n * n;
      ++count;
    }
    const double sigma = std::sqrt(sum / double(count));
    const ctd::NoiseModel m = ctd::estimate_noise_model(noisy.view());
    EXPECT_NEAR(m.sigma, sigma, 0.1 * sigma) << "seed " << seed;
  }
}

// Noise band-limited below the pixel: white noise filtered by the ramp under Hann's window cut
// at `cut` cycles per pixel (FBP noise at pixels finer than the detector resolves), made by a
// 25 x 25 kernel (the filter's inverse transform, summed over a 64 x 64 frequency grid), over a
// d.nx x d.ny image; scaled to `sigma`.
ctd::Volume band_limited_noise(const ctd::Dims& d, double cut, double sigma, std::uint32_t seed) {
  constexpr int kReach = 12, kGrid = 64;
  std::vector<double> kernel(std::size_t((2 * kReach + 1) * (2 * kReach + 1)), 0.0);
  for (int v = -kGrid / 2; v < kGrid / 2; ++v)
    for (int u = -kGrid / 2; u < kGrid / 2; ++u) {
      const double fx = double(u) / kGrid, fy = double(v) / kGrid, f = std::hypot(fx, fy);
      if (f >= cut) continue;
      const double amplitude = f * 0.5 * (1 + std::cos(std::numbers::pi * f / cut));
      for (int y = -kReach; y <= kReach; ++y)
        for (int x = -kReach; x <= kReach; ++x)
          kernel[std::size_t((y + kReach) * (2 * kReach + 1) + x + kReach)] +=
              amplitude * std::cos(2 * std::numbers::pi * (fx * x + fy * y));
    }
  const i64 wx = d.nx + 2 * kReach, wy = d.ny + 2 * kReach;
  std::vector<double> white(std::size_t(wx * wy));
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0, 1);
  for (double& w : white) w = normal(rng);
  ctd::Volume out(d);
  double sum2 = 0;
  for (i64 y = 0; y < d.ny; ++y)
    for (i64 x = 0; x < d.nx; ++x) {
      double acc = 0;
      for (int j = -kReach; j <= kReach; ++j)
        for (int i = -kReach; i <= kReach; ++i)
          acc += kernel[std::size_t((j + kReach) * (2 * kReach + 1) + i + kReach)] *
                 white[std::size_t((y + kReach + j) * wx + x + kReach + i)];
      out.view()(x, y, 0) = float(acc);
      sum2 += acc * acc;
    }
  const double scale = sigma / std::sqrt(sum2 / double(d.nx * d.ny));
  for (i64 i = 0; i < out.size(); ++i) out.data()[i] = float(out.data()[i] * scale);
  return out;
}

TEST(NoiseModel, NoiseBandLimitedBelowThePixelKeepsItsLevel) {
  // Its correlation swings negative past its main lobe, so the model's outer lags keep rising
  // past lag 3 (it falls back), and the smooth fit at lags 1, 2 and 4, a Gaussian, over-reads it
  // and its far lags read below the fit: refused, the model was white noise of the
  // pseudo-residual sigma, under an eighth of the level. The far lags' plateau gives the level.
  for (const double cut : {0.18, 0.22}) {
    const ctd::Volume noise = band_limited_noise({256, 256, 1}, cut, 20, 31);
    const ctd::NoiseModel m = ctd::estimate_noise_model(noise.view());
    EXPECT_FALSE(m.fell_back_to_white) << cut;
    EXPECT_NEAR(m.sigma, 20, 2.0) << cut;
  }
}

TEST(NoiseModel, SmoothAnatomyIsNotReadAsNoise) {
  // The coarse texture under white noise of sigma 10: the model falls back to white noise.
  const ctd::Volume noisy = add_noise(coarse_texture(), 10, false, 25);
  const ctd::NoiseModel m = ctd::estimate_noise_model(noisy.view());
  EXPECT_TRUE(m.fell_back_to_white);
  EXPECT_NEAR(m.sigma, 10, 1.5);
}

TEST(NoiseModel, SmoothNoiseUnderCoarseAnatomyKeepsItsCorrelation) {
  // The coarse texture under smooth noise ([1 3 1] along x and
  // y, sigma 30) instead of white: the outer lags hold anatomy, so the model falls back, and the
  // first two lags still show the noise's level and correlation (white noise of the
  // pseudo-residual sigma, as before, read 15.4).
  const auto [noisy, noise] = under_coarse_texture({1, 3, 1}, 31);
  const ctd::NoiseModel m = ctd::estimate_noise_model(noisy.view());
  EXPECT_FALSE(m.fell_back_to_white);
  EXPECT_LT(m.pseudo_residual_sigma, 0.6 * m.sigma);
  EXPECT_NEAR(m.sigma, 30, 0.12 * 30);
  EXPECT_NEAR(m.correlation(1, 0, 0), empirical_correlation(noise, 1, 0), 0.1);
  EXPECT_NEAR(m.correlation(0, 1, 0), empirical_correlation(noise, 0, 1), 0.1);
}

TEST(NoiseModel, MildlyCorrelatedNoiseUnderCoarseAnatomyIsReadSmooth) {
  // The coarse texture under noise smoothed by [1 5 1] along x and y: correlation 10/27 = 0.37
  // with the next voxel, between what anatomy lent ramp noise's first lags on the 3 mm
  // TotalSegmentator crops (up to 0.28) and the band-pass noise of the held-out check (0.39).
  // The pseudo-residual sigma sees about 0.7 of it (white noise of that sigma, the fallback below
  // 0.35, read 20.6); the first lags' fit sees all of it.
  const auto [noisy, noise] = under_coarse_texture({1, 5, 1}, 37);
  const ctd::NoiseModel m = ctd::estimate_noise_model(noisy.view());
  EXPECT_FALSE(m.fell_back_to_white);
  EXPECT_TRUE(m.read_from_first_lags);
  EXPECT_LT(m.pseudo_residual_sigma, 0.8 * m.sigma);
  EXPECT_NEAR(m.sigma, 30, 0.08 * 30);
  EXPECT_NEAR(m.correlation(1, 0, 0), empirical_correlation(noise, 1, 0), 0.1);
}

TEST(NoiseModel, InAVolumeLessCorrelatedNoiseUnderCoarseAnatomyIsReadSmooth) {
  // Noise smoothed by [1 7 1] along x and y (correlation 14/51 = 0.27 with the next voxel, as
  // ramp FBP noise read on the 3 mm TotalSegmentator crops) under the coarse texture, which
  // continues across 8 slices while the noise changes from slice to slice. In the volume the
  // first lags' fit is believed from 0.2 (the across-slices test tells texture from noise) and
  // reads the level; a slice alone keeps 0.35 and falls back to white noise of the
  // pseudo-residual sigma, which sees about 0.8 of it.
  const ctd::Volume texture = coarse_texture();
  const ctd::Dims d{texture.dims().nx, texture.dims().ny, 8};
  const ctd::Volume noise = smooth_field(d, {1, 7, 1}, 30, 53);
  ctd::Volume noisy(d);
  for (i64 i = 0; i < noisy.size(); ++i) noisy.data()[i] = texture.data()[i % texture.size()] + noise.data()[i];
  const ctd::NoiseModel m = ctd::estimate_noise_model(noisy.view());
  EXPECT_FALSE(m.fell_back_to_white);
  EXPECT_TRUE(m.read_from_first_lags);
  EXPECT_NEAR(m.sigma, 30, 0.1 * 30);
  EXPECT_NEAR(m.correlation(1, 0, 0), empirical_correlation(noise, 1, 0), 0.1);

  ctd::Volume slice({d.nx, d.ny, 1});
  std::copy(noisy.data(), noisy.data() + slice.size(), slice.data());
  const ctd::NoiseModel flat = ctd::estimate_noise_model(slice.view());
  EXPECT_TRUE(flat.fell_back_to_white);
  EXPECT_LT(flat.sigma, 0.9 * 30);
}

TEST(NoiseModel, WideSmoothNoiseIsConfirmedByTheFarLags) {
  // White noise blurred by a Gaussian of 1.2 voxels (sigma 40), with white noise of sigma 8 on
  // top, over the phantom: its correlation reaches past the level-off lags and its level is
  // 4-5 x the pseudo-residual sigma. Read from the first lags in blocks chosen by their
  // neighbours' flatness and confirmed at the far lags, it is smooth noise of both levels (the
  // older model took it as white noise of the pseudo-residual sigma, about 10).
  const ctd::Volume clean = ct_phantom({256, 240, 1});
  const ctd::Volume smooth = smooth_field(clean.dims(), gaussian_taps(1.2), 40, 41);
  const ctd::Volume white = add_noise(ctd::Volume(clean.dims()), 8, false, 43);
  ctd::Volume noise(clean.dims());
  for (i64 i = 0; i < noise.size(); ++i) noise.data()[i] = smooth.data()[i] + white.data()[i];
  const ctd::Volume noisy = noise_inside(clean, noise);
  const ctd::NoiseModel m = ctd::estimate_noise_model(noisy.view());
  EXPECT_FALSE(m.fell_back_to_white);
  EXPECT_LT(m.pseudo_residual_sigma, 0.35 * m.sigma);
  EXPECT_NEAR(m.sigma, std::hypot(40.0, 8.0), 0.1 * 40);
  EXPECT_NEAR(m.correlation(1, 0, 0), empirical_correlation(noise, 1, 0), 0.08);
  EXPECT_NEAR(m.correlation(0, 3, 0), empirical_correlation(noise, 0, 3), 0.08);
  EXPECT_GE(m.radius_xy, 4);
}

TEST(NoiseModel, WideSmoothNoiseCorrelatedAcrossSlices) {
  // The same wide smooth noise in 3D, smoothed across slices too (a Gaussian of 1.2 slices):
  // the slices are correlated, which once sent the model to its z fallback with white noise
  // in-plane (sigma about 10 for noise of 40). The in-plane fit holds, and the correlation with
  // the next slices is read along z in the fit's blocks.
  const ctd::Dims d{192, 176, 16};
  const ctd::Volume clean = ct_phantom(d);
  ctd::Volume noise = smooth_field(d, gaussian_taps(1.2), 40, 55);
  {
    const std::vector<double> taps = gaussian_taps(1.2);
    const i64 r = i64(taps.size() / 2), plane = d.nx * d.ny;
    double energy = 0;
    for (double t : taps) energy += t * t;
    const ctd::Volume from = noise;
    for (i64 z = 0; z < d.nz; ++z)
      for (i64 i = 0; i < plane; ++i) {
        double acc = 0;
        for (i64 k = -r; k <= r; ++k) acc += taps[std::size_t(k + r)] * from.data()[std::clamp<i64>(z + k, 0, d.nz - 1) * plane + i];
        noise.data()[z * plane + i] = float(acc / std::sqrt(energy));
      }
  }
  const ctd::Volume noisy = noise_inside(clean, noise);
  double sxy = 0, sxx = 0;  // the noise's correlation with the next slice
  for (i64 i = 0; i + d.nx * d.ny < noise.size(); ++i) {
    sxy += double(noise.data()[i]) * noise.data()[i + d.nx * d.ny];
    sxx += double(noise.data()[i]) * noise.data()[i];
  }
  const ctd::NoiseModel m = ctd::estimate_noise_model(noisy.view());
  EXPECT_FALSE(m.fell_back_to_white);
  EXPECT_NEAR(m.sigma, 40, 0.1 * 40);
  EXPECT_NEAR(m.correlation(1, 0, 0), empirical_correlation(noise, 1, 0), 0.08);
  EXPECT_NEAR(m.correlation(0, 0, 1), sxy / sxx, 0.1);
  EXPECT_EQ(m.radius_z, 2);
}


TEST(NoiseModel, BlurredAnatomyIsNotConfirmedAsWideNoise) {
  // 300 organs as discs of 2-18 voxels and -100..300 HU, reconstructed by a smooth kernel (a
  // Gaussian of 1 or 1.5 voxels), under light white noise of sigma 4: no block is flat, and at
  // the first lags the blur passes for smooth noise of about 22 HU (what the model read without
  // the far lags' check), but the edges' second differences keep rising at the far lags, so the
  // model stays with the white noise.
  const ctd::Dims d{224, 208, 1};
  ctd::Volume organs(d);
  std::mt19937 rng(51);
  std::uniform_real_distribution<double> u(0, 1);
  for (i64 i = 0; i < organs.size(); ++i) organs.data()[i] = 40;
  for (int disc = 0; disc < 300; ++disc) {
    const double cx = u(rng) * d.nx, cy = u(rng) * d.ny, r = 2 + 16 * u(rng), value = -100 + 400 * u(rng);
    for (i64 y = 0; y < d.ny; ++y)
      for (i64 x = 0; x < d.nx; ++x)
        if ((x - cx) * (x - cx) + (y - cy) * (y - cy) < r * r) organs.view()(x, y, 0) = float(value);
  }
  for (const double blur : {1.0, 1.5}) {
    const std::vector<double> taps = gaussian_taps(blur);
    const i64 r = i64(taps.size() / 2);
    double total = 0;
    for (double t : taps) total += t;
    ctd::Volume blurred = organs;
    for (const bool along_x : {true, false}) {
      const ctd::Volume from = blurred;
      for (i64 y = 0; y < d.ny; ++y)
        for (i64 x = 0; x < d.nx; ++x) {
          double acc = 0;
          for (i64 k = -r; k <= r; ++k) {
            const i64 xx = along_x ? std::clamp<i64>(x + k, 0, d.nx - 1) : x, yy = along_x ? y : std::clamp<i64>(y + k, 0, d.ny - 1);
            acc += taps[std::size_t(k + r)] * from.view()(xx, yy, 0);
          }
          blurred.view()(x, y, 0) = float(acc / total);
        }
    }
    const ctd::NoiseModel m = ctd::estimate_noise_model(add_noise(blurred, 4, false, 53).view());
    EXPECT_LT(m.sigma, 2 * 4) << "blur " << blur;
  }
}

TEST(NoiseModel, AnatomyRisingWithinTheLimitIsNotCountedAsNoise) {
  // A gentle texture under white noise of sigma 30: the flattest blocks' second differences rise
  // with the lag by less than the level-off limit, so they are believed, but the rise is anatomy
  // and must count neither as noise nor as its correlation (counted, it read sigma 32.3 and a
  // correlation of 0.15 with the next voxel).
  std::vector<double> taps(19);
  for (int k = 0; k < 19; ++k) taps[std::size_t(k)] = std::exp(-0.5 * (k - 9) * (k - 9) / 9.0);
  for (const std::uint32_t seed : {27u, 31u}) {
    const ctd::Volume noisy = add_noise(smooth_field({224, 208, 1}, taps, 20, seed), 30, false, seed + 2);
    const ctd::NoiseModel m = ctd::estimate_noise_model(noisy.view());
    EXPECT_FALSE(m.fell_back_to_white) << "seed " << seed;
    EXPECT_NEAR(m.sigma, 30, 0.04 * 30) << "seed " << seed;
    EXPECT_NEAR(m.correlation(1, 0, 0), 0.0, 0.06) << "seed " << seed;
    EXPECT_NEAR(m.correlation(0, 1, 0), 0.0, 0.06) << "seed " << seed;
  }
}

TEST(NoiseModel, SmallImagesGetWhiteNoiseAndTinyOnesAreRefused) {
  const ctd::Volume small = testing_util::random_volume({21, 17, 6}, 1, 0, 60);
  const ctd::NoiseModel m = ctd::estimate_noise_model(small.view());
  EXPECT_TRUE(m.fell_back_to_white);
  EXPECT_EQ(m.sigma, ctd::estimate_noise(small.view()).sigma);
  const ctd::Volume tiny = testing_util::random_volume({3, 3, 1}, 1);
  EXPECT_TRUE(testing_util::throws_kind([&] { ctd::estimate_noise_model(tiny.view()); }, ctd::ErrorKind::InvalidArgument));
}

TEST(NoiseModel, TheNoiseIsReadWhereItIsAsked) {
  // Left half white noise of sigma 20, right half noise of sigma 40 smoothed by [1 4 1] / 6 along
  // x (correlation 8 / 18 with the next voxel). The flattest blocks are the quieter left half's;
  // read in given blocks of the right half, the model is the right half's noise (the scan-like
  // probe compares its texture with the image's where the image's model was read).
  const ctd::Dims d{128, 96, 1};
  ctd::Volume image(d);
  std::mt19937 rng(21);
  std::normal_distribution<double> normal(0, 1);
  std::vector<double> white(std::size_t(d.count()));
  for (double& w : white) w = normal(rng);
  const double smoothed_sigma = std::sqrt(18.0) / 6;  // [1 4 1] / 6 of unit white noise
  for (i64 y = 0; y < d.ny; ++y)
    for (i64 x = 0; x < d.nx; ++x) {
      const std::size_t i = std::size_t(y * d.nx + x);
      if (x < d.nx / 2 || x == d.nx - 1) {
        image.data()[i] = float(20 * white[i]);
      } else {
        image.data()[i] = float(40 * (white[i - 1] + 4 * white[i] + white[i + 1]) / 6 / smoothed_sigma);
      }
    }
  const std::unique_ptr<ctd::detail::ImageReads> reads = ctd::detail::host_reads(image.view());
  const std::vector<ctd::detail::LagArea> flattest = ctd::detail::flat_places(*reads);
  ASSERT_FALSE(flattest.empty());
  for (const auto& p : flattest) EXPECT_LT(p.x + 8, d.nx / 2 + 4) << "a flat block at x " << p.x;
  const ctd::NoiseModel left = ctd::detail::estimate_noise_model(*reads);
  EXPECT_NEAR(left.sigma, 20, 0.1 * 20);
  EXPECT_NEAR(left.correlation(1, 0, 0), 0.0, 0.08);
  std::vector<ctd::detail::LagArea> right;
  for (i64 y = 8; y + 16 <= d.ny; y += 8)
    for (i64 x = d.nx / 2 + 8; x + 16 <= d.nx; x += 8) right.push_back({x, y, 0});
  const ctd::NoiseModel there = ctd::detail::estimate_noise_model(*reads, &right);
  EXPECT_NEAR(there.sigma, 40, 0.1 * 40);
  EXPECT_NEAR(there.correlation(1, 0, 0), 8.0 / 18, 0.08);
  EXPECT_NEAR(there.correlation(0, 1, 0), 0.0, 0.08);
  EXPECT_EQ(there.flat_blocks, i64(right.size()));
}
