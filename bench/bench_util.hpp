#pragma once
// Shared by the GPU benchmarks: CUDA error check, median, the CT-like phantom, one result record
// per (setting, variant) and its JSON / markdown output.

#include <ctdenoise/ctdenoise.hpp>

#include <cuda_runtime.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <random>
#include <string>
#include <vector>

namespace bench {

#define BENCH_CHECK(expr)                                                                 \
  do {                                                                                    \
    cudaError_t s_ = (expr);                                                              \
    if (s_ != cudaSuccess) {                                                              \
      fmt::print(stderr, "{} failed: {}\n", #expr, cudaGetErrorString(s_));               \
      std::exit(1);                                                                       \
    }                                                                                     \
  } while (0)

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

inline std::string today() {
  char date[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  return date;
}

constexpr double kExpPerSecond = 3.78e12;  // measured __expf rate of the H100 (BENCH.md)

// A CT-like piecewise-constant phantom (ellipses of soft tissue, bone, air) plus Gaussian noise.
inline ctd::Volume phantom(const ctd::Dims& dims, float noise_sigma = 25.0f) {
  ctd::Volume v(dims);
  std::mt19937 rng(2026);
  std::normal_distribution<float> noise(0.0f, noise_sigma);
  for (std::int64_t z = 0; z < dims.nz; ++z)
    for (std::int64_t y = 0; y < dims.ny; ++y)
      for (std::int64_t x = 0; x < dims.nx; ++x) {
        const double fx = (x - dims.nx / 2.0) / (dims.nx / 2.0), fy = (y - dims.ny / 2.0) / (dims.ny / 2.0),
                     fz = dims.nz > 1 ? (z - dims.nz / 2.0) / (dims.nz / 2.0) : 0;
        float value = -1000;
        if (fx * fx / 0.8 + fy * fy / 0.6 + fz * fz < 1) value = 40;
        if ((fx - 0.2) * (fx - 0.2) + fy * fy + fz * fz < 0.05) value = 700;
        if ((fx + 0.3) * (fx + 0.3) + (fy - 0.2) * (fy - 0.2) < 0.02) value = -500;
        v.view()(x, y, z) = value + noise(rng);
      }
  return v;
}

// --only: a comma-separated list of name prefixes ("N1", "T2", "B4,S002"); empty selects all.
// A prefix that extends the name also selects it, so that a group ("S002") is entered for one
// of its rows ("S002-s3").
inline bool selected(const std::string& only, const std::string& name) {
  if (only.empty()) return true;
  for (std::size_t at = 0; at <= only.size();) {
    const std::size_t comma = std::min(only.find(',', at), only.size());
    const std::string prefix = only.substr(at, comma - at);
    if (!prefix.empty() && (name.rfind(prefix, 0) == 0 || prefix.rfind(name, 0) == 0)) return true;
    at = comma + 1;
  }
  return false;
}

inline double max_abs_difference(const ctd::Volume& a, const ctd::Volume& b) {
  double m = 0;
  for (std::int64_t i = 0; i < a.size(); ++i) m = std::max(m, double(std::fabs(a.data()[i] - b.data()[i])));
  return m;
}

// The volume rounded and clamped to int16, for the host API's int16 overloads.
inline std::vector<std::int16_t> as_int16(const ctd::Volume& v) {
  std::vector<std::int16_t> out(static_cast<std::size_t>(v.size()));
  for (std::int64_t i = 0; i < v.size(); ++i) out[std::size_t(i)] = std::int16_t(std::clamp(std::lround(v.data()[i]), -32768L, 32767L));
  return out;
}

struct Record {
  std::string setting, source, variant, parameters;  // parameters: e.g. "search 21^2, patch 9^2"
  ctd::Dims dims;
  double kernel_ms = -1, end_to_end_ms = -1, floor_ms = 0, speedup_vs_naive = -1;
  double end_to_end_int16_ms = -1;  // the same from int16 host memory (uploaded as int16)
  double max_abs_error = -1;  // against `error_against`
  double psnr_db = -1;        // approximate variants: against the exact filter
  std::string error_against;
};

inline std::string number_or_null(double v, const char* format = "{:.4g}") {
  return v >= 0 ? fmt::format(fmt::runtime(format), v) : "null";
}

// Writes the records as JSON and as a markdown table (printed too).
inline void write_results(const std::vector<Record>& records, const std::string& title, const std::string& floor_note,
                          const std::string& json_path, const std::string& markdown_path) {
  const std::string gpu = ctd::cuda_device_name(), date = today();
  std::string json = "{\n  \"date\": \"" + date + "\",\n  \"gpu\": \"" + gpu + "\",\n  \"floor\": \"" + floor_note +
                     "\",\n  \"records\": [\n";
  std::string md = fmt::format("# {} on {} ({})\n\nKernel time: CUDA events, median after warm-up, input on the GPU. "
                               "End-to-end: host memory in and out. Floor: {}.\n\n"
                               "| setting | size | parameters | variant | kernel ms | end-to-end ms | end-to-end from int16 ms | "
                               "x naive | x floor | error |\n|---|---|---|---|---|---|---|---|---|---|\n",
                               title, gpu, date, floor_note);
  for (std::size_t i = 0; i < records.size(); ++i) {
    const Record& r = records[i];
    json += fmt::format("    {{\"setting\": \"{}\", \"source\": \"{}\", \"variant\": \"{}\", \"dims\": [{}, {}, {}], "
                        "\"parameters\": \"{}\", \"kernel_ms\": {:.6g}, \"end_to_end_ms\": {:.6g}, \"end_to_end_int16_ms\": {}, \"floor_ms\": {:.6g}, "
                        "\"fraction_of_floor\": {}, \"speedup_vs_naive\": {}, \"max_abs_error\": {}, "
                        "\"psnr_db_vs_exact\": {}, \"error_against\": \"{}\"}}{}\n",
                        r.setting, r.source, r.variant, r.dims.nx, r.dims.ny, r.dims.nz, r.parameters, r.kernel_ms,
                        r.end_to_end_ms, number_or_null(r.end_to_end_int16_ms, "{:.6g}"), r.floor_ms,
                        r.floor_ms > 0 ? fmt::format("{:.4g}", r.floor_ms / r.kernel_ms) : "null",
                        number_or_null(r.speedup_vs_naive), number_or_null(r.max_abs_error, "{:.3g}"),
                        number_or_null(r.psnr_db, "{:.2f}"), r.error_against, i + 1 < records.size() ? "," : "");
    std::string error = "-";
    if (r.psnr_db >= 0) error = fmt::format("{:.1f} dB vs exact", r.psnr_db);
    else if (r.max_abs_error >= 0) error = fmt::format("{:.2g} ({})", r.max_abs_error, r.error_against);
    md += fmt::format("| {} | {}x{}x{} | {} | {} | {:.3f} | {:.3f} | {} | {} | {} | {} |\n", r.setting, r.dims.nx, r.dims.ny,
                      r.dims.nz, r.parameters, r.variant, r.kernel_ms, r.end_to_end_ms,
                      r.end_to_end_int16_ms >= 0 ? fmt::format("{:.3f}", r.end_to_end_int16_ms) : "-",
                      r.speedup_vs_naive > 0 ? fmt::format("{:.1f}", r.speedup_vs_naive) : "-",
                      r.floor_ms > 0 ? fmt::format("{:.1f}", r.kernel_ms / r.floor_ms) : "-", error);
  }
  json += "  ]\n}\n";
  if (!json_path.empty()) std::ofstream(json_path) << json;
  if (!markdown_path.empty()) std::ofstream(markdown_path) << md;
  fmt::print("\n{}", md);
}

}  // namespace bench
