// The noise model's Gaussianity check (core/noise_gaussianity.hpp): the flat blocks' kurtosis of
// second differences against that of Gaussian noise of the model's covariance, in standard
// errors. Noise generated here: Gaussian noise, white or smoothed by a kernel written here, reads
// within sampling error; heavy-tailed (Laplace) noise of the same covariance reads far above it,
// as a lung's vessels did (docs/parameters.md). Every 8 x 8 area of the image is offered.

#include "common/test_util.hpp"

#include "core/image_reads.hpp"
#include "core/noise_gaussianity.hpp"

#include <ctdenoise/noise.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace {

using i64 = std::int64_t;

// White noise of unit variance, Gaussian or Laplace, smoothed along x and y by [1 w 1] (w = 0:
// none; each pass scaled back to unit variance), times sigma.
ctd::Volume noise_image(const ctd::Dims& d, double sigma, bool laplace, double w, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0, 1);
  std::exponential_distribution<double> exponential(1);
  std::vector<double> f(std::size_t(d.count()));
  for (double& v : f) v = laplace ? (rng() & 1 ? 1 : -1) * exponential(rng) / std::sqrt(2.0) : normal(rng);
  if (w > 0) {
    const double scale = 1 / std::sqrt(2 + w * w);
    for (const bool along_x : {true, false}) {
      std::vector<double> g(f.size());
      for (i64 y = 0; y < d.ny; ++y)
        for (i64 x = 0; x < d.nx; ++x) {
          auto at = [&](i64 xx, i64 yy) {
            return f[std::size_t(std::clamp<i64>(yy, 0, d.ny - 1) * d.nx + std::clamp<i64>(xx, 0, d.nx - 1))];
          };
          g[std::size_t(y * d.nx + x)] = scale * (along_x ? at(x - 1, y) + w * at(x, y) + at(x + 1, y)
                                                          : at(x, y - 1) + w * at(x, y) + at(x, y + 1));
        }
      f = std::move(g);
    }
  }
  ctd::Volume v(d);
  for (i64 i = 0; i < v.size(); ++i) v.data()[i] = float(100 + sigma * f[std::size_t(i)]);
  return v;
}

double excess_of(const ctd::Volume& v) {
  const ctd::NoiseModel model = ctd::estimate_noise_model(v.view());
  std::vector<ctd::detail::LagArea> blocks;
  for (i64 y = 0; y + 8 <= v.dims().ny; y += 8)
    for (i64 x = 0; x + 8 <= v.dims().nx; x += 8) blocks.push_back({x, y, 0});
  return ctd::detail::flat_blocks_excess_kurtosis(*ctd::detail::host_reads(v.view()), blocks, {}, model);
}

TEST(NoiseGaussianity, GaussianNoiseWhiteOrCorrelatedReadsWithinSamplingError) {
  const ctd::Dims d{197, 173, 1};
  for (const double w : {0.0, 2.0, 1.0}) {
    for (const unsigned seed : {1u, 2u}) {
      const double z = excess_of(noise_image(d, 30, false, w, seed));
      EXPECT_LT(std::fabs(z), 4.0) << "kernel [1 " << w << " 1], seed " << seed;
    }
  }
}

TEST(NoiseGaussianity, HeavyTailedNoiseOfTheSameCovarianceReadsFarAbove) {
  const ctd::Dims d{197, 173, 1};
  for (const double w : {0.0, 4.0}) {
    const double z = excess_of(noise_image(d, 30, true, w, 3));
    EXPECT_GT(z, 8.0) << "kernel [1 " << w << " 1]";
  }
}

TEST(NoiseGaussianity, TooFewBlocksInsideTheImageDecideNothing) {
  // A 20 x 20 image has one 8 x 8 area whose differences stay inside: no decision.
  const ctd::Volume v = noise_image({20, 20, 1}, 30, true, 0, 4);
  EXPECT_EQ(excess_of(v), 0.0);
}

}  // namespace
