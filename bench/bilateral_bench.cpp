// Bilateral benchmark on the GPU: BENCH.md's B1-B4, Mueller et al.'s Table I rows, Yano et al.'s sigma_s
// sweep, and the compressive filter's PSNR against the exact one (Yano et al. Figs. 5, 8, 9) on a
// 512^3 phantom and on CThead and the bonsai (.devdata/, bench/make_device_data.py). Kernel time
// is the library's CUDA-event time around the kernels (FilterRun details "kernel_ms"; median after
// warm-up); end-to-end is the host call (upload, filter, download).
//
//   bilateral_bench [--quick] [--json FILE] [--markdown FILE] [--psnr FILE] [--only PREFIX,...]

#include "bench_util.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>

namespace {

struct Timed {
  double kernel_ms, end_to_end_ms, end_to_end_int16_ms;
  ctd::FilterRun run;
};

// Warm-up, then runs until about a second has passed (3 to 15 runs).
Timed time_filter(const ctd::Volume& in, ctd::Volume& out, const ctd::BilateralParams& p) {
  ctd::ExecContext cuda;
  cuda.device = ctd::Device::Cuda;
  ctd::FilterRun run = ctd::bilateral(in.view(), out.view(), p, cuda);
  std::vector<double> kernel, e2e;
  double total = 0;
  while (kernel.size() < 3 || (total < 1000 && kernel.size() < 15)) {
    const auto t0 = std::chrono::steady_clock::now();
    run = ctd::bilateral(in.view(), out.view(), p, cuda);
    e2e.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    kernel.push_back(run.details.at("kernel_ms"));
    total += e2e.back();
    if (e2e.back() > 3000) break;
  }
  // From int16 host memory: the same filter, the input rounded (its output is not compared).
  const std::vector<std::int16_t> raw = bench::as_int16(in);
  ctd::Volume scratch(in.dims());
  std::vector<double> e2e_int16;
  for (int i = 0; i < 4; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    ctd::bilateral(ctd::ConstVolumeView<std::int16_t>{raw.data(), in.dims()}, scratch.view(), p, cuda);
    if (i > 0) e2e_int16.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return {bench::median(kernel), bench::median(e2e), bench::median(e2e_int16), run};
}

double value_range(const ctd::Volume& v) {
  const auto [lo, hi] = std::minmax_element(v.data(), v.data() + v.size());
  return double(*hi) - *lo;
}

// Pairs (voxel, neighbour) of the window, both counted once per unordered pair: the exp floor.
double floor_ms(const ctd::Dims& d, const std::array<int, 3>& r) {
  const double taps = (2.0 * r[0] + 1) * (2.0 * r[1] + 1) * (d.is_2d() ? 1.0 : 2.0 * r[2] + 1);
  return double(d.count()) * (taps - 1) / 2 / bench::kExpPerSecond * 1e3;
}

bool read_raw(const std::string& path, std::size_t bytes, std::vector<char>& data) {
  std::ifstream f(path, std::ios::binary);
  data.resize(bytes);
  return bool(f.read(data.data(), std::streamsize(bytes)));
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  std::string json_path, markdown_path, psnr_path, only;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick") quick = true;
    else if (a == "--json" && i + 1 < argc) json_path = argv[++i];
    else if (a == "--markdown" && i + 1 < argc) markdown_path = argv[++i];
    else if (a == "--psnr" && i + 1 < argc) psnr_path = argv[++i];
    else if (a == "--only" && i + 1 < argc) only = argv[++i];
    else {
      fmt::print(stderr, "usage: bilateral_bench [--quick] [--json FILE] [--markdown FILE] [--psnr FILE] [--only PREFIX,...]\n");
      return 2;
    }
  }
  // --only: name prefixes (B1, S002, ...; for --psnr: phantom, CThead, bonsai).
  auto selected = [&](const std::string& name) { return bench::selected(only, name); };
  if (ctd::cuda_device_name().empty()) {
    fmt::print(stderr, "bilateral_bench: no CUDA device\n");
    return 1;
  }
  std::vector<bench::Record> records;

  // Exact settings: every variant side by side, speed-up over naive, error against naive.
  struct Exact {
    std::string name, source;
    ctd::Dims dims;
    int radius;
    bool quick;
  };
  std::vector<Exact> exact = {{"B1", "BENCH B1 (Mueller et al.)", {1024, 1024, 1}, 8, true},
                              {"B2", "BENCH B2", {512, 512, 512}, 3, true},
                              {"B3", "BENCH B3 (Yano et al.: naive takes minutes)", {512, 512, 512}, 10, true}};
  for (int size : {256, 512, 1024})
    for (int window : {7, 11, 17}) {
      exact.push_back({fmt::format("T1-{}-{}", size, window), fmt::format("Mueller et al. Table I {}^2, {}^2", size, window),
                       {size, size, 1}, window / 2, false});
    }
  for (const Exact& s : exact) {
    if ((quick && !s.quick) || !selected(s.name)) continue;
    const ctd::Volume in = bench::phantom(s.dims);
    ctd::BilateralParams p;
    p.radius = std::array<int, 3>{s.radius, s.radius, s.radius};
    p.sigma_spatial = float(s.radius) / 3.0f;
    p.sigma_range = 60;
    ctd::Volume naive_out;
    double naive_ms = -1;
    for (auto variant : {ctd::BilateralAlgorithm::Naive, ctd::BilateralAlgorithm::Tiled, ctd::BilateralAlgorithm::Fused}) {
      p.algorithm = variant;
      ctd::Volume out(s.dims);
      const Timed t = time_filter(in, out, p);
      bench::Record r;
      r.setting = s.name;
      r.source = s.source;
      r.variant = std::string(ctd::to_string(variant));
      r.dims = s.dims;
      r.parameters = fmt::format("window {}{}, sigma_s {:.3g}, sigma_r 60", 2 * s.radius + 1, s.dims.is_2d() ? "^2" : "^3",
                                 p.sigma_spatial);
      r.kernel_ms = t.kernel_ms;
      r.end_to_end_ms = t.end_to_end_ms;
      r.end_to_end_int16_ms = t.end_to_end_int16_ms;
      r.floor_ms = floor_ms(s.dims, {s.radius, s.radius, s.radius});
      if (variant == ctd::BilateralAlgorithm::Naive) {
        naive_ms = t.kernel_ms;
        naive_out = std::move(out);
      } else {
        r.max_abs_error = bench::max_abs_difference(out, naive_out);
        r.error_against = "naive";
      }
      r.speedup_vs_naive = naive_ms / t.kernel_ms;
      fmt::print("{:<10} {:<12} {:>10.3f} ms kernel {:>10.3f} ms e2e  floor {:.3f} ms ({:.1f}x)\n", r.setting, r.variant,
                 r.kernel_ms, r.end_to_end_ms, r.floor_ms, r.kernel_ms / r.floor_ms);
      std::fflush(stdout);
      records.push_back(r);
    }
  }

  // B4 and Yano et al.'s sigma_s sweep at 512^3: the compressive filter at 50 dB, sigma_r 10% of the
  // range, with the direct 1D passes and with the recursive Gaussian; beyond sigma_s 10 (XO rows)
  // the two Gaussians side by side without the exact filter, to show where the recursive one wins.
  if (selected("B4") || selected("S002") || selected("XO")) {
    const ctd::Dims dims{512, 512, 512};
    const ctd::Volume in = bench::phantom(dims);
    const double range = value_range(in);
    for (int sigma : {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 15, 20, 30, 50}) {
      const std::string name = sigma == 10 ? "B4" : fmt::format("{}-s{}", sigma > 10 ? "XO" : "S002", sigma);
      if ((quick && sigma != 10) || !selected(name)) continue;
      ctd::BilateralParams p;
      p.sigma_spatial = float(sigma);
      p.sigma_range = float(0.1 * range);
      // The exact filter for the PSNR where it takes seconds, not minutes (about 14 s at sigma_s 10).
      ctd::Volume exact_out;
      if (sigma == 10 || sigma <= 5) {
        p.algorithm = ctd::BilateralAlgorithm::Fused;
        exact_out = ctd::Volume(dims);
        ctd::ExecContext cuda;
        cuda.device = ctd::Device::Cuda;
        const auto exact_run = ctd::bilateral(in.view(), exact_out.view(), p, cuda);
        fmt::print("  exact fused for the PSNR: {:.1f} ms\n", exact_run.details.at("kernel_ms"));
      }
      p.algorithm = ctd::BilateralAlgorithm::Compressive;
      // M from the accuracy (50 dB) with either Gaussian, then Yano et al.'s fixed M = 3, 4, 7 (full run).
      struct Config {
        int terms;
        ctd::BilateralParams::Gaussian gaussian;
      };
      using G = ctd::BilateralParams::Gaussian;
      for (const Config c : {Config{0, G::Direct}, Config{0, G::Recursive}, Config{3, G::Direct}, Config{4, G::Direct},
                             Config{7, G::Direct}}) {
        if (c.terms > 0 && (quick || sigma > 10)) break;
        p.terms = c.terms;
        p.gaussian = c.gaussian;
        const bool recursive = c.gaussian == G::Recursive;
        ctd::Volume out(dims);
        const Timed t = time_filter(in, out, p);
        bench::Record r;
        r.setting = c.terms == 0 ? name : fmt::format("S002-s{}-M{}", sigma, c.terms);
        r.source = sigma == 10 && c.terms == 0 ? "BENCH B4 (Yano et al.)"
                   : sigma > 10                ? "direct vs recursive Gaussian"
                                               : "Yano et al. sigma_s sweep";
        r.variant = recursive ? "compressive-recursive" : "compressive";
        r.dims = dims;
        r.parameters = fmt::format("sigma_s {}, sigma_r 10% ({:.0f}), M {}{}, T {:.0f}", sigma, p.sigma_range,
                                   t.run.details.at("terms"), c.terms == 0 ? " (50 dB)" : " (fixed)",
                                   t.run.details.at("period"));
        r.kernel_ms = t.kernel_ms;
        r.end_to_end_ms = t.end_to_end_ms;
        r.end_to_end_int16_ms = t.end_to_end_int16_ms;
        if (exact_out.size()) r.psnr_db = ctd::psnr(exact_out.view(), out.view(), range);
        fmt::print("{:<14} {:<22} {:>10.3f} ms kernel {:>10.3f} ms e2e  {}  {:.1f} dB\n", r.setting, r.variant,
                   r.kernel_ms, r.end_to_end_ms, r.parameters, r.psnr_db);
        std::fflush(stdout);
        records.push_back(r);
      }
    }
  }
  bench::write_results(records, "Bilateral filter", "one __expf per unordered pair at 3.78e12/s", json_path,
                       markdown_path);

  // Compressive accuracy against the exact filter (Yano et al. Figs. 5, 8, 9): PSNR over the range.
  if (!psnr_path.empty()) {
    std::string md = "# Compressive bilateral filter (CUDA): PSNR against the exact filter\n\n"
                     "accuracy_db = 50 (the default); T and M chosen by the library; sigma_r as a fraction of the "
                     "volume's value range. GPU: " + ctd::cuda_device_name() + ", " + bench::today() + ".\n\n";
    struct Volume {
      std::string name;
      ctd::Volume v;
    };
    std::vector<Volume> volumes;
    if (selected("phantom")) volumes.push_back({"phantom 512^3", bench::phantom({512, 512, 512})});
    std::vector<char> raw;
    if (selected("CThead") && read_raw(CTD_SOURCE_DIR "/.devdata/cthead_256x256x113_u16le.raw", 256 * 256 * 113 * 2, raw)) {
      ctd::Volume v({256, 256, 113});
      for (std::int64_t i = 0; i < v.size(); ++i) {
        std::uint16_t x;
        std::memcpy(&x, raw.data() + 2 * i, 2);
        v.data()[i] = float(x);
      }
      volumes.push_back({"CThead 256x256x113", std::move(v)});
    }
    if (selected("bonsai") && read_raw(CTD_SOURCE_DIR "/.devdata/bonsai_256x256x256_u8.raw", 256 * 256 * 256, raw)) {
      ctd::Volume v({256, 256, 256});
      for (std::int64_t i = 0; i < v.size(); ++i) v.data()[i] = float(static_cast<unsigned char>(raw[i]));
      volumes.push_back({"bonsai 256^3", std::move(v)});
    }
    const double fractions[] = {0.05, 0.10, 0.15, 0.20};
    for (const Volume& volume : volumes) {
      md += "## " + volume.name + "\n\n| sigma_s | sigma_r 5% | 10% | 15% | 20% |\n|---|---|---|---|---|\n";
      for (int sigma : {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}) {
        md += fmt::format("| {} |", sigma);
        for (double fraction : fractions) {
          ctd::BilateralParams p;
          p.sigma_spatial = float(sigma);
          p.sigma_range = float(fraction * value_range(volume.v));
          ctd::ExecContext cuda;
          cuda.device = ctd::Device::Cuda;
          ctd::Volume exact_out(volume.v.dims()), approx(volume.v.dims());
          p.algorithm = ctd::BilateralAlgorithm::Fused;
          ctd::bilateral(volume.v.view(), exact_out.view(), p, cuda);
          p.algorithm = ctd::BilateralAlgorithm::Compressive;
          const auto run = ctd::bilateral(volume.v.view(), approx.view(), p, cuda);
          md += fmt::format(" {:.1f} dB (M {}) |", ctd::psnr(exact_out.view(), approx.view(), value_range(volume.v)), run.details.at("terms"));
        }
        md += "\n";
        fmt::print("{} sigma_s {} done\n", volume.name, sigma);
        std::fflush(stdout);
      }
      md += "\n";
    }
    std::ofstream(psnr_path) << md;
    fmt::print("\n{}", md);
  }
  return 0;
}
