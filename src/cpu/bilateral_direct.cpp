// Exact CPU bilateral filter: for each voxel, the direct sum over its window. The spatial kernel
// is tabulated once; borders go through per-axis mirror tables.

#include "core/mirror.hpp"
#include "cpu/backend.hpp"
#include "cpu/vector_exp.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace ctd::cpu {

void bilateral_direct(ConstVolumeView<float> in, VolumeView<float> out, const BilateralParams& params,
                      const std::array<int, 3>& radius, ThreadPool& pool, const Progress& progress) {
  using i64 = std::int64_t;
  const i64 nx = in.dims.nx, ny = in.dims.ny, nz = in.dims.nz;
  const i64 rx = radius[0], ry = radius[1], rz = radius[2];
  const detail::MirrorTable mx(nx, rx), my(ny, ry), mz(nz, rz);

  const bool mm = params.spatial_unit == SpatialUnit::Millimetre;
  const double sx = mm ? params.spacing[0] : 1.0, sy = mm ? params.spacing[1] : 1.0,
               sz = mm ? params.spacing[2] : 1.0;
  const double two_ss2 = 2.0 * double(params.sigma_spatial) * params.sigma_spatial;
  std::vector<float> spatial;  // [kz][ky][kx]
  for (i64 kz = -rz; kz <= rz; ++kz)
    for (i64 ky = -ry; ky <= ry; ++ky)
      for (i64 kx = -rx; kx <= rx; ++kx) {
        const double d2 = (kx * sx) * (kx * sx) + (ky * sy) * (ky * sy) + (kz * sz) * (kz * sz);
        spatial.push_back(static_cast<float>(std::exp(-d2 / two_ss2)));
      }
  const float inv_two_sr2 = static_cast<float>(1.0 / (2.0 * double(params.sigma_range) * params.sigma_range));

  const i64 rows = nz * ny;
  // Blocks of rows between progress reports; each block is one parallel loop.
  const i64 block = std::max<i64>(1, rows / 100);
  for (i64 first = 0; first < rows; first += block) {
    const i64 last = std::min(rows, first + block);
    pool.parallel_for(last - first, [&](i64 begin, i64 end) {
      // A row at a time, a tap at a time over the row: each voxel adds its taps in the same order
      // as a voxel-by-voxel loop would, and the range kernel's exps go through SIMD registers.
      std::vector<float> values(static_cast<std::size_t>(nx)), range(static_cast<std::size_t>(nx));
      std::vector<double> sum(static_cast<std::size_t>(nx)), weight_sum(static_cast<std::size_t>(nx));
      for (i64 row = first + begin; row < first + end; ++row) {
        const i64 z = row / ny, y = row % ny;
        const float* centre = in.data + row * nx;
        std::fill(sum.begin(), sum.end(), 0.0);
        std::fill(weight_sum.begin(), weight_sum.end(), 0.0);
        std::size_t k = 0;
        for (i64 kz = -rz; kz <= rz; ++kz) {
          const i64 zz = mz[z + kz];
          for (i64 ky = -ry; ky <= ry; ++ky) {
            const float* src = in.data + (zz * ny + my[y + ky]) * nx;
            for (i64 kx = -rx; kx <= rx; ++kx, ++k) {
              // The row's values at x + kx: mirrored at the ends, read in place between them.
              const i64 inside_begin = std::clamp<i64>(-kx, 0, nx), inside_end = std::clamp<i64>(nx - kx, inside_begin, nx);
              for (i64 x = 0; x < inside_begin; ++x) values[std::size_t(x)] = src[mx[x + kx]];
              std::copy(src + inside_begin + kx, src + inside_end + kx, values.begin() + inside_begin);
              for (i64 x = inside_end; x < nx; ++x) values[std::size_t(x)] = src[mx[x + kx]];
              for (i64 x = 0; x < nx; ++x) {
                const float a = centre[x] - values[std::size_t(x)];
                range[std::size_t(x)] = a * a;
              }
              exp_of_negative_products(range.data(), inv_two_sr2, range.data(), nx);
              const float s = spatial[k];
              for (i64 x = 0; x < nx; ++x) {
                const float w = s * range[std::size_t(x)];
                sum[std::size_t(x)] += double(w) * values[std::size_t(x)];
                weight_sum[std::size_t(x)] += w;
              }
            }
          }
        }
        for (i64 x = 0; x < nx; ++x) out.data[row * nx + x] = static_cast<float>(sum[std::size_t(x)] / weight_sum[std::size_t(x)]);
      }
    });
    if (progress) progress(double(last) / double(rows));
  }
}

}  // namespace ctd::cpu
