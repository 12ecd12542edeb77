#pragma once
// Where and how a filter runs.

#include <cstdint>
#include <functional>
#include <future>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include <ctdenoise/statistics.hpp>

// cudaStream_t, declared without CUDA headers (the CUDA runtime's typedef is the same).
struct CUstream_st;

namespace ctd {

using CudaStream = CUstream_st*;

enum class Device {
  Auto,  // CUDA when a device is present and the build has it, else the CPU
  Cpu,
  Cuda,
};

std::string_view to_string(Device device) noexcept;
Device device_from_string(std::string_view name);  // "auto" | "cpu" | "cuda"; throws InvalidArgument

// The device a filter asked for `requested` runs on. Throws ctd::Error(Unsupported) when CUDA is
// asked for and this build or machine has none, so callers can fail before reading any data.
Device available_device(Device requested);

// The CUDA kernels index voxels with 32-bit integers: larger volumes run on the CPU (Auto) or
// are refused (Cuda, Unsupported).
inline constexpr std::int64_t kMaxCudaVoxels = (std::int64_t(1) << 31) - 1;

// Creates the CUDA context of the current device now, where there is one (the first CUDA call
// otherwise pays for it: 0.1-0.5 s), and the pinned buffers that calls from host memory copy
// through (64 MiB; 8-14 ms). Never throws: a failure shows in the first real call. The CLI calls
// it on a thread of its own while the input is being read.
void initialize_cuda() noexcept;

// Filters called with host memory on CUDA keep their device memory (two volumes and the
// filter's workspace) and a stream for the next call on the same host thread, so that a loop
// allocates once. This frees that memory now (it is freed anyway when the thread ends).
void release_cuda_memory() noexcept;

// The GPU that CUDA work runs on ("NVIDIA H100 80GB HBM3"), or "" when there is none.
std::string cuda_device_name();

// For a program that has finished its CUDA work and is about to end (the CLI, once its output is
// in host memory): ends the process's CUDA context on a thread of its own, so that the driver's
// teardown (about 0.08 s on the H100 machine) runs beside the program's last work, its write,
// instead of in its exit. Every device allocation, stream and cached buffer of ctdenoise ends
// with it: no CUDA call may follow, and the program must end with std::_Exit once the future is
// ready (after flushing its output), which skips the destructors that would free them. The
// future holds the seconds the end took (0 where there is no CUDA device).
std::future<double> end_cuda_context_before_exit();

struct ExecContext {
  Device device = Device::Auto;
  int threads = 0;  // CPU worker threads; 0 = all hardware threads (one per 8192 voxels at most)
  // Called on the calling thread with the fraction done (0..1) as work progresses. It may throw
  // (e.g. ctd::Error of kind Cancelled) to stop the filter; the output is then unspecified.
  std::function<void(double fraction_done)> progress;
  // Called on the calling thread once a filter run on CUDA from host memory has its input on the
  // device: from then on the call does not read the input (the CLI starts its report's look at
  // the input then, so that it does not slow the upload).
  std::function<void()> on_uploaded;
  // Asks a filter run on CUDA from host memory for its output's statistics, measured on the GPU
  // after the download (a reduction: about 1 ms for 512 x 512 x 548 voxels on an H100, instead
  // of a pass over host memory): FilterRun::output_statistics. Ignored on the CPU.
  bool output_statistics = false;
};

// What a filter call actually did, for reports.
struct FilterRun {
  Device device = Device::Cpu;
  std::string algorithm;  // the variant that ran (never "auto")
  int threads = 1;  // CPU threads used (0 on CUDA)
  // Variant-specific facts, e.g. the compressive period and terms; on CUDA "upload_ms",
  // "kernel_ms" and "download_ms" (the stages of the call).
  std::map<std::string, double> details;
  // Where ExecContext::output_statistics asked for them and the filter ran on CUDA: the output's
  // statistics (those of ctd::statistics up to the rounding of the sums' order).
  std::optional<Statistics> output_statistics;
};

}  // namespace ctd
