// Exact CPU NLM by displacements (Condat's scheme, as in Marques et al., run on the CPU), box by box.
//
// For each displacement d in half the search window, every voxel p with p + d inside the volume
// gets d2(p, p+d) from a difference image E(y) = (u(m(y)) - u(m(y+d)))^2 over the patch-padded
// region (m = mirror), summed with the separable patch kernel (x, then y, then z pass). The weight
// w(p, p+d) is computed once and added to both p and p+d, which halves the exps.
//
// The output is computed in boxes small enough for a core's cache, each on one thread through
// every displacement with its own scratch: a box needs the weights of its voxels and of the voxels
// one displacement before them, so it computes them on the hull of the two (a fifth more pairs for
// 24-voxel boxes at search radius 5) and keeps its sums in its cache. Phase by phase over the whole
// volume (until 2026-11-28) every displacement streamed the volume's sums through memory, and the
// threads met four times per displacement. Every voxel adds its terms in the fixed order of the
// displacements from weights computed by the same operations, so the result does not depend on the
// boxes or the thread count.
//
// The boxes' loops are compiled for every x86 (or other) target Highway knows and chosen at run
// time for this CPU, as plain loops the compiler vectorises for that target (1.5 x faster with
// AVX-512 than with SSE2 here), without contracting a * b + c into one rounding, so that every
// target gives the same bits (CMakeLists.txt: -ffp-contract=off).

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/nlm_displacement.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include <hwy/highway.h>

#include "cpu/nlm_displacement_setup.hpp"
#include "cpu/vector_exp.hpp"

