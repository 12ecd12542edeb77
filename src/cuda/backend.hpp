#pragma once
// The CUDA backend as seen from src/core (no CUDA headers here). Parameters arrive validated.

#include "core/image_reads.hpp"

#include <ctdenoise/bilateral.hpp>
#include <ctdenoise/exec.hpp>
#include <ctdenoise/nlm.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>

namespace ctd::cuda {

// Whether a driver and a device are there; `why` says what is missing when not.
bool device_present(std::string* why = nullptr);
std::string device_name();
// Frees the device memory kept for calls from host memory on this thread (device_buffer.hpp).
void release_host_call_memory() noexcept;
// Creates the current device's context (cudaFree(nullptr)); throws ctd::Error on failure.
void create_context();
// Makes the pinned buffers that copies from host memory go through, ahead of the first copy.
void prepare_staging();
// The current device (cudaGetDevice).
int current_device();
// Ends `device`'s primary context from the calling thread (cudaDeviceReset): every allocation,
// stream and event on it ends. Errors are ignored: the process is about to end.
void end_context(int device) noexcept;

// Throws Unsupported for options or sizes the variant cannot take (before any work).
void check_nlm_supported(const Dims& dims, const NlmParams& params, NlmAlgorithm algorithm);
// Queues the filter on `stream`; no synchronisation, no allocation.
void nlm_device(const float* in, float* out, const Dims& dims, const NlmParams& params, NlmAlgorithm algorithm,
                CudaStream stream);
// The stages of a call from host memory: upload and download as the host waited for them (ms),
// the kernels by CUDA events.
struct HostTimes {
  double upload_ms = 0, kernel_ms = 0, download_ms = 0, upload_bytes = 0;
  // False where the float input held a NaN or an infinity: the output is untouched.
  bool input_finite = true;
  // The stages overlapped (the volume went up and down in slabs): upload_ms and download_ms are
  // the host's two loops, kernel_ms ran beside them.
  bool overlapped = false;
  // Where asked for: the output's statistics (statistics_device).
  std::optional<Statistics> output_statistics;
  // As FilterRun::details.
  std::map<std::string, double> details() const {
    std::map<std::string, double> d = {
        {"upload_ms", upload_ms}, {"kernel_ms", kernel_ms}, {"download_ms", download_ms}, {"upload_bytes", upload_bytes}};
    if (overlapped) d["overlapped"] = 1;
    return d;
  }
};
// Upload, filter, download, synchronise (int16 input converted on the device); `uploaded` (if
// set) is called once the input is on the device; with `output_statistics` the output's are
// measured on the device after the download (HostTimes::output_statistics).
HostTimes nlm_host(ConstVolumeView<float> in, VolumeView<float> out, const NlmParams& params, NlmAlgorithm algorithm,
                   const std::function<void()>& uploaded, bool output_statistics);
HostTimes nlm_host(ConstVolumeView<std::int16_t> in, VolumeView<float> out, const NlmParams& params, NlmAlgorithm algorithm,
                   const std::function<void()>& uploaded, bool output_statistics);

// Bilateral: Unsupported for what the variant cannot take (before any work).
void check_bilateral_supported(const Dims& dims, const BilateralParams& params, const std::array<int, 3>& radius,
                               BilateralAlgorithm algorithm);
// Queues the filter on `stream` over device memory (workspace: stream_workspace). `settings` and
// `lo` (the input's minimum) are the compressive filter's series.
void bilateral_device(const float* in, float* out, const Dims& dims, const BilateralParams& params,
                      const std::array<int, 3>& radius, BilateralAlgorithm algorithm, const CompressiveSettings& settings,
                      float lo, CudaStream stream);
// The least and greatest voxel of device memory; waits for `stream`.
std::pair<float, float> value_range_device(const float* in, const Dims& dims, CudaStream stream);
// Upload, filter, download, synchronise, as nlm_host. The compressive filter takes its series
// from the input's value range, found on the device after the upload, and writes them to
// `*compressive`.
HostTimes bilateral_host(ConstVolumeView<float> in, VolumeView<float> out, const BilateralParams& params,
                         const std::array<int, 3>& radius, BilateralAlgorithm algorithm, CompressiveSettings* compressive,
                         const std::function<void()>& uploaded, bool output_statistics);
HostTimes bilateral_host(ConstVolumeView<std::int16_t> in, VolumeView<float> out, const BilateralParams& params,
                         const std::array<int, 3>& radius, BilateralAlgorithm algorithm, CompressiveSettings* compressive,
                         const std::function<void()>& uploaded, bool output_statistics);

// The automatic parameters' reads (src/core/image_reads.hpp) of an image on the GPU: float voxels
// on the current device, read on `stream` (each read waits for it); or uploaded from host memory
// (int16 as it is) into memory the reads own. Only the reads' results come back.
std::unique_ptr<detail::ImageReads> device_reads(const float* image, const Dims& dims, CudaStream stream);
std::unique_ptr<detail::ImageReads> uploaded_reads(ConstVolumeView<float> image);
std::unique_ptr<detail::ImageReads> uploaded_reads(ConstVolumeView<std::int16_t> image);

}  // namespace ctd::cuda
