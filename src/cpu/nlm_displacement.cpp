// Exact CPU NLM by displacements (Condat's scheme, as in Marques et al., run on the CPU).
//
// For each displacement d in half the search window, every voxel p with p + d inside the volume
// gets d2(p, p+d) from a difference image E(y) = (u(m(y)) - u(m(y+d)))^2 over the patch-padded
// region (m = mirror), summed with the separable patch kernel (x, then y, then z pass). The weight
// w(p, p+d) is computed once and added to both p and p+d, which halves the exps. Each phase writes
// disjoint outputs, and every voxel accumulates its terms in the fixed order of the displacements,
// so results do not depend on the thread count.

#include "core/mirror.hpp"
#include "cpu/backend.hpp"
#include "cpu/vector_exp.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace ctd::cpu {
namespace {

using detail::MirrorTable;
using i64 = std::int64_t;

struct Displacement {
  i64 dx, dy, dz;
};

// Displacements d != 0 with d > 0 in (z, y, x) lexicographic order: one of each pair {d, -d}.
std::vector<Displacement> half_window(i64 rs, i64 rsz) {
  std::vector<Displacement> result;
  for (i64 dz = 0; dz <= rsz; ++dz)
    for (i64 dy = -rs; dy <= rs; ++dy)
      for (i64 dx = -rs; dx <= rs; ++dx)
        if (dz > 0 || dy > 0 || (dy == 0 && dx > 0)) result.push_back({dx, dy, dz});
  return result;
}

// Range [lo, hi) of p along one axis such that p and p + d are both inside [0, n).
struct Span {
  i64 lo, hi;
  i64 length() const { return hi - lo; }
};
Span pair_span(i64 d, i64 n) { return {std::max<i64>(0, -d), std::min(n, n - d)}; }

}  // namespace

