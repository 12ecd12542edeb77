// Robust noise estimation (include/ctdenoise/noise.hpp).

#include "core/image_reads.hpp"
#include "core/robust_stats.hpp"
#include "cpu/thread_pool.hpp"

#include <ctdenoise/error.hpp>
#include <ctdenoise/noise.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace ctd {

using i64 = std::int64_t;
using detail::find_padding;
using detail::Residual;
using detail::robust_sigma;

std::string_view to_string(NoiseEstimator estimator) noexcept {
  switch (estimator) {
    case NoiseEstimator::PseudoResidual: return "pseudo-residual";
    case NoiseEstimator::WaveletMad: return "wavelet-mad";
  }
  return "?";
}

double padding_value(ConstVolumeView<float> image) {
  if (image.dims.count() < 1) return std::numeric_limits<double>::quiet_NaN();
  const std::vector<float> padding = find_padding(*detail::host_reads(image)).values;
  return padding.empty() ? std::numeric_limits<double>::quiet_NaN() : double(padding.front());
}

NoiseEstimate estimate_noise(ConstVolumeView<float> in, NoiseEstimator estimator) {
  const auto reads = detail::host_reads(in);
  return detail::estimate_noise_without(*reads, estimator, find_padding(*reads));
}

NoiseEstimate detail::estimate_noise_without(const ImageReads& reads, NoiseEstimator estimator,
                                             const Excluded& padding, i64 max_samples, i64 z0, i64 nz) {
  const Dims whole = reads.dims();
  if (nz < 0) nz = whole.nz - z0;
  const Dims d{whole.nx, whole.ny, nz};
  NoiseEstimate result;
  result.excluded_value = padding.values.empty() ? std::numeric_limits<double>::quiet_NaN() : double(padding.values.front());
  // Large volumes are sampled: every step-th position, about a million in all (the sigma of a
  // million residuals is within 0.1 % of the truth).
  const i64 step = std::max<i64>(1, d.count() / std::max<i64>(1, max_samples));
  const std::vector<Residual> samples = reads.residuals(estimator, z0, nz, padding, step);
  std::vector<double> values(samples.size()), ranges(samples.size());
  cpu::for_each_piece(i64(samples.size()), i64(1) << 16, 0, [&](i64, i64 begin, i64 end) {
    for (i64 i = begin; i < end; ++i) {
      values[std::size_t(i)] = samples[std::size_t(i)].value;
      ranges[std::size_t(i)] = samples[std::size_t(i)].range;
    }
  });
  if (values.size() < 16) {
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("too few usable voxels to estimate noise ({} residuals from a {}x{}x{} image)",
                            values.size(), d.nx, d.ny, d.nz));
  }
  // Edges: neighbourhoods whose values span more than 6 sigma (noise alone rarely does: the
  // range of 7 normal samples exceeds 6 sigma with probability ~0.3%) are left out, then sigma is
  // estimated again from the rest.
  const double first = robust_sigma(values);
  std::vector<double> smooth;
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (ranges[i] <= 6 * first) smooth.push_back(values[i]);
  }
  if (smooth.size() >= 16 && smooth.size() * 2 >= values.size()) values = std::move(smooth);
  result.samples = i64(values.size());
  result.sigma = robust_sigma(std::move(values));
  return result;
}

}  // namespace ctd
