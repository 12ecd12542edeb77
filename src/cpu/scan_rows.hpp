#pragma once
// The scan-like probe's hot loops (src/core/scan_rays.cpp) in SIMD registers, compiled for every
// target Highway knows and chosen at run time. Each gives the bits of the plain loop its comment
// states, on every target (no fused multiply-add: CMakeLists.txt builds it with -ffp-contract=off).

#include <cstdint>
#include <span>

namespace ctd::cpu {

// Rays of one view, linearly interpolated at a row of n voxels and added to each channel's sums:
// for x in [0, n) and each channel q,
//   k = clamp(trunc(t), 0, last), f = clamp(t - k, 0, 1),
//   acc[q][x] += rows[q][k] + f * steps[q][k],
// with t = start + x * c.
void add_parallel_rays(std::span<const double* const> rows, std::span<const double* const> steps, std::int64_t last,
                       double start, double c, std::span<double* const> acc, std::int64_t n);

// The same for a fan beam's view, its source at distance D: along = along0 - x * c,
// across = across0 - x * s, t = across * D / along + cd - t0, inverse_U = D / along, and
//   acc[q][x] += (rows[q][k] + f * steps[q][k]) * inverse_U * inverse_U.
void add_fan_rays(std::span<const double* const> rows, std::span<const double* const> steps, std::int64_t last,
                  double along0, double across0, double c, double s, double D, double cd, double t0,
                  std::span<double* const> acc, std::int64_t n);

// acc[t] += kernel[k] * in[t + k] for t in [0, n), tap by tap in the order of k.
void add_correlation(const double* in, const double* kernel, std::int64_t taps, double* acc, std::int64_t n);

}  // namespace ctd::cpu
