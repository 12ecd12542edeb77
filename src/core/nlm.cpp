// NLM front end: validation, then routing to a backend variant.

#include "core/exec_internal.hpp"
#include "cpu/backend.hpp"

#include <ctdenoise/error.hpp>
#include <ctdenoise/nlm.hpp>

#include <fmt/format.h>

#include <cmath>

namespace ctd {
namespace {

[[noreturn]] void invalid(const std::string& message) { throw Error(ErrorKind::InvalidArgument, message); }

}  // namespace

void validate(const NlmParams& p) {
  if (p.search_radius < 1) invalid(fmt::format("search_radius must be >= 1 voxel, got {}", p.search_radius));
  if (p.patch_radius < 1) invalid(fmt::format("patch_radius must be >= 1 voxel, got {}", p.patch_radius));
  if (!(std::isfinite(p.h) && p.h > 0)) invalid(fmt::format("h must be a finite value > 0, got {}", p.h));
  if (!(std::isfinite(p.noise_sigma) && p.noise_sigma >= 0)) {
    invalid(fmt::format("noise_sigma must be a finite value >= 0, got {}", p.noise_sigma));
  }
  if (p.patch_kernel == PatchKernel::Gaussian && !(std::isfinite(p.patch_sigma) && p.patch_sigma > 0)) {
    invalid(fmt::format("patch_sigma must be a finite value > 0, got {}", p.patch_sigma));
  }
  if (p.distance == PatchDistance::L1) {
    // The L1 weight of seed 003 has its own patch kernel G and no noise term.
    if (p.patch_kernel != PatchKernel::Uniform) invalid("the L1 distance uses its own patch kernel G; use the uniform patch kernel with it");
    if (p.noise_sigma != 0) invalid("noise_sigma (the 2 sigma^2 bias) applies to the L2 distance only; set it to 0 with L1");
  }
}

std::string_view to_string(NlmAlgorithm algorithm) noexcept {
  switch (algorithm) {
    case NlmAlgorithm::Auto: return "auto";
    case NlmAlgorithm::Displacement: return "displacement";
  }
  return "?";
}

NlmAlgorithm nlm_algorithm_from_string(std::string_view name) {
  static constexpr NlmAlgorithm kAll[] = {NlmAlgorithm::Auto, NlmAlgorithm::Displacement};
  return detail::enum_from_string(name, kAll, "NLM algorithm");
}

FilterRun nlm(ConstVolumeView<float> in, VolumeView<float> out, const NlmParams& params,
              const ExecContext& context) {
  validate(params);
  const detail::PreparedRun run = detail::prepare_run(in, out, context);
  cpu::ThreadPool pool(run.threads);
  cpu::nlm_displacement(run.input, out, params, pool, context.progress);
  return {run.device, std::string(to_string(NlmAlgorithm::Displacement)), run.threads};
}

}  // namespace ctd
