#pragma once
// One NLM test case (sizes, radii, options) and its translation to the library's params and to the
// reference's settings; the CPU and CUDA suites each keep their own table of cases.

#include "reference/reference.hpp"

#include <ctdenoise/nlm.hpp>

namespace testing_util {

struct NlmCase {
  const char* name;
  ctd::Dims dims;
  int search_radius, patch_radius;
  float h = 40, noise_sigma = 0;
  ctd::PatchKernel kernel = ctd::PatchKernel::Uniform;
  float patch_sigma = 1;
  ctd::PatchDistance distance = ctd::PatchDistance::L2;
  ctd::CentreWeight centre = ctd::CentreWeight::Formula;
};

inline ctd::NlmParams to_params(const NlmCase& c, ctd::NlmAlgorithm algorithm = ctd::NlmAlgorithm::Auto) {
  ctd::NlmParams p;
  p.search_radius = c.search_radius;
  p.patch_radius = c.patch_radius;
  p.h = c.h;
  p.noise_sigma = c.noise_sigma;
  p.patch_kernel = c.kernel;
  p.patch_sigma = c.patch_sigma;
  p.distance = c.distance;
  p.centre_weight = c.centre;
  p.algorithm = algorithm;
  return p;
}

inline ref::NlmSettings to_ref(const NlmCase& c) {
  ref::NlmSettings s;
  s.search_radius = c.search_radius;
  s.patch_radius = c.patch_radius;
  s.h = c.h;
  s.noise_sigma = c.noise_sigma;
  s.gaussian_patch = c.kernel == ctd::PatchKernel::Gaussian;
  s.patch_sigma = c.patch_sigma;
  s.l1 = c.distance == ctd::PatchDistance::L1;
  s.centre_max = c.centre == ctd::CentreWeight::Max;
  return s;
}

}  // namespace testing_util