HWY_BEFORE_NAMESPACE();
namespace ctd::cpu::HWY_NAMESPACE {

using namespace nlm_displacement_detail;
using i64 = std::int64_t;

// The output on box t: every displacement's weights on the hull the box needs, added to the box's
// sums, then the sums' ratio with the centre voxel's weight.
void RunBox(const Setup& s, ConstVolumeView<float> in, std::span<const VolumeView<float>> outs, const OutputBox& t,
            Scratch& w) {
  const i64 nx = s.nx, ny = s.ny, nz = s.nz, rp = s.rp, rpz = s.rpz, patch_width = s.patch_width;
  const i64 tx = t.x1 - t.x0, ty = t.y1 - t.y0;
  const i64 n = tx * ty * (t.z1 - t.z0);
  const std::size_t strengths = s.strengths();
  for (std::size_t k = 0; k < strengths; ++k) {
    std::fill_n(w.acc_value.begin() + std::ptrdiff_t(k * w.box_size), n, 0.0);
    std::fill_n(w.acc_weight.begin() + std::ptrdiff_t(k * w.box_size), n, 0.0);
    if (s.track_max) std::fill_n(w.max_weight.begin() + std::ptrdiff_t(k * w.box_size), n, 0.0f);
  }

  for (const auto& [dx, dy, dz] : s.displacements) {
    const Span sx = pair_span(dx, nx), sy = pair_span(dy, ny), sz = pair_span(dz, nz);
    const Span wx = weight_span(sx, t.x0, t.x1, dx), wy = weight_span(sy, t.y0, t.y1, dy),
               wz = weight_span(sz, t.z0, t.z1, dz);
    const i64 lx = wx.length(), ly = wy.length(), lz = wz.length();
    if (lx <= 0 || ly <= 0 || lz <= 0) continue;
    const i64 px = lx + 2 * rp, py = ly + 2 * rp, pz = lz + 2 * rpz;  // patch-padded extents

    // A: per padded row, the difference image and (L2) its x pass.
    for (i64 row = 0; row < pz * py; ++row) {
      const i64 z = wz.lo - rpz + row / py, y = wy.lo - rp + row % py;
      const float* a = in.data + (s.mz[z] * ny + s.my[y]) * nx;
      const float* b = in.data + (s.mz[z + dz] * ny + s.my[y + dy]) * nx;
      float* target = s.l1 ? w.ex.data() + row * px : w.e.data();
      // Positions i whose x and x + dx both lie inside need no mirror: [inside_begin, inside_end).
      const i64 x0 = wx.lo - rp;
      const i64 inside_begin = std::clamp<i64>(std::max(-x0, -x0 - dx), 0, px);
      const i64 inside_end = std::clamp<i64>(std::min(nx - x0, nx - x0 - dx), inside_begin, px);
      auto mirrored = [&](i64 i) {
        const float diff = a[s.mx[x0 + i]] - b[s.mx[x0 + i + dx]];
        target[i] = s.l1 ? std::fabs(diff) : diff * diff;
      };
      for (i64 i = 0; i < inside_begin; ++i) mirrored(i);
      const float* a_in = a + x0;
      const float* b_in = b + x0 + dx;
      if (s.l1) {
        for (i64 i = inside_begin; i < inside_end; ++i) target[i] = std::fabs(a_in[i] - b_in[i]);
      } else {
        for (i64 i = inside_begin; i < inside_end; ++i) target[i] = (a_in[i] - b_in[i]) * (a_in[i] - b_in[i]);
      }
      for (i64 i = inside_end; i < px; ++i) mirrored(i);
      if (s.l1) continue;
      // The x pass, a tap at a time over the row (each sum adds its taps in the same order).
      float* ex_row = w.ex.data() + row * lx;
      std::fill(ex_row, ex_row + lx, 0.0f);
      for (i64 k = 0; k < patch_width; ++k) {
        const float g = s.g1[std::size_t(k)];
        const float* src = w.e.data() + k;
        for (i64 x = 0; x < lx; ++x) ex_row[x] += g * src[x];
      }
    }

    // A2 (L2): y pass.
    if (!s.l1) {
      for (i64 row = 0; row < pz * ly; ++row) {
        const i64 zp = row / ly, y = row % ly;
        float* dst = w.exy.data() + row * lx;
        std::fill(dst, dst + lx, 0.0f);
        for (i64 k = 0; k < patch_width; ++k) {
          const float g = s.g1[std::size_t(k)];
          const float* src = w.ex.data() + (zp * py + y + k) * lx;
          for (i64 x = 0; x < lx; ++x) dst[x] += g * src[x];
        }
      }
    }

    // B: z pass (L2) or the whole L1 kernel, then the weight of each pair (p, p+d) of the hull at
    // each strength.
    float* d2 = w.d2.data();
    for (i64 row = 0; row < lz * ly; ++row) {
      const i64 z = row / ly, y = row % ly;
      std::fill(d2, d2 + lx, 0.0f);
      if (s.l1) {
        std::size_t k = 0;
        for (i64 kz = 0; kz <= 2 * rpz; ++kz)
          for (i64 ky = 0; ky < patch_width; ++ky) {
            const float* src = w.ex.data() + ((z + kz) * py + y + ky) * px;
            for (i64 kx = 0; kx < patch_width; ++kx, ++k) {
              const float g = s.g_l1[k];
              for (i64 x = 0; x < lx; ++x) d2[x] += g * src[x + kx];
            }
          }
        for (std::size_t j = 0; j < strengths; ++j)
          exp_of_negative_products(d2, s.l1_scale[j], w.weight.data() + j * w.weight_size + row * lx, lx);
      } else {
        for (std::size_t kz = 0; kz < s.gz.size(); ++kz) {
          const float g = s.gz[kz];
          const float* src = w.exy.data() + ((z + i64(kz)) * ly + y) * lx;
          for (i64 x = 0; x < lx; ++x) d2[x] += g * src[x];
        }
        for (i64 x = 0; x < lx; ++x) d2[x] = std::max(d2[x] * s.inv_norm - s.bias, 0.0f);
        for (std::size_t k = 0; k < strengths; ++k)
          exp_of_negative_products(d2, s.inv_h2[k], w.weight.data() + k * w.weight_size + row * lx, lx);
      }
    }

    // C: every voxel q of the box adds w(q, q+d) u(q+d) (q in the pairs' span) and w(q-d, q)
    // u(q-d) (q - d in it), in that order, at each strength.
    for (std::size_t k = 0; k < strengths; ++k) {
      double* acc_weight = w.acc_weight.data() + k * w.box_size;
      double* acc_value = w.acc_value.data() + k * w.box_size;
      float* max_weight = s.track_max ? w.max_weight.data() + k * w.box_size : nullptr;
      const float* weights = w.weight.data() + k * w.weight_size;
      auto add = [&](i64 x_begin, i64 x_end, i64 acc_base, const float* weight, const float* values) {
        for (i64 x = x_begin; x < x_end; ++x) {
          const auto o = std::size_t(acc_base + x);
          const float wt = weight[x];
          acc_weight[o] += wt;
          acc_value[o] += double(wt) * values[x];
          if (s.track_max) max_weight[o] = std::max(max_weight[o], wt);
        }
      };
      for (i64 z = t.z0; z < t.z1; ++z)
        for (i64 y = t.y0; y < t.y1; ++y) {
          const i64 acc_base = ((z - t.z0) * ty + (y - t.y0)) * tx - t.x0;
          if (z >= sz.lo && z < sz.hi && y >= sy.lo && y < sy.hi) {
            add(std::max(sx.lo, t.x0), std::min(sx.hi, t.x1), acc_base, weights + ((z - wz.lo) * ly + (y - wy.lo)) * lx - wx.lo,
                in.data + ((z + dz) * ny + (y + dy)) * nx + dx);
          }
          const i64 zb = z - dz, yb = y - dy;
          if (zb >= sz.lo && zb < sz.hi && yb >= sy.lo && yb < sy.hi) {
            add(std::max(sx.lo + dx, t.x0), std::min(sx.hi + dx, t.x1), acc_base,
                weights + ((zb - wz.lo) * ly + (yb - wy.lo)) * lx - wx.lo - dx, in.data + (zb * ny + yb) * nx - dx);
          }
        }
    }
  }

  // The centre voxel: w(p,p) = 1 (formula), or the largest neighbour weight.
  for (std::size_t k = 0; k < strengths; ++k)
    for (i64 z = t.z0; z < t.z1; ++z)
      for (i64 y = t.y0; y < t.y1; ++y)
        for (i64 x = t.x0; x < t.x1; ++x) {
          const auto o = k * w.box_size + std::size_t(((z - t.z0) * ty + (y - t.y0)) * tx + (x - t.x0));
          const i64 i = (z * ny + y) * nx + x;
          double centre = 1.0;
          if (s.track_max && w.max_weight[o] > 0.0f) centre = w.max_weight[o];
          outs[k].data[i] = float((w.acc_value[o] + centre * in.data[i]) / (w.acc_weight[o] + centre));
        }
}

}  // namespace ctd::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <atomic>
#include <thread>

