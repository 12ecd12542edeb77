#pragma once
// The subcommands of the ctdenoise CLI, apart from argument parsing (main.cpp).

#include <ctdenoise/bilateral.hpp>
#include <ctdenoise/error.hpp>
#include <ctdenoise/io.hpp>
#include <ctdenoise/nlm.hpp>
#include <ctdenoise/simulate.hpp>

#include <cstdint>
#include <string>

namespace ctd::cli {

// Exit codes (README, "Exit codes").
enum ExitCode : int {
  kOk = 0,
  kInternalError = 1,
  kUsageError = 2,  // bad option or parameter value
  kIoError = 3,     // missing/corrupt input, output exists or cannot be written
  kUnsupported = 4, // format, pixel type or device this version cannot do
  kCudaError = 5,
  kOutOfMemory = 6,
  kInterrupted = 130,
};
int exit_code(ErrorKind kind) noexcept;

struct InputOptions {
  std::string path;
  std::string series;  // DICOM folder with several series: which one
  std::string raw_dims, raw_type, raw_byte_order = "little", raw_spacing;  // headerless raw input
  std::uint64_t raw_header = 0;
  io::ReadOptions read_options() const;
};

struct RunOptions {
  std::string output, json, preview, window;
  std::string device = "auto";
  int threads = 0;
  int compression_level = 6;  // .nii.gz and --compress
  bool compress = false;      // .nrrd/.mha: compressed data
  bool overwrite = false, float_output = false, quiet = false;
};

struct NlmOptions {
  NlmParams params;
  std::string h = "auto", noise_sigma = "0";  // numbers, or "auto": from the image's noise model
  double strength = 1;                        // multiplies the automatic h
  std::string noise_from;                     // the automatic values' noise measured on this image
  std::string patch_kernel = "uniform", distance = "l2", centre_weight = "formula", algorithm = "auto";
  NlmParams resolve() const;  // the names above parsed into params; throws InvalidArgument
};

struct BilateralOptions {
  float sigma_spatial = 0, sigma_spatial_mm = 0, accuracy_db = 50;
  int terms = 0;
  std::string sigma_range = "auto";  // a number, or "auto": least estimated risk for the image
  double strength = 1;               // multiplies the automatic sigma_range
  std::string noise_from;            // the automatic value's noise measured on this image
  std::string radius, algorithm = "auto", gaussian = "direct";
  BilateralParams resolve() const;  // spacing is filled in from the image later
};

void run_nlm(const InputOptions& input, const RunOptions& run, const NlmOptions& nlm);
void run_bilateral(const InputOptions& input, const RunOptions& run, const BilateralOptions& bf);
void run_info(const InputOptions& input, const std::string& json, bool overwrite);
void run_demo(const std::string& output_dir, RunOptions run);

struct SimulateOptions {
  LowDoseParams params;
  std::string window = "ramp";
  double gaussian_noise = 0;  // > 0: image-domain Gaussian noise instead of the projection model
};
void run_simulate(const InputOptions& input, const RunOptions& run, const SimulateOptions& options);

// Reads INPUT and writes it as OUTPUT (format from the name), nothing else changed.
void run_convert(const InputOptions& input, const RunOptions& run);

struct CompareOptions {
  std::string reference, test, json;
  double data_range = 0;  // 0: max - min of the reference
  std::string flat_region, roi_a, roi_b;  // X0,Y0,Z0,X1,Y1,Z1 boxes; flat region found when empty
  bool overwrite = false;
};
void run_compare(const CompareOptions& options);

}  // namespace ctd::cli
