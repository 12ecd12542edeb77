#pragma once
// Checks and routing shared by every filter's front end (nlm.cpp, bilateral.cpp).

#include <ctdenoise/exec.hpp>
#include <ctdenoise/volume.hpp>

#include <ctdenoise/error.hpp>
#include <ctdenoise/nlm.hpp>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <string_view>
#include <vector>

namespace ctd::cpu {
struct OutputBox;  // cpu/backend.hpp
}

namespace ctd::detail {

// What every filter checks before it runs: matching dims, an available device, a valid thread
// count. The filters read the input while writing the output, so when the two overlap, `input`
// points at a private copy.
// Finite float input is checked where the voxels are read anyway: by float_input() for the CPU
// filters, and during the upload on CUDA (HostTimes::input_finite; then check_finite says where).
// Int16 input (CT's stored type) stays int16 in `int16_input`: the CUDA filters upload it as it
// is and convert it there; float_input() converts it for the CPU filters.
struct PreparedRun {
  Device device = Device::Cpu;
  int threads = 1;
  ConstVolumeView<float> input;
  std::optional<ConstVolumeView<std::int16_t>> int16_input;
  std::vector<float> input_copy;
  std::vector<std::int16_t> int16_copy;
  // `input` checked finite, or int16_input converted on all cores (held in input_copy).
  ConstVolumeView<float> float_input();
  // For an upload that found a NaN or an infinity: throws check_finite's error.
  [[noreturn]] void reject_non_finite_input() const;
};
// Throws InvalidArgument naming the count of NaN or infinite voxels and the first one's position.
void check_finite(ConstVolumeView<float> in, int threads);
// `filter` names the filter for messages; without a CUDA variant, auto means the CPU and cuda is
// Unsupported.
PreparedRun prepare_run(ConstVolumeView<float> in, VolumeView<float> out, const ExecContext& context,
                        std::string_view filter, bool has_cuda_variant);
PreparedRun prepare_run(ConstVolumeView<std::int16_t> in, VolumeView<float> out, const ExecContext& context,
                        std::string_view filter, bool has_cuda_variant);

// Parses the name of an algorithm enum from its to_string names; InvalidArgument lists them.
template <class E, std::size_t N>
E enum_from_string(std::string_view name, const E (&all)[N], std::string_view what) {
  std::string names;
  for (E e : all) {
    if (to_string(e) == name) return e;
    names += (names.empty() ? "" : ", ") + std::string(to_string(e));
  }
  throw Error(ErrorKind::InvalidArgument,
              "unknown " + std::string(what) + " '" + std::string(name) + "' (available: " + names + ")");
}

// NLM at each of `values` into outs[k] (none of them over `in`), the output needed in `only`
// alone: the CPU computes it there (bit for bit as over the whole image), at all the values in one
// pass; CUDA everywhere, a run per value (src/core/nlm.cpp; the automatic h's filter runs).
void nlm_in_boxes(ConstVolumeView<float> in, std::span<const VolumeView<float>> outs, std::span<const double> values,
                  const NlmParams& params, const ExecContext& context, std::span<const cpu::OutputBox> only);

}  // namespace ctd::detail
