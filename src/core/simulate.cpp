// Low-dose CT simulation: parallel-beam projection, Poisson + electronic noise, FBP
// (include/ctdenoise/simulate.hpp).

#include "core/fbp.hpp"
#include "cpu/thread_pool.hpp"

#include <ctdenoise/error.hpp>
#include <ctdenoise/noise.hpp>
#include <ctdenoise/simulate.hpp>

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace ctd {
namespace {

using i64 = std::int64_t;

[[noreturn]] void invalid(const std::string& message) { throw Error(ErrorKind::InvalidArgument, message); }

}  // namespace

std::string_view to_string(FbpWindow window) noexcept {
  switch (window) {
    case FbpWindow::Ramp: return "ramp";
    case FbpWindow::SheppLogan: return "shepp-logan";
    case FbpWindow::Hann: return "hann";
  }
  return "?";
}

FbpWindow fbp_window_from_string(std::string_view name) {
  for (auto w : {FbpWindow::Ramp, FbpWindow::SheppLogan, FbpWindow::Hann}) {
    if (to_string(w) == name) return w;
  }
  invalid(fmt::format("unknown FBP window '{}' (ramp, shepp-logan, hann)", name));
}

Volume simulate_low_dose(const Volume& clean, const LowDoseParams& p) {
  if (p.angles < 1) invalid(fmt::format("angles must be >= 1, got {}", p.angles));
  if (!(p.photons > 0)) invalid(fmt::format("photons (I0) must be > 0 (or infinite: no noise), got {}", p.photons));
  if (!(std::isfinite(p.electronic_sigma) && p.electronic_sigma >= 0)) {
    invalid(fmt::format("electronic noise sigma must be >= 0, got {}", p.electronic_sigma));
  }
  if (!(std::isfinite(p.mu_water) && p.mu_water > 0)) invalid(fmt::format("mu_water must be > 0, got {}", p.mu_water));
  const Dims d = clean.dims();
  const double sx = clean.geometry.spacing[0], sy = clean.geometry.spacing[1];
  if (!(sx > 0 && sy > 0)) invalid("the image needs a positive in-plane spacing");
  // Padding below air (-3024 HU outside a scanner's field of view) stays; air clipped at -1024 HU
  // is air, and gets noise like any other voxel.
  double padding = padding_value(clean.view());
  if (!(padding < -1024)) padding = std::numeric_limits<double>::quiet_NaN();
  const bool noisy = std::isfinite(p.photons);

  // Detector: bins of the pixel width sx, wide enough for the slice's diagonal.
  const double width = std::hypot(double(d.nx) * sx, double(d.ny) * sy);
  const i64 nd = i64(std::ceil(width / sx)) | 1;  // odd: a bin through the centre
  const double tau = sx;
  const std::vector<double> kernel = detail::fbp_kernel(nd, tau, to_string(p.window));
  const double cx = (double(d.nx) - 1) / 2, cy = (double(d.ny) - 1) / 2, cd = (double(nd) - 1) / 2;

  Volume out(d, clean.geometry);
  cpu::ThreadPool pool(cpu::hardware_threads());
  std::vector<double> mu(static_cast<std::size_t>(d.nx * d.ny));
  std::vector<double> sinogram(static_cast<std::size_t>(p.angles * nd)), filtered(static_cast<std::size_t>(p.angles * nd));
  for (i64 z = 0; z < d.nz; ++z) {
    for (i64 i = 0; i < d.nx * d.ny; ++i) {
      const double hu = clean.data()[z * d.nx * d.ny + i];
      mu[std::size_t(i)] = std::max(0.0, p.mu_water * (1 + hu / 1000));
    }
    // Projection, noise and filtering per angle; each angle has its own random stream.
    pool.parallel_for(p.angles, [&](i64 begin, i64 end) {
      for (i64 a = begin; a < end; ++a) {
        const double theta = M_PI * double(a) / p.angles;
        std::mt19937_64 rng(p.seed * 0x9E3779B97F4A7C15ull + std::uint64_t(z) * 1000003ull + std::uint64_t(a));
        double* row = sinogram.data() + a * nd;
        detail::line_integrals({mu.data(), d.nx, d.ny, sx, sy, cx, cy}, theta, nd, tau, 0.5 * sx, width, row);
        // Without noise: the noise-free reconstruction, the reference for a noisy one.
        for (i64 t = 0; noisy && t < nd; ++t) {
          const double expected = p.photons * std::exp(-row[t]);
          double counts = double(std::poisson_distribution<std::int64_t>(expected)(rng));
          if (p.electronic_sigma > 0) counts += std::normal_distribution<double>(0, p.electronic_sigma)(rng);
          row[t] = -std::log(std::max(counts, 1.0) / p.photons);  // a zero count would be infinite
        }
        double* frow = filtered.data() + a * nd;
        for (i64 t = 0; t < nd; ++t) {
          double acc = 0;
          for (i64 u = 0; u < nd; ++u) acc += kernel[std::size_t(t - u + nd - 1)] * row[u];
          frow[t] = acc * tau;
        }
      }
    });
    // Back-projection.
    float* slice = out.data() + z * d.nx * d.ny;
    pool.parallel_for(d.ny, [&](i64 begin, i64 end) {
      for (i64 y = begin; y < end; ++y)
        for (i64 x = 0; x < d.nx; ++x) {
          const double px = (double(x) - cx) * sx, py = (double(y) - cy) * sy;
          double acc = 0;
          for (i64 a = 0; a < p.angles; ++a) {
            const double theta = M_PI * double(a) / p.angles;
            const double t = (px * std::cos(theta) + py * std::sin(theta)) / tau + cd;
            const i64 t0 = i64(std::floor(t));
            const double f = t - double(t0);
            const double* frow = filtered.data() + a * nd;
            const double v0 = t0 >= 0 && t0 < nd ? frow[t0] : 0, v1 = t0 + 1 >= 0 && t0 + 1 < nd ? frow[t0 + 1] : 0;
            acc += (1 - f) * v0 + f * v1;
          }
          const double mu_hat = acc * M_PI / p.angles;
          slice[y * d.nx + x] = float(1000 * (mu_hat / p.mu_water - 1));
        }
    });
  }
  if (!std::isnan(padding)) {
    for (i64 i = 0; i < d.count(); ++i) {
      if (clean.data()[i] == float(padding)) out.data()[i] = float(padding);
    }
  }
  return out;
}

Volume add_gaussian_noise(const Volume& clean, double sigma, std::uint64_t seed) {
  if (!(std::isfinite(sigma) && sigma > 0)) invalid(fmt::format("noise sigma must be > 0, got {}", sigma));
  const double padding = padding_value(clean.view());
  Volume out = clean;
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> noise(0, sigma);
  for (std::int64_t i = 0; i < out.size(); ++i) {
    if (out.data()[i] != float(padding)) out.data()[i] = float(out.data()[i] + noise(rng));
  }
  return out;
}

}  // namespace ctd
