// Compressive bilateral filter on the CPU (Yano et al.'s Algorithm 1, after Sugimoto & Kamata 2015).
//
// The Gaussian range kernel is replaced by its cosine series with period T and M terms,
//   gr(t) ~ 1 + sum_m a_m cos(w m t),  w = 2 pi / T,  a_m = 2 exp(-(w m sigma_r)^2 / 2)
// (the Fourier series of the T-periodic Gaussian, scaled so that the DC term is 1; the scale
// cancels in the ratio). By cos(w m (a - b)) = cos(w m a) cos(w m b) + sin(w m a) sin(w m b),
// numerator and denominator become sums of Gaussian filters of cos/sin images: 4M + 1 filters in
// all, each as separable 1D passes (x, y, z) with the mirror border and the exact filter's window.

#include "core/mirror.hpp"
#include "core/recursive_gaussian.hpp"
#include "cpu/backend.hpp"

#include <ctdenoise/metrics.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

namespace ctd::cpu {
namespace {

using i64 = std::int64_t;

// Young & van Vliet's recursive Gaussian (core/recursive_gaussian.hpp) on interleaved lines, in double.
struct RecursiveGaussian : detail::RecursiveGaussianCoefficients {
  using RecursiveGaussianCoefficients::RecursiveGaussianCoefficients;

  // Filters `lanes` interleaved lines of length n in place: sample i of lane l at data[i * stride + l].
  void apply(float* data, i64 n, i64 lanes, i64 stride, std::vector<double>& work) const {
    const i64 m = n + 2 * pad;
    work.assign(std::size_t(m * lanes), 0.0);
    for (i64 j = 0; j < m; ++j) {
      const float* src = data + detail::mirror(j - pad, n) * stride;
      double* w = work.data() + j * lanes;
      for (i64 l = 0; l < lanes; ++l) w[l] = src[l];
    }
    // Forward (causal) pass, started in the steady state of its first sample.
    for (i64 j = 0; j < m; ++j) {
      double* w = work.data() + j * lanes;
      const double* w1 = j >= 1 ? w - lanes : w;
      const double* w2 = j >= 2 ? w - 2 * lanes : w1;
      const double* w3 = j >= 3 ? w - 3 * lanes : w2;
      for (i64 l = 0; l < lanes; ++l) w[l] = B * w[l] + b1 * w1[l] + b2 * w2[l] + b3 * w3[l];
    }
    // Backward (anti-causal) pass.
    for (i64 j = m - 1; j >= 0; --j) {
      double* w = work.data() + j * lanes;
      const double* w1 = j + 1 < m ? w + lanes : w;
      const double* w2 = j + 2 < m ? w + 2 * lanes : w1;
      const double* w3 = j + 3 < m ? w + 3 * lanes : w2;
      for (i64 l = 0; l < lanes; ++l) w[l] = B * w[l] + b1 * w1[l] + b2 * w2[l] + b3 * w3[l];
    }
    for (i64 i = 0; i < n; ++i) {
      const double* w = work.data() + (i + pad) * lanes;
      float* dst = data + i * stride;
      for (i64 l = 0; l < lanes; ++l) dst[l] = float(w[l]);
    }
  }
};

// Separable Gaussian filter whose weights sum to 1 along each axis, so that a constant image stays
// constant (the DC term of the series is then exactly 1): direct 1D passes over the exact
// filter's window, or the recursive filter.
class GaussianFilter {
 public:
  GaussianFilter(const Dims& dims, const BilateralParams& p, const std::array<int, 3>& radius)
      : dims_(dims), recursive_(p.gaussian == BilateralParams::Gaussian::Recursive),
        mx_(dims.nx, radius[0]), my_(dims.ny, radius[1]), mz_(dims.nz, radius[2]) {
    const bool mm = p.spatial_unit == SpatialUnit::Millimetre;
    for (int axis = 0; axis < 3; ++axis) {
      const double step = mm ? p.spacing[axis] : 1.0;
      sigma_voxels_[axis] = p.sigma_spatial / step;
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
    if (recursive_) {
      apply_recursive(src, dst, pool);
    } else {
      apply_direct(src, dst, pool);
    }
  }

 private:
  void apply_direct(const float* src, float* dst, ThreadPool& pool) {
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
    // y: dst -> tmp, then z: tmp -> dst (same shape: sum rows of the plane/volume above and below).
    auto pass = [&](const float* in_volume, float* out_volume, bool along_z) {
      const auto& w = along_z ? wz : wy;
      const i64 r = along_z ? rz : ry;
      pool.parallel_for(nz * ny, [&](i64 begin, i64 end) {
        for (i64 row = begin; row < end; ++row) {
          const i64 z = row / ny, y = row % ny;
          float* out = out_volume + row * nx;
          std::fill(out, out + nx, 0.0f);
          for (i64 k = -r; k <= r; ++k) {
            const float weight = w[std::size_t(k + r)];
            const float* in = in_volume + (along_z ? (mz_[z + k] * ny + y) : (z * ny + my_[y + k])) * nx;
            for (i64 x = 0; x < nx; ++x) out[x] += weight * in[x];
          }
        }
      });
    };
    pass(dst, tmp, false);
    pass(tmp, dst, true);
  }

  void apply_recursive(const float* src, float* dst, ThreadPool& pool) {
    const i64 nx = dims_.nx, ny = dims_.ny, nz = dims_.nz;
    std::copy(src, src + dims_.count(), dst);
    constexpr i64 kLanes = 64;  // lines filtered together along y and z (contiguous in memory)
    const RecursiveGaussian gx(sigma_voxels_[0]), gy(sigma_voxels_[1]), gz(sigma_voxels_[2]);
    pool.parallel_for(nz * ny, [&](i64 begin, i64 end) {
      std::vector<double> work;
      for (i64 row = begin; row < end; ++row) gx.apply(dst + row * nx, nx, 1, 1, work);
    });
    const i64 x_chunks = (nx + kLanes - 1) / kLanes;
    pool.parallel_for(nz * x_chunks, [&](i64 begin, i64 end) {
      std::vector<double> work;
      for (i64 t = begin; t < end; ++t) {
        const i64 z = t / x_chunks, x0 = (t % x_chunks) * kLanes;
        gy.apply(dst + z * ny * nx + x0, ny, std::min(kLanes, nx - x0), nx, work);
      }
    });
    if (nz > 1) {
      const i64 plane = nx * ny, chunks = (plane + kLanes - 1) / kLanes;
      pool.parallel_for(chunks, [&](i64 begin, i64 end) {
        std::vector<double> work;
        for (i64 t = begin; t < end; ++t) {
          const i64 i0 = t * kLanes;
          gz.apply(dst + i0, nz, std::min(kLanes, plane - i0), plane, work);
        }
      });
    }
  }

  Dims dims_;
  bool recursive_;
  detail::MirrorTable mx_, my_, mz_;
  std::array<std::vector<float>, 3> weights_;
  std::array<double, 3> sigma_voxels_{};
  std::vector<float> scratch_;
};

}  // namespace

CompressiveSettings bilateral_compressive(ConstVolumeView<float> in, VolumeView<float> out, const BilateralParams& params,
                                          const std::array<int, 3>& radius, ThreadPool& pool, const Progress& progress) {
  const i64 n = in.dims.count();
  const Statistics range = statistics(in);  // on all cores
  const float lo = float(range.min);
  const CompressiveSettings settings = compressive_settings(params, range.max - range.min);
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
