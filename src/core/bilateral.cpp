// Bilateral front end: validation, default radius, then routing to a backend variant.

#include "core/exec_internal.hpp"
#include "cpu/backend.hpp"

#include <ctdenoise/bilateral.hpp>
#include <ctdenoise/error.hpp>

#include <fmt/format.h>

#include <cmath>

namespace ctd {
namespace {

[[noreturn]] void invalid(const std::string& message) { throw Error(ErrorKind::InvalidArgument, message); }

}  // namespace

void validate(const BilateralParams& p) {
  if (!(std::isfinite(p.sigma_spatial) && p.sigma_spatial > 0)) {
    invalid(fmt::format("sigma_spatial must be a finite value > 0, got {}", p.sigma_spatial));
  }
  if (!(std::isfinite(p.sigma_range) && p.sigma_range > 0)) {
    invalid(fmt::format("sigma_range must be a finite value > 0, got {}", p.sigma_range));
  }
  if (p.radius) {
    for (int axis = 0; axis < 3; ++axis) {
      if ((*p.radius)[axis] < 1) {
        invalid(fmt::format("radius along {} must be >= 1 voxel, got {}", "xyz"[axis], (*p.radius)[axis]));
      }
    }
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
  }
  return "?";
}

BilateralAlgorithm bilateral_algorithm_from_string(std::string_view name) {
  static constexpr BilateralAlgorithm kAll[] = {BilateralAlgorithm::Auto, BilateralAlgorithm::Direct};
  return detail::enum_from_string(name, kAll, "bilateral algorithm");
}

FilterRun bilateral(ConstVolumeView<float> in, VolumeView<float> out, const BilateralParams& params,
                    const ExecContext& context) {
  const std::array<int, 3> radius = bilateral_radius(params, in.dims);
  const detail::PreparedRun run = detail::prepare_run(in, out, context, "bilateral", false);
  cpu::ThreadPool pool(run.threads);
  cpu::bilateral_direct(run.input, out, params, radius, pool, context.progress);
  return {run.device, std::string(to_string(BilateralAlgorithm::Direct)), run.threads};
}

}  // namespace ctd
