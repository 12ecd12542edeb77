// Noise of a model's covariance, synthesised (include/ctdenoise/noise.hpp, synthesize_noise;
// src/core/noise_synthesis.hpp): white noise shaped by a kernel whose power spectrum is the
// model's; the probe of the automatic parameters (docs/parameters.md).

#include "core/noise_synthesis.hpp"
#include "cpu/thread_pool.hpp"

#include <ctdenoise/error.hpp>
#include <ctdenoise/noise.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <complex>
#include <random>
#include <vector>

namespace ctd {
namespace {

using i64 = std::int64_t;

}  // namespace

namespace {

// out(o) = sum over i of in(i) cos(2 pi sum_a i_a o_a / period_a), for i in the box of `in`
// (first index in_first, in_size per axis, x fastest) and o in the box out_first, out_size: a
// Fourier series on small periodic grids, one axis at a time (the cosine of a sum is the real
// part of a product of phasors).
std::vector<double> cosine_series(const std::vector<double>& in, std::array<int, 3> in_first, std::array<int, 3> in_size,
                                  std::array<int, 3> out_first, std::array<int, 3> out_size, std::array<int, 3> period) {
  using C = std::complex<double>;
  std::vector<C> a(in.begin(), in.end());
  std::array<int, 3> size = in_size;  // the current box: axes before `axis` already transformed
  for (int axis = 0; axis < 3; ++axis) {
    std::array<int, 3> next = size;
    next[std::size_t(axis)] = out_size[std::size_t(axis)];
    std::vector<C> b(std::size_t(next[0] * next[1] * next[2]));
    // The axes below this one keep their sizes, so a step along it is the same in both boxes.
    const std::size_t stride = axis == 0 ? 1 : axis == 1 ? std::size_t(size[0]) : std::size_t(size[0] * size[1]);
    const int n_in = size[std::size_t(axis)], n_out = next[std::size_t(axis)], g = period[std::size_t(axis)];
    std::vector<C> phasor(std::size_t(n_in * n_out));
    for (int o = 0; o < n_out; ++o)
      for (int i = 0; i < n_in; ++i) {
        const long long turns = (long long)(in_first[std::size_t(axis)] + i) * (out_first[std::size_t(axis)] + o);
        const double phase = 2 * M_PI * double(((turns % g) + g) % g) / g;
        phasor[std::size_t(o * n_in + i)] = {std::cos(phase), std::sin(phase)};
      }
    // Every line along the axis: positions that differ only in that axis' index.
    const std::size_t lines = a.size() / std::size_t(n_in);
    for (std::size_t line = 0; line < lines; ++line) {
      const std::size_t low = line % stride, high = line / stride;
      const C* src = a.data() + high * stride * std::size_t(n_in) + low;
      C* dst = b.data() + high * stride * std::size_t(n_out) + low;
      for (int o = 0; o < n_out; ++o) {
        C sum = 0;
        for (int i = 0; i < n_in; ++i) sum += phasor[std::size_t(o * n_in + i)] * src[std::size_t(i) * stride];
        dst[std::size_t(o) * stride] = sum;
      }
    }
    a = std::move(b);
    size = next;
  }
  std::vector<double> out(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) out[i] = a[i].real();
  return out;
}

}  // namespace

namespace {

constexpr int kShapingMarginXy = 3;  // in-plane reach of a kernel beyond the model's lags
constexpr int kShapingReachZ = 2;    // its reach across slices (0 for 2D noise)

// The reach (in-plane, across slices) of the kernels that shape noise of these lags on an image
// of these dimensions.
std::array<int, 2> shaping_reach(const NoiseModel& lags, const Dims& dims) {
  const bool flat = dims.is_2d() || lags.radius_z == 0;
  return {lags.radius_xy + kShapingMarginXy, flat ? 0 : kShapingReachZ};
}

// The kernel that shapes white noise into noise of m's covariance: the noise power spectrum on a
// periodic grid is the Fourier series of C (real: C is even); negative values, where the measured
// C is not quite a covariance, are set to 0. The kernel is the inverse transform of its square
// root, cut at `reach` (shaping_reach; 0 across slices: 2D noise) and scaled back to the variance
// the cut lost. Taps (2 reach_z + 1) x (2 reach_xy + 1)^2, x fastest, in single precision (the
// probe is stored so).
std::vector<float> shaping_kernel(const NoiseModel& m, std::array<int, 2> reach) {
  const int kr = reach[0], krz = reach[1];
  const bool flat = krz == 0;
  const int gxy = 32, gz = flat ? 1 : 8;
  const int rx = m.radius_xy, rz = flat ? 0 : m.radius_z;
  const int cw = 2 * rx + 1, cwz = 2 * rz + 1;
  std::vector<double> covariance(std::size_t(cw * cw * cwz));
  for (int dz = -rz; dz <= rz; ++dz)
    for (int dy = -rx; dy <= rx; ++dy)
      for (int dx = -rx; dx <= rx; ++dx) covariance[std::size_t(((dz + rz) * cw + dy + rx) * cw + dx + rx)] = m.covariance_at(dx, dy, dz);
  std::vector<double> power = cosine_series(covariance, {-rx, -rx, -rz}, {cw, cw, cwz}, {0, 0, 0}, {gxy, gxy, gz}, {gxy, gxy, gz});
  double power_sum = 0;
  std::vector<double> amplitude(power.size());
  for (std::size_t i = 0; i < power.size(); ++i) {
    const double p = std::max(power[i], 0.0);
    power_sum += p;
    amplitude[i] = std::sqrt(p);
  }
  const int kw = 2 * kr + 1, kwz = 2 * krz + 1;
  std::vector<double> taps = cosine_series(amplitude, {0, 0, 0}, {gxy, gxy, gz}, {-kr, -kr, -krz}, {kw, kw, kwz}, {gxy, gxy, gz});
  double kernel_energy = 0;
  for (double& t : taps) {
    t /= double(gxy * gxy * gz);
    kernel_energy += t * t;
  }
  const double target = power_sum / double(gxy * gxy * gz);
  const double gain = kernel_energy > 0 ? std::sqrt(target / kernel_energy) : 0;
  std::vector<float> out(taps.size());
  for (std::size_t i = 0; i < taps.size(); ++i) out[i] = float(taps[i] * gain);
  return out;
}

}  // namespace

namespace detail {

std::size_t white_noise_size(const NoiseModel& lags, const Dims& dims) {
  const auto [kr, krz] = shaping_reach(lags, dims);
  return std::size_t((dims.nx + 2 * kr) * (dims.ny + 2 * kr) * (dims.nz + 2 * krz));
}

std::vector<float> unit_normals(std::uint64_t seed, std::size_t count) {
  std::vector<float> values(count);
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  for (float& v : values) v = float(normal(rng));
  return values;
}

WhiteNoise white_noise_for(const NoiseModel& lags, const Dims& dims, std::uint64_t seed, std::vector<float> drawn_ahead) {
  WhiteNoise white;
  const auto [kr, krz] = shaping_reach(lags, dims);
  white.reach_xy = kr;
  white.reach_z = krz;
  const std::size_t size = white_noise_size(lags, dims);
  if (drawn_ahead.size() >= size) {
    drawn_ahead.resize(size);
    white.values = std::move(drawn_ahead);
  } else {
    white.values = unit_normals(seed, size);
  }
  return white;
}

Volume synthesize_noise_by_region(const std::vector<NoiseModel>& models, const std::vector<std::uint32_t>& region,
                                  const Dims& dims, std::uint64_t seed, const std::vector<unsigned char>* mask) {
  if (models.empty()) throw Error(ErrorKind::InvalidArgument, "synthesize_noise: at least one model");
  return synthesize_noise_by_region(models, region, dims, white_noise_for(models[0], dims, seed), mask);
}

Volume synthesize_noise_by_region(const std::vector<NoiseModel>& models, const std::vector<std::uint32_t>& region,
                                  const Dims& dims, const WhiteNoise& white_noise, const std::vector<unsigned char>* mask) {
  if (mask != nullptr && i64(mask->size()) != dims.count()) {
    throw Error(ErrorKind::InvalidArgument, "synthesize_noise: the mask must have one entry per voxel");
  }
  if (models.empty() || (!region.empty() && i64(region.size()) != dims.count())) {
    throw Error(ErrorKind::InvalidArgument, "synthesize_noise: one region per voxel and at least one model");
  }
  for (const NoiseModel& m : models) {
    if (m.radius_xy != models[0].radius_xy || m.radius_z != models[0].radius_z) {
      throw Error(ErrorKind::InvalidArgument, "synthesize_noise: the regions' models must have the same lags");
    }
  }
  const auto [kr, krz] = shaping_reach(models[0], dims);
  if (white_noise.reach_xy != kr || white_noise.reach_z != krz || white_noise.values.size() != white_noise_size(models[0], dims)) {
    throw Error(ErrorKind::InvalidArgument, "synthesize_noise: the white noise was made for other lags or dimensions");
  }
  cpu::ThreadPool pool(cpu::hardware_threads());
  // One kernel per region, on all cores (a 3D sample's ~200 tile models took 0.5 s on one).
  std::vector<std::vector<float>> taps(models.size());
  pool.parallel_for(i64(models.size()), [&](i64 begin, i64 end) {
    for (i64 k = begin; k < end; ++k) taps[std::size_t(k)] = shaping_kernel(models[std::size_t(k)], {kr, krz});
  });
  const int kw = 2 * kr + 1, kwz = 2 * krz + 1;
  // The white noise covers the volume grown by the kernel's reach: one field under every region,
  // so that the noise runs on across their borders.
  const i64 wx = dims.nx + 2 * kr, wy = dims.ny + 2 * kr;
  const std::vector<float>& white = white_noise.values;
  Volume out(dims);
  // Row by row, each tap added to a run of voxels of one region at once (vectorised along x): a
  // voxel at a time, the adds of its one sum waited on each other, and a 3D sample's probe took
  // 0.25 s on 16 cores.
  pool.parallel_for(dims.nz * dims.ny, [&](i64 begin, i64 end) {
    std::vector<float> acc(std::size_t(dims.nx));
    for (i64 row = begin; row < end; ++row) {
      const i64 z = row / dims.ny, y = row % dims.ny, first = row * dims.nx;
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (i64 x0 = 0; x0 < dims.nx;) {
        const std::uint32_t r = region.empty() ? 0 : region[std::size_t(first + x0)];
        i64 x1 = region.empty() ? dims.nx : x0 + 1;
        while (x1 < dims.nx && region[std::size_t(first + x1)] == r) ++x1;
        const std::vector<float>& kernel = taps[r];
        float* a = acc.data() + x0;
        const i64 run = x1 - x0;
        for (int kz = 0; kz < kwz; ++kz)
          for (int ky = 0; ky < kw; ++ky) {
            const float* w = white.data() + ((z + kz) * wy + (y + ky)) * wx + x0;
            const float* k = kernel.data() + (kz * kw + ky) * kw;
            for (int kx = 0; kx < kw; ++kx) {
              const float tap = k[kx];
              const float* wk = w + kx;
              for (i64 x = 0; x < run; ++x) a[x] += tap * wk[x];
            }
          }
        x0 = x1;
      }
      float* o = out.data() + first;
      for (i64 x = 0; x < dims.nx; ++x) {
        o[x] = mask != nullptr && (*mask)[std::size_t(first + x)] == 0 ? 0.0f : acc[std::size_t(x)];
      }
    }
  });
  return out;
}

}  // namespace detail

Volume synthesize_noise(const NoiseModel& m, const Dims& dims, std::uint64_t seed, const std::vector<unsigned char>* mask) {
  return detail::synthesize_noise_by_region({m}, {}, dims, seed, mask);
}

}  // namespace ctd
