#pragma once
// The CUDA backend as seen from src/core (no CUDA headers here). Parameters arrive validated.

#include <ctdenoise/exec.hpp>
#include <ctdenoise/nlm.hpp>

#include <string>

namespace ctd::cuda {

// Whether a driver and a device are there; `why` says what is missing when not.
bool device_present(std::string* why = nullptr);
std::string device_name();

// Throws Unsupported for options or sizes the variant cannot take (before any work).
void check_nlm_supported(const Dims& dims, const NlmParams& params, NlmAlgorithm algorithm);
// Queues the filter on `stream`; no synchronisation, no allocation.
void nlm_device(const float* in, float* out, const Dims& dims, const NlmParams& params, NlmAlgorithm algorithm,
                CudaStream stream);
// Upload, filter, download, synchronise.
void nlm_host(ConstVolumeView<float> in, VolumeView<float> out, const NlmParams& params, NlmAlgorithm algorithm);

}  // namespace ctd::cuda
