#include "commands.hpp"

#include "filter_job.hpp"
#include "progress.hpp"
#include "report.hpp"

#include <ctdenoise/auto_params.hpp>
#include <ctdenoise/metrics.hpp>
#include <ctdenoise/noise.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <optional>

namespace ctd::cli {
namespace fs = std::filesystem;
using nlohmann::json;

int exit_code(ErrorKind kind) noexcept {
  switch (kind) {
    case ErrorKind::InvalidArgument: return kUsageError;
    case ErrorKind::Io: return kIoError;
    case ErrorKind::Unsupported: return kUnsupported;
    case ErrorKind::Cuda: return kCudaError;
    case ErrorKind::OutOfMemory: return kOutOfMemory;
    case ErrorKind::Cancelled: return kInterrupted;
  }
  return kInternalError;
}

namespace {

[[noreturn]] void invalid(const std::string& message) { throw Error(ErrorKind::InvalidArgument, message); }

// "a,b,..." as numbers (whole numbers for integral T); InvalidArgument naming `what` otherwise.
template <class T>
std::vector<T> parse_numbers(const std::string& text, const char* what) {
  std::vector<T> values;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, end - start);
    try {
      std::size_t used = 0;
      const double v = std::stod(item, &used);
      if (used != item.size() || (std::is_integral_v<T> && v != std::floor(v))) throw std::invalid_argument(item);
      values.push_back(static_cast<T>(v));
    } catch (const std::exception&) {
      invalid(fmt::format("{} must be {}numbers separated by commas, got '{}'", what,
                          std::is_integral_v<T> ? "whole " : "", text));
    }
    start = end + 1;
  }
  return values;
}

// "a,b,c" (or one value for all three when allow_one) as numbers.
template <class T>
std::array<T, 3> parse_triple(const std::string& text, const char* what, bool allow_one) {
  const std::vector<T> values = parse_numbers<T>(text, what);
  if (values.size() == 1 && allow_one) return {values[0], values[0], values[0]};
  if (values.size() != 3) invalid(fmt::format("{} needs {}3 values, got '{}'", what, allow_one ? "1 or " : "", text));
  return {values[0], values[1], values[2]};
}

// "auto" (nullopt) or a number.
std::optional<float> number_or_auto(const std::string& text, const char* option) {
  if (text == "auto") return std::nullopt;
  try {
    std::size_t used = 0;
    const float v = std::stof(text, &used);
    if (used != text.size()) throw std::invalid_argument(text);
    return v;
  } catch (const std::exception&) {
    invalid(fmt::format("{} must be a number or 'auto', got '{}'", option, text));
  }
}

template <class E>
E parse_choice(const std::string& name, std::initializer_list<std::pair<const char*, E>> choices, const char* what) {
  std::string names;
  for (const auto& [n, e] : choices) {
    if (name == n) return e;
    names += fmt::format("{}{}", names.empty() ? "" : ", ", n);
  }
  invalid(fmt::format("unknown {} '{}' (expected {})", what, name, names));
}

}  // namespace

io::ReadOptions InputOptions::read_options() const {
  io::ReadOptions options;
  options.series_uid = series;
  if (raw_dims.empty()) {
    if (!raw_type.empty() || !raw_spacing.empty()) invalid("raw input needs --raw-dims NX,NY,NZ");
    return options;
  }
  if (raw_type.empty()) invalid("raw input needs --raw-type (uint8, int16, uint16, float32, ...)");
  io::RawLayout layout;
  const auto dims = parse_triple<std::int64_t>(raw_dims, "--raw-dims", false);
  layout.dims = {dims[0], dims[1], dims[2]};
  layout.type = io::pixel_type_from_string(raw_type);
  layout.byte_order = parse_choice<io::ByteOrder>(raw_byte_order, {{"little", io::ByteOrder::Little}, {"big", io::ByteOrder::Big}},
                                                  "byte order");
  if (!raw_spacing.empty()) layout.spacing = parse_triple<double>(raw_spacing, "--raw-spacing", true);
  layout.header_bytes = raw_header;
  options.raw = layout;
  return options;
}

