#pragma once
// What the boxes of the CPU NLM by displacements share: the displacements, the spans of their
// pairs, the patch kernel and constants, and each box's working arrays (nlm_displacement.cpp).

#include "core/mirror.hpp"
#include "cpu/backend.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

namespace ctd::cpu::nlm_displacement_detail {

using detail::MirrorTable;
using i64 = std::int64_t;

struct Displacement {
  i64 dx, dy, dz;
};

// Displacements d != 0 with d > 0 in (z, y, x) lexicographic order: one of each pair {d, -d}.
inline std::vector<Displacement> half_window(i64 rs, i64 rsz) {
  std::vector<Displacement> result;
  for (i64 dz = 0; dz <= rsz; ++dz)
    for (i64 dy = -rs; dy <= rs; ++dy)
      for (i64 dx = -rs; dx <= rs; ++dx)
        if (dz > 0 || dy > 0 || (dy == 0 && dx > 0)) result.push_back({dx, dy, dz});
  return result;
}

// Range [lo, hi) along one axis; empty where hi <= lo.
struct Span {
  i64 lo, hi;
  i64 length() const { return hi - lo; }
};
// p such that p and p + d are both inside [0, n).
inline Span pair_span(i64 d, i64 n) { return {std::max<i64>(0, -d), std::min(n, n - d)}; }
// The pairs (p, p + d) whose weights the voxels of [t_lo, t_hi) add: p in the box (w(p, p+d)) or
// p + d in it (w(p, p+d) for the voxel p + d), within the pairs' span: the hull of the two.
inline Span weight_span(Span pairs, i64 t_lo, i64 t_hi, i64 d) {
  return {std::max(pairs.lo, std::min(t_lo, t_lo - d)), std::min(pairs.hi, std::max(t_hi, t_hi - d))};
}

// What every box shares: the kernel, the constants and the displacements.
struct Setup {
  // At each of `h_values` (params.h unused).
  Setup(const Dims& dims, const NlmParams& params, std::span<const float> h_values)
      : nx(dims.nx), ny(dims.ny), nz(dims.nz),
        rp(params.patch_radius), rpz(dims.is_2d() ? 0 : params.patch_radius),
        rs(params.search_radius), rsz(dims.is_2d() ? 0 : params.search_radius),
        patch_width(2 * rp + 1),
        l1(params.distance == PatchDistance::L1),
        track_max(params.centre_weight == CentreWeight::Max),
        mx(nx, rp), my(ny, rp), mz(nz, rpz),
        g1(std::size_t(patch_width), 1.0f),
        displacements(half_window(rs, rsz)) {
    const int dim = dims.is_2d() ? 2 : 3;
    if (params.patch_kernel == PatchKernel::Gaussian) {
      for (i64 k = -rp; k <= rp; ++k)
        g1[std::size_t(k + rp)] = float(std::exp(-double(k * k) / (2.0 * params.patch_sigma * params.patch_sigma)));
    }
    gz = dims.is_2d() ? std::vector<float>{1.0f} : g1;
    double g1_sum = 0;
    for (float g : g1) g1_sum += g;
    inv_norm = float(1.0 / std::pow(g1_sum, dim));
    // Zhang et al.'s L1 kernel G(k) over the whole patch ([kz][ky][kx]), not separable.
    if (l1) {
      for (i64 kz = -rpz; kz <= rpz; ++kz)
        for (i64 ky = -rp; ky <= rp; ++ky)
          for (i64 kx = -rp; kx <= rp; ++kx) {
            const double r = std::sqrt(double(kx * kx + ky * ky + kz * kz));
            g_l1.push_back(float(r == 0 ? std::sqrt(2.0) : 1.0 / r));
          }
    }
    for (const float h : h_values) {
      l1_scale.push_back(float(1.0 / (double(h) * std::pow(double(patch_width), dim))));
      inv_h2.push_back(float(1.0 / (double(h) * h)));
    }
    bias = float(2.0 * double(params.noise_sigma) * params.noise_sigma);
  }
  i64 nx, ny, nz, rp, rpz, rs, rsz, patch_width;
  bool l1, track_max;
  MirrorTable mx, my, mz;
  std::vector<float> g1, gz, g_l1;
  std::vector<float> l1_scale, inv_h2;  // per strength
  float inv_norm = 1, bias = 0;
  std::size_t strengths() const { return inv_h2.size(); }
  std::vector<Displacement> displacements;
};

// A box's working arrays, sized for the largest box and reused; the weights and sums one set per
// strength, strength after strength.
struct Scratch {
  std::vector<float> e, ex, exy, d2, weight, max_weight;
  std::vector<double> acc_value, acc_weight;
  std::size_t weight_size = 0, box_size = 0;
  void reserve(const Setup& s, const OutputBox& largest) {
    // A box's hull is at most the search radius longer than the box along each axis.
    const i64 wx = largest.x1 - largest.x0 + s.rs, wy = largest.y1 - largest.y0 + s.rs, wz = largest.z1 - largest.z0 + s.rsz;
    const i64 px = wx + 2 * s.rp, py = wy + 2 * s.rp, pz = wz + 2 * s.rpz;
    const i64 n = (largest.x1 - largest.x0) * (largest.y1 - largest.y0) * (largest.z1 - largest.z0);
    e.resize(std::size_t(px));
    ex.resize(std::size_t(pz * py * (s.l1 ? px : wx)));
    exy.resize(s.l1 ? 0 : std::size_t(pz * wy * wx));
    d2.resize(std::size_t(wx));
    weight_size = std::size_t(wz * wy * wx), box_size = std::size_t(n);
    const std::size_t k = s.strengths();
    weight.resize(k * weight_size);
    acc_value.resize(k * box_size);
    acc_weight.resize(k * box_size);
    max_weight.resize(s.track_max ? k * box_size : 0);
  }
};

}  // namespace ctd::cpu::nlm_displacement_detail
