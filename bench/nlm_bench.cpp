// NLM benchmark on the GPU: the settings of docs BENCH.md (N1-N4) and seed 000's Table II, every
// CUDA variant side by side. Kernel time by CUDA events around nlm_device (input already on the
// GPU; median after warm-up), end-to-end time through the host API (upload, filter, download),
// the exp floor (one exp per unordered pair at 3.78e12 exp/s), and the error against the CPU
// backend (or the naive kernel where the CPU would take too long).
//
//   nlm_bench [--quick] [--json FILE] [--markdown FILE] [--only NAME]

#include <ctdenoise/ctdenoise.hpp>

#include <cuda_runtime.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <random>
#include <string>
#include <vector>

namespace {

#define CHECK(expr)                                                                   \
  do {                                                                                \
    cudaError_t s_ = (expr);                                                          \
    if (s_ != cudaSuccess) {                                                          \
      fmt::print(stderr, "{} failed: {}\n", #expr, cudaGetErrorString(s_));           \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)

struct Setting {
  std::string name, source;
  ctd::Dims dims;
  int search_radius, patch_radius;
  bool quick;      // part of the --quick subset
  bool run_naive;  // naive, tiled and zslide (the papers' straightforward arithmetic) would take minutes on N4
  bool check_cpu;  // compare with the CPU backend (too slow for the largest)
};

std::vector<Setting> settings() {
  std::vector<Setting> s = {
      {"N1", "BENCH N1 (seed 004)", {720, 480, 1}, 10, 4, true, true, true},
      {"N2", "BENCH N2 (seed 003)", {512, 512, 1}, 40, 4, true, true, true},
      {"N3", "BENCH N3 (seed 000)", {1024, 1024, 1}, 8, 3, true, true, true},
      {"N4", "BENCH N4 (seed 001)", {512, 512, 548}, 4, 2, true, false, false},
  };
  for (int size : {256, 512, 1024})
    for (int window : {7, 11, 17}) {
      s.push_back({fmt::format("T2-{}-{}", size, window), fmt::format("seed 000 Table II {}^2, (7+{})^2", size, window),
                   {size, size, 1}, window / 2, 3, false, true, size <= 512});
    }
  // Seed 004 Table 1: 512^2, search 21^2, patch 9^2.
  s.push_back({"T1-004", "seed 004 Table 1 (512^2, 21^2, 9^2)", {512, 512, 1}, 10, 4, false, true, true});
  // Seed 003's sweeps at 512^2: search 21^2..81^2 with patch 9^2, patch 3^2..15^2 with search 81^2.
  for (int search : {21, 31, 41, 51, 61, 71, 81}) {
    s.push_back({fmt::format("S003-s{}", search), fmt::format("seed 003 search sweep {}^2, patch 9^2", search),
                 {512, 512, 1}, search / 2, 4, false, true, false});
  }
  for (int patch : {3, 5, 7, 11, 13, 15}) {
    s.push_back({fmt::format("S003-p{}", patch), fmt::format("seed 003 patch sweep {}^2, search 81^2", patch),
                 {512, 512, 1}, 40, patch / 2, false, true, false});
  }
  return s;
}

// Unordered pairs (p, q), q != p, both inside: the exps an exact symmetric filter must take.
double unordered_pairs(const ctd::Dims& d, int rs) {
  auto per_axis = [](double n, int r) {
    double c = n;
    for (int k = 1; k <= std::min<double>(r, n - 1); ++k) c += 2 * (n - k);
    return c;
  };
  const double ordered = per_axis(double(d.nx), rs) * per_axis(double(d.ny), rs) * (d.nz > 1 ? per_axis(double(d.nz), rs) : 1.0);
  return (ordered - double(d.count())) / 2;
}

ctd::Volume make_input(const ctd::Dims& dims) {
  // A CT-like piecewise-constant phantom (ellipses of soft tissue, bone, air) plus noise.
  ctd::Volume v(dims);
  std::mt19937 rng(2026);
  std::normal_distribution<float> noise(0.0f, 25.0f);
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

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Record {
  std::string setting, source, variant;
  ctd::Dims dims;
  int rs, rp;
  double kernel_ms = -1, end_to_end_ms = -1, floor_ms = 0, speedup_vs_naive = -1, max_abs_error = -1;
  std::string error_against;
};

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  std::string json_path, markdown_path, only;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick") quick = true;
    else if (a == "--json" && i + 1 < argc) json_path = argv[++i];
    else if (a == "--markdown" && i + 1 < argc) markdown_path = argv[++i];
    else if (a == "--only" && i + 1 < argc) only = argv[++i];
    else {
      fmt::print(stderr, "usage: nlm_bench [--quick] [--json FILE] [--markdown FILE] [--only NAME]\n");
      return 2;
    }
  }
  const std::string gpu = ctd::cuda_device_name();
  if (gpu.empty()) {
    fmt::print(stderr, "nlm_bench: no CUDA device\n");
    return 1;
  }
  char date[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  constexpr double kExpPerSecond = 3.78e12;  // measured __expf rate of the H100 (BENCH.md)

  std::vector<Record> records;
  cudaStream_t stream;
  CHECK(cudaStreamCreate(&stream));
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));

  for (const Setting& s : settings()) {
    if ((quick && !s.quick) || (!only.empty() && s.name != only)) continue;
    const ctd::Volume in = make_input(s.dims);
    const std::size_t bytes = std::size_t(in.size()) * sizeof(float);
    float *d_in = nullptr, *d_out = nullptr;
    CHECK(cudaMalloc(&d_in, bytes));
    CHECK(cudaMalloc(&d_out, bytes));
    CHECK(cudaMemcpy(d_in, in.data(), bytes, cudaMemcpyHostToDevice));
    ctd::NlmParams p;
    p.search_radius = s.search_radius;
    p.patch_radius = s.patch_radius;
    p.h = 30;

    ctd::Volume cpu;
    if (s.check_cpu) {
      cpu = ctd::Volume(s.dims);
      ctd::ExecContext context;
      context.device = ctd::Device::Cpu;
      ctd::nlm(in.view(), cpu.view(), p, context);
    }
    ctd::Volume naive_out;
    double naive_ms = -1;
    for (auto variant : {ctd::NlmAlgorithm::Naive, ctd::NlmAlgorithm::Tiled, ctd::NlmAlgorithm::ZSlide,
                         ctd::NlmAlgorithm::Displacement, ctd::NlmAlgorithm::RowWise, ctd::NlmAlgorithm::Fused}) {
      const bool per_voxel_loops = variant == ctd::NlmAlgorithm::Naive || variant == ctd::NlmAlgorithm::Tiled ||
                                   variant == ctd::NlmAlgorithm::ZSlide;
      if (per_voxel_loops && !s.run_naive) continue;
      if (variant == ctd::NlmAlgorithm::ZSlide && s.dims.is_2d()) continue;
      p.algorithm = variant;
      Record r;
      r.setting = s.name;
      r.source = s.source;
      r.variant = std::string(ctd::to_string(variant));
      r.dims = s.dims;
      r.rs = s.search_radius;
      r.rp = s.patch_radius;
      r.floor_ms = unordered_pairs(s.dims, s.search_radius) / kExpPerSecond * 1e3;
      // Warm up, then time until about a second has passed (at least 3, at most 20 runs).
      ctd::nlm_device(d_in, d_out, s.dims, p, stream);
      CHECK(cudaStreamSynchronize(stream));
      std::vector<double> times;
      double total = 0;
      while (times.size() < 3 || (total < 1000 && times.size() < 20)) {
        CHECK(cudaEventRecord(start, stream));
        ctd::nlm_device(d_in, d_out, s.dims, p, stream);
        CHECK(cudaEventRecord(stop, stream));
        CHECK(cudaEventSynchronize(stop));
        float ms = 0;
        CHECK(cudaEventElapsedTime(&ms, start, stop));
        times.push_back(ms);
        total += ms;
      }
      r.kernel_ms = median(times);
      ctd::Volume out(s.dims);
      std::vector<double> e2e;
      ctd::ExecContext context;
      context.device = ctd::Device::Cuda;
      for (int i = 0; i < 3; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        ctd::nlm(in.view(), out.view(), p, context);
        e2e.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
        if (r.kernel_ms > 2000) break;
      }
      r.end_to_end_ms = median(e2e);
      const ctd::Volume* reference = s.check_cpu ? &cpu : (naive_out.size() ? &naive_out : nullptr);
      if (reference) {
        double m = 0;
        for (std::int64_t i = 0; i < out.size(); ++i) m = std::max(m, double(std::fabs(out.data()[i] - reference->data()[i])));
        r.max_abs_error = m;
        r.error_against = s.check_cpu ? "cpu" : "naive";
      }
      if (variant == ctd::NlmAlgorithm::Naive) {
        naive_ms = r.kernel_ms;
        naive_out = std::move(out);
      }
      if (naive_ms > 0) r.speedup_vs_naive = naive_ms / r.kernel_ms;
      fmt::print("{:<12} {:<12} {:>10.3f} ms kernel {:>10.3f} ms e2e  floor {:.3f} ms ({:.1f}x)  err {:.2e} vs {}\n",
                 s.name, r.variant, r.kernel_ms, r.end_to_end_ms, r.floor_ms, r.kernel_ms / r.floor_ms, r.max_abs_error,
                 r.error_against);
      std::fflush(stdout);
      records.push_back(r);
    }
    CHECK(cudaFree(d_in));
    CHECK(cudaFree(d_out));
  }

  std::string json = "{\n  \"date\": \"" + std::string(date) + "\",\n  \"gpu\": \"" + gpu +
                     "\",\n  \"exp_rate_per_s\": 3.78e12,\n  \"records\": [\n";
  std::string md = fmt::format("# NLM on {} ({})\n\nKernel time: CUDA events, median after warm-up, input on the GPU. "
                               "End-to-end: host memory in and out. Floor: one __expf per unordered pair at 3.78e12/s.\n\n"
                               "| setting | size | search | patch | variant | kernel ms | end-to-end ms | x naive | x floor | max abs error |\n"
                               "|---|---|---|---|---|---|---|---|---|---|\n",
                               gpu, date);
  for (std::size_t i = 0; i < records.size(); ++i) {
    const Record& r = records[i];
    json += fmt::format("    {{\"setting\": \"{}\", \"source\": \"{}\", \"variant\": \"{}\", \"dims\": [{}, {}, {}], "
                        "\"search_radius\": {}, \"patch_radius\": {}, \"kernel_ms\": {:.6g}, \"end_to_end_ms\": {:.6g}, "
                        "\"floor_ms\": {:.6g}, \"fraction_of_floor\": {:.4g}, \"speedup_vs_naive\": {}, "
                        "\"max_abs_error\": {}, \"error_against\": \"{}\"}}{}\n",
                        r.setting, r.source, r.variant, r.dims.nx, r.dims.ny, r.dims.nz, r.rs, r.rp, r.kernel_ms,
                        r.end_to_end_ms, r.floor_ms, r.floor_ms / r.kernel_ms,
                        r.speedup_vs_naive > 0 ? fmt::format("{:.4g}", r.speedup_vs_naive) : "null",
                        r.max_abs_error >= 0 ? fmt::format("{:.3g}", r.max_abs_error) : "null", r.error_against,
                        i + 1 < records.size() ? "," : "");
    md += fmt::format("| {} | {}x{}x{} | {}^d | {}^d | {} | {:.3f} | {:.3f} | {} | {:.1f} | {} |\n", r.setting, r.dims.nx,
                      r.dims.ny, r.dims.nz, 2 * r.rs + 1, 2 * r.rp + 1, r.variant, r.kernel_ms, r.end_to_end_ms,
                      r.speedup_vs_naive > 0 ? fmt::format("{:.1f}", r.speedup_vs_naive) : "-", r.kernel_ms / r.floor_ms,
                      r.max_abs_error >= 0 ? fmt::format("{:.2g} ({})", r.max_abs_error, r.error_against) : "-");
  }
  json += "  ]\n}\n";
  if (!json_path.empty()) std::ofstream(json_path) << json;
  if (!markdown_path.empty()) std::ofstream(markdown_path) << md;
  fmt::print("\n{}", md);
  return 0;
}
