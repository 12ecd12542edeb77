// Compressive bilateral filter on the CPU (seed 002's Algorithm 1, after Sugimoto & Kamata 2015).
//
// The Gaussian range kernel is replaced by its cosine series with period T and M terms,
//   gr(t) ~ 1 + sum_m a_m cos(w m t),  w = 2 pi / T,  a_m = 2 exp(-(w m sigma_r)^2 / 2)
// (the Fourier series of the T-periodic Gaussian, scaled so that the DC term is 1; the scale
// cancels in the ratio). By cos(w m (a - b)) = cos(w m a) cos(w m b) + sin(w m a) sin(w m b),
// numerator and denominator become sums of Gaussian filters of cos/sin images: 4M + 2 filters in
// all, each as separable 1D passes (x, y, z) with the mirror border and the exact filter's window.

#include "core/mirror.hpp"
#include "cpu/backend.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace ctd::cpu {
namespace {

using i64 = std::int64_t;

// Separable Gaussian filter with per-axis normalised weights, so that a constant image stays
// constant (the DC term of the series is then exactly 1).
class GaussianFilter {
 public:
  GaussianFilter(const Dims& dims, const BilateralParams& p, const std::array<int, 3>& radius)
      : dims_(dims), mx_(dims.nx, radius[0]), my_(dims.ny, radius[1]), mz_(dims.nz, radius[2]) {
    const bool mm = p.spatial_unit == SpatialUnit::Millimetre;
    for (int axis = 0; axis < 3; ++axis) {
      const double step = mm ? p.spacing[axis] : 1.0;
      double sum = 0;
      for (int k = -radius[axis]; k <= radius[axis]; ++k) {
        const double w = std::exp(-(k * step) * (k * step) / (2.0 * double(p.sigma_spatial) * p.sigma_spatial));
        weights_[axis].push_back(float(w));
        sum += w;
      }
      for (float& w : weights_[axis]) w = float(w / sum);
    }
    scratch_.resize(std::size_t(dims.count()));
  }

  // dst = G * src (dst may not alias src).
  void apply(const float* src, float* dst, ThreadPool& pool) {
    const i64 nx = dims_.nx, ny = dims_.ny, nz = dims_.nz;
    const auto& wx = weights_[0];
    const auto& wy = weights_[1];
    const auto& wz = weights_[2];
    const i64 rx = i64(wx.size() / 2), ry = i64(wy.size() / 2), rz = i64(wz.size() / 2);
    float* tmp = scratch_.data();
    // x: src -> dst
    pool.parallel_for(nz * ny, [&](i64 begin, i64 end) {
      for (i64 row = begin; row < end; ++row) {
        const float* in = src + row * nx;
        float* out = dst + row * nx;
        for (i64 x = 0; x < nx; ++x) {
          float s = 0;
          for (i64 k = -rx; k <= rx; ++k) s += wx[std::size_t(k + rx)] * in[mx_[x + k]];
          out[x] = s;
        }
      }
    });
    // y: dst -> tmp
    pool.parallel_for(nz * ny, [&](i64 begin, i64 end) {
      for (i64 row = begin; row < end; ++row) {
        const i64 z = row / ny, y = row % ny;
        float* out = tmp + row * nx;
        std::fill(out, out + nx, 0.0f);
        for (i64 k = -ry; k <= ry; ++k) {
          const float w = wy[std::size_t(k + ry)];
          const float* in = dst + (z * ny + my_[y + k]) * nx;
          for (i64 x = 0; x < nx; ++x) out[x] += w * in[x];
        }
      }
    });
    // z: tmp -> dst
    pool.parallel_for(nz * ny, [&](i64 begin, i64 end) {
      for (i64 row = begin; row < end; ++row) {
        const i64 z = row / ny, y = row % ny;
        float* out = dst + row * nx;
        std::fill(out, out + nx, 0.0f);
        for (i64 k = -rz; k <= rz; ++k) {
          const float w = wz[std::size_t(k + rz)];
          const float* in = tmp + (mz_[z + k] * ny + y) * nx;
          for (i64 x = 0; x < nx; ++x) out[x] += w * in[x];
        }
      }
    });
  }

 private:
  Dims dims_;
  detail::MirrorTable mx_, my_, mz_;
  std::array<std::vector<float>, 3> weights_;
  std::vector<float> scratch_;
};

}  // namespace

CompressiveSettings bilateral_compressive(ConstVolumeView<float> in, VolumeView<float> out, const BilateralParams& params,
                                          const std::array<int, 3>& radius, ThreadPool& pool, const Progress& progress) {
  const i64 n = in.dims.count();
  const auto [lo_it, hi_it] = std::minmax_element(in.data, in.data + n);
  const float lo = *lo_it;
  const CompressiveSettings settings = compressive_settings(params, double(*hi_it) - double(lo));
  const double omega = 2.0 * M_PI / settings.period;

  GaussianFilter gauss(in.dims, params, radius);
  const auto size = static_cast<std::size_t>(n);
  std::vector<float> filtered(size), c(size), s(size), product(size);
  std::vector<double> numerator(size), denominator(size, 1.0);  // DC term: G * 1 = 1

  gauss.apply(in.data, filtered.data(), pool);
  std::copy(filtered.begin(), filtered.end(), numerator.begin());  // DC term: G * f

  for (int m = 1; m <= settings.terms; ++m) {
    const double a = 2.0 * std::exp(-0.5 * std::pow(omega * m * params.sigma_range, 2));
    const double wm = omega * m;
    pool.parallel_for(n, [&](i64 begin, i64 end) {
      for (i64 i = begin; i < end; ++i) {
        const double phase = wm * (double(in.data[i]) - lo);  // shifted: small arguments, same kernel
        c[std::size_t(i)] = float(std::cos(phase));
        s[std::size_t(i)] = float(std::sin(phase));
      }
    });
    // Each term: G*c and G*s feed the denominator, G*(c f) and G*(s f) the numerator.
    struct Term {
      const std::vector<float>* weight;
      bool times_f;
      std::vector<double>* sum;
    };
    const Term terms[] = {{&c, false, &denominator}, {&s, false, &denominator}, {&c, true, &numerator}, {&s, true, &numerator}};
    for (const Term& t : terms) {
      const float* source = t.weight->data();
      if (t.times_f) {
        pool.parallel_for(n, [&](i64 begin, i64 end) {
          for (i64 i = begin; i < end; ++i) product[std::size_t(i)] = (*t.weight)[std::size_t(i)] * in.data[i];
        });
        source = product.data();
      }
      gauss.apply(source, filtered.data(), pool);
      pool.parallel_for(n, [&](i64 begin, i64 end) {
        for (i64 i = begin; i < end; ++i) {
          const auto k = std::size_t(i);
          (*t.sum)[k] += a * double((*t.weight)[k]) * filtered[k];
        }
      });
    }
    if (progress) progress(double(m) / settings.terms);
  }
  pool.parallel_for(n, [&](i64 begin, i64 end) {
    for (i64 i = begin; i < end; ++i) out.data[i] = float(numerator[std::size_t(i)] / denominator[std::size_t(i)]);
  });
  return settings;
}

}  // namespace ctd::cpu