NlmParams NlmOptions::resolve() const {
  NlmParams p = params;
  // "auto" values are filled in from the image later; a placeholder keeps validation meaningful.
  p.h = number_or_auto(h, "--h").value_or(1.0f);
  p.noise_sigma = number_or_auto(noise_sigma, "--noise-sigma").value_or(0.0f);
  p.patch_kernel = parse_choice<PatchKernel>(patch_kernel, {{"uniform", PatchKernel::Uniform}, {"gaussian", PatchKernel::Gaussian}},
                                             "patch kernel");
  p.distance = parse_choice<PatchDistance>(distance, {{"l2", PatchDistance::L2}, {"l1", PatchDistance::L1}}, "distance");
  p.centre_weight = parse_choice<CentreWeight>(centre_weight, {{"formula", CentreWeight::Formula}, {"max", CentreWeight::Max}},
                                               "centre weight");
  p.algorithm = nlm_algorithm_from_string(algorithm);
  validate(p);
  return p;
}

BilateralParams BilateralOptions::resolve() const {
  BilateralParams p;
  if ((sigma_spatial > 0) == (sigma_spatial_mm > 0)) {
    invalid("give exactly one of --sigma-spatial (voxels) and --sigma-spatial-mm (mm), with a value > 0");
  }
  p.sigma_spatial = sigma_spatial > 0 ? sigma_spatial : sigma_spatial_mm;
  p.spatial_unit = sigma_spatial > 0 ? SpatialUnit::Voxel : SpatialUnit::Millimetre;
  p.sigma_range = number_or_auto(sigma_range, "--sigma-range").value_or(1.0f);
  if (!radius.empty()) p.radius = parse_triple<int>(radius, "--radius", true);
  p.algorithm = bilateral_algorithm_from_string(algorithm);
  p.accuracy_db = accuracy_db;
  p.terms = terms;
  p.gaussian = parse_choice<BilateralParams::Gaussian>(
      gaussian, {{"direct", BilateralParams::Gaussian::Direct}, {"recursive", BilateralParams::Gaussian::Recursive}},
      "Gaussian method");
  validate(p);
  return p;
}

namespace {

// What an automatic choice did, for the JSON report.
json auto_json(const AutoChoice& c) {
  json curve = json::array();
  for (const RiskPoint& p : c.curve) curve.push_back({{"value", p.value}, {"estimated_mse", p.mse}});
  return {{"method", "Monte Carlo SURE with the image's noise covariance"},
          {"optimum", c.optimum},
          {"strength", c.strength},
          {"value", c.value},
          {"noisy_mse", c.noisy_mse},
          {"noise_share", c.noise_share},
          {"noise_over_image", c.noise_over_image},
          {"scan_fit", std::isnan(c.scan_fit) ? json(nullptr) : json(c.scan_fit)},
          {"scan_fit_beyond_intensity", std::isnan(c.scan_fit_beyond_intensity) ? json(nullptr) : json(c.scan_fit_beyond_intensity)},
          {"scan_texture_distance", std::isnan(c.scan_texture_distance) ? json(nullptr) : json(c.scan_texture_distance)},
          {"scan_source", std::isnan(c.scan_source) ? json(nullptr) : json(c.scan_source)},
          {"risk_curve", curve},
          {"sample_dims", {c.sample.nx, c.sample.ny, c.sample.nz}},
          {"seconds", c.seconds},
          {"sample_seconds", c.sample_seconds},
          {"filter_seconds", c.filter_seconds},
          {"filter_runs", 2 * c.curve.size()}};
}

void check_strength(double strength, bool any_auto, const char* what) {
  if (!(std::isfinite(strength) && strength > 0)) invalid(fmt::format("--strength must be a number > 0, got {}", strength));
  if (strength != 1 && !any_auto) invalid(fmt::format("--strength scales the automatic {0}; use {0} auto with it", what));
}

void check_noise_from(const std::string& noise_from, bool any_auto, const char* what) {
  if (!noise_from.empty() && !any_auto) {
    invalid(fmt::format("--noise-from gives the noise for the automatic values; use {} auto with it", what));
  }
}

// Runs an automatic choice behind its own progress bar ("nlm: choosing h").
template <class F>
AutoChoice choose_with_progress(const std::string& label, const RunOptions& run, const ExecContext& base, F&& choose) {
  ProgressBar bar(label, progress_wanted(run.quiet));
  ExecContext context = base;
  context.progress = [&](double f) { bar.update(f); };
  return choose(context);
}

// The model's note on smooth noise it could not confirm, after the filters' noise line.
void print_unconfirmed_note(const char* command, const json& model) {
  if (model.contains("unconfirmed_smooth_noise")) fmt::print("{}: note: {}\n", command, unconfirmed_smooth_noise_note(model));
}

// Where the noise model was measured, for the line the filters print.
std::string noise_source(const std::string& noise_from) { return noise_from.empty() ? "" : ", from " + noise_from; }

ExecContext run_context(const RunOptions& run) {
  ExecContext context;
  context.device = device_from_string(run.device);
  context.threads = run.threads;
  return context;
}

}  // namespace

