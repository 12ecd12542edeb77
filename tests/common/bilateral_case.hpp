#pragma once
// One bilateral test case (sizes, sigmas, radius, units) and its translation to the library's
// params and to the reference's settings; the CPU and CUDA suites each keep their own table.

#include "reference/reference.hpp"

#include <ctdenoise/bilateral.hpp>

#include <optional>

namespace testing_util {

struct BilateralCase {
  const char* name;
  ctd::Dims dims;
  float sigma_spatial, sigma_range;
  std::optional<std::array<int, 3>> radius = std::nullopt;
  ctd::SpatialUnit unit = ctd::SpatialUnit::Voxel;
  std::array<double, 3> spacing{1, 1, 1};
};

inline ctd::BilateralParams to_params(const BilateralCase& c,
                                      ctd::BilateralAlgorithm algorithm = ctd::BilateralAlgorithm::Auto) {
  ctd::BilateralParams p;
  p.sigma_spatial = c.sigma_spatial;
  p.sigma_range = c.sigma_range;
  p.radius = c.radius;
  p.spatial_unit = c.unit;
  p.spacing = c.spacing;
  p.algorithm = algorithm;
  return p;
}

inline ref::BilateralSettings to_ref(const BilateralCase& c) {
  ref::BilateralSettings s;
  s.sigma_spatial = c.sigma_spatial;
  s.sigma_range = c.sigma_range;
  if (c.radius) s.radius = *c.radius;
  if (c.unit == ctd::SpatialUnit::Millimetre) s.step = c.spacing;
  return s;
}

}  // namespace testing_util