void nlm_displacement(ConstVolumeView<float> in, VolumeView<float> out, const NlmParams& params,
                      ThreadPool& pool, const Progress& progress) {
  const Dims dims = in.dims;
  const i64 nx = dims.nx, ny = dims.ny, nz = dims.nz;
  const bool two_d = dims.is_2d();
  const int dim = two_d ? 2 : 3;
  const i64 rp = params.patch_radius, rpz = two_d ? 0 : rp;
  const i64 rs = params.search_radius, rsz = two_d ? 0 : rs;
  const i64 patch_width = 2 * rp + 1;
  const bool l1 = params.distance == PatchDistance::L1;

  const MirrorTable mx(nx, rp), my(ny, rp), mz(nz, rpz);

  // Separable patch kernel factors (L2) and its normalisation sum_k g(k).
  std::vector<float> g1(static_cast<std::size_t>(patch_width), 1.0f);
  if (params.patch_kernel == PatchKernel::Gaussian) {
    for (i64 k = -rp; k <= rp; ++k) {
      g1[static_cast<std::size_t>(k + rp)] =
          static_cast<float>(std::exp(-double(k * k) / (2.0 * params.patch_sigma * params.patch_sigma)));
    }
  }
  const std::vector<float> gz = two_d ? std::vector<float>{1.0f} : g1;
  double g1_sum = 0;
  for (float g : g1) g1_sum += g;
  const float inv_norm = static_cast<float>(1.0 / std::pow(g1_sum, dim));

  // Seed 003's L1 kernel G(k) over the whole patch ([kz][ky][kx]), not separable.
  std::vector<float> g_l1;
  if (l1) {
    for (i64 kz = -rpz; kz <= rpz; ++kz)
      for (i64 ky = -rp; ky <= rp; ++ky)
        for (i64 kx = -rp; kx <= rp; ++kx) {
          const double r = std::sqrt(double(kx * kx + ky * ky + kz * kz));
          g_l1.push_back(static_cast<float>(r == 0 ? std::sqrt(2.0) : 1.0 / r));
        }
  }
  const float l1_scale = static_cast<float>(1.0 / (double(params.h) * std::pow(double(patch_width), dim)));
  const float inv_h2 = static_cast<float>(1.0 / (double(params.h) * params.h));
  const float bias = static_cast<float>(2.0 * double(params.noise_sigma) * params.noise_sigma);
  const bool track_max = params.centre_weight == CentreWeight::Max;

  const i64 n = dims.count();
  const i64 padded_rows = (nz + 2 * rpz) * (ny + 2 * rp);
  std::vector<float> ex(static_cast<std::size_t>(padded_rows * (l1 ? nx + 2 * rp : nx)));
  std::vector<float> exy(l1 ? 0 : static_cast<std::size_t>((nz + 2 * rpz) * ny * nx));
  std::vector<float> weight(static_cast<std::size_t>(n));
  std::vector<double> acc_value(static_cast<std::size_t>(n), 0.0), acc_weight(static_cast<std::size_t>(n), 0.0);
  std::vector<float> max_weight(track_max ? static_cast<std::size_t>(n) : 0, 0.0f);

  const auto displacements = half_window(rs, rsz);
  for (std::size_t di = 0; di < displacements.size(); ++di) {
    const auto [dx, dy, dz] = displacements[di];
    const Span sx = pair_span(dx, nx), sy = pair_span(dy, ny), sz = pair_span(dz, nz);
    const i64 lx = sx.length(), ly = sy.length(), lz = sz.length();
    if (lx <= 0 || ly <= 0 || lz <= 0) {
      if (progress) progress(double(di + 1) / double(displacements.size()));
      continue;
    }
    const i64 px = lx + 2 * rp, py = ly + 2 * rp, pz = lz + 2 * rpz;  // patch-padded extents

    // A: per padded row, the difference image and (L2) its x pass.
    pool.parallel_for(pz * py, [&](i64 begin, i64 end) {
      std::vector<float> e(static_cast<std::size_t>(px));
      for (i64 row = begin; row < end; ++row) {
        const i64 z = sz.lo - rpz + row / py, y = sy.lo - rp + row % py;
        const float* a = in.data + (mz[z] * ny + my[y]) * nx;
        const float* b = in.data + (mz[z + dz] * ny + my[y + dy]) * nx;
        float* target = l1 ? ex.data() + row * px : e.data();
        // Positions i whose x and x + dx both lie inside need no mirror: [inside_begin, inside_end).
        const i64 x0 = sx.lo - rp;
        const i64 inside_begin = std::clamp<i64>(std::max(-x0, -x0 - dx), 0, px);
        const i64 inside_end = std::clamp<i64>(std::min(nx - x0, nx - x0 - dx), inside_begin, px);
        auto mirrored = [&](i64 i) {
          const float diff = a[mx[x0 + i]] - b[mx[x0 + i + dx]];
          target[i] = l1 ? std::fabs(diff) : diff * diff;
        };
        for (i64 i = 0; i < inside_begin; ++i) mirrored(i);
        const float* a_in = a + x0;
        const float* b_in = b + x0 + dx;
        if (l1) {
          for (i64 i = inside_begin; i < inside_end; ++i) target[i] = std::fabs(a_in[i] - b_in[i]);
        } else {
          for (i64 i = inside_begin; i < inside_end; ++i) target[i] = (a_in[i] - b_in[i]) * (a_in[i] - b_in[i]);
        }
        for (i64 i = inside_end; i < px; ++i) mirrored(i);
        if (l1) continue;
        // The x pass, a tap at a time over the row (each sum adds its taps in the same order).
        float* ex_row = ex.data() + row * lx;
        std::fill(ex_row, ex_row + lx, 0.0f);
        for (i64 k = 0; k < patch_width; ++k) {
          const float g = g1[static_cast<std::size_t>(k)];
          const float* src = e.data() + k;
          for (i64 x = 0; x < lx; ++x) ex_row[x] += g * src[x];
        }
      }
    });

    // A2 (L2): y pass.
    if (!l1) {
      pool.parallel_for(pz * ly, [&](i64 begin, i64 end) {
        for (i64 row = begin; row < end; ++row) {
          const i64 zp = row / ly, y = row % ly;
          float* dst = exy.data() + row * lx;
          std::fill(dst, dst + lx, 0.0f);
          for (i64 k = 0; k < patch_width; ++k) {
            const float g = g1[static_cast<std::size_t>(k)];
            const float* src = ex.data() + (zp * py + y + k) * lx;
            for (i64 x = 0; x < lx; ++x) dst[x] += g * src[x];
          }
        }
      });
    }

    // B: z pass (L2) or the whole L1 kernel, then the weight of each pair (p, p+d).
    pool.parallel_for(lz * ly, [&](i64 begin, i64 end) {
      std::vector<float> d2(static_cast<std::size_t>(lx));
      for (i64 row = begin; row < end; ++row) {
        const i64 z = row / ly, y = row % ly;
        float* w = weight.data() + row * lx;
        std::fill(d2.begin(), d2.end(), 0.0f);
        if (l1) {
          std::size_t k = 0;
          for (i64 kz = 0; kz <= 2 * rpz; ++kz)
            for (i64 ky = 0; ky < patch_width; ++ky) {
              const float* src = ex.data() + ((z + kz) * py + y + ky) * px;
              for (i64 kx = 0; kx < patch_width; ++kx, ++k) {
                const float g = g_l1[k];
                for (i64 x = 0; x < lx; ++x) d2[static_cast<std::size_t>(x)] += g * src[x + kx];
              }
            }
          exp_of_negative_products(d2.data(), l1_scale, w, lx);
        } else {
          for (std::size_t kz = 0; kz < gz.size(); ++kz) {
            const float g = gz[kz];
            const float* src = exy.data() + ((z + static_cast<i64>(kz)) * ly + y) * lx;
            for (i64 x = 0; x < lx; ++x) d2[static_cast<std::size_t>(x)] += g * src[x];
          }
          for (i64 x = 0; x < lx; ++x) {
            d2[static_cast<std::size_t>(x)] = std::max(d2[static_cast<std::size_t>(x)] * inv_norm - bias, 0.0f);
          }
          exp_of_negative_products(d2.data(), inv_h2, w, lx);
        }
      }
    });

    // C: every voxel adds w(p, p+d) u(p+d) (p in the span) and w(p-d, p) u(p-d) (p-d in the span).
    pool.parallel_for(nz * ny, [&](i64 begin, i64 end) {
      auto add = [&](i64 x_begin, i64 x_end, i64 out_base, i64 weight_base, i64 value_base) {
        for (i64 x = x_begin; x < x_end; ++x) {
          const auto o = static_cast<std::size_t>(out_base + x);
          const float w = weight[static_cast<std::size_t>(weight_base + x)];
          acc_weight[o] += w;
          acc_value[o] += double(w) * in.data[value_base + x];
          if (track_max) max_weight[o] = std::max(max_weight[o], w);
        }
      };
      for (i64 row = begin; row < end; ++row) {
        const i64 z = row / ny, y = row % ny;
        if (z >= sz.lo && z < sz.hi && y >= sy.lo && y < sy.hi) {
          add(sx.lo, sx.hi, row * nx, ((z - sz.lo) * ly + (y - sy.lo)) * lx - sx.lo,
              ((z + dz) * ny + (y + dy)) * nx + dx);
        }
        const i64 zb = z - dz, yb = y - dy;
        if (zb >= sz.lo && zb < sz.hi && yb >= sy.lo && yb < sy.hi) {
          add(sx.lo + dx, sx.hi + dx, row * nx, ((zb - sz.lo) * ly + (yb - sy.lo)) * lx - sx.lo - dx,
              (zb * ny + yb) * nx - dx);
        }
      }
    });

    if (progress) progress(double(di + 1) / double(displacements.size()));
  }

  // The centre voxel: w(p,p) = 1 (formula), or the largest neighbour weight.
  pool.parallel_for(n, [&](i64 begin, i64 end) {
    for (i64 i = begin; i < end; ++i) {
      const auto s = static_cast<std::size_t>(i);
      double centre = 1.0;
      if (track_max && max_weight[s] > 0.0f) centre = max_weight[s];
      out.data[i] = static_cast<float>((acc_value[s] + centre * in.data[i]) / (acc_weight[s] + centre));
    }
  });
}

}  // namespace ctd::cpu