void run_nlm(const InputOptions& input, const RunOptions& run, const NlmOptions& options) {
  NlmParams p = options.resolve();
  const bool auto_h = options.h == "auto", auto_sigma = options.noise_sigma == "auto";
  check_strength(options.strength, auto_h, "--h");
  check_noise_from(options.noise_from, auto_h || auto_sigma, "--h or --noise-sigma");
  FilterJob job;
  job.command = "nlm";
  job.filter = [&](const io::Image& in, Volume& out, const ExecContext& context) {
    return on_input(in, context, [&](auto voxels) { return nlm(voxels, out.view(), p, context); });
  };
  run_filter(input, run, job, [&](const io::Image& image) {
    if (auto_h || auto_sigma) {
      const AutoInput reads = auto_input(image, job);
      const NoiseModel noise =
          measure_noise(reads, image, options.noise_from, job, run.quiet, auto_h ? "--h auto" : "--noise-sigma auto");
      job.parameters["noise_model"] = noise_model_json(noise);
      if (auto_sigma) p.noise_sigma = float(auto_nlm_noise_sigma(noise, p, image.volume.dims()));
      if (auto_h) {
        // Not waiting for the GPU here: the automatic value's sample and probe are made on the
        // CPU while it may still be starting, and its first filter call waits for it (that wait
        // is then part of this stage).
        const AutoChoice choice = choose_with_progress("nlm: choosing h", run, run_context(run), [&](const ExecContext& c) {
          return reads.nlm_h(p, noise, c, options.strength);
        });
        p.h = float(choice.value);
        job.parameters["h_auto"] = auto_json(choice);
        job.stages.emplace_back("automatic h", choice.seconds);
      }
      if (!run.quiet) {
        fmt::print("nlm: noise sigma {:.4g} (lag-1 correlation {:.2f}{}), {}h = {:.4g}{}\n", noise.sigma,
                   noise.correlation(1, 0, 0), noise_source(options.noise_from), auto_sigma ? fmt::format("noise_sigma = {:.4g}, ", p.noise_sigma) : "",
                   p.h, auto_h ? fmt::format(" (least estimated risk{})", options.strength != 1 ? fmt::format(" x strength {}", options.strength) : "") : "");
        print_unconfirmed_note("nlm", job.parameters["noise_model"]);
      }
    }
    job.parameters.update({{"search_radius", p.search_radius}, {"patch_radius", p.patch_radius}, {"h", p.h},
                           {"strength", options.strength}, {"noise_sigma", p.noise_sigma},
                           {"noise_sigma_auto", auto_sigma}, {"patch_kernel", options.patch_kernel},
                           {"distance", options.distance}, {"centre_weight", options.centre_weight},
                           {"algorithm", options.algorithm}});
    if (!auto_h) job.parameters["h_auto"] = false;
    if (p.patch_kernel == PatchKernel::Gaussian) job.parameters["patch_sigma"] = p.patch_sigma;
    job.description = fmt::format("ctdenoise {} nlm search_radius={} patch_radius={} h={:.4g}{} noise_sigma={:.4g} distance={}",
                                  CTD_VERSION, p.search_radius, p.patch_radius, p.h,
                                  auto_h ? fmt::format(" (auto, strength {})", options.strength) : "", p.noise_sigma,
                                  options.distance);
  });
}

