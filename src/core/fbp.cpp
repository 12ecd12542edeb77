// Parallel-beam projection and the FBP filter (src/core/fbp.hpp).

#include "core/fbp.hpp"

#include <ctdenoise/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <complex>

namespace ctd::detail {
namespace {

using i64 = std::int64_t;

// The window's gain at f, 0..1 of the Nyquist frequency.
double window_gain(std::string_view window, double f) {
  if (window == "shepp-logan") return f == 0 ? 1.0 : std::sin(M_PI * f / 2) / (M_PI * f / 2);
  if (window == "cosine") return std::cos(M_PI * f / 2);
  if (window == "hamming") return 0.54 + 0.46 * std::cos(M_PI * f);
  if (window == "hann") return 0.5 * (1 + std::cos(M_PI * f));
  return 1;
}

}  // namespace

std::vector<double> fbp_kernel(i64 nd, double tau, std::string_view window) {
  if (std::find(kFbpWindows.begin(), kFbpWindows.end(), window) == kFbpWindows.end()) {
    throw Error(ErrorKind::InvalidArgument, fmt::format("unknown FBP window '{}'", window));
  }
  const i64 half = nd - 1, length = 2 * nd - 1;
  std::vector<double> ram_lak(static_cast<std::size_t>(length));
  for (i64 n = -half; n <= half; ++n) {
    double h = 0;
    if (n == 0) h = 1.0 / (4 * tau * tau);
    else if (n % 2 != 0) h = -1.0 / (double(n) * n * M_PI * M_PI * tau * tau);
    ram_lak[std::size_t(n + half)] = h;
  }
  if (window == "ramp") return ram_lak;
  // Apodise: DFT (direct, once per detector size), multiply by the window, inverse DFT.
  std::vector<std::complex<double>> spectrum(static_cast<std::size_t>(length));
  for (i64 k = 0; k < length; ++k) {
    std::complex<double> s = 0;
    for (i64 n = 0; n < length; ++n) s += ram_lak[std::size_t(n)] * std::polar(1.0, -2 * M_PI * double(k * n) / double(length));
    const double f = double(k <= length / 2 ? k : length - k) / double(length) * 2;
    spectrum[std::size_t(k)] = s * window_gain(window, f);
  }
  std::vector<double> h(static_cast<std::size_t>(length));
  for (i64 n = 0; n < length; ++n) {
    std::complex<double> s = 0;
    for (i64 k = 0; k < length; ++k) s += spectrum[std::size_t(k)] * std::polar(1.0, 2 * M_PI * double(k * n) / double(length));
    h[std::size_t(n)] = s.real() / double(length);
  }
  return h;
}

void line_integrals(const SliceGrid& g, double theta, i64 nd, double tau, double step, double length, double* out) {
  const double c = std::cos(theta), s = std::sin(theta), cd = (double(nd) - 1) / 2;
  auto at = [&](i64 x, i64 y) { return (x < 0 || y < 0 || x >= g.nx || y >= g.ny) ? 0.0 : g.values[y * g.nx + x]; };
  const i64 samples = i64(std::ceil(length / step));
  // Along a ray, x and y are linear in the sample k: x = x0 + k dx. Samples outside
  // (-1, nx) x (-1, ny) read only zeros, so each ray runs over the k where both can be inside
  // (a sample either side for rounding), which skips about half of them on a square slice.
  const double dx = -step * s / g.sx, dy = step * c / g.sy;
  auto within = [&](double start, double slope, double hi, i64& k0, i64& k1) {  // k where -1 < start + k slope < hi
    if (slope == 0) {
      if (!(start > -1 && start < hi)) k0 = 1, k1 = 0;
      return;
    }
    // In doubles clamped to the samples first: a nearly level ray's bounds are huge.
    const double a = (-1 - start) / slope, b = (hi - start) / slope, last = double(samples);
    k0 = std::max(k0, i64(std::clamp(std::floor(std::min(a, b)) - 1, -1.0, last)));
    k1 = std::min(k1, i64(std::clamp(std::ceil(std::max(a, b)) + 1, -1.0, last)));
  };
  for (i64 t = 0; t < nd; ++t) {
    const double offset = (double(t) - cd) * tau;  // across the ray
    const double along0 = 0.5 * step - length / 2;
    const double x_start = (offset * c - along0 * s) / g.sx + g.cx, y_start = (offset * s + along0 * c) / g.sy + g.cy;
    i64 k0 = 0, k1 = samples - 1;
    within(x_start, dx, double(g.nx), k0, k1);
    within(y_start, dy, double(g.ny), k0, k1);
    double integral = 0;
    for (i64 k = k0; k <= k1; ++k) {
      // The positions as the simulator has always computed them (x_start + k dx differs in the
      // last bits, which would change its Poisson draws).
      const double along = (double(k) + 0.5) * step - length / 2;
      const double x = (offset * c - along * s) / g.sx + g.cx, y = (offset * s + along * c) / g.sy + g.cy;
      if (!(x > -1 && y > -1 && x < double(g.nx) && y < double(g.ny))) continue;  // reads only zeros
      const i64 x0 = i64(x + 1) - 1, y0 = i64(y + 1) - 1;  // the floor: x + 1 > 0
      const double ax = x - double(x0), ay = y - double(y0);
      double v00, v10, v01, v11;
      if (x0 >= 0 && y0 >= 0 && x0 + 1 < g.nx && y0 + 1 < g.ny) {
        const double* p = g.values + y0 * g.nx + x0;
        v00 = p[0], v10 = p[1], v01 = p[g.nx], v11 = p[g.nx + 1];
      } else {
        v00 = at(x0, y0), v10 = at(x0 + 1, y0), v01 = at(x0, y0 + 1), v11 = at(x0 + 1, y0 + 1);
      }
      integral += (1 - ay) * ((1 - ax) * v00 + ax * v10) + ay * ((1 - ax) * v01 + ax * v11);
    }
    out[t] = integral * step;
  }
}

}  // namespace ctd::detail
