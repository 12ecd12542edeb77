// Blockwise NLM with voxel preselection (Coupe et al. 2008; Horáček et al.'s CPU comparison). An
// APPROXIMATION of the exact filter: whole blocks are restored from similar blocks on a grid of
// block centres (step 2), and every voxel averages the restorations of the blocks that cover it.
//
// Block B_i of radius a (= patch_radius) around each grid centre i; for every j in the search
// window (inside the volume), w_ij = exp(-max(d2(B_i, B_j) - 2 sigma^2, 0) / h^2) with d2 the mean
// squared difference (mirror border), skipped (preselection) unless the block means differ by at
// most h sqrt(2 / |B|) and the variances by at most a factor 2; w_ii = 1. Restored block:
// sum_j w_ij u(B_j) / sum_j w_ij. Deterministic: restorations are stored per centre, then each
// voxel gathers them in a fixed order.

#include "core/mirror.hpp"
#include "cpu/backend.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace ctd::cpu {

void nlm_blockwise(ConstVolumeView<float> in, VolumeView<float> out, const NlmParams& params, ThreadPool& pool,
                   const Progress& progress) {
  using i64 = std::int64_t;
  const Dims d = in.dims;
  const bool flat = d.is_2d();
  const i64 a = params.patch_radius, az = flat ? 0 : a;
  const i64 rs = params.search_radius, rsz = flat ? 0 : rs;
  const i64 step = 2, stepz = flat ? 1 : 2;
  const detail::MirrorTable mx(d.nx, a), my(d.ny, a), mz(d.nz, az);
  const i64 bx = 2 * a + 1, bz = 2 * az + 1, block = bx * bx * bz;
  auto value = [&](i64 x, i64 y, i64 z) { return in.data[(mz[z] * d.ny + my[y]) * d.nx + mx[x]]; };

  // Block mean and variance around every voxel (for preselection).
  const i64 n = d.count();
  const auto voxels = static_cast<std::size_t>(n);
  std::vector<float> mean(voxels), var(voxels);
  pool.parallel_for(d.nz * d.ny, [&](i64 begin, i64 end) {
    for (i64 row = begin; row < end; ++row) {
      const i64 z = row / d.ny, y = row % d.ny;
      for (i64 x = 0; x < d.nx; ++x) {
        double s = 0, s2 = 0;
        for (i64 kz = -az; kz <= az; ++kz)
          for (i64 ky = -a; ky <= a; ++ky)
            for (i64 kx = -a; kx <= a; ++kx) {
              const double v = value(x + kx, y + ky, z + kz);
              s += v;
              s2 += v * v;
            }
        const double m = s / double(block);
        mean[std::size_t(row * d.nx + x)] = float(m);
        var[std::size_t(row * d.nx + x)] = float(std::max(0.0, s2 / double(block) - m * m));
      }
    }
  });

  const i64 cx = (d.nx + step - 1) / step, cy = (d.ny + step - 1) / step, cz = (d.nz + stepz - 1) / stepz;
  const float inv_h2 = 1.0f / (params.h * params.h);
  const float bias = 2.0f * params.noise_sigma * params.noise_sigma;
  const float mean_tolerance = params.h * std::sqrt(2.0f / float(block));
  std::vector<float> restored(static_cast<std::size_t>(cx * cy * cz * block));

  for (i64 gz = 0; gz < cz; ++gz) {
    pool.parallel_for(cy * cx, [&](i64 begin, i64 end) {
      std::vector<double> sum(static_cast<std::size_t>(block));
      for (i64 t = begin; t < end; ++t) {
        const i64 x = (t % cx) * step, y = (t / cx) * step, z = gz * stepz;
        const std::size_t ci = std::size_t((z * d.ny + y) * d.nx + x);
        std::fill(sum.begin(), sum.end(), 0.0);
        double weight_sum = 0;
        for (i64 qz = std::max<i64>(0, z - rsz); qz <= std::min(d.nz - 1, z + rsz); ++qz)
          for (i64 qy = std::max<i64>(0, y - rs); qy <= std::min(d.ny - 1, y + rs); ++qy)
            for (i64 qx = std::max<i64>(0, x - rs); qx <= std::min(d.nx - 1, x + rs); ++qx) {
              const std::size_t cj = std::size_t((qz * d.ny + qy) * d.nx + qx);
              const bool centre = cj == ci;
              float w = 1.0f;
              if (!centre) {
                if (std::fabs(mean[ci] - mean[cj]) > mean_tolerance) continue;
                const float vi = var[ci], vj = var[cj];
                if (vi > 2 * vj + 1e-6f || vj > 2 * vi + 1e-6f) continue;
                double d2 = 0;
                for (i64 kz = -az; kz <= az; ++kz)
                  for (i64 ky = -a; ky <= a; ++ky)
                    for (i64 kx = -a; kx <= a; ++kx) {
                      const double diff = double(value(x + kx, y + ky, z + kz)) - value(qx + kx, qy + ky, qz + kz);
                      d2 += diff * diff;
                    }
                w = std::exp(-std::max(float(d2 / double(block)) - bias, 0.0f) * inv_h2);
              }
              std::size_t k = 0;
              for (i64 kz = -az; kz <= az; ++kz)
                for (i64 ky = -a; ky <= a; ++ky)
                  for (i64 kx = -a; kx <= a; ++kx, ++k) sum[k] += double(w) * value(qx + kx, qy + ky, qz + kz);
              weight_sum += w;
            }
        float* dst = restored.data() + ((gz * cy + t / cx) * cx + t % cx) * block;
        for (std::size_t k = 0; k < std::size_t(block); ++k) dst[k] = float(sum[k] / weight_sum);
      }
    });
    if (progress) progress(0.95 * double(gz + 1) / double(cz));
  }

  // Every voxel: the mean of the restorations of the blocks (centres within a) that cover it.
  pool.parallel_for(d.nz * d.ny, [&](i64 begin, i64 end) {
    for (i64 row = begin; row < end; ++row) {
      const i64 z = row / d.ny, y = row % d.ny;
      for (i64 x = 0; x < d.nx; ++x) {
        double s = 0;
        int count = 0;
        for (i64 gz = (std::max<i64>(0, z - az) + stepz - 1) / stepz; gz * stepz <= std::min(d.nz - 1, z + az); ++gz)
          for (i64 gy = (std::max<i64>(0, y - a) + step - 1) / step; gy * step <= std::min(d.ny - 1, y + a); ++gy)
            for (i64 gx = (std::max<i64>(0, x - a) + step - 1) / step; gx * step <= std::min(d.nx - 1, x + a); ++gx) {
              const i64 kx = x - gx * step, ky = y - gy * step, kz = z - gz * stepz;
              const std::size_t k = std::size_t(((kz + az) * bx + (ky + a)) * bx + (kx + a));
              s += restored[std::size_t(((gz * cy + gy) * cx + gx) * block) + k];
              ++count;
            }
        out.data[row * d.nx + x] = float(s / count);
      }
    }
  });
  if (progress) progress(1.0);
}

}  // namespace ctd::cpu