void run_bilateral(const InputOptions& input, const RunOptions& run, const BilateralOptions& options) {
  BilateralParams p = options.resolve();
  const bool auto_range = options.sigma_range == "auto";
  check_strength(options.strength, auto_range, "--sigma-range");
  check_noise_from(options.noise_from, auto_range, "--sigma-range");
  FilterJob job;
  job.command = "bilateral";
  job.filter = [&](const io::Image& in, Volume& out, const ExecContext& context) {
    return on_input(in, context, [&](auto voxels) { return bilateral(voxels, out.view(), p, context); });
  };
  // The window depends on the image's spacing (sigma in mm) and dimensionality.
  run_filter(input, run, job, [&](const io::Image& image) {
    p.spacing = image.volume.geometry.spacing;
    if (auto_range) {
      const AutoInput reads = auto_input(image, job);
      const NoiseModel noise = measure_noise(reads, image, options.noise_from, job, run.quiet, "--sigma-range auto");
      job.parameters["noise_model"] = noise_model_json(noise);
      // The GPU is waited for by the first filter call, as for nlm's h.
      const AutoChoice choice =
          choose_with_progress("bilateral: choosing sigma_range", run, run_context(run), [&](const ExecContext& c) {
            return reads.bilateral_sigma_range(p, noise, c, options.strength);
          });
      p.sigma_range = float(choice.value);
      job.parameters["sigma_range_auto"] = auto_json(choice);
      job.stages.emplace_back("automatic sigma_range", choice.seconds);
      if (!run.quiet) {
        fmt::print("bilateral: noise sigma {:.4g} (lag-1 correlation {:.2f}{}), sigma_range = {:.4g} (least estimated risk{})\n",
                   noise.sigma, noise.correlation(1, 0, 0), noise_source(options.noise_from), p.sigma_range,
                   options.strength != 1 ? fmt::format(" x strength {}", options.strength) : "");
        print_unconfirmed_note("bilateral", job.parameters["noise_model"]);
      }
    } else {
      job.parameters["sigma_range_auto"] = false;
    }
    const auto r = bilateral_radius(p, image.volume.dims());
    job.parameters.update({{"sigma_spatial", p.sigma_spatial},
                           {"sigma_spatial_unit", p.spatial_unit == SpatialUnit::Voxel ? "voxel" : "mm"},
                           {"sigma_range", p.sigma_range},
                           {"strength", options.strength},
                           {"radius", r},
                           {"algorithm", options.algorithm}});
    if (p.algorithm == BilateralAlgorithm::Compressive) {
      job.parameters["accuracy_db"] = p.accuracy_db;
      job.parameters["terms"] = p.terms;
      job.parameters["gaussian"] = options.gaussian;
    }
    job.description = fmt::format("ctdenoise {} bilateral sigma_spatial={}{} sigma_range={:.4g}{} radius={},{},{}", CTD_VERSION,
                                  p.sigma_spatial, p.spatial_unit == SpatialUnit::Voxel ? "vox" : "mm", p.sigma_range,
                                  auto_range ? fmt::format(" (auto, strength {})", options.strength) : "", r[0], r[1], r[2]);
  });
}

