// The parallel-beam projection shared by the simulator and the scan-like probe
// (src/core/fbp.hpp), against chord lengths computed here.

#include "core/fbp.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace {

// The length of the line {offset (c, s) + a (-s, c)} inside the box [x0, x1] x [y0, y1]
// (slab by slab, in double precision).
double chord(double offset, double c, double s, double x0, double x1, double y0, double y1) {
  double lo = -1e300, hi = 1e300;
  auto slab = [&](double p, double d, double a, double b) {  // p + t d within [a, b]
    if (d == 0) {
      if (p < a || p > b) lo = 1, hi = 0;
      return;
    }
    const double t0 = (a - p) / d, t1 = (b - p) / d;
    lo = std::max(lo, std::min(t0, t1)), hi = std::min(hi, std::max(t0, t1));
  };
  slab(offset * c, -s, x0, x1);
  slab(offset * s, c, y0, y1);
  return std::max(0.0, hi - lo);
}

}  // namespace

// A slice of ones: each ray's integral lies between its chords through the pixels' centres'
// box and that box grown by a pixel each side (the bilinear ramp to the zeros outside). Every
// view of 3 degrees, with the level and upright ones (where a direction has a zero component, or
// nearly: cos(pi / 2)), odd and non-square sizes, non-square pixels.
TEST(Fbp, LineIntegralsOfOnesAreTheChords) {
  struct Case {
    std::int64_t nx, ny;
    double sx, sy;
  };
  for (const Case& k : {Case{512, 512, 0.7, 0.7}, Case{37, 53, 1.0, 1.0}, Case{100, 61, 0.6, 0.9}, Case{9, 7, 3.0, 3.0}}) {
    std::vector<double> ones(std::size_t(k.nx * k.ny), 1.0);
    const double cx = (double(k.nx) - 1) / 2, cy = (double(k.ny) - 1) / 2;
    const ctd::detail::SliceGrid grid{ones.data(), k.nx, k.ny, k.sx, k.sy, cx, cy};
    const double length = std::hypot(double(k.nx) * k.sx, double(k.ny) * k.sy) + 2 * std::max(k.sx, k.sy);
    const double tau = std::min(k.sx, k.sy), step = 0.5 * tau;
    const std::int64_t nd = std::int64_t(std::ceil(length / tau)) | 1;
    const double x0 = -cx * k.sx, y0 = -cy * k.sy;  // the first pixel's centre
    for (int view = 0; view < 180; view += 3) {
      const double theta = M_PI * view / 180, c = std::cos(theta), s = std::sin(theta);
      std::vector<double> p(static_cast<std::size_t>(nd));
      ctd::detail::line_integrals(grid, theta, nd, tau, step, length, p.data());
      for (std::int64_t t = 0; t < nd; ++t) {
        const double offset = (double(t) - (double(nd) - 1) / 2) * tau;
        const double inner = chord(offset, c, s, x0, -x0, y0, -y0);
        const double outer = chord(offset, c, s, x0 - k.sx, k.sx - x0, y0 - k.sy, k.sy - y0);
        const double value = p[std::size_t(t)];
        ASSERT_TRUE(value >= inner - 2 * step && value <= outer + 2 * step)
            << k.nx << " x " << k.ny << " view " << view << " bin " << t << ": " << value << " not in [" << inner << ", "
            << outer << "]";
      }
    }
  }
}
