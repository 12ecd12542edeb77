// NLM front end: validation, then routing to a backend variant.

#include "core/exec_internal.hpp"
#include "cpu/backend.hpp"
#if CTD_HAVE_CUDA
#include "cuda/backend.hpp"
#endif

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
    // The L1 weight of Zhang et al. has its own patch kernel G and no noise term.
    if (p.patch_kernel != PatchKernel::Uniform) invalid("the L1 distance uses its own patch kernel G; use the uniform patch kernel with it");
    if (p.noise_sigma != 0) invalid("noise_sigma (the 2 sigma^2 bias) applies to the L2 distance only; set it to 0 with L1");
  }
}

std::string_view to_string(NlmAlgorithm algorithm) noexcept {
  switch (algorithm) {
    case NlmAlgorithm::Auto: return "auto";
    case NlmAlgorithm::Displacement: return "displacement";
    case NlmAlgorithm::RowWise: return "rowwise";
    case NlmAlgorithm::Naive: return "naive";
    case NlmAlgorithm::Tiled: return "tiled";
    case NlmAlgorithm::ZSlide: return "zslide";
    case NlmAlgorithm::Fused: return "fused";
    case NlmAlgorithm::Blockwise: return "blockwise";
  }
  return "?";
}

NlmAlgorithm nlm_algorithm_from_string(std::string_view name) {
  static constexpr NlmAlgorithm kAll[] = {NlmAlgorithm::Auto,  NlmAlgorithm::Displacement, NlmAlgorithm::RowWise,
                                          NlmAlgorithm::Naive, NlmAlgorithm::Tiled,        NlmAlgorithm::ZSlide,
                                          NlmAlgorithm::Fused, NlmAlgorithm::Blockwise};
  return detail::enum_from_string(name, kAll, "NLM algorithm");
}

namespace {

// The variant that runs for `requested` on `device`; Unsupported where it does not exist.
NlmAlgorithm resolve_algorithm(NlmAlgorithm requested, Device device) {
  if (device == Device::Cuda) {
    if (requested == NlmAlgorithm::Auto) return NlmAlgorithm::Fused;
    if (requested == NlmAlgorithm::Blockwise) {
      throw Error(ErrorKind::Unsupported, fmt::format("the NLM algorithm '{}' runs on the CPU only in this version "
                                                      "(CUDA: naive, tiled, zslide, displacement, rowwise, fused)",
                                                      to_string(requested)));
    }
    return requested;
  }
  if (requested == NlmAlgorithm::Blockwise) return requested;
  if (requested != NlmAlgorithm::Auto && requested != NlmAlgorithm::Displacement) {
    throw Error(ErrorKind::Unsupported, fmt::format("the NLM algorithm '{}' runs on CUDA only (CPU: displacement, blockwise)",
                                                    to_string(requested)));
  }
  return NlmAlgorithm::Displacement;
}

}  // namespace

namespace {

// `only`: where the output is needed; the CPU computes it there alone (empty: everywhere).
template <class T>
FilterRun nlm_from_host(ConstVolumeView<T> in, VolumeView<float> out, const NlmParams& params, const ExecContext& context,
                        std::span<const cpu::OutputBox> only = {}) {
  validate(params);
  detail::PreparedRun run = detail::prepare_run(in, out, context, "NLM", true);
  // With the device left to us, a CPU-only variant runs on the CPU rather than failing.
  if (context.device == Device::Auto && params.algorithm == NlmAlgorithm::Blockwise) run.device = Device::Cpu;
  const NlmAlgorithm algorithm = resolve_algorithm(params.algorithm, run.device);
#if CTD_HAVE_CUDA
  if (run.device == Device::Cuda) {
    cuda::check_nlm_supported(in.dims, params, algorithm);
    const cuda::HostTimes times =
        run.int16_input
            ? cuda::nlm_host(*run.int16_input, out, params, algorithm, context.on_uploaded, context.output_statistics)
            : cuda::nlm_host(run.input, out, params, algorithm, context.on_uploaded, context.output_statistics);
    if (!times.input_finite) run.reject_non_finite_input();
    if (context.progress) context.progress(1.0);
    return {Device::Cuda, std::string(to_string(algorithm)), 0, times.details(), times.output_statistics};
  }
#endif
  const ConstVolumeView<float> input = run.float_input();
  cpu::ThreadPool pool(run.threads);
  if (algorithm == NlmAlgorithm::Blockwise) {
    if (params.distance != PatchDistance::L2 || params.patch_kernel != PatchKernel::Uniform ||
        params.centre_weight != CentreWeight::Formula) {
      throw Error(ErrorKind::Unsupported, "blockwise NLM takes the uniform L2 patch distance and the formula centre "
                                          "weight only");
    }
    cpu::nlm_blockwise(input, out, params, pool, context.progress);
    return {run.device, std::string(to_string(algorithm)), run.threads, {{"approximate", 1.0}}, {}};
  }
  cpu::nlm_displacement(input, out, params, pool, context.progress, only);
  return {run.device, std::string(to_string(algorithm)), run.threads, {}, {}};
}

}  // namespace

FilterRun nlm(ConstVolumeView<float> in, VolumeView<float> out, const NlmParams& params, const ExecContext& context) {
  return nlm_from_host(in, out, params, context);
}

FilterRun nlm(ConstVolumeView<std::int16_t> in, VolumeView<float> out, const NlmParams& params,
              const ExecContext& context) {
  return nlm_from_host(in, out, params, context);
}

void detail::nlm_in_boxes(ConstVolumeView<float> in, std::span<const VolumeView<float>> outs, std::span<const double> values,
                          const NlmParams& params, const ExecContext& context, std::span<const cpu::OutputBox> only) {
  if (values.empty()) return;
  auto at = [&](std::size_t k) {
    NlmParams q = params;
    q.h = float(values[k]);
    return q;
  };
  detail::PreparedRun run = detail::prepare_run(in, outs[0], context, "NLM", true);
  if (run.device != Device::Cpu || resolve_algorithm(params.algorithm, Device::Cpu) != NlmAlgorithm::Displacement) {
    for (std::size_t k = 0; k < values.size(); ++k) nlm_from_host(in, outs[k], at(k), context, only);
    return;
  }
  std::vector<float> h_values;
  for (std::size_t k = 0; k < values.size(); ++k) {
    validate(at(k));
    if (!(outs[k].dims == in.dims)) invalid("nlm_in_boxes: every output must have the input's dimensions");
    h_values.push_back(at(k).h);
  }
  cpu::ThreadPool pool(run.threads);
  cpu::nlm_displacement(run.float_input(), outs, h_values, params, pool, context.progress, only);
}

FilterRun nlm_device(const float* device_in, float* device_out, const Dims& dims, const NlmParams& params,
                     CudaStream stream) {
  validate(params);
  if (dims.nx < 1 || dims.ny < 1 || dims.nz < 1) {
    invalid(fmt::format("dimensions must be >= 1, got {}x{}x{}", dims.nx, dims.ny, dims.nz));
  }
#if CTD_HAVE_CUDA
  const NlmAlgorithm algorithm = resolve_algorithm(params.algorithm, Device::Cuda);
  cuda::check_nlm_supported(dims, params, algorithm);
  cuda::nlm_device(device_in, device_out, dims, params, algorithm, stream);
  return {Device::Cuda, std::string(to_string(algorithm)), 0, {}, {}};
#else
  (void)device_in, (void)device_out, (void)stream;
  throw Error(ErrorKind::Unsupported, "this build of ctdenoise has no CUDA backend");
#endif
}

}  // namespace ctd