void run_simulate(const InputOptions& input, const RunOptions& run, const SimulateOptions& options) {
  LowDoseParams p = options.params;
  p.window = fbp_window_from_string(options.window);
  FilterJob job;
  job.command = "simulate";
  if (options.gaussian_noise > 0) {
    job.parameters = {{"model", "image-domain gaussian"}, {"sigma", options.gaussian_noise}, {"seed", p.seed}};
    job.description = fmt::format("ctdenoise {} simulate gaussian sigma={} seed={}", CTD_VERSION, options.gaussian_noise, p.seed);
    job.filter = [&](const io::Image& in, Volume& out, const ExecContext&) {
      out = add_gaussian_noise(in.volume, options.gaussian_noise, p.seed);
      return FilterRun{Device::Cpu, "gaussian-noise", 1, {}, {}};
    };
  } else {
    job.parameters = {{"model", "parallel-beam projection, Poisson + electronic noise, FBP"},
                      {"angles", p.angles},
                      {"photons", p.photons},
                      {"electronic_sigma", p.electronic_sigma},
                      {"window", options.window},
                      {"mu_water_per_mm", p.mu_water},
                      {"seed", p.seed}};
    job.description = fmt::format("ctdenoise {} simulate angles={} photons={} electronic_sigma={} window={} seed={}",
                                  CTD_VERSION, p.angles, p.photons, p.electronic_sigma, options.window, p.seed);
    job.filter = [&](const io::Image& in, Volume& out, const ExecContext&) {
      out = simulate_low_dose(in.volume, p);
      return FilterRun{Device::Cpu, "projection-fbp", 0, {}, {}};  // threads: all hardware threads
    };
  }
  run_filter(input, run, job);
}

void run_convert(const InputOptions& input, const RunOptions& run) {
  FilterJob job;
  job.command = "convert";
  job.parameters = json::object();
  job.description = fmt::format("ctdenoise {} convert", CTD_VERSION);
  job.uses_device = false;
  job.filter = [](const io::Image& in, Volume& out, const ExecContext&) {
    out = in.volume;
    return FilterRun{Device::Cpu, "copy", 1, {}, {}};
  };
  run_filter(input, run, job);
}

void run_info(const InputOptions& input, const std::string& json_path, bool overwrite) {
  if (!json_path.empty()) io::check_side_output(json_path, overwrite);
  const io::Image image = io::read_image(input.path, input.read_options());
  const json description = describe_image(image.info, image.volume);  // one pass for the text and the JSON
  fmt::print("{}", format_image(image.info, image.volume, description));
  if (!json_path.empty()) io::write_text_file(description.dump(2) + "\n", json_path, overwrite);
}

void run_demo(const std::string& output_dir, RunOptions run) {
  // The shipped sample: TotalSegmentator's example abdominal CT (data/NOTICE.md), 3 mm voxels, HU.
  InputOptions input;
  input.path = CTD_DEMO_INPUT;
  std::error_code ec;
  fs::create_directories(output_dir, ec);
  if (ec) throw Error(ErrorKind::Io, fmt::format("cannot create '{}': {}", output_dir, ec.message()));
  run.output = (fs::path(output_dir) / "denoised.nii.gz").string();
  run.preview = (fs::path(output_dir) / "preview.png").string();
  run.json = (fs::path(output_dir) / "report.json").string();
  if (run.window.empty()) run.window = "40,400";  // soft-tissue CT window
  NlmOptions nlm;
  nlm.params.search_radius = 3;
  nlm.params.patch_radius = 1;
  nlm.h = "auto";  // least estimated error for the volume's own noise
  fmt::print("demo: non-local means on {} (search radius {}, patch radius {}, h automatic)\n",
             input.path, nlm.params.search_radius, nlm.params.patch_radius);
  run_nlm(input, run, nlm);
}

