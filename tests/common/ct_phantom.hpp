// Test helpers of the automatic parameters: a CT-like phantom and the best PSNR of a sweep.
#pragma once

#include <ctdenoise/metrics.hpp>
#include <ctdenoise/volume.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace ctd_test {

// A CT-like phantom without noise: air, soft tissue with a gentle ramp, a bone disc, padding
// outside a circular field of view.
inline ctd::Volume ct_phantom(ctd::Dims dims) {
  ctd::Volume v(dims);
  for (std::int64_t z = 0; z < dims.nz; ++z)
    for (std::int64_t y = 0; y < dims.ny; ++y)
      for (std::int64_t x = 0; x < dims.nx; ++x) {
        const double fx = (x - dims.nx / 2.0) / (dims.nx / 2.0), fy = (y - dims.ny / 2.0) / (dims.ny / 2.0);
        double value = -1000;
        if (fx * fx / 0.7 + fy * fy / 0.5 < 1) value = 40 + 20 * fx;
        if ((fx - 0.25) * (fx - 0.25) + fy * fy < 0.04) value = 700;
        if ((fx + 0.3) * (fx + 0.3) + (fy - 0.2) * (fy - 0.2) < 0.01) value = 120;
        v.view()(x, y, z) = fx * fx + fy * fy > 0.97 ? -3024 : float(value);
      }
  return v;
}

// The best PSNR over a fine sweep of the filter's strength, by the test's own loop.
template <class Run>
inline double best_psnr(const ctd::Volume& clean, double centre, Run&& run) {
  double best = -1e9;
  for (int k = -12; k <= 12; ++k) best = std::max(best, ctd::psnr(clean.view(), run(centre * std::exp2(k / 6.0)).view(), 2000));
  return best;
}

}  // namespace ctd_test
