#pragma once
// Young & van Vliet (1995) third-order recursive Gaussian: the coefficients for sigma in voxels,
// shared by the CPU and CUDA compressive filters. Each line is mirror-padded by `pad` samples at
// both ends; a causal pass w[n] = B x[n] + b1 w[n-1] + b2 w[n-2] + b3 w[n-3] starts in the steady
// state of its first sample, an anti-causal pass of the same form runs back over its output.

#include <cmath>
#include <cstdint>

namespace ctd::detail {

struct RecursiveGaussianCoefficients {
  double b1, b2, b3, B;  // gain 1: B = 1 - (b1 + b2 + b3)
  std::int64_t pad;      // mirror padding that lets the recursion settle before the edge

  explicit RecursiveGaussianCoefficients(double sigma) {
    const double q = sigma >= 2.5 ? 0.98711 * sigma - 0.96330 : 3.97156 - 4.14554 * std::sqrt(1.0 - 0.26891 * sigma);
    const double b0 = 1.57825 + 2.44413 * q + 1.4281 * q * q + 0.422205 * q * q * q;
    b1 = (2.44413 * q + 2.85619 * q * q + 1.26661 * q * q * q) / b0;
    b2 = -(1.4281 * q * q + 1.26661 * q * q * q) / b0;
    b3 = 0.422205 * q * q * q / b0;
    B = 1.0 - (b1 + b2 + b3);
    pad = std::int64_t(std::ceil(4.0 * sigma)) + 4;
  }
};

}  // namespace ctd::detail
