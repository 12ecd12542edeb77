// The scan-like probe's hot loops in SIMD registers (scan_rows.hpp). The back-projection's inner
// loop (a gather of two values per voxel, view and channel) was 90 % of its time as scalar code:
// bench/NOTES.md, 2026-11-28 (nineteenth session).

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/scan_rows.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include <hwy/highway.h>

#include <algorithm>

#include "cpu/scan_rows.hpp"

HWY_BEFORE_NAMESPACE();
namespace ctd::cpu::HWY_NAMESPACE {

namespace hn = hwy::HWY_NAMESPACE;
using i64 = std::int64_t;

// The interpolation at t of one lane: the plain loop's operations, for the tails.
inline double interpolated(const double* row, const double* step, i64 last, double t) {
  const auto k = std::size_t(std::clamp<i64>(i64(t), 0, last));
  const double f = std::clamp(t - double(k), 0.0, 1.0);
  return row[k] + f * step[k];
}

// k and f of the lanes at t. trunc(t) clamped in double is clamp(i64(t)) as a double: both exact.
template <class D, class V>
inline void bins(D d, V t, V last, hn::Vec<hn::RebindToSigned<D>>& k, V& f) {
  const V zero = hn::Zero(d), one = hn::Set(d, 1.0);
  const V kd = hn::Min(hn::Max(hn::Trunc(t), zero), last);
  k = hn::ConvertTo(hn::RebindToSigned<D>(), kd);
  f = hn::Min(hn::Max(hn::Sub(t, kd), zero), one);
}

void AddParallelRays(std::span<const double* const> rows, std::span<const double* const> steps, i64 last, double start,
                     double c, std::span<double* const> acc, i64 n) {
  const hn::ScalableTag<double> d;
  const i64 lanes = i64(hn::Lanes(d));
  const auto lane = hn::Iota(d, 0.0), vc = hn::Set(d, c), vstart = hn::Set(d, start), vlast = hn::Set(d, double(last));
  i64 x = 0;
  for (; x + lanes <= n; x += lanes) {
    const auto t = hn::Add(vstart, hn::Mul(hn::Add(hn::Set(d, double(x)), lane), vc));
    hn::Vec<hn::RebindToSigned<decltype(d)>> k;
    hn::Vec<decltype(d)> f;
    bins(d, t, vlast, k, f);
    for (std::size_t q = 0; q < rows.size(); ++q) {
      const auto value = hn::Add(hn::GatherIndex(d, rows[q], k), hn::Mul(f, hn::GatherIndex(d, steps[q], k)));
      hn::StoreU(hn::Add(hn::LoadU(d, acc[q] + x), value), d, acc[q] + x);
    }
  }
  for (; x < n; ++x) {
    const double t = start + double(x) * c;
    for (std::size_t q = 0; q < rows.size(); ++q) acc[q][x] += interpolated(rows[q], steps[q], last, t);
  }
}

void AddFanRays(std::span<const double* const> rows, std::span<const double* const> steps, i64 last, double along0,
                double across0, double c, double s, double D, double cd, double t0, std::span<double* const> acc, i64 n) {
  const hn::ScalableTag<double> d;
  const i64 lanes = i64(hn::Lanes(d));
  const auto lane = hn::Iota(d, 0.0), vlast = hn::Set(d, double(last)), vD = hn::Set(d, D);
  i64 x = 0;
  for (; x + lanes <= n; x += lanes) {
    const auto xs = hn::Add(hn::Set(d, double(x)), lane);
    const auto along = hn::Sub(hn::Set(d, along0), hn::Mul(xs, hn::Set(d, c)));
    const auto across = hn::Sub(hn::Set(d, across0), hn::Mul(xs, hn::Set(d, s)));
    const auto t = hn::Sub(hn::Add(hn::Div(hn::Mul(across, vD), along), hn::Set(d, cd)), hn::Set(d, t0));
    const auto inverse_U = hn::Div(vD, along);
    hn::Vec<hn::RebindToSigned<decltype(d)>> k;
    hn::Vec<decltype(d)> f;
    bins(d, t, vlast, k, f);
    for (std::size_t q = 0; q < rows.size(); ++q) {
      const auto value = hn::Add(hn::GatherIndex(d, rows[q], k), hn::Mul(f, hn::GatherIndex(d, steps[q], k)));
      hn::StoreU(hn::Add(hn::LoadU(d, acc[q] + x), hn::Mul(hn::Mul(value, inverse_U), inverse_U)), d, acc[q] + x);
    }
  }
  for (; x < n; ++x) {
    const double along = along0 - double(x) * c, across = across0 - double(x) * s;
    const double t = across * D / along + cd - t0, inverse_U = D / along;
    for (std::size_t q = 0; q < rows.size(); ++q)
      acc[q][x] += interpolated(rows[q], steps[q], last, t) * inverse_U * inverse_U;
  }
}

// A plain loop that the compiler vectorises for each target.
void AddCorrelation(const double* in, const double* kernel, i64 taps, double* acc, i64 n) {
  for (i64 k = 0; k < taps; ++k) {
    const double tap = kernel[k];
    const double* w = in + k;
    for (i64 t = 0; t < n; ++t) acc[t] += tap * w[t];
  }
}

}  // namespace ctd::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace ctd::cpu {

HWY_EXPORT(AddParallelRays);
HWY_EXPORT(AddFanRays);
HWY_EXPORT(AddCorrelation);

void add_parallel_rays(std::span<const double* const> rows, std::span<const double* const> steps, std::int64_t last,
                       double start, double c, std::span<double* const> acc, std::int64_t n) {
  HWY_DYNAMIC_DISPATCH(AddParallelRays)(rows, steps, last, start, c, acc, n);
}

void add_fan_rays(std::span<const double* const> rows, std::span<const double* const> steps, std::int64_t last,
                  double along0, double across0, double c, double s, double D, double cd, double t0,
                  std::span<double* const> acc, std::int64_t n) {
  HWY_DYNAMIC_DISPATCH(AddFanRays)(rows, steps, last, along0, across0, c, s, D, cd, t0, acc, n);
}

void add_correlation(const double* in, const double* kernel, std::int64_t taps, double* acc, std::int64_t n) {
  HWY_DYNAMIC_DISPATCH(AddCorrelation)(in, kernel, taps, acc, n);
}

}  // namespace ctd::cpu
#endif
