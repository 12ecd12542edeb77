// ctdenoise: edge-preserving denoising of CT images and volumes from the command line.

#include "commands.hpp"
#include "filter_job.hpp"
#include "progress.hpp"
#include "slicer.hpp"

#include <ctdenoise/io.hpp>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <system_error>
#include <vector>

namespace {

using namespace ctd::cli;

void add_input_options(CLI::App& cmd, InputOptions& in) {
  cmd.add_option("--series", in.series, "DICOM folder with several series: the series to read (ID or prefix)");
  cmd.add_option("--raw-dims", in.raw_dims, "Read INPUT as headerless raw of NX,NY,NZ voxels (x fastest)");
  cmd.add_option("--raw-type", in.raw_type, "Raw voxel type: uint8 int8 uint16 int16 uint32 int32 float32 float64");
  cmd.add_option("--raw-byte-order", in.raw_byte_order, "Raw byte order: little or big")->capture_default_str();
  cmd.add_option("--raw-spacing", in.raw_spacing, "Raw voxel spacing in mm: S or SX,SY,SZ (default 1)");
  cmd.add_option("--raw-header", in.raw_header, "Raw: bytes to skip at the start of the file")->capture_default_str();
}

void add_run_options(CLI::App& cmd, RunOptions& run) {
  cmd.add_option("--device", run.device, "Where to run: auto, cpu or cuda")->capture_default_str();
  cmd.add_option("--threads", run.threads, "CPU threads (0 = all)")->capture_default_str();
  cmd.add_option("--json", run.json, "Write a JSON report (parameters, timings, statistics) to this file");
  cmd.add_option("--preview", run.preview, "Write input | output | difference as a PNG (middle slices)");
  cmd.add_option("--window", run.window, "Preview window CENTER,WIDTH in image units, e.g. 40,400 (default: "
                                         "0.5-99.5 percentiles)");
  cmd.add_flag("--overwrite", run.overwrite, "Replace existing output files");
  cmd.add_flag("--float", run.float_output, "Write float32 voxels instead of the input's pixel type");
  cmd.add_option("--compression-level", run.compression_level,
                 ".nii.gz and --compress output: level, 1 (fastest) to 12 (smallest; .mha: at most zlib's 9), "
                 "compressed on all cores")
      ->capture_default_str();
  cmd.add_flag("--compress", run.compress, ".nrrd and .mha output: compressed data (gzip or zlib), on all cores");
  cmd.add_flag("-q,--quiet", run.quiet, "No progress bar");
}

void add_noise_from(CLI::App& cmd, std::string& path) {
  cmd.add_option("--noise-from", path,
                 "Measure the noise for the automatic values on this image instead of INPUT: noise alone (e.g. two "
                 "scans at the same dose, subtracted, / sqrt 2) or a uniform phantom scanned alike; same voxel size, "
                 "and a volume for a volume");
}

void add_file_job(CLI::App& cmd, InputOptions& input, RunOptions& run) {
  cmd.add_option("INPUT", input.path, "Image file, DICOM file or DICOM series folder")->required();
  cmd.add_option("OUTPUT", run.output, "Output file (format from the extension) or folder (DICOM series)")->required();
  add_input_options(cmd, input);
  add_run_options(cmd, run);
}

// Runs the command; errors become one line on stderr and the exit code of their kind.
template <class Command>
int run_command(Command&& command) {
  try {
    command();
    return kOk;
  } catch (const ctd::Error& e) {
    fmt::print(stderr, "ctdenoise: {}: {}\n", ctd::to_string(e.kind()), e.what());
    return exit_code(e.kind());
  } catch (const std::bad_alloc&) {
    fmt::print(stderr, "ctdenoise: out of memory\n");
    return kOutOfMemory;
  } catch (const std::system_error& e) {
    // A thread that cannot start (no memory for its stack) is out of memory too.
    if (e.code() == std::errc::resource_unavailable_try_again || e.code() == std::errc::not_enough_memory) {
      fmt::print(stderr, "ctdenoise: out of memory: {}\n", e.what());
      return kOutOfMemory;
    }
    fmt::print(stderr, "ctdenoise: internal error: {}\n", e.what());
    return kInternalError;
  } catch (const std::exception& e) {
    fmt::print(stderr, "ctdenoise: internal error: {}\n", e.what());
    return kInternalError;
  }
}

// Where the GPU's context was ended beside the write, the destructors must not run (they would
// free device memory through CUDA again): the output is flushed and the process ends here.
int finish(int code) {
  if (ctd::cli::cuda_context_ended()) {
    std::fflush(nullptr);
    std::_Exit(code);
  }
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ctdenoise " CTD_VERSION ": edge-preserving denoising of CT images and volumes "
               "(non-local means, bilateral filter)"};
  app.name("ctdenoise");
  app.set_version_flag("--version", CTD_VERSION);
  app.require_subcommand(1);
  bool verbose = false;
  app.add_flag("-v,--verbose", verbose, "Also show the image libraries' own messages (ITK, GDCM, nifticlib, libtiff)");
  app.fallthrough();  // --verbose after the subcommand too
  // Parse errors on one line, like every other error.
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    return fmt::format("ctdenoise: invalid argument: {} (see --help)\n", e.what());
  });

  InputOptions input;
  RunOptions run;

  NlmOptions nlm;
  auto* nlm_cmd = app.add_subcommand("nlm", "Non-local means: denoise INPUT into OUTPUT");
  nlm_cmd->add_option("--h", nlm.h, "Filtering strength h in image units (HU for CT), > 0, or auto (the h of least "
                                     "estimated error for this image's noise, docs/parameters.md)")
      ->capture_default_str();
  nlm_cmd->add_option("--strength", nlm.strength, "Multiplies the automatic h: > 1 smooths more, < 1 less")
      ->capture_default_str();
  nlm_cmd->add_option("--search-radius", nlm.params.search_radius, "Search window half-width in voxels: (2r+1)^dim")
      ->capture_default_str();
  nlm_cmd->add_option("--patch-radius", nlm.params.patch_radius, "Patch half-width in voxels: (2r+1)^dim")
      ->capture_default_str();
  nlm_cmd->add_option("--noise-sigma", nlm.noise_sigma,
                      "Noise standard deviation in image units, or auto (from the noise model); subtracts 2 sigma^2 "
                      "from patch distances")
      ->capture_default_str();
  nlm_cmd->add_option("--patch-kernel", nlm.patch_kernel, "Patch weighting: uniform or gaussian")->capture_default_str();
  nlm_cmd->add_option("--patch-sigma", nlm.params.patch_sigma, "Width of the gaussian patch kernel in voxels")
      ->capture_default_str();
  nlm_cmd->add_option("--distance", nlm.distance, "Patch distance: l2, or l1 (Zhang et al.'s weighted L1)")
      ->capture_default_str();
  nlm_cmd->add_option("--centre-weight", nlm.centre_weight, "Weight of the voxel itself: formula (1) or max")
      ->capture_default_str();
  add_noise_from(*nlm_cmd, nlm.noise_from);
  nlm_cmd->add_option("--algorithm", nlm.algorithm, "Variant: auto, displacement (CPU and CUDA), blockwise (approximate, CPU), naive, tiled, zslide (3D), rowwise, fused (CUDA)")->capture_default_str();
  add_file_job(*nlm_cmd, input, run);

  BilateralOptions bf;
  auto* bf_cmd = app.add_subcommand("bilateral", "Bilateral filter: denoise INPUT into OUTPUT");
  bf_cmd->add_option("--sigma-spatial", bf.sigma_spatial, "Spatial Gaussian sigma in voxels");
  bf_cmd->add_option("--sigma-spatial-mm", bf.sigma_spatial_mm, "Spatial Gaussian sigma in mm (uses the voxel spacing)");
  bf_cmd->add_option("--sigma-range", bf.sigma_range,
                     "Range Gaussian sigma in image units (HU for CT), > 0, or auto (the value of least estimated "
                     "error for this image's noise)")
      ->capture_default_str();
  bf_cmd->add_option("--strength", bf.strength, "Multiplies the automatic sigma_range: > 1 smooths more, < 1 less")
      ->capture_default_str();
  add_noise_from(*bf_cmd, bf.noise_from);
  bf_cmd->add_option("--radius", bf.radius, "Window half-width in voxels: R or RX,RY,RZ (default ceil(3 sigma / spacing))");
  bf_cmd->add_option("--algorithm", bf.algorithm, "Variant: auto, direct (exact, CPU), naive, tiled, fused (exact, CUDA), compressive (approximate, CPU and CUDA)")
      ->capture_default_str();
  bf_cmd->add_option("--accuracy-db", bf.accuracy_db,
                     "compressive: PSNR in dB against the exact filter over the value range")
      ->capture_default_str();
  bf_cmd->add_option("--terms", bf.terms,
                     "compressive: cosine terms M, fixed (0: chosen from --accuracy-db)")
      ->capture_default_str();
  bf_cmd->add_option("--gaussian", bf.gaussian,
                     "compressive: Gaussian filters as direct 1D passes, or recursive (cost independent of sigma)")
      ->capture_default_str();
  add_file_job(*bf_cmd, input, run);

  std::string info_json;
  bool info_overwrite = false;
  auto* info_cmd = app.add_subcommand("info", "Describe an image: size, spacing, pixel type, values, DICOM attributes");
  info_cmd->add_option("INPUT", input.path, "Image file, DICOM file or DICOM series folder")->required();
  info_cmd->add_option("--json", info_json, "Also write the description as JSON to this file");
  info_cmd->add_flag("--overwrite", info_overwrite, "Replace an existing JSON file");
  add_input_options(*info_cmd, input);

  SimulateOptions simulate;
  auto* simulate_cmd = app.add_subcommand("simulate", "Make a low-dose version of a clean CT image: projection, "
                                                      "Poisson noise, filtered back-projection (or image noise)");
  simulate_cmd->add_option("--angles", simulate.params.angles, "Parallel-beam projections over 180 degrees")
      ->capture_default_str();
  simulate_cmd->add_option("--photons", simulate.params.photons, "Incident photons per detector bin (I0): the dose")
      ->capture_default_str();
  simulate_cmd->add_option("--electronic-noise", simulate.params.electronic_sigma,
                           "Gaussian noise on the detected counts (standard deviation, counts)")
      ->capture_default_str();
  simulate_cmd->add_option("--fbp-window", simulate.window, "FBP filter: ramp, shepp-logan or hann")
      ->capture_default_str();
  simulate_cmd->add_option("--mu-water", simulate.params.mu_water, "Attenuation of water in 1/mm")->capture_default_str();
  simulate_cmd->add_option("--seed", simulate.params.seed, "Random seed (same seed, same noise)")->capture_default_str();
  simulate_cmd->add_option("--gaussian-noise", simulate.gaussian_noise,
                           "Instead of the projection model: add Gaussian noise of this sigma (image units)");
  add_file_job(*simulate_cmd, input, run);

  auto* convert_cmd = app.add_subcommand("convert", "Write INPUT in another format (the OUTPUT's extension)");
  add_file_job(*convert_cmd, input, run);

  CompareOptions compare;
  auto* compare_cmd = app.add_subcommand("compare", "Quality of TEST against REFERENCE: PSNR, SSIM, RMSE, noise, CNR");
  compare_cmd->add_option("REFERENCE", compare.reference, "The reference image (e.g. the full-dose scan)")->required();
  compare_cmd->add_option("TEST", compare.test, "The image to judge (same size)")->required();
  compare_cmd->add_option("--data-range", compare.data_range, "PSNR/SSIM data range in image units (default: the "
                                                               "reference's max - min)");
  compare_cmd->add_option("--flat-region", compare.flat_region, "Box X0,Y0,Z0,X1,Y1,Z1 (voxels, end exclusive) to "
                                                                 "measure noise in (default: the flattest 16x16x4 box)");
  compare_cmd->add_option("--roi-a", compare.roi_a, "First box for CNR (X0,Y0,Z0,X1,Y1,Z1)");
  compare_cmd->add_option("--roi-b", compare.roi_b, "Second box for CNR");
  compare_cmd->add_option("--json", compare.json, "Also write the figures as JSON to this file");
  compare_cmd->add_flag("--overwrite", compare.overwrite, "Replace an existing JSON file");

  std::string demo_dir = "ctdenoise-demo";
  auto* demo_cmd = app.add_subcommand("demo", "Denoise the bundled CT sample; writes a volume, a preview PNG and a report");
  demo_cmd->add_option("--output-dir", demo_dir, "Folder for the demo's outputs")->capture_default_str();
  demo_cmd->add_option("--device", run.device, "Where to run: auto, cpu or cuda")->capture_default_str();
  demo_cmd->add_option("--threads", run.threads, "CPU threads (0 = all)")->capture_default_str();
  demo_cmd->add_flag("--overwrite", run.overwrite, "Replace the outputs of an earlier demo run");
  demo_cmd->add_flag("-q,--quiet", run.quiet, "No progress bar");

  // 3D Slicer: `--xml` asks for the module description, `--filter` marks its invocation.
  app.add_flag_callback("--xml", [] {
    fmt::print("{}", slicer_xml());
    throw CLI::Success();
  }, "Print the 3D Slicer CLI module description (docs/slicer.md) and exit");
  std::vector<std::string> args(argv + 1, argv + argc);
  try {
    if (auto translated = from_slicer(args)) {
      args = std::move(*translated);
      report_progress_to_slicer();
    }
  } catch (const ctd::Error& e) {
    fmt::print(stderr, "ctdenoise: invalid argument: {}\n", e.what());
    return kUsageError;
  }
  std::reverse(args.begin(), args.end());  // CLI11 takes them last first

  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);  // prints help/version, or the parse error
    return code == 0 ? kOk : kUsageError;
  }

  ctd::io::show_library_messages(verbose);
  install_interrupt_handler();
  return finish(run_command([&] {
    if (*nlm_cmd) run_nlm(input, run, nlm);
    else if (*bf_cmd) run_bilateral(input, run, bf);
    else if (*info_cmd) run_info(input, info_json, info_overwrite);
    else if (*demo_cmd) run_demo(demo_dir, run);
    else if (*compare_cmd) run_compare(compare);
    else if (*simulate_cmd) run_simulate(input, run, simulate);
    else if (*convert_cmd) run_convert(input, run);
  }));
}