namespace ctd::cpu {

using namespace nlm_displacement_detail;
using i64 = std::int64_t;

HWY_EXPORT(RunBox);

std::vector<OutputBox> cache_boxes(const Dims& dims, const std::array<i64, 3>& size) {
  std::vector<OutputBox> boxes;
  for (i64 z = 0; z < dims.nz; z += size[2])
    for (i64 y = 0; y < dims.ny; y += size[1])
      for (i64 x = 0; x < dims.nx; x += size[0])
        boxes.push_back({x, y, z, std::min(dims.nx, x + size[0]), std::min(dims.ny, y + size[1]), std::min(dims.nz, z + size[2])});
  return boxes;
}

std::array<i64, 3> nlm_box_size(const Dims& dims) {
  if (dims.is_2d()) return {std::min<i64>(dims.nx, 256), std::min<i64>(dims.ny, 64), 1};
  return {std::min<i64>(dims.nx, 256), std::min<i64>(dims.ny, 24), std::min<i64>(dims.nz, 24)};
}

void nlm_displacement(ConstVolumeView<float> in, VolumeView<float> out, const NlmParams& params, ThreadPool& pool,
                      const Progress& progress, std::span<const OutputBox> only) {
  const VolumeView<float> outs[] = {out};
  const float h_values[] = {params.h};
  nlm_displacement(in, outs, h_values, params, pool, progress, only);
}

void nlm_displacement(ConstVolumeView<float> in, std::span<const VolumeView<float>> outs, std::span<const float> h_values,
                      const NlmParams& params, ThreadPool& pool, const Progress& progress, std::span<const OutputBox> only) {
  const Setup setup(in.dims, params, h_values);
  const std::vector<OutputBox> tiles = only.empty() ? cache_boxes(in.dims, nlm_box_size(in.dims)) : std::vector<OutputBox>{};
  const std::span<const OutputBox> boxes = only.empty() ? std::span<const OutputBox>(tiles) : only;
  OutputBox largest{0, 0, 0, 0, 0, 0};
  for (const OutputBox& b : boxes) {
    largest.x1 = std::max(largest.x1, b.x1 - b.x0);
    largest.y1 = std::max(largest.y1, b.y1 - b.y0);
    largest.z1 = std::max(largest.z1, b.z1 - b.z0);
  }
  // Progress is told on the calling thread (ExecContext), as boxes end on any thread.
  const std::thread::id caller = std::this_thread::get_id();
  std::atomic<i64> done{0};
  pool.parallel_for(i64(boxes.size()), [&](i64 begin, i64 end) {
    Scratch scratch;
    scratch.reserve(setup, largest);
    for (i64 b = begin; b < end; ++b) {
      const OutputBox& t = boxes[std::size_t(b)];
      if (t.x1 > t.x0 && t.y1 > t.y0 && t.z1 > t.z0) HWY_DYNAMIC_DISPATCH(RunBox)(setup, in, outs, t, scratch);
      const i64 finished = ++done;
      if (progress && std::this_thread::get_id() == caller) progress(double(finished) / double(boxes.size()));
    }
  });
}

}  // namespace ctd::cpu
#endif  // HWY_ONCE
