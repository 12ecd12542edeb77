// Smooth noise read from second differences (smooth_noise_fit.hpp).

#include "core/smooth_noise_fit.hpp"

namespace ctd::detail {

std::optional<SmoothNoise> fit_smooth_noise(double v1, double v2) {
  constexpr double kWidestBelieved = 3;
  auto reads = [](double d, double w) { return SmoothNoise{1, w}.reads(d); };
  const double ratio = v2 / v1;
  if (!(ratio > 1) || ratio >= reads(2, kWidestBelieved) / reads(1, kWidestBelieved)) return std::nullopt;
  double lo = 1e-3, hi = kWidestBelieved;  // the ratio grows with the width
  for (int i = 0; i < 60; ++i) {
    const double mid = (lo + hi) / 2;
    (reads(2, mid) / reads(1, mid) < ratio ? lo : hi) = mid;
  }
  return SmoothNoise{v1 / reads(1, lo), lo};
}

std::optional<SmoothNoise> fit_smooth_and_white_noise(double v1, double v2, double v4) {
  constexpr double kNarrowest = 0.5, kWidest = 3;
  auto ratio_at = [](double w) {
    const SmoothNoise n{1, w};
    return (n.reads(4) - n.reads(1)) / (n.reads(2) - n.reads(1));
  };
  if (!(v2 > v1)) return std::nullopt;
  const double ratio = (v4 - v1) / (v2 - v1);
  if (!(ratio > ratio_at(kNarrowest)) || ratio > ratio_at(kWidest)) return std::nullopt;
  double lo = kNarrowest, hi = kWidest;
  for (int i = 0; i < 60; ++i) {
    const double mid = (lo + hi) / 2;
    (ratio_at(mid) < ratio ? lo : hi) = mid;
  }
  SmoothNoise n{1, lo};
  n.c0 = (v2 - v1) / (n.reads(2) - n.reads(1));
  n.white = (v1 - n.c0 * n.reads(1)) / 6;
  if (n.white < 0) {
    if (n.white < -0.02 * n.c0) return std::nullopt;
    n.white = 0;
  }
  return n;
}

}  // namespace ctd::detail