namespace {

Region parse_region(const std::string& text, const char* what) {
  const std::vector<std::int64_t> v = parse_numbers<std::int64_t>(text, what);
  if (v.size() != 6) invalid(fmt::format("{} must be X0,Y0,Z0,X1,Y1,Z1 (voxels, end exclusive), got '{}'", what, text));
  return Region{{v[0], v[1], v[2]}, {v[3], v[4], v[5]}};
}

json region_json(const Region& r) {
  return {{"begin", r.begin}, {"end", r.end}};
}

}  // namespace

void run_compare(const CompareOptions& o) {
  if (!o.json.empty()) io::check_side_output(o.json, o.overwrite);
  if (o.roi_a.empty() != o.roi_b.empty()) invalid("CNR needs both --roi-a and --roi-b");
  const io::Image ref = io::read_image(o.reference), test = io::read_image(o.test);
  const Volume& a = ref.volume;
  const Volume& b = test.volume;
  if (!(a.dims() == b.dims())) {
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("the images differ in size: {}x{}x{} and {}x{}x{}", a.dims().nx, a.dims().ny, a.dims().nz,
                            b.dims().nx, b.dims().ny, b.dims().nz));
  }
  const Statistics s = statistics(a.view());
  for (const auto& [what, stats] : {std::pair{"reference", s}, std::pair{"test", statistics(b.view())}}) {
    if (stats.non_finite > 0) invalid(fmt::format("the {} has {} NaN or infinite voxel(s): its metrics would be NaN", what, stats.non_finite));
  }
  const double range = o.data_range > 0 ? o.data_range : s.max - s.min;
  if (!(range > 0)) invalid("the reference is constant: give --data-range");
  const double padding = padding_value(a.view());
  const Region flat = o.flat_region.empty()
                          ? find_flat_region(a.view(), {16, 16, std::min<std::int64_t>(4, a.dims().nz)}, padding)
                          : parse_region(o.flat_region, "--flat-region");
  json report = {
      {"reference", o.reference},
      {"test", o.test},
      {"dims", {a.dims().nx, a.dims().ny, a.dims().nz}},
      {"data_range", range},
      {"psnr_db", psnr(a.view(), b.view(), range)},
      {"ssim", ssim(a.view(), b.view(), range)},
      {"rmse", rmse(a.view(), b.view())},
      {"flat_region", region_json(flat)},
      {"noise_sigma_in_flat_region", {{"reference", region_stats(a.view(), flat).std}, {"test", region_stats(b.view(), flat).std}}},
  };
  fmt::print("PSNR:  {:.3f} dB (data range {:.6g}{})\n", report["psnr_db"].get<double>(), range,
             o.data_range > 0 ? "" : ", the reference's max - min");
  fmt::print("SSIM:  {:.5f} ({}, Gaussian window sigma 1.5)\n", report["ssim"].get<double>(), a.dims().is_2d() ? "2D" : "3D");
  fmt::print("RMSE:  {:.6g}\n", report["rmse"].get<double>());
  fmt::print("noise: sigma {:.4g} (reference), {:.4g} (test) in [{},{})x[{},{})x[{},{}){}\n",
             report["noise_sigma_in_flat_region"]["reference"].get<double>(),
             report["noise_sigma_in_flat_region"]["test"].get<double>(), flat.begin[0], flat.end[0], flat.begin[1],
             flat.end[1], flat.begin[2], flat.end[2], o.flat_region.empty() ? " (flattest box of the reference)" : "");
  if (!o.roi_a.empty()) {
    const Region ra = parse_region(o.roi_a, "--roi-a"), rb = parse_region(o.roi_b, "--roi-b");
    report["cnr"] = {{"reference", cnr(a.view(), ra, rb)}, {"test", cnr(b.view(), ra, rb)},
                     {"roi_a", region_json(ra)}, {"roi_b", region_json(rb)}};
    fmt::print("CNR:   {:.4g} (reference), {:.4g} (test)\n", report["cnr"]["reference"].get<double>(),
               report["cnr"]["test"].get<double>());
  }
  if (!o.json.empty()) io::write_text_file(report.dump(2) + "\n", o.json, o.overwrite);
}

}  // namespace ctd::cli
