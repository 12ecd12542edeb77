// The smooth-noise fits against noise made here: white noise blurred by a Gaussian of sigma b has
// the correlation exp(-d^2 / (4 b^2)), so the fit must read the width b and the variance, from
// second differences measured on the noise itself (not from the model's own formula).

#include "core/smooth_noise_fit.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace {

// A long 1D realisation: white noise of variance 1 blurred by a sampled Gaussian of sigma `blur`
// (scaled back to variance `smooth_variance`), plus independent white noise of `white_variance`.
std::vector<double> noise_line(double blur, double smooth_variance, double white_variance, unsigned seed) {
  const std::size_t n = std::size_t(1) << 20;
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0, 1);
  const int r = int(std::ceil(6 * blur));
  std::vector<double> taps(std::size_t(2 * r + 1));
  double sum2 = 0;
  for (int k = -r; k <= r; ++k) {
    taps[std::size_t(k + r)] = std::exp(-0.5 * k * k / (blur * blur));
    sum2 += taps[std::size_t(k + r)] * taps[std::size_t(k + r)];
  }
  std::vector<double> white(n + std::size_t(2 * r));
  for (double& v : white) v = normal(rng);
  std::vector<double> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    double acc = 0;
    for (int k = 0; k <= 2 * r; ++k) acc += taps[std::size_t(k)] * white[i + std::size_t(k)];
    out[i] = acc * std::sqrt(smooth_variance / sum2) + std::sqrt(white_variance) * normal(rng);
  }
  return out;
}

// The mean square second difference 2 x(i) - x(i - d) - x(i + d).
double mean_square_difference(const std::vector<double>& x, std::size_t d) {
  double sum = 0;
  std::size_t count = 0;
  for (std::size_t i = d; i + d < x.size(); ++i) {
    const double e = 2 * x[i] - x[i - d] - x[i + d];
    sum += e * e;
    ++count;
  }
  return sum / double(count);
}

TEST(SmoothNoiseFit, ReadsTheWidthAndLevelOfBlurredWhiteNoise) {
  for (const double blur : {0.8, 1.2, 2.0}) {
    const std::vector<double> x = noise_line(blur, 900.0, 0.0, 7);
    const auto fit = ctd::detail::fit_smooth_noise(mean_square_difference(x, 1), mean_square_difference(x, 2));
    ASSERT_TRUE(fit.has_value()) << "blur " << blur;
    EXPECT_NEAR(fit->width, blur, 0.03 * blur) << "blur " << blur;
    EXPECT_NEAR(fit->sigma(), 30.0, 0.03 * 30) << "blur " << blur;
  }
}

TEST(SmoothNoiseFit, SeparatesWhiteNoiseOnTopOfSmoothNoise) {
  for (const double blur : {1.2, 2.0}) {
    const std::vector<double> x = noise_line(blur, 900.0, 225.0, 11);
    const auto fit = ctd::detail::fit_smooth_and_white_noise(mean_square_difference(x, 1), mean_square_difference(x, 2),
                                                             mean_square_difference(x, 4));
    ASSERT_TRUE(fit.has_value()) << "blur " << blur;
    EXPECT_NEAR(fit->width, blur, 0.05 * blur) << "blur " << blur;
    EXPECT_NEAR(fit->c0, 900.0, 0.06 * 900) << "blur " << blur;
    EXPECT_NEAR(fit->white, 225.0, 0.1 * 225) << "blur " << blur;
    // The smooth fit alone, blind to the white part, reads the noise narrower than it is.
    const auto smooth_only = ctd::detail::fit_smooth_noise(mean_square_difference(x, 1), mean_square_difference(x, 2));
    ASSERT_TRUE(smooth_only.has_value());
    EXPECT_LT(smooth_only->width, 0.9 * blur) << "blur " << blur;
  }
}

TEST(SmoothNoiseFit, RefusesWhatIsNotSmoothNoiseOfABelievedWidth) {
  // Wider than 3 voxels: not believed (smooth anatomy reads so).
  const std::vector<double> wide = noise_line(5.0, 900.0, 0.0, 13);
  EXPECT_FALSE(ctd::detail::fit_smooth_noise(mean_square_difference(wide, 1), mean_square_difference(wide, 2)).has_value());
  EXPECT_FALSE(ctd::detail::fit_smooth_and_white_noise(mean_square_difference(wide, 1), mean_square_difference(wide, 2),
                                                       mean_square_difference(wide, 4))
                   .has_value());
  // Second differences that do not grow from lag 1 to 2 (finer than white noise, e.g. a sharp kernel's).
  EXPECT_FALSE(ctd::detail::fit_smooth_noise(6.0, 5.0).has_value());
  EXPECT_FALSE(ctd::detail::fit_smooth_and_white_noise(6.0, 5.0, 7.0).has_value());
}

}  // namespace
