// Parallel-beam projection and the filter of filtered back-projection (src/core/fbp.cpp): the
// low-dose simulation (simulate.cpp) and the scan-like probe of the automatic parameters
// (scan_probe.cpp) project and filter alike.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

namespace ctd::detail {

// The FBP filters' windows: the Ram-Lak ramp alone, or apodised by a window in frequency.
inline constexpr std::array<std::string_view, 5> kFbpWindows = {"ramp", "shepp-logan", "cosine", "hamming", "hann"};

// The FBP filter as a spatial kernel h[n], n in [-(nd - 1), nd - 1] (index n + nd - 1), for
// detector spacing tau: the Ram-Lak kernel (the exact discrete ramp), apodised in frequency by
// `window` (one of kFbpWindows; throws InvalidArgument otherwise).
std::vector<double> fbp_kernel(std::int64_t nd, double tau, std::string_view window);

// A row-major slice of nx x ny values with spacing (sx, sy), whose index point (cx, cy) is the
// centre of rotation.
struct SliceGrid {
  const double* values;
  std::int64_t nx, ny;
  double sx, sy, cx, cy;
};

// Its line integrals along the rays of view angle theta (radians) through nd detector bins, bin t
// at (t - (nd - 1) / 2) tau from the centre: bilinear samples every `step` along a path of length
// `length` centred on the centre (zero outside the slice), into out[0, nd).
void line_integrals(const SliceGrid& slice, double theta, std::int64_t nd, double tau, double step, double length,
                    double* out);

}  // namespace ctd::detail
