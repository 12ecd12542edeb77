// Rays of a scan and noise made along them (src/core/scan_rays.hpp).

#include "core/scan_rays.hpp"

#include "core/fbp.hpp"
#include "cpu/scan_rows.hpp"
#include "cpu/thread_pool.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <random>

namespace ctd::detail::scan {

using i64 = std::int64_t;

std::uint64_t mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

i64 full_bins(i64 nx, i64 ny) { return (i64(std::ceil(std::hypot(double(nx), double(ny)))) + 4) | 1; }

i64 detector_bins(const ScanMap& map) {
  if (!std::isfinite(map.source)) return full_bins(map.nx, map.ny);
  const double R = std::hypot(double(map.nx), double(map.ny)) / 2;
  return (i64(std::ceil(2 * R * map.source / (map.source - R))) + 4) | 1;
}

Coarse coarse_of(i64 nx, i64 ny) {
  Coarse c;
  c.factor = std::max<i64>(1, (std::max(nx, ny) + kMapWidth - 1) / kMapWidth);
  c.nx = (nx + c.factor - 1) / c.factor;
  c.ny = (ny + c.factor - 1) / c.factor;
  c.cx = ((double(nx) - 1) / 2 - (double(c.factor) - 1) / 2) / double(c.factor);
  c.cy = ((double(ny) - 1) / 2 - (double(c.factor) - 1) / 2) / double(c.factor);
  c.bins = (full_bins(nx, ny) + c.factor - 1) / c.factor | 1;
  return c;
}

std::vector<double> project(const std::vector<double>& a, i64 nx, i64 ny, const Coarse& c) {
  std::vector<double> coarse(std::size_t(c.nx * c.ny), 0.0);
  for (i64 y = 0; y < ny; ++y)
    for (i64 x = 0; x < nx; ++x) {
      coarse[std::size_t(y / c.factor * c.nx + x / c.factor)] += a[std::size_t(y * nx + x)] / double(c.factor * c.factor);
    }
  std::vector<double> p(std::size_t(kMapViews * c.bins));
  const SliceGrid grid{coarse.data(), c.nx, c.ny, double(c.factor), double(c.factor), c.cx, c.cy};
  const double length = std::hypot(double(nx), double(ny));
  cpu::for_each_piece(kMapViews, 1, 0, [&](i64 view, i64, i64) {
    line_integrals(grid, M_PI * double(view) / kMapViews, c.bins, double(c.factor), double(c.factor) / 2, length,
                   p.data() + view * c.bins);
  });
  return p;
}

double relative_integral(const std::vector<double>& p, const Coarse& c, i64 view, double along) {
  const double t = along / double(c.factor) + (double(c.bins) - 1) / 2;
  const i64 t0 = std::clamp<i64>(i64(std::floor(t)), 0, c.bins - 2);
  const double f = std::clamp(t - double(t0), 0.0, 1.0);
  const double* row = p.data() + view * c.bins;
  return (1 - f) * row[t0] + f * row[t0 + 1];
}

Line line_through(double ax, double ay, double bx, double by) {
  double nx = ay - by, ny = bx - ax;  // the line's normal
  const double norm = std::hypot(nx, ny);
  nx /= norm, ny /= norm;
  double angle = std::atan2(ny, nx), offset = nx * bx + ny * by;
  if (angle < 0) angle += M_PI, offset = -offset;
  if (angle >= M_PI) angle -= M_PI, offset = -offset;
  return {i64(std::lround(angle / M_PI * kMapViews)) % kMapViews, offset};
}

FanPoint fan_point(double x, double y, double c, double s, double D) {
  const double along = D - (x * c + y * s), across = -x * s + y * c;
  return {along / D, across * D / along, along / std::hypot(along, across)};
}

double redundancy_gain(const ScanMap::Orbit& orbit, double beta, double u, double D) {
  using Kind = ScanMap::Orbit::Kind;
  if (orbit.kind == Kind::OffsetDetector) {
    // Wang (2002): 0 to 1 across the overlap as sin^2; a line through it is measured at u and -u.
    const double x = orbit.side * u / orbit.overlap;
    if (x >= 1) return 2.0;
    if (x <= -1) return 0.0;
    const double w = std::sin(M_PI / 4 * (1 + x));
    return 2 * w * w;
  }
  if (orbit.kind == Kind::ShortScan) {
    // Parker (1982). The ray at u is measured again from beta + pi + 2 gamma at -gamma, gamma
    // signed as below in this geometry (fan_point: the detector's u runs along (-sin, cos)).
    const double gamma = std::clamp(-std::atan(u / D), -orbit.fan + 1e-9, orbit.fan - 1e-9);
    const double b = std::remainder(beta - orbit.start - M_PI, 2 * M_PI) + M_PI;  // in [0, 2 pi)
    const double fan = orbit.fan;
    if (b > M_PI + 2 * fan) return 0.0;
    double w = 1;
    if (b < 2 * (fan - gamma)) w = std::sin(M_PI / 4 * b / (fan - gamma));
    else if (b > M_PI - 2 * gamma) w = std::sin(M_PI / 4 * (M_PI + 2 * fan - b) / (fan + gamma));
    return 2 * w * w;
  }
  return 1.0;
}

double fan_half_angle(const ScanMap& map, double D) {
  const double R = std::hypot(double(map.nx), double(map.ny)) / 2;
  return std::asin(std::min(1.0, R / D));
}

ScanMap::Orbit orbit_at_source(ScanMap::Orbit orbit, const ScanMap& map, double from, double to) {
  const double from_fan = fan_half_angle(map, from), to_fan = fan_half_angle(map, to);
  orbit.overlap *= to * std::tan(to_fan) / (from * std::tan(from_fan));
  if (orbit.kind == ScanMap::Orbit::Kind::ShortScan) orbit.fan = to_fan;
  return orbit;
}

std::vector<double> slice_means(const std::vector<double>& v, const std::vector<std::size_t>& slice_of, std::size_t slices) {
  std::vector<double> sum(slices, 0.0), n(slices, 0.0);
  for (std::size_t t = 0; t < v.size(); ++t)
    if (std::isfinite(v[t])) sum[slice_of[t]] += v[t], n[slice_of[t]] += 1;
  for (std::size_t k = 0; k < slices; ++k) sum[k] = n[k] > 0 ? sum[k] / n[k] : 0.0;
  return sum;
}

std::vector<double> within_slices(std::vector<double> v, const std::vector<std::size_t>& slice_of, std::size_t slices) {
  if (slices > 1) {
    const std::vector<double> means = slice_means(v, slice_of, slices);
    for (std::size_t t = 0; t < v.size(); ++t) v[t] -= means[slice_of[t]];
  }
  return v;
}

std::vector<double> z_taps(const NoiseModel& noise) {
  const int rz = noise.radius_z;
  if (rz == 0) return {1.0};
  constexpr int kPoints = 64;
  const int reach = 2 * rz;
  std::vector<double> taps(std::size_t(2 * reach + 1), 0.0);
  for (int k = 0; k < kPoints; ++k) {
    const double w = 2 * M_PI * k / kPoints;
    double spectrum = 1;
    for (int dz = 1; dz <= rz; ++dz) spectrum += 2 * noise.correlation(0, 0, dz) * std::cos(w * dz);
    const double root = std::sqrt(std::max(0.0, spectrum));
    for (int n = -reach; n <= reach; ++n) taps[std::size_t(n + reach)] += root * std::cos(w * n) / kPoints;
  }
  double energy = 0;
  for (double t : taps) energy += t * t;
  for (double& t : taps) t /= std::sqrt(energy);
  return taps;
}

namespace {

// The window's kernel, worked out once per process (a direct DFT: 20 ms of sines and cosines
// over the dozen pools of an automatic h).
const std::vector<double>& pool_kernel(std::string_view window) {
  static std::mutex mutex;
  static std::map<std::string, std::vector<double>, std::less<>> kernels;
  std::lock_guard lock(mutex);
  auto at = kernels.find(window);
  if (at == kernels.end()) at = kernels.emplace(std::string(window), fbp_kernel(kKernelReach + 1, 1.0, window)).first;
  return at->second;
}

}  // namespace

std::vector<float> filtered_rows(std::string_view window, i64 rows, i64 length, std::uint64_t seed) {
  const std::vector<double>& kernel = pool_kernel(window);
  std::vector<float> out(std::size_t(rows * length));
  cpu::for_each_piece(rows, 1, 0, [&](i64 r, i64, i64) {
    std::mt19937_64 rng(mix(seed + std::uint64_t(r)));
    std::normal_distribution<double> normal;
    std::vector<double> white(std::size_t(length + 2 * kKernelReach)), acc(std::size_t(length), 0.0);
    for (double& w : white) w = normal(rng);
    cpu::add_correlation(white.data(), kernel.data(), 2 * kKernelReach + 1, acc.data(), length);
    for (i64 t = 0; t < length; ++t) out[std::size_t(r * length + t)] = float(acc[std::size_t(t)]);
  });
  return out;
}

void back_project(const ScanMap& map, const Coarse& coarse, const std::vector<Channel>& channels, i64 pool_length,
                  const std::vector<double>& taps, int views, std::uint64_t seed, const std::vector<Box>& boxes) {
  const std::size_t n_pools = channels.size();
  const bool fan = std::isfinite(map.source);
  const double D = map.source;
  const int turn = fan ? 2 * views : views;
  const i64 nd = detector_bins(map);
  const double cd = (double(nd) - 1) / 2, cx = (double(map.nx) - 1) / 2, cy = (double(map.ny) - 1) / 2;
  const i64 reach = i64(taps.size() / 2);
  // The channels' distinct pools: each one's rows are mixed over slices once per view, and the
  // channels that draw on it (the attenuation's refit: one pool, several P) scale that mix.
  std::vector<const std::vector<float>*> pools;
  std::vector<std::size_t> pool_of(n_pools);
  for (std::size_t q = 0; q < n_pools; ++q) {
    const auto at = std::find(pools.begin(), pools.end(), channels[q].pool);
    pool_of[q] = std::size_t(at - pools.begin());
    if (at == pools.end()) pools.push_back(channels[q].pool);
  }
  // Work items: a box's slice, in pieces of up to 32 rows.
  struct Item {
    std::size_t box;
    i64 z, y0, y1;
  };
  std::vector<Item> items;
  for (std::size_t b = 0; b < boxes.size(); ++b)
    for (i64 z = 0; z < boxes[b].n.nz; ++z)
      for (i64 y = 0; y < boxes[b].n.ny; y += 32) items.push_back({b, z, y, std::min(boxes[b].n.ny, y + 32)});
  cpu::for_each_piece(i64(items.size()), 1, 0, [&](i64 index, i64, i64) {
    const Item& item = items[std::size_t(index)];
    const Box& box = boxes[item.box];
    const i64 iz = box.iz + item.z;
    const std::vector<double>& p = map.integrals[box.slice];
    const std::size_t area = std::size_t(box.n.nx * (item.y1 - item.y0));
    std::vector<double> acc(n_pools * area, 0.0), integral, gains;
    std::vector<std::vector<double>> rows(n_pools), steps(n_pools), mixed(pools.size());
    std::vector<const double*> row_of(n_pools), step_of(n_pools);
    std::vector<double*> acc_of(n_pools);
    for (int a = 0; a < turn; ++a) {
      const double theta = (fan ? 2 : 1) * M_PI * a / turn, c = std::cos(theta), s = std::sin(theta);
      // A voxel's bin: parallel beam, its offset along (c, s); fan beam, its detector coordinate
      // (a projective map: its extremes over the piece lie at the corners).
      auto bin = [&](double x, double y) { return (fan ? fan_point(x, y, c, s, D).u : x * c + y * s) + cd; };
      double lo = std::numeric_limits<double>::infinity(), hi = -lo;
      for (i64 y : {item.y0, item.y1 - 1})
        for (i64 x : {i64(0), box.n.nx - 1}) {
          const double t = bin(double(box.ix + x) - cx, double(box.iy + y) - cy);
          lo = std::min(lo, t), hi = std::max(hi, t);
        }
      const i64 t0 = std::max<i64>(0, i64(std::floor(lo))), t1 = std::min<i64>(nd - 1, i64(std::floor(hi)) + 1);
      // Each ray's p (its factor in a channel, below: exp(P p / 2), fan beam: times cos(gamma)
      // and its orbit's redundancy gain).
      integral.resize(std::size_t(t1 - t0 + 1));
      gains.assign(std::size_t(t1 - t0 + 1), 1.0);
      if (fan && map.orbit.kind != ScanMap::Orbit::Kind::Full) {
        for (i64 t = t0; t <= t1; ++t) gains[std::size_t(t - t0)] = redundancy_gain(map.orbit, theta, double(t) - cd, D);
        if (std::all_of(gains.begin(), gains.end(), [](double g) { return g == 0; })) continue;  // off a short scan's arc
      }
      if (fan) {
        for (i64 t = t0; t <= t1; ++t) {  // the ray from the source through detector coordinate u
          const double u = double(t) - cd;
          const Line line = line_through(D * c, D * s, -u * s, u * c);
          integral[std::size_t(t - t0)] = relative_integral(p, coarse, line.view, line.offset);
        }
      } else {
        const i64 map_view = i64(std::lround(double(a) * kMapViews / views)) % kMapViews;
        for (i64 t = t0; t <= t1; ++t) integral[std::size_t(t - t0)] = relative_integral(p, coarse, map_view, double(t) - cd);
      }
      // Each pool's rows, the same rows and starts for every pool, mixed over slices; each
      // channel's, its pool's times the ray's factor in the channel.
      for (std::size_t m = 0; m < pools.size(); ++m) {
        mixed[m].assign(std::size_t(t1 - t0 + 1), 0.0);
        for (i64 j = -reach; j <= reach; ++j) {
          const std::uint64_t h = mix(seed ^ (std::uint64_t(iz + j) << 24) ^ std::uint64_t(a));
          const float* source = pools[m]->data() + i64(h % std::uint64_t(kPoolRows)) * pool_length + i64((h >> 32) % kPoolSlack);
          const double tap = taps[std::size_t(j + reach)];
          for (i64 t = t0; t <= t1; ++t) mixed[m][std::size_t(t - t0)] += tap * source[t];
        }
      }
      for (std::size_t q = 0; q < n_pools; ++q) {
        const double P = channels[q].attenuation;
        std::vector<double>& row = rows[q];
        row = mixed[pool_of[q]];
        for (i64 t = t0; t <= t1; ++t) {
          const double u = double(t) - cd, e = std::exp(0.5 * P * integral[std::size_t(t - t0)]);
          row[std::size_t(t - t0)] *= fan ? D / std::hypot(D, u) * e * gains[std::size_t(t - t0)] : e;
        }
        std::vector<double>& step = steps[q];
        step.resize(row.size());
        for (std::size_t k = 0; k + 1 < row.size(); ++k) step[k] = row[k + 1] - row[k];
        step.back() = 0;
      }
      // Each voxel's bin t, linearly interpolated as row[k] + f (row[k + 1] - row[k]) (the voxels'
      // bins are >= 0: the detector spans the image's diagonal), in SIMD registers.
      const i64 last = std::max<i64>(0, t1 - t0 - 1);
      for (std::size_t q = 0; q < n_pools; ++q) row_of[q] = rows[q].data(), step_of[q] = steps[q].data();
      for (i64 y = item.y0; y < item.y1; ++y) {
        const std::size_t row_start = std::size_t((y - item.y0) * box.n.nx);
        for (std::size_t q = 0; q < n_pools; ++q) acc_of[q] = acc.data() + q * area + row_start;
        const double ry = double(box.iy + y) - cy;
        if (fan) {  // fan_point's u and U, stepped along the row
          const double along0 = D - ((double(box.ix) - cx) * c + ry * s), across0 = -(double(box.ix) - cx) * s + ry * c;
          cpu::add_fan_rays(row_of, step_of, last, along0, across0, c, s, D, cd, double(t0), acc_of, box.n.nx);
        } else {
          cpu::add_parallel_rays(row_of, step_of, last, (double(box.ix) - cx) * c + ry * s + cd - double(t0), c, acc_of,
                                 box.n.nx);
        }
      }
    }
    for (std::size_t q = 0; q < n_pools; ++q)
      for (i64 y = item.y0; y < item.y1; ++y)
        for (i64 x = 0; x < box.n.nx; ++x) {
          channels[q].out->view()(box.x0 + x, box.y0 + y, box.z0 + item.z) =
              float(acc[q * area + std::size_t((y - item.y0) * box.n.nx + x)] / turn);
        }
  });
}

void back_project(const ScanMap& map, const Coarse& coarse, const std::vector<float>& pool, i64 pool_length,
                  const std::vector<double>& taps, int views, std::uint64_t seed, const std::vector<Box>& boxes, Volume& out) {
  back_project(map, coarse, {{&pool, map.attenuation, &out}}, pool_length, taps, views, seed, boxes);
}

std::vector<Box> sample_boxes(const Sample& s, const ScanMap& map) {
  const Dims sd = s.image.dims();
  std::vector<Box> boxes;
  for (std::size_t b = 0; b < s.places.size(); ++b) {
    const i64 x0 = i64(b) % s.blocks_per_row * s.block, y0 = i64(b) / s.blocks_per_row * s.block;
    boxes.push_back({x0, y0, 0, Dims{std::min(s.block, sd.nx - x0), std::min(s.block, sd.ny - y0), sd.nz}, s.places[b].x,
                     s.places[b].y, s.places[b].z, map.slice_of_block[b]});
  }
  return boxes;
}
}  // namespace ctd::detail::scan
