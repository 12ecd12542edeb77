// Bilateral front end: validation, default radius, then routing to a backend variant.

#include "core/exec_internal.hpp"
#include "cpu/backend.hpp"
#if CTD_HAVE_CUDA
#include "cuda/backend.hpp"
#endif

#include <ctdenoise/bilateral.hpp>
#include <ctdenoise/error.hpp>
#include <ctdenoise/metrics.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

namespace ctd {
namespace {

[[noreturn]] void invalid(const std::string& message) { throw Error(ErrorKind::InvalidArgument, message); }

constexpr double kLeastSigmaRange = 1e-18;

}  // namespace

void validate(const BilateralParams& p) {
  if (!(std::isfinite(p.sigma_spatial) && p.sigma_spatial > 0)) {
    invalid(fmt::format("sigma_spatial must be a finite value > 0, got {}", p.sigma_spatial));
  }
  if (!(std::isfinite(p.sigma_range) && p.sigma_range > 0)) {
    invalid(fmt::format("sigma_range must be a finite value > 0, got {}", p.sigma_range));
  }
  // The range kernel is exp(-d^2 / (2 sigma_r^2)) in float: below this, 1 / (2 sigma_r^2) overflows
  // (every weight NaN) or the squared differences that matter underflow.
  if (p.sigma_range < kLeastSigmaRange) {
    invalid(fmt::format("sigma_range {} is too small for single precision (at least {}); scale the image up", p.sigma_range,
                        kLeastSigmaRange));
  }
  if (p.radius) {
    for (int axis = 0; axis < 3; ++axis) {
      if ((*p.radius)[axis] < 1) {
        invalid(fmt::format("radius along {} must be >= 1 voxel, got {}", "xyz"[axis], (*p.radius)[axis]));
      }
    }
  }
  if (p.terms < 0 || p.terms > 10000) invalid(fmt::format("terms must be 0 (from accuracy_db) or 1 .. 10000, got {}", p.terms));
  if (!(std::isfinite(p.accuracy_db) && p.accuracy_db > 0 && p.accuracy_db <= 120)) {
    invalid(fmt::format("accuracy_db must be in (0, 120] dB (float32 holds about 140), got {}", p.accuracy_db));
  }
  if (p.spatial_unit == SpatialUnit::Millimetre) {
    for (int axis = 0; axis < 3; ++axis) {
      if (!(std::isfinite(p.spacing[axis]) && p.spacing[axis] > 0)) {
        invalid(fmt::format("voxel spacing along {} must be > 0 mm for sigma in mm, got {}", "xyz"[axis],
                            p.spacing[axis]));
      }
    }
  }
}

std::array<int, 3> bilateral_radius(const BilateralParams& p, const Dims& dims) {
  validate(p);
  std::array<int, 3> r{};
  for (int axis = 0; axis < 3; ++axis) {
    if (p.radius) {
      r[axis] = (*p.radius)[axis];
    } else {
      const double step = p.spatial_unit == SpatialUnit::Millimetre ? p.spacing[axis] : 1.0;
      // ceil(3 sigma / s); the small tolerance keeps 3 * 1.0 / 1.0 from rounding up to 4.
      const double reach = std::ceil(3.0 * double(p.sigma_spatial) / step - 1e-9);
      if (reach > 1e6) {
        invalid(fmt::format("sigma_spatial {} gives a window radius of {} voxels along {}; give --radius",
                            p.sigma_spatial, reach, "xyz"[axis]));
      }
      r[axis] = std::max(1, static_cast<int>(reach));
    }
  }
  if (dims.is_2d()) r[2] = 0;
  return r;
}

std::string_view to_string(BilateralAlgorithm algorithm) noexcept {
  switch (algorithm) {
    case BilateralAlgorithm::Auto: return "auto";
    case BilateralAlgorithm::Direct: return "direct";
    case BilateralAlgorithm::Naive: return "naive";
    case BilateralAlgorithm::Tiled: return "tiled";
    case BilateralAlgorithm::Fused: return "fused";
    case BilateralAlgorithm::Compressive: return "compressive";
  }
  return "?";
}

BilateralAlgorithm bilateral_algorithm_from_string(std::string_view name) {
  static constexpr BilateralAlgorithm kAll[] = {BilateralAlgorithm::Auto,  BilateralAlgorithm::Direct,
                                                BilateralAlgorithm::Naive, BilateralAlgorithm::Tiled,
                                                BilateralAlgorithm::Fused, BilateralAlgorithm::Compressive};
  return detail::enum_from_string(name, kAll, "bilateral algorithm");
}

namespace {

// The period T for M terms where the series' two errors meet: the nearest periodic copy of the
// kernel, exp(-(T - R)^2 / 2 sr^2), and the first dropped term, 2 exp(-(w (M + 1) sr)^2 / 2),
// w = 2 pi / T. The first falls with T, the second grows: bisection on the difference of their logs.
double balanced_period(double value_range, double sr, int terms) {
  const double c = 2.0 * M_PI * (terms + 1) * sr;
  auto excess = [&](double t) {
    return -(t - value_range) * (t - value_range) / (2 * sr * sr) - (std::log(2.0) - 0.5 * (c / t) * (c / t));
  };
  double lo = value_range, hi = value_range + 40.0 * sr;  // excess(hi) < 0: the copy is e^-800 away
  if (excess(lo) <= 0) hi = lo;  // so few terms that the dropped term dominates at every T
  for (int i = 0; i < 200 && lo < hi; ++i) {
    const double mid = 0.5 * (lo + hi);
    (excess(mid) > 0 ? lo : hi) = mid;
  }
  return std::max(hi, std::nextafter(value_range, INFINITY));
}

}  // namespace

CompressiveSettings compressive_settings(const BilateralParams& p, double value_range) {
  validate(p);
  if (!(std::isfinite(value_range) && value_range >= 0)) {
    invalid(fmt::format("the value range must be finite and >= 0, got {}", value_range));
  }
  const double sr = p.sigma_range;
  CompressiveSettings s;
  if (p.terms > 0) {
    s.terms = p.terms;
  } else {
    // M: both errors below eps of the DC term at T0 = R + sr sqrt(2 ln(1/eps)), where the copy
    // error is eps. eps = 10^(-(dB - 20) / 20) was calibrated on the tests' adversarial inputs
    // (uniform noise over the range, sigma_r = 5-20% of the range, sigma_s 1-3; 3x larger eps
    // misses; tests/cpu/bilateral_compressive_test.cpp, docs/filters.md).
    const double eps = std::pow(10.0, -double(p.accuracy_db) / 20.0) * 10.0;
    const double omega = 2.0 * M_PI / (value_range + sr * std::sqrt(2.0 * std::log(1.0 / eps)));
    const double terms = std::ceil(std::sqrt(2.0 * std::log(2.0 / eps)) / (omega * sr)) - 1.0;
    if (terms > 10000) {
      throw Error(ErrorKind::Unsupported,
                  fmt::format("sigma_range {} is too small against the value range {} for the compressive filter "
                              "({} cosine terms); use the exact filter",
                              sr, value_range, terms));
    }
    s.terms = std::max(1, static_cast<int>(terms));
  }
  // Then T where the two errors meet: both below eps for the M above (2-10 dB lower bound than at T0).
  s.period = balanced_period(value_range, sr, s.terms);
  return s;
}

namespace {

// The variant that runs for `requested` on `device`; Unsupported where it does not exist. Auto on
// CUDA: fused (B1-B3: 1.7-2.8x faster than tiled), except tiled for small images with small
// windows (Mueller et al.'s Table I at 256^2: its grid is too small to fill the GPU with fused's 8
// outputs per thread; tiled 1.5-2x faster there); bench/results/2026-11-21-h100-bilateral.md.
BilateralAlgorithm resolve_algorithm(BilateralAlgorithm requested, Device device, const Dims& dims,
                                     const std::array<int, 3>& radius) {
  const bool cuda_only = requested == BilateralAlgorithm::Naive || requested == BilateralAlgorithm::Tiled ||
                         requested == BilateralAlgorithm::Fused;
  if (device == Device::Cuda) {
    if (requested == BilateralAlgorithm::Auto) {
      const long long taps = (2LL * radius[0] + 1) * (2LL * radius[1] + 1) * (2LL * radius[2] + 1);
      return dims.count() < 512 * 512 && taps <= 1000 ? BilateralAlgorithm::Tiled : BilateralAlgorithm::Fused;
    }
    if (requested == BilateralAlgorithm::Direct) {
      throw Error(ErrorKind::Unsupported, "the bilateral algorithm 'direct' is the CPU's; on CUDA the exact filter "
                                          "is naive, tiled or fused");
    }
    return requested;
  }
  if (cuda_only) {
    throw Error(ErrorKind::Unsupported, fmt::format("the bilateral algorithm '{}' runs on CUDA only (CPU: direct, "
                                                    "compressive)",
                                                    to_string(requested)));
  }
  return requested == BilateralAlgorithm::Auto ? BilateralAlgorithm::Direct : requested;
}

void check_recursive_sigma(const BilateralParams& params, BilateralAlgorithm algorithm, const Dims& dims) {
  if (algorithm != BilateralAlgorithm::Compressive || params.gaussian != BilateralParams::Gaussian::Recursive) return;
  for (int axis = 0; axis < (dims.is_2d() ? 2 : 3); ++axis) {
    const double step = params.spatial_unit == SpatialUnit::Millimetre ? params.spacing[axis] : 1.0;
    if (params.sigma_spatial / step < 0.5) {
      invalid(fmt::format("the recursive Gaussian needs sigma >= 0.5 voxel along every axis; sigma_spatial {} "
                          "is {:.3g} voxel along {}",
                          params.sigma_spatial, params.sigma_spatial / step, "xyz"[axis]));
    }
  }
}

// The compressive filter's facts for FilterRun::details.
std::map<std::string, double> compressive_details(const CompressiveSettings& s) {
  return {{"period", s.period}, {"terms", double(s.terms)}, {"gaussian_filters", double(4 * s.terms + 1)}};
}

}  // namespace

namespace {

template <class T>
FilterRun bilateral_from_host(ConstVolumeView<T> in, VolumeView<float> out, const BilateralParams& params,
                              const ExecContext& context) {
  const std::array<int, 3> radius = bilateral_radius(params, in.dims);
  detail::PreparedRun run = detail::prepare_run(in, out, context, "bilateral", true);
  // With the device left to us, a CPU-only variant runs on the CPU rather than failing.
  if (context.device == Device::Auto && params.algorithm == BilateralAlgorithm::Direct) run.device = Device::Cpu;
  const BilateralAlgorithm algorithm = resolve_algorithm(params.algorithm, run.device, in.dims, radius);
  check_recursive_sigma(params, algorithm, in.dims);
#if CTD_HAVE_CUDA
  if (run.device == Device::Cuda) {
    cuda::check_bilateral_supported(in.dims, params, radius, algorithm);
    CompressiveSettings settings;
    const cuda::HostTimes times =
        run.int16_input
            ? cuda::bilateral_host(*run.int16_input, out, params, radius, algorithm, &settings, context.on_uploaded,
                                   context.output_statistics)
            : cuda::bilateral_host(run.input, out, params, radius, algorithm, &settings, context.on_uploaded,
                                   context.output_statistics);
    if (!times.input_finite) run.reject_non_finite_input();
    if (context.progress) context.progress(1.0);
    FilterRun result{Device::Cuda, std::string(to_string(algorithm)), 0, times.details(), times.output_statistics};
    if (algorithm == BilateralAlgorithm::Compressive) result.details.merge(compressive_details(settings));
    return result;
  }
#endif
  const ConstVolumeView<float> input = run.float_input();
  cpu::ThreadPool pool(run.threads);
  if (algorithm == BilateralAlgorithm::Compressive) {
    const CompressiveSettings s = cpu::bilateral_compressive(input, out, params, radius, pool, context.progress);
    return {run.device, std::string(to_string(BilateralAlgorithm::Compressive)), run.threads, compressive_details(s), {}};
  }
  cpu::bilateral_direct(input, out, params, radius, pool, context.progress);
  return {run.device, std::string(to_string(BilateralAlgorithm::Direct)), run.threads, {}, {}};
}

}  // namespace

FilterRun bilateral(ConstVolumeView<float> in, VolumeView<float> out, const BilateralParams& params,
                    const ExecContext& context) {
  return bilateral_from_host(in, out, params, context);
}

FilterRun bilateral(ConstVolumeView<std::int16_t> in, VolumeView<float> out, const BilateralParams& params,
                    const ExecContext& context) {
  return bilateral_from_host(in, out, params, context);
}

FilterRun bilateral_device(const float* device_in, float* device_out, const Dims& dims, const BilateralParams& params,
                           CudaStream stream, std::optional<std::pair<float, float>> value_range) {
  if (dims.nx < 1 || dims.ny < 1 || dims.nz < 1) {
    invalid(fmt::format("dimensions must be >= 1, got {}x{}x{}", dims.nx, dims.ny, dims.nz));
  }
  const std::array<int, 3> radius = bilateral_radius(params, dims);
  if (value_range && !(std::isfinite(value_range->first) && std::isfinite(value_range->second) &&
                       value_range->first <= value_range->second)) {
    invalid(fmt::format("value_range must be finite with min <= max, got ({}, {})", value_range->first,
                        value_range->second));
  }
#if CTD_HAVE_CUDA
  const BilateralAlgorithm algorithm = resolve_algorithm(params.algorithm, Device::Cuda, dims, radius);
  check_recursive_sigma(params, algorithm, dims);
  cuda::check_bilateral_supported(dims, params, radius, algorithm);
  FilterRun result{Device::Cuda, std::string(to_string(algorithm)), 0, {}, {}};
  CompressiveSettings settings;
  float lo = 0;
  if (algorithm == BilateralAlgorithm::Compressive) {
    const std::pair<float, float> range = value_range ? *value_range : cuda::value_range_device(device_in, dims, stream);
    lo = range.first;
    settings = compressive_settings(params, double(range.second) - double(range.first));
    result.details = compressive_details(settings);
  }
  cuda::bilateral_device(device_in, device_out, dims, params, radius, algorithm, settings, lo, stream);
  return result;
#else
  (void)device_in, (void)device_out, (void)stream, (void)radius;
  throw Error(ErrorKind::Unsupported, "this build of ctdenoise has no CUDA backend");
#endif
}

}  // namespace ctd
