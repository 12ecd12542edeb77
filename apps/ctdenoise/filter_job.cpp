#include "filter_job.hpp"

#include "preview.hpp"
#include "report.hpp"

#include <ctdenoise/metrics.hpp>

#include <fmt/format.h>

#include <atomic>
#include <filesystem>
#include <future>
#include <optional>

#ifdef __linux__
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace ctd::cli {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::atomic<bool> g_cuda_context_ended{false};

[[noreturn]] void invalid(const std::string& message) { throw Error(ErrorKind::InvalidArgument, message); }

// Work for the report beside the stages the user waits for, on a thread of the lowest CPU
// priority (on Linux a thread's own, passed on to the threads it starts), to take the cores
// that those leave idle.
template <class Work>
std::future<json> in_background(Work work) {
  return std::async(std::launch::async, [work = std::move(work)] {
#ifdef __linux__
    setpriority(PRIO_PROCESS, static_cast<id_t>(::syscall(SYS_gettid)), 19);  // failure: equal priority
#endif
    return work();
  });
}

std::optional<Window> parse_window(const std::string& text) {
  if (text.empty()) return std::nullopt;
  const auto comma = text.find(',');
  try {
    if (comma == std::string::npos) throw std::invalid_argument(text);
    const Window w{std::stod(text.substr(0, comma)), std::stod(text.substr(comma + 1))};
    if (!(w.width > 0)) throw std::invalid_argument(text);
    return w;
  } catch (const std::exception&) {
    invalid(fmt::format("--window must be CENTER,WIDTH with WIDTH > 0 (e.g. 40,400), got '{}'", text));
  }
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

bool same_file(const fs::path& a, const fs::path& b) {
  std::error_code ec;
  return fs::exists(b, ec) && fs::equivalent(a, b, ec);
}

}  // namespace

bool cuda_context_ended() { return g_cuda_context_ended; }

AutoInput auto_input(const io::Image& image, FilterJob& job) {
  ExecContext where;
  where.device = job.device_is_up && job.device_is_up() ? Device::Cuda : Device::Cpu;
  const auto start = std::chrono::steady_clock::now();
  AutoInput input = on_input(image, where, [&](auto voxels) { return AutoInput(voxels, where); });
  if (input.on_device()) job.stages.emplace_back("automatic parameters: upload", seconds_since(start));
  job.parameters["automatic_parameters_read_on"] = input.on_device() ? "cuda" : "cpu";
  return input;
}

namespace {

// The noise model of the image at `path` (--noise-from), checked against the input's geometry.
NoiseModel noise_model_from(const std::string& path, const io::Image& image) {
  io::Image noise;
  try {
    noise = io::read_image(path);
  } catch (const Error& e) {
    throw Error(e.kind(), fmt::format("--noise-from: {}", e.what()));
  }
  const Dims in = image.volume.dims(), from = noise.volume.dims();
  if (!in.is_2d() && from.is_2d()) {
    invalid(fmt::format("--noise-from: {} is one slice and the input a volume of {} slices; the noise's correlation "
                        "across slices needs a volume (slices of the same protocol)", path, in.nz));
  }
  // The model's correlation is in voxels: the same noise on another grid would read otherwise.
  const auto& a = image.volume.geometry.spacing;
  const auto& b = noise.volume.geometry.spacing;
  auto differ = [](double x, double y) { return std::fabs(x - y) > 0.02 * std::max(std::fabs(x), std::fabs(y)); };
  if (differ(a[0], b[0]) || differ(a[1], b[1]) || (!in.is_2d() && differ(a[2], b[2]))) {
    invalid(fmt::format("--noise-from: its voxels are {:.3g} x {:.3g} x {:.3g} mm and the input's {:.3g} x {:.3g} x {:.3g} mm; "
                        "the noise's correlation is measured in voxels, so give noise on the input's grid",
                        b[0], b[1], b[2], a[0], a[1], a[2]));
  }
  NoiseModel model;
  try {
    model = estimate_noise_model(noise.volume.view());
  } catch (const Error& e) {
    throw Error(e.kind(), fmt::format("--noise-from: {}: {}", path, e.what()));
  }
  if (!(model.sigma > 0)) invalid(fmt::format("--noise-from: {} shows no noise", path));
  return model;
}

}  // namespace

NoiseModel measure_noise(const AutoInput& input, const io::Image& image, const std::string& noise_from, FilterJob& job,
                         bool quiet, std::string_view asked_by) {
  if (!noise_from.empty()) {
    job.parameters["noise_model_from"] = noise_from;
    return timed_stage(job.stages, "noise model", job.command + ": measuring the noise of " + noise_from, quiet,
                       [&] { return noise_model_from(noise_from, image); });
  }
  job.parameters["noise_model_from"] = "input";
  try {
    return timed_stage(job.stages, "noise model", job.command + ": measuring the noise", quiet,
                       [&] { return input.noise_model(); });
  } catch (const Error& e) {
    // Too small, or all padding: say which option needed the noise, and what to do instead.
    if (e.kind() != ErrorKind::InvalidArgument) throw;
    throw Error(ErrorKind::InvalidArgument, fmt::format("{}: {}; give a value", asked_by, e.what()));
  }
}

void run_filter(const InputOptions& input, const RunOptions& run, FilterJob& job,
                const std::function<void(const io::Image&)>& before_filter) {
  const auto start = std::chrono::steady_clock::now();
  ExecContext context;
  context.device = device_from_string(run.device);
  context.threads = run.threads;
  context.output_statistics = !run.json.empty();  // the report's, from the GPU where it filters
  // The CUDA driver and context start (0.3-0.5 s) on a thread of their own while the input is
  // read and the noise measured. A device asked for and missing is reported before the first
  // filter run (the automatic strength's, or the filter's).
  std::future<void> device_ready;
  if (context.device != Device::Cpu && job.uses_device) {
    device_ready = std::async(std::launch::async, [device = context.device] {
      if (available_device(device) == Device::Cuda) initialize_cuda();
    });
  }
  const auto window = parse_window(run.window);
  io::WriteOptions write_options{run.overwrite, run.float_output, {}, run.compression_level, run.compress};
  if (run.compression_level < 1 || run.compression_level > 12) {
    invalid(fmt::format("--compression-level must be 1 (fastest) to 12 (smallest), got {}", run.compression_level));
  }

  io::ReadOptions read_options = input.read_options();
  // Plain int16 voxels are kept as stored too, for an upload of half the bytes (on_input), where
  // the filter will likely run on the GPU: asked for, or left to us with NVIDIA's driver present
  // (asking CUDA would wait for the driver to start, which runs meanwhile on its own thread).
  read_options.keep_int16 = job.uses_device && (context.device == Device::Cuda ||
                                                (context.device == Device::Auto && fs::exists("/dev/nvidiactl")));
  if (context.device == Device::Cuda) {
    // Known from the header: refused before a volume is read for minutes.
    read_options.max_voxels = kMaxCudaVoxels;
    read_options.max_voxels_reason = "the CUDA filters take volumes of under 2^31 voxels; use --device cpu";
  }
  const auto read_start = std::chrono::steady_clock::now();
  const io::Image image = [&] {
    const StageLine shown(fmt::format("{}: reading {}", job.command, input.path), progress_wanted(run.quiet));
    return io::read_image(input.path, read_options);
  }();
  const double read_s = seconds_since(read_start);
  job.wait_for_device = [&] {
    if (!device_ready.valid()) return;
    const auto wait_start = std::chrono::steady_clock::now();
    device_ready.get();
    if (available_device(context.device) == Device::Cuda) job.stages.emplace_back(kDeviceWait, seconds_since(wait_start));
  };
  job.device_is_up = [&] {
    return device_ready.valid() && device_ready.wait_for(std::chrono::seconds(0)) == std::future_status::ready &&
           available_device(context.device) == Device::Cuda;
  };
  // The outputs are judged as soon as the input's size and pixel type are known: before the
  // automatic parameters' work (seconds to a minute on a large volume) and the filter.
  if (same_file(input.path, run.output) && !run.overwrite) {
    throw Error(ErrorKind::Io, fmt::format("the output '{}' is the input; pass --overwrite to replace it", run.output));
  }
  io::check_output(run.output, image.info, image.volume.dims(), write_options);
  for (const std::string& side : {run.json, run.preview}) {
    if (side.empty()) continue;
    if (fs::path(side) == fs::path(run.output)) invalid(fmt::format("'{}' is given as two different outputs", side));
    io::check_side_output(side, run.overwrite);
  }
  if (!run.preview.empty() && !run.preview.ends_with(".png")) invalid("--preview must name a .png file");
  if (before_filter) before_filter(image);
  job.wait_for_device();
  write_options.description = job.description;  // complete now: it holds the automatic parameters

  Volume output(image.volume.dims(), image.volume.geometry);
  // The report's look at the input (statistics, noise estimates: passes over the whole volume)
  // runs on the idle cores while the GPU filters, from the end of the upload (beside it, it
  // tripled the upload's time). A filter run on the CPU leaves it to the report.
  std::future<json> input_description;
  if (!run.json.empty() && job.uses_device) {
    context.on_uploaded = [&] {
      if (input_description.valid()) return;
      input_description = in_background([&image, model = job.parameters.value("noise_model", json(nullptr))] {
        return describe_image(image.info, image.volume, model);
      });
    };
  }
  const auto filter_start = std::chrono::steady_clock::now();
  FilterRun result;
  {
    ProgressBar bar(job.command, progress_wanted(run.quiet));
    context.progress = [&](double f) { bar.update(f); };
    result = job.filter(image, output, context);
  }
  const double filter_s = seconds_since(filter_start);
  // The GPU's work is done (the output and its statistics are in host memory): its context ends
  // on a thread of its own while the file is written, not in the process's exit after the report
  // (the driver's teardown, bench/NOTES.md). main() then ends with std::_Exit.
  std::string gpu_name;
  std::future<double> gpu_end;
  if (result.device == Device::Cuda) {
    gpu_name = cuda_device_name();
    gpu_end = end_cuda_context_before_exit();
    g_cuda_context_ended = true;
  }
  if (job.command == "nlm" || job.command == "bilateral") {
    write_options.description += fmt::format(" variant={} device={}", result.algorithm, to_string(result.device));
  }

  // The output's statistics for the report: measured by the GPU where it filtered, else taken
  // while the file is written (a pass over memory beside one bound by the file system).
  std::future<json> output_statistics;
  if (!run.json.empty() && !result.output_statistics) {
    output_statistics = in_background([&output] { return to_json(statistics(output.view())); });
  }
  const auto write_start = std::chrono::steady_clock::now();
  const io::WriteResult written = [&] {
    const StageLine shown(fmt::format("{}: writing {}", job.command, run.output), progress_wanted(run.quiet));
    return io::write_image(output, image.info, run.output, write_options);
  }();
  io::StageTimes preview_stage;
  if (!run.preview.empty()) {
    timed_stage(preview_stage, "preview", fmt::format("{}: writing {}", job.command, run.preview), run.quiet, [&] {
      const Picture pic = make_preview(image.volume, output, window);
      io::write_gray8_png(pic.pixels, pic.width, pic.height, run.preview, run.overwrite);
    });
  }
  const double write_s = seconds_since(write_start);
  const double gpu_end_s = gpu_end.valid() ? gpu_end.get() : 0.0;

  if (written.clamped_voxels > 0) {
    fmt::print(stderr, "note: {} voxel(s) fell outside the {} range of the output and were clamped\n",
               written.clamped_voxels, io::to_string(written.pixel_type));
  }
  if (!run.json.empty()) {
    // The input's and output's statistics and noise estimates: whole-volume passes of their own
    // (the input's already done during a GPU filter; then "report" is the wait for it, if any).
    const auto report_start = std::chrono::steady_clock::now();
    const StageLine shown(fmt::format("{}: measuring for the report", job.command), progress_wanted(run.quiet));
    const json input_json = input_description.valid()
                           ? input_description.get()
                           : describe_image(image.info, image.volume, job.parameters.value("noise_model", json(nullptr)));
    const json output_json = result.output_statistics ? to_json(*result.output_statistics) : output_statistics.get();
    const double report_s = seconds_since(report_start);
    // Every stage in the order it ran; they add up to the total but for small gaps between them.
    json stages = json::array();
    auto add = [&](const std::string& name, double seconds) { stages.push_back({{"stage", name}, {"seconds", seconds}}); };
    for (const auto& [name, seconds] : image.info.stages) add("read: " + name, seconds);
    for (const auto& [name, seconds] : job.stages) add(name, seconds);
    // A volume filtered in slabs ("overlapped") is filtered while it goes up and comes down: the
    // kernels' time is in the details, beside the upload and download stages.
    const bool overlapped = result.details.count("overlapped") > 0;
    double filter_parts = 0;
    for (const std::string part : {"upload", "kernel", "download"}) {
      if (overlapped && part == "kernel") continue;
      if (const auto it = result.details.find(part + "_ms"); it != result.details.end()) {
        add("filter: " + part + (overlapped ? ", filtering beside it" : ""), it->second / 1000);
        filter_parts += it->second / 1000;
      }
    }
    add(filter_parts > 0 ? "filter: host" : "filter", filter_s - filter_parts);
    for (const auto& [name, seconds] : written.stages) add("write: " + name, seconds);
    for (const auto& [name, seconds] : preview_stage) add(name, seconds);
    add("report", report_s);
    json report = {
        {"ctdenoise", CTD_VERSION},
        {"command", job.command},
        {"parameters", job.parameters},
        {"device", std::string(to_string(result.device))},
        {"algorithm", result.algorithm},
        {"threads", result.threads},
        {"input", input_json},
        {"output",
         {{"path", run.output},
          {"format", std::string(io::to_string(io::output_format(run.output)))},
          {"pixel_type", std::string(io::to_string(written.pixel_type))},
          {"clamped_voxels", written.clamped_voxels},
          {"statistics", output_json}}},
        {"timings_s",
         {{"read", read_s}, {"filter", filter_s}, {"write", write_s}, {"report", report_s}, {"total", seconds_since(start)}}},
        {"stages_s", stages},
    };
    double auto_s = 0;
    bool any_auto = false;
    for (const auto& [name, seconds] : job.stages) {
      if (name == kDeviceWait) continue;
      auto_s += seconds;
      any_auto = true;
    }
    if (any_auto) report["timings_s"]["auto"] = auto_s;
    // Beside the write, so not one of the stages that add up to the total.
    if (result.device == Device::Cuda) report["timings_s"]["gpu_context_end_beside_write"] = gpu_end_s;
    if (result.device == Device::Cuda) report["gpu"] = gpu_name;
    if (!result.details.empty()) report["details"] = result.details;
    if (!run.preview.empty()) report["preview"] = run.preview;
    io::write_text_file(report.dump(2) + "\n", run.json, run.overwrite);
  }
  const Dims d = output.dims();
  const std::string where = result.device == Device::Cuda ? gpu_name
                            : result.threads > 0 ? fmt::format("{} thread{}", result.threads, result.threads == 1 ? "" : "s")
                                                 : std::string("cpu");
  fmt::print("{}: wrote {} ({}x{}x{} {}) in {:.2f} s ({} {:.2f} s: {}, {})\n", job.command, run.output, d.nx, d.ny, d.nz,
             io::to_string(written.pixel_type), seconds_since(start), job.command, filter_s, result.algorithm, where);
  if (!run.preview.empty()) fmt::print("{}: preview {}\n", job.command, run.preview);
  if (!run.json.empty()) fmt::print("{}: report {}\n", job.command, run.json);
}

}  // namespace ctd::cli
