// NLM benchmark on the GPU: the settings of docs BENCH.md (N1-N4) and Mueller et al.'s Table II, every
// CUDA variant side by side. Kernel time by CUDA events around nlm_device (input already on the
// GPU; median after warm-up), end-to-end time through the host API (upload, filter, download),
// the exp floor (one exp per unordered pair at 3.78e12 exp/s), and the error against the CPU
// backend (or the naive kernel where the CPU would take too long).
//
//   nlm_bench [--quick] [--json FILE] [--markdown FILE] [--only PREFIX,...] [--variants a,b,...]

#include "bench_util.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <random>
#include <string>
#include <vector>

namespace {

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
      {"N1", "BENCH N1 (Marques et al.)", {720, 480, 1}, 10, 4, true, true, true},
      {"N2", "BENCH N2 (Zhang et al.)", {512, 512, 1}, 40, 4, true, true, true},
      {"N3", "BENCH N3 (Mueller et al.)", {1024, 1024, 1}, 8, 3, true, true, true},
      {"N4", "BENCH N4 (Horáček et al.)", {512, 512, 548}, 4, 2, true, false, false},
  };
  for (int size : {256, 512, 1024})
    for (int window : {7, 11, 17}) {
      s.push_back({fmt::format("T2-{}-{}", size, window), fmt::format("Mueller et al. Table II {}^2, (7+{})^2", size, window),
                   {size, size, 1}, window / 2, 3, false, true, size <= 512});
    }
  // Seed 004 Table 1: 512^2, search 21^2, patch 9^2.
  s.push_back({"T1-004", "Marques et al. Table 1 (512^2, 21^2, 9^2)", {512, 512, 1}, 10, 4, false, true, true});
  // Seed 003's sweeps at 512^2: search 21^2..81^2 with patch 9^2, patch 3^2..15^2 with search 81^2.
  for (int search : {21, 31, 41, 51, 61, 71, 81}) {
    s.push_back({fmt::format("S003-s{}", search), fmt::format("Zhang et al. search sweep {}^2, patch 9^2", search),
                 {512, 512, 1}, search / 2, 4, false, true, false});
  }
  for (int patch : {3, 5, 7, 11, 13, 15}) {
    s.push_back({fmt::format("S003-p{}", patch), fmt::format("Zhang et al. patch sweep {}^2, search 81^2", patch),
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

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  std::string json_path, markdown_path, only, variants;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick") quick = true;
    else if (a == "--json" && i + 1 < argc) json_path = argv[++i];
    else if (a == "--markdown" && i + 1 < argc) markdown_path = argv[++i];
    else if (a == "--only" && i + 1 < argc) only = argv[++i];
    else if (a == "--variants" && i + 1 < argc) variants = "," + std::string(argv[++i]) + ",";
    else {
      fmt::print(stderr, "usage: nlm_bench [--quick] [--json FILE] [--markdown FILE] [--only PREFIX,...] [--variants a,b,...]\n");
      return 2;
    }
  }
  const std::string gpu = ctd::cuda_device_name();
  if (gpu.empty()) {
    fmt::print(stderr, "nlm_bench: no CUDA device\n");
    return 1;
  }
  std::vector<bench::Record> records;
  cudaStream_t stream;
  BENCH_CHECK(cudaStreamCreate(&stream));
  cudaEvent_t start, stop;
  BENCH_CHECK(cudaEventCreate(&start));
  BENCH_CHECK(cudaEventCreate(&stop));

  for (const Setting& s : settings()) {
    if ((quick && !s.quick) || !bench::selected(only, s.name)) continue;
    const ctd::Volume in = bench::phantom(s.dims);
    const std::size_t bytes = std::size_t(in.size()) * sizeof(float);
    float *d_in = nullptr, *d_out = nullptr;
    BENCH_CHECK(cudaMalloc(&d_in, bytes));
    BENCH_CHECK(cudaMalloc(&d_out, bytes));
    BENCH_CHECK(cudaMemcpy(d_in, in.data(), bytes, cudaMemcpyHostToDevice));
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
    // fused-one-sided, fused-rows, fused-ring (2D), fused-symmetric (3D): one fused kernel forced
    // (CTD_NLM_FUSED_2D, CTD_NLM_FUSED_3D), for comparison with the one `fused` picks.
    struct Run {
      ctd::NlmAlgorithm variant;
      const char* kernel;  // null: the backend's choice
    };
    for (const Run run : {Run{ctd::NlmAlgorithm::Naive, nullptr}, Run{ctd::NlmAlgorithm::Tiled, nullptr},
                          Run{ctd::NlmAlgorithm::ZSlide, nullptr}, Run{ctd::NlmAlgorithm::Displacement, nullptr},
                          Run{ctd::NlmAlgorithm::RowWise, nullptr}, Run{ctd::NlmAlgorithm::Fused, "one-sided"},
                          Run{ctd::NlmAlgorithm::Fused, "rows"}, Run{ctd::NlmAlgorithm::Fused, "ring"},
                          Run{ctd::NlmAlgorithm::Fused, "symmetric"}, Run{ctd::NlmAlgorithm::Fused, nullptr}}) {
      const ctd::NlmAlgorithm variant = run.variant;
      const std::string label =
          std::string(ctd::to_string(variant)) + (run.kernel ? std::string("-") + run.kernel : "");
      const bool per_voxel_loops = variant == ctd::NlmAlgorithm::Naive || variant == ctd::NlmAlgorithm::Tiled ||
                                   variant == ctd::NlmAlgorithm::ZSlide;
      if (per_voxel_loops && !s.run_naive) continue;
      if (!variants.empty() && variants.find("," + label + ",") == std::string::npos) continue;
      if (variant == ctd::NlmAlgorithm::ZSlide && s.dims.is_2d()) continue;  // slides along z
      const std::string kernel = run.kernel ? run.kernel : "";
      if ((kernel == "rows" || kernel == "ring") && !s.dims.is_2d()) continue;
      if (kernel == "symmetric" && s.dims.is_2d()) continue;
      const char* kernel_env = s.dims.is_2d() ? "CTD_NLM_FUSED_2D" : "CTD_NLM_FUSED_3D";
      if (run.kernel) setenv(kernel_env, run.kernel, 1);
      p.algorithm = variant;
      bench::Record r;
      r.setting = s.name;
      r.source = s.source;
      r.variant = label;
      r.dims = s.dims;
      const char* power = s.dims.is_2d() ? "^2" : "^3";
      r.parameters = fmt::format("search {}{}, patch {}{}", 2 * s.search_radius + 1, power, 2 * s.patch_radius + 1, power);
      r.floor_ms = unordered_pairs(s.dims, s.search_radius) / bench::kExpPerSecond * 1e3;
      // Warm up, then time until about a second has passed (at least 3, at most 20 runs).
      ctd::nlm_device(d_in, d_out, s.dims, p, stream);
      BENCH_CHECK(cudaStreamSynchronize(stream));
      std::vector<double> times;
      double total = 0;
      while (times.size() < 3 || (total < 1000 && times.size() < 20)) {
        BENCH_CHECK(cudaEventRecord(start, stream));
        ctd::nlm_device(d_in, d_out, s.dims, p, stream);
        BENCH_CHECK(cudaEventRecord(stop, stream));
        BENCH_CHECK(cudaEventSynchronize(stop));
        float ms = 0;
        BENCH_CHECK(cudaEventElapsedTime(&ms, start, stop));
        times.push_back(ms);
        total += ms;
      }
      r.kernel_ms = bench::median(times);
      ctd::Volume out(s.dims);
      std::vector<double> e2e;
      ctd::ExecContext context;
      context.device = ctd::Device::Cuda;
      // Warm-up, as for int16 below: the first host call of a size grows the kept device memory.
      if (r.kernel_ms <= 2000) ctd::nlm(in.view(), out.view(), p, context);
      for (int i = 0; i < 3; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        ctd::nlm(in.view(), out.view(), p, context);
        e2e.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
        if (r.kernel_ms > 2000) break;
      }
      r.end_to_end_ms = bench::median(e2e);
      {  // From int16 host memory (the input rounded; its output is not compared).
        const std::vector<std::int16_t> raw = bench::as_int16(in);
        ctd::Volume scratch(s.dims);
        std::vector<double> e2e_int16;
        for (int i = 0; i < 4 && !(i > 1 && r.kernel_ms > 2000); ++i) {
          const auto t0 = std::chrono::steady_clock::now();
          ctd::nlm(ctd::ConstVolumeView<std::int16_t>{raw.data(), s.dims}, scratch.view(), p, context);
          if (i > 0) e2e_int16.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
        }
        r.end_to_end_int16_ms = bench::median(e2e_int16);
      }
      const ctd::Volume* reference = s.check_cpu ? &cpu : (naive_out.size() ? &naive_out : nullptr);
      if (reference) {
        r.max_abs_error = bench::max_abs_difference(out, *reference);
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
      unsetenv(kernel_env);
    }
    BENCH_CHECK(cudaFree(d_in));
    BENCH_CHECK(cudaFree(d_out));
  }

  bench::write_results(records, "NLM", "one __expf per unordered pair at 3.78e12/s", json_path, markdown_path);
  return 0;
}
