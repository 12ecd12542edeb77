#pragma once
// One filter run from file to file (nlm, bilateral, simulate, convert): read, the filter, write,
// the JSON report, each stage timed.

#include "commands.hpp"
#include "progress.hpp"

#include <ctdenoise/auto_params.hpp>
#include <ctdenoise/noise.hpp>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace ctd::cli {

// One filter run from file to file: everything that can fail cheaply is checked before the
// filter runs, and nothing is written unless the filter succeeded.
struct FilterJob {
  std::string command;  // "nlm" | "bilateral"
  nlohmann::json parameters;
  std::string description;  // for DICOM DerivationDescription
  std::function<FilterRun(const io::Image& in, Volume& out, const ExecContext&)> filter;
  io::StageTimes stages;  // before the filter: "noise model", "automatic h" (seconds)
  std::function<void()> wait_for_device;  // until the device is ready (or known missing: throws)
  std::function<bool()> device_is_up;     // the GPU has started (without waiting for it)
  bool uses_device = true;                 // false: CPU work only (convert), no GPU started
};

// Runs `filter` (anything taking a float or an int16 view) on the input as it is best uploaded: its stored int16 voxels when the reader kept
// them and the filter runs on the GPU (half the bytes of float32, the same output), else the float
// volume.
template <class Filter>
auto on_input(const io::Image& in, const ExecContext& context, Filter&& filter) {
  if (!in.int16_voxels.empty() && available_device(context.device) == Device::Cuda) {
    return filter(ConstVolumeView<std::int16_t>{in.int16_voxels.data(), in.volume.dims()});
  }
  return filter(in.volume.view());
}

// The input as the automatic parameters read it (the noise model, the risk's sample): on the GPU
// where it is already up (uploaded once, int16 as stored; only the reads' results come back),
// else on the CPU's cores while it starts. The same values either way.
AutoInput auto_input(const io::Image& image, FilterJob& job);
// Its noise model, timed as the stage "noise model"; where it cannot be measured, an error that
// names the option that needed it (asked_by, e.g. "--h auto"). With `noise_from` (--noise-from),
// the model of that image instead: noise alone, or a uniform phantom scanned as the input was,
// of the input's voxel size (and 3D for a 3D input: a slice does not show the correlation across
// slices). The report records where the model came from.
NoiseModel measure_noise(const AutoInput& input, const io::Image& image, const std::string& noise_from, FilterJob& job,
                         bool quiet, std::string_view asked_by);

// Whether this process's CUDA context was ended (run_filter ends it beside the write once the
// GPU's work is done): the program must then end with std::_Exit, not through destructors that
// would free device memory of a context that is gone.
bool cuda_context_ended();

// The stage of waiting for the GPU's driver and context, started at the beginning of the command.
constexpr const char* kDeviceWait = "waiting for the GPU to start";

// A stage's line on stderr while it runs, and its time in `stages`.
template <class F>
decltype(auto) timed_stage(io::StageTimes& stages, const std::string& name, const std::string& line, bool quiet, F&& f) {
  const auto start = std::chrono::steady_clock::now();
  struct Record {
    io::StageTimes& stages;
    const std::string& name;
    std::chrono::steady_clock::time_point start;
    ~Record() { stages.emplace_back(name, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()); }
  } record{stages, name, start};
  const StageLine shown(line, progress_wanted(quiet));
  return f();
}

// Reads the input, calls `before_filter` (the automatic parameters), checks the outputs, runs
// job.filter and writes the output, the preview and the report.
void run_filter(const InputOptions& input, const RunOptions& run, FilterJob& job,
                const std::function<void(const io::Image&)>& before_filter = {});

}  // namespace ctd::cli
