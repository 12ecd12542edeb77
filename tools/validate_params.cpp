// The validation matrix of the automatic parameters (docs/parameters.md): real CT, several noise
// textures and doses, several radii, 2D and 3D, NLM and the bilateral filter. For each case it
// compares the automatic value with the best of a sweep against the noise-free reference.
//
//   validate_params --data ../shared/data [--reduced | --extra | --whole | --volumes | --heldout] [--json out.json] [--only TEXT ...] [--user-settings] [--oracle] [--models-only | --auto-only [--auto-quality] | --truth-score] [--curves] [--device cpu|auto]
//
// --truth-score scores the automatic value against the truth too, the reference's own noise taken off
// (truth_score.hpp).
//
// --device auto runs the filters (the sweeps and the automatic choice) on the GPU when there is
// one: the full matrix then takes minutes instead of an hour.
// Run by scripts/validate_params.sh (the full matrix) and by CTest (--reduced).

#include "core/auto_sample.hpp"
#include "truth_score.hpp"
#include "validation_cases.hpp"

#include <ctdenoise/auto_params.hpp>
#include <ctdenoise/error.hpp>
#include <ctdenoise/io.hpp>
#include <ctdenoise/metrics.hpp>
#include <ctdenoise/noise.hpp>
#include <ctdenoise/simulate.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <optional>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <vector>

using validation::centre_crop;
using validation::read_bonsai;
using validation::read_cthead;
using validation::read_headsq;
using validation::make_pair;
using validation::Scan;
using validation::Texture;

namespace {

namespace fs = std::filesystem;
using i64 = std::int64_t;
using nlohmann::json;

constexpr double kDataRange = 2000;  // HU: PSNR and SSIM over the soft-tissue-to-bone range

struct Setting {
  std::string filter;  // nlm | bilateral
  std::string label;
  ctd::NlmParams nlm;
  ctd::BilateralParams bf;
  bool noise_sigma_auto = false;  // NLM's bias term 2 sigma^2 from the noise model (--noise-sigma auto)
};

struct Quality {
  double psnr = 0, ssim = 0;
};

Quality quality(const ctd::Volume& reference, const ctd::Volume& test) {
  return {ctd::psnr(reference.view(), test.view(), kDataRange), ctd::ssim(reference.view(), test.view(), kDataRange)};
}

ctd::Volume run(const Setting& s, const ctd::Volume& in, double value, const ctd::ExecContext& context) {
  ctd::Volume out(in.dims(), in.geometry);
  if (s.filter == "nlm") {
    ctd::NlmParams p = s.nlm;
    p.h = float(value);
    ctd::nlm(in.view(), out.view(), p, context);
  } else {
    ctd::BilateralParams p = s.bf;
    p.sigma_range = float(value);
    p.spacing = in.geometry.spacing;
    ctd::bilateral(in.view(), out.view(), p, context);
  }
  return out;
}

// The best PSNR over value = centre * 2^(k/4), k = -4..4, extended while the best is at an end,
// refined by 2^(+-1/8) around the best.
std::pair<double, double> best_of_sweep(const std::function<double(double)>& psnr_at, double centre) {
  std::map<double, double> psnr;  // k -> PSNR
  auto eval = [&](double k) {
    if (!psnr.count(k)) psnr[k] = psnr_at(centre * std::exp2(k / 4));
  };
  for (int k = -4; k <= 4; ++k) eval(k);
  for (int step = 0; step < 24; ++step) {
    auto best = std::max_element(psnr.begin(), psnr.end(), [](auto& a, auto& b) { return a.second < b.second; });
    if (best->first == psnr.begin()->first) eval(best->first - 1);
    else if (best->first == psnr.rbegin()->first) eval(best->first + 1);
    else break;
  }
  auto best = std::max_element(psnr.begin(), psnr.end(), [](auto& a, auto& b) { return a.second < b.second; });
  const double k = best->first;
  eval(k - 0.5);
  eval(k + 0.5);
  best = std::max_element(psnr.begin(), psnr.end(), [](auto& a, auto& b) { return a.second < b.second; });
  return {centre * std::exp2(best->first / 4), best->second};
}

// The settings of the matrix (the radii), or with `user` those it leaves out that users
// run: the CLI's default NLM in 3D (search 5, patch 1), the bias term from the noise model, the
// Gaussian patch kernel, the centre weight "max" and wider bilateral windows.
std::vector<Setting> settings(bool flat, bool reduced, bool user) {
  auto nlm = [](int rs, int rp, ctd::PatchDistance distance = ctd::PatchDistance::L2) {
    Setting s;
    s.filter = "nlm";
    s.nlm.search_radius = rs;
    s.nlm.patch_radius = rp;
    s.nlm.distance = distance;
    s.label = fmt::format("NLM search {} patch {}{}", rs, rp, distance == ctd::PatchDistance::L1 ? " L1" : "");
    return s;
  };
  auto bf = [](float sigma, ctd::SpatialUnit unit) {
    Setting s;
    s.filter = "bilateral";
    s.bf.sigma_spatial = sigma;
    s.bf.spatial_unit = unit;
    s.label = fmt::format("bilateral sigma_s {} {}", sigma, unit == ctd::SpatialUnit::Voxel ? "vox" : "mm");
    return s;
  };
  auto noise_sigma_auto = [](Setting s) {
    s.noise_sigma_auto = true;
    s.label += " noise-sigma auto";
    return s;
  };
  auto gaussian = [](Setting s) {
    s.nlm.patch_kernel = ctd::PatchKernel::Gaussian;
    s.label += " gaussian";
    return s;
  };
  auto centre_max = [](Setting s) {
    s.nlm.centre_weight = ctd::CentreWeight::Max;
    s.label += " centre max";
    return s;
  };
  if (user) {
    if (flat) {
      return {noise_sigma_auto(nlm(5, 1)), gaussian(nlm(5, 2)), centre_max(nlm(5, 1)), bf(2.5f, ctd::SpatialUnit::Voxel),
              bf(3, ctd::SpatialUnit::Millimetre)};
    }
    return {nlm(5, 1), noise_sigma_auto(gaussian(nlm(3, 2))), centre_max(nlm(3, 1)), bf(2, ctd::SpatialUnit::Voxel),
            bf(3, ctd::SpatialUnit::Millimetre)};
  }
  if (reduced) return {nlm(flat ? 5 : 3, 1), bf(1.5f, ctd::SpatialUnit::Voxel)};
  std::vector<Setting> out;
  if (flat) {
    out = {nlm(5, 1), nlm(7, 2), nlm(5, 2, ctd::PatchDistance::L1)};
  } else {
    out = {nlm(2, 1), nlm(3, 1), nlm(3, 2)};
  }
  out.push_back(bf(1, ctd::SpatialUnit::Voxel));
  out.push_back(bf(1.5f, ctd::SpatialUnit::Millimetre));
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::string data_dir = "../shared/data", json_path;
  bool reduced = false, user_settings = false, oracle_too = false, extra = false, whole = false, volumes = false, heldout = false;
  double check_gap = -1;
  int threads = 0;
  std::vector<std::string> only;  // a case runs when its name holds each of them
  std::vector<std::string> truth_misses;  // --truth-score: the cases that miss the goal against the truth
  std::string dump;
  bool models_only = false, auto_only = false, auto_quality = false, curves = false, truth_score = false;
  ctd::Device device = ctd::Device::Cpu;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw std::runtime_error(a + " needs a value");
      return argv[++i];
    };
    if (a == "--data") data_dir = next();
    else if (a == "--json") json_path = next();
    else if (a == "--reduced") reduced = true;
    else if (a == "--extra") extra = true;  // textures outside the list instead: smooth, Shepp-Logan, signal-dependent
    else if (a == "--whole") whole = true;  // whole 512 x 512 slices instead of crops
    else if (a == "--volumes") volumes = true;  // whole 3D volumes, large enough to be sampled
    else if (a == "--heldout") heldout = true;  // scans and textures that no rule was fitted on
    else if (a == "--user-settings") user_settings = true;  // the settings users run that the matrix leaves out (settings())
    else if (a == "--oracle") oracle_too = true;  // also the choice with the noise model of the added noise alone
    else if (a == "--check") check_gap = std::stod(next());  // exit 1 when a case's PSNR gap is larger, or below the noisy input (--truth-score: corrected, and SSIM within 0.005)
    else if (a == "--threads") threads = std::stoi(next());
    else if (a == "--only") only.push_back(next());  // a substring of the case names to run (repeatable: each)
    else if (a == "--models-only") models_only = true;  // each case's noise model only (which rule it took), no sweep
    else if (a == "--auto-only") auto_only = true;  // each case's automatic value only, no sweep (bench/auto_against_curves.py)
    else if (a == "--auto-quality") auto_only = auto_quality = true;  // and its PSNR and SSIM (for sets swept without --curves)
    else if (a == "--curves") curves = true;  // the SSIM of every value swept too (for studying the choice)
    else if (a == "--truth-score") truth_score = true;  // the automatic value scored against the truth too (truth_score.hpp)
    else if (a == "--dump") dump = next();  // folder for each case's reference and noisy image (float32 raw)
    else if (a == "--device") {
      const std::string v = next();
      if (v != "cpu" && v != "auto") throw std::runtime_error("--device must be cpu or auto");
      device = v == "cpu" ? ctd::Device::Cpu : ctd::Device::Auto;
    }
    else {
      fmt::print(stderr, "usage: validate_params [--data DIR] [--reduced | --extra | --whole | --volumes | --heldout] [--json FILE] [--only TEXT ...] [--oracle] [--models-only | --auto-only [--auto-quality] | --truth-score] [--curves] [--device cpu|auto]\n");
      return 2;
    }
  }
  const fs::path data(data_dir);
  if (!fs::exists(data / "dicom_series_siemens_biograph_mct_20slices")) {
    fmt::print("validate_params: no test data in {}: skipped\n", data_dir);
    return 77;  // CTest's skip code
  }
  ctd::ExecContext context;
  context.threads = threads;
  context.device = device;

  try {
    // The scans of the set asked for: 2D slices and 3D boxes, each read only where a set uses it.
    auto read = [&](const char* rel) { return ctd::io::read_image(data / rel).volume; };
    auto read_siemens = [&] { return read("dicom_series_siemens_biograph_mct_20slices/uncompressed_derived"); };
    auto read_ct1 = [&] { return read("dicom_wg04_ct1_ge/CT1_UNC.dcm"); };
    auto read_catphan = [&] { return read("dicom_catphan_philips_brilliance64/dicom_file01.dcm"); };
    auto read_totalseg = [&] { return read("nifti_totalseg_example_ct/example_ct.nii.gz"); };
    std::vector<Scan> scans2d, scans3d;
    if (heldout) {  // a check on what no rule has seen: VTK's FullHead slice and its quarter-resolution volume
      ctd::Volume fullhead = read("fullhead15_vtk/fullhead15.png");
      fullhead.geometry.spacing = {0.9375, 0.9375, 1.5};
      for (i64 i = 0; i < fullhead.size(); ++i) fullhead.data()[i] -= 1024;
      scans2d = {{"FullHead, whole slice", fullhead}};
      scans3d = {{"headsq, whole volume", read_headsq(data / "headsq_vtk")},
                 {"Bonsai, 128 x 128 x 64 box", centre_crop(read_bonsai(data / "bonsai_volvis/bonsai_256x256x256_uint8.raw.gz"), {128, 128, 64})}};
    } else if (volumes) {  // whole volumes over 2^17 voxels: the automatic choice runs on a sample of blocks
      scans3d = {{"Siemens abdomen, whole volume", read_siemens()},
                 {"CThead, 40 whole slices", centre_crop(read_cthead(data / "cthead_stanford"), {256, 256, 40}, 60)},
                 {"TotalSegmentator abdomen, whole volume", read_totalseg()}};
    } else if (whole) {  // whole slices: air, the table and noise that varies across the field (CThead:
                         // added after the rules were set, as a check on a scan none of them had seen)
      scans2d = {{"Siemens abdomen, whole slice", centre_crop(read_siemens(), {512, 512, 1}, 10)},
                 {"WG-04 CT1 chest, whole slice", centre_crop(read_ct1(), {512, 512, 1})},
                 {"Catphan, whole slice", centre_crop(read_catphan(), {512, 512, 1})},
                 {"CThead, whole slice", centre_crop(read_cthead(data / "cthead_stanford"), {256, 256, 1}, 60)}};
    } else if (reduced) {
      const ctd::Volume siemens = read_siemens();
      scans2d = {{"Siemens abdomen", centre_crop(siemens, {160, 160, 1}, 10)}};
      scans3d = {{"Siemens abdomen", centre_crop(siemens, {112, 112, 8})}};
    } else {  // the matrix and the robustness textures: 256 x 256 central crops and 96 x 96 x 12 boxes
      const ctd::Volume siemens = read_siemens();
      scans2d = {{"Siemens abdomen", centre_crop(siemens, {256, 256, 1}, 10)},
                 {"WG-04 CT1 chest", centre_crop(read_ct1(), {256, 256, 1})},
                 {"Catphan", centre_crop(read_catphan(), {256, 256, 1})}};
      scans3d = {{"Siemens abdomen", centre_crop(siemens, {96, 96, 12})},
                 {"CThead", centre_crop(read_cthead(data / "cthead_stanford"), {96, 96, 12}, 60)},
                 {"TotalSegmentator abdomen", centre_crop(read_totalseg(), {96, 96, 12})}};
    }
    // Noise levels (the "doses"): 30, 45 and 60 HU, at least about three times the scans' own.
    const std::vector<double> levels = reduced ? std::vector<double>{45.0} : std::vector<double>{30.0, 45.0, 60.0};
    std::vector<Texture> textures2d, textures3d;
    auto add = [&](std::vector<Texture>& to, const std::string& name, const std::string& kind, int views,
                   ctd::FbpWindow window, bool z_correlated) {
      for (double level : levels) {
        Texture t{fmt::format("{}, sigma {}", name, level), kind, level, views, window, z_correlated};
        to.push_back(t);
      }
    };
    auto blurred = [&](std::vector<Texture>& to, double blur, bool z) {
      for (double level : levels) {
        to.push_back(Texture{fmt::format("white blurred {} vox{}, sigma {}", blur, z ? " 3D" : "", level), "blurred",
                             level, 0, ctd::FbpWindow::Ramp, false, blur, z ? blur : 0.0});
      }
    };
    if (extra) {
      // Robustness: textures the matrix does not hold, run apart (--extra).
      blurred(textures2d, 0.7, false);
      blurred(textures2d, 1.2, false);
      add(textures2d, "FBP Shepp-Logan 360 views", "fbp", 360, ctd::FbpWindow::SheppLogan, false);
      add(textures2d, "signal-dependent white", "signal", 0, ctd::FbpWindow::Ramp, false);
      blurred(textures3d, 0.7, true);
      blurred(textures3d, 0.7, false);
      add(textures3d, "signal-dependent white", "signal", 0, ctd::FbpWindow::Ramp, false);
      blurred(textures3d, 1.2, true);
      // Appended last (the others keep their seeds): a sharp kernel's texture, white noise less
      // its blur by a Gaussian of 1 voxel (negative correlation with the next voxel).
      for (auto* to : {&textures2d, &textures3d}) {
        for (double level : levels) {
          to->push_back(Texture{fmt::format("white sharpened, sigma {}", level), "sharpened", level, 0,
                                ctd::FbpWindow::Ramp, false, 1.0});
        }
      }
    } else if (heldout) {
      // Textures no rule was fitted on: a ring-shaped noise power spectrum (band-pass), noise
      // stretched along x, thick slices (white in-plane, blurred along z) and 720-view Hann FBP.
      for (double level : levels) {
        for (auto* to : {&textures2d, &textures3d}) {
          to->push_back(Texture{fmt::format("white, sigma {}", level), "white", level});
          Texture band{fmt::format("band-pass 0.6-1.8 vox, sigma {}", level), "bandpass", level};
          band.blur = 0.6;
          band.band_outer = 1.8;
          to->push_back(band);
        }
        Texture stretched{fmt::format("white blurred 1.2 x 0.3 vox, sigma {}", level), "blurred", level};
        stretched.blur = 1.2;
        stretched.blur_y = 0.3;
        textures2d.push_back(stretched);
        textures2d.push_back(Texture{fmt::format("FBP Hann 720 views, sigma {}", level), "fbp", level, 720, ctd::FbpWindow::Hann});
        Texture thick{fmt::format("white blurred along z 1 vox, sigma {}", level), "blurred", level};
        thick.blur_z = 1.0;
        textures3d.push_back(thick);
        textures3d.push_back(Texture{fmt::format("FBP Hann 720 views, z-correlated, sigma {}", level), "fbp", level, 720,
                                     ctd::FbpWindow::Hann, true});
      }
    } else if (volumes) {
      add(textures3d, "white", "white", 0, ctd::FbpWindow::Ramp, false);
      add(textures3d, "FBP ramp 360 views", "fbp", 360, ctd::FbpWindow::Ramp, false);
      add(textures3d, "FBP ramp 360 views, z-correlated", "fbp", 360, ctd::FbpWindow::Ramp, true);
      add(textures3d, "FBP Hann 360 views", "fbp", 360, ctd::FbpWindow::Hann, false);
    } else if (whole) {
      add(textures2d, "white", "white", 0, ctd::FbpWindow::Ramp, false);
      add(textures2d, "FBP ramp 360 views", "fbp", 360, ctd::FbpWindow::Ramp, false);
      add(textures2d, "FBP Hann 360 views", "fbp", 360, ctd::FbpWindow::Hann, false);
      blurred(textures2d, 1.2, false);
      add(textures2d, "signal-dependent white", "signal", 0, ctd::FbpWindow::Ramp, false);
    } else if (reduced) {
      add(textures2d, "white", "white", 0, ctd::FbpWindow::Ramp, false);
      add(textures3d, "white", "white", 0, ctd::FbpWindow::Ramp, false);
      add(textures2d, "FBP ramp 360 views", "fbp", 360, ctd::FbpWindow::Ramp, false);
      add(textures3d, "FBP ramp 360 views, z-correlated", "fbp", 360, ctd::FbpWindow::Ramp, true);
    } else {
      add(textures2d, "white", "white", 0, ctd::FbpWindow::Ramp, false);
      add(textures3d, "white", "white", 0, ctd::FbpWindow::Ramp, false);
      for (int views : {90, 360, 1152}) add(textures2d, fmt::format("FBP ramp {} views", views), "fbp", views, ctd::FbpWindow::Ramp, false);
      add(textures2d, "FBP Hann 360 views", "fbp", 360, ctd::FbpWindow::Hann, false);
      add(textures3d, "FBP ramp 360 views", "fbp", 360, ctd::FbpWindow::Ramp, false);
      add(textures3d, "FBP ramp 360 views, z-correlated", "fbp", 360, ctd::FbpWindow::Ramp, true);
      add(textures3d, "FBP Hann 360 views", "fbp", 360, ctd::FbpWindow::Hann, false);  // last: the others keep their seeds
    }

    auto chosen = [&](const std::string& name) {
      return std::all_of(only.begin(), only.end(), [&](const std::string& t) { return name.find(t) != std::string::npos; });
    };
    json cases = json::array();
    for (const bool flat : {true, false}) {
      for (const Scan& scan : flat ? scans2d : scans3d) {
        for (std::size_t ti = 0; ti < (flat ? textures2d : textures3d).size(); ++ti) {
          const Texture& t = (flat ? textures2d : textures3d)[ti];
          const std::string case_name = fmt::format("{} {} | {}", flat ? "2D" : "3D", scan.name, t.name);
          bool any = false;
          for (const Setting& s : settings(flat, reduced, user_settings)) any = any || chosen(case_name + " | " + s.label);
          if (!any) continue;
          const auto [reference, noisy] = make_pair(scan.volume, t, 1000 + ti);
          if (!dump.empty()) {
            std::string stem = case_name;
            for (char& c : stem) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
            std::ofstream(fs::path(dump) / (stem + "_ref.raw"), std::ios::binary)
                .write(reinterpret_cast<const char*>(reference.data()), std::streamsize(reference.size() * 4));
            std::ofstream(fs::path(dump) / (stem + "_noisy.raw"), std::ios::binary)
                .write(reinterpret_cast<const char*>(noisy.data()), std::streamsize(noisy.size() * 4));
          }
          // Once per case, for all its settings: the noisy image's model, the input's quality and the
          // reference's own noise (for the sweeps), and with --oracle the model of the added noise
          // alone (noisy - reference).
          const ctd::NoiseModel noisy_model = ctd::estimate_noise_model(noisy.view());
          const bool sweeps = !models_only && !auto_only && !truth_score;
          const Quality noisy_q = sweeps ? quality(reference, noisy) : Quality{};
          const std::optional<ctd::NoiseModel> reference_model =
              sweeps || truth_score ? std::optional(ctd::estimate_noise_model(reference.view())) : std::nullopt;
          const double reference_noise = sweeps ? reference_model->sigma : 0.0;
          std::optional<ctd::NoiseModel> oracle_model;
          if (oracle_too) {
            ctd::Volume added = noisy;
            for (i64 i = 0; i < added.size(); ++i) added.data()[i] -= reference.data()[i];
            oracle_model = ctd::estimate_noise_model(added.view());
          }
          for (const Setting& setting : settings(flat, reduced, user_settings)) {
            if (!chosen(case_name + " | " + setting.label)) continue;
            Setting s = setting;
            if (s.noise_sigma_auto) s.nlm.noise_sigma = float(ctd::auto_nlm_noise_sigma(noisy_model, s.nlm, noisy.dims()));
            auto choose = [&](const ctd::NoiseModel& model) {
              if (s.filter == "nlm") return ctd::auto_nlm_h(noisy.view(), s.nlm, model, context);
              ctd::BilateralParams p = s.bf;
              p.spacing = noisy.geometry.spacing;
              return ctd::auto_bilateral_sigma_range(noisy.view(), p, model, context);
            };
            if (models_only) {
              // Which rule the model took and what it read; with --oracle, the added noise's own model too.
              auto print_model = [&](const char* what, const ctd::NoiseModel& m) {
                // The share of the noise a tile's level reading sees, as the automatic parameters compute it.
                const double gain = ctd::detail::pseudo_residual_gain(m), in_plane_gain = ctd::detail::pseudo_residual_gain(m, false);
                fmt::print("{} {} | {}: gain {:.4f} in-plane {:.4f} sigma {:.2f} pr {:.2f} fell_back {} first_lags {} rho x {:.2f},{:.2f} y {:.2f} z {:.2f},{:.2f} blocks {} padding {} clipped {} unconfirmed {:.2f} width {:.2f}\n",
                           what, case_name, s.label, gain, in_plane_gain, m.sigma, m.pseudo_residual_sigma, m.fell_back_to_white,
                           m.read_from_first_lags, m.correlation(1, 0, 0), m.correlation(2, 0, 0), m.correlation(0, 1, 0),
                           m.correlation(0, 0, 1), m.correlation(0, 0, 2), m.flat_blocks, m.excluded_value, m.clipped_value,
                           m.unconfirmed_smooth_sigma, m.unconfirmed_smooth_width);
              };
              print_model("MODEL", noisy_model);
              if (oracle_model) print_model("ORACLE", *oracle_model);
              std::fflush(stdout);
              break;
            }
            const ctd::AutoChoice choice = choose(noisy_model);
            if (truth_score) {
              const std::string name = case_name + " | " + s.label;
              if (!validation::print_truth_score(name, choice.value, reference, noisy, *reference_model,
                                                 [&](const ctd::Volume& in, double v) { return run(s, in, v, context); },
                                                 kDataRange, check_gap >= 0 ? check_gap : 0.5)) {
                truth_misses.push_back(name);
              }
              continue;
            }
            if (auto_only) {
              fmt::print("AUTO {} | {}: {:.4f}\n", case_name, s.label, choice.value);
              fmt::print("NOISE {} | {}: {} (scan fit {:.2f} beyond intensity {:.2f} texture {:.3f} source {:.0f})\n", case_name, s.label, choice.noise_over_image, choice.scan_fit, choice.scan_fit_beyond_intensity, choice.scan_texture_distance, choice.scan_source);
              if (auto_quality) {
                const Quality q = quality(reference, run(s, noisy, choice.value, context));
                fmt::print("QUALITY {} | {}: {:.4f} {:.5f}\n", case_name, s.label, q.psnr, q.ssim);
              }
              if (oracle_model) fmt::print("ORACLE {} | {}: {:.4f}\n", case_name, s.label, choose(*oracle_model).value);
              std::fflush(stdout);
              continue;
            }
            const ctd::Volume auto_out = run(s, noisy, choice.value, context);
            const Quality auto_q = quality(reference, auto_out);
            json sweep = json::array();  // every value swept: [value, PSNR, SSIM (with --curves, else null)]
            const auto [best_value, best_psnr] = best_of_sweep(
                [&](double v) {
                  const ctd::Volume out = run(s, noisy, v, context);
                  const double psnr = ctd::psnr(reference.view(), out.view(), kDataRange);
                  sweep.push_back({v, psnr, curves ? json(ctd::ssim(reference.view(), out.view(), kDataRange)) : json(nullptr)});
                  return psnr;
                },
                choice.value);
            json risk_curve = json::array();
            for (const ctd::RiskPoint& r : choice.curve) risk_curve.push_back({r.value, r.mse});
            const Quality best_q = quality(reference, run(s, noisy, best_value, context));
            // The oracle (--oracle): the choice with the added noise's own model.
            json oracle_json;
            std::string oracle_text;
            if (oracle_model) {
              const ctd::AutoChoice oracle = choose(*oracle_model);
              const Quality oracle_q = quality(reference, run(s, noisy, oracle.value, context));
              oracle_json = {{"noise_sigma", oracle_model->sigma}, {"value", oracle.value}, {"psnr", oracle_q.psnr}, {"ssim", oracle_q.ssim}};
              oracle_text = fmt::format(" | oracle noise {:.1f} h {:.1f} gap {:+.2f}", oracle_model->sigma, oracle.value, oracle_q.psnr - best_q.psnr);
            }
            json c = {{"dim", flat ? "2D" : "3D"},
                      {"scan", scan.name},
                      {"dims", {scan.volume.dims().nx, scan.volume.dims().ny, scan.volume.dims().nz}},
                      {"texture", t.name},
                      {"setting", s.label},
                      {"filter", s.filter},
                      {"noise_sigma", choice.noise.sigma},
                      {"noise_pseudo_residual_sigma", choice.noise.pseudo_residual_sigma},
                      {"reference_noise_sigma", reference_noise},
                      {"auto_value", choice.value},
                      {"best_value", best_value},
                      {"noisy", {{"psnr", noisy_q.psnr}, {"ssim", noisy_q.ssim}}},
                      {"auto", {{"psnr", auto_q.psnr}, {"ssim", auto_q.ssim}}},
                      {"best", {{"psnr", best_q.psnr}, {"ssim", best_q.ssim}}},
                      {"noise_share", choice.noise_share},
                      {"noise_over_image", choice.noise_over_image},
                      {"risk_level", std::sqrt(choice.noisy_mse)},  // the noise sigma the risk was estimated for
                      {"auto_seconds", choice.seconds},
                      {"auto_optimum", choice.optimum},
                      {"risk_curve", risk_curve},
                      {"sweep", sweep}};
            if (oracle_too) c["oracle"] = oracle_json;
            cases.push_back(c);
            if (!json_path.empty()) std::ofstream(json_path) << cases.dump(1) << "\n";  // after every case: a long run can be read early
            fmt::print("{} | {}: noise {:.1f} (pr {:.1f}, ref {:.1f}) | auto {:.1f} -> {:.2f} dB {:.4f} | best {:.1f} -> "
                       "{:.2f} dB {:.4f} | noisy {:.2f} {:.4f} | gap {:+.2f} dB {:+.4f}{}\n",
                       case_name, s.label, choice.noise.sigma, choice.noise.pseudo_residual_sigma, reference_noise,
                       choice.value, auto_q.psnr, auto_q.ssim, best_value, best_q.psnr, best_q.ssim, noisy_q.psnr,
                       noisy_q.ssim, auto_q.psnr - best_q.psnr, auto_q.ssim - best_q.ssim, oracle_text);
            std::fflush(stdout);
          }
        }
      }
    }
    if (!json_path.empty()) std::ofstream(json_path) << cases.dump(1) << "\n";
    if (check_gap >= 0) {
      int failures = 0;
      for (const std::string& name : truth_misses) {
        fmt::print(stderr, "FAIL {}: misses the goal against the truth\n", name);
        ++failures;
      }
      for (const json& c : cases) {
        const double gap = c["best"]["psnr"].get<double>() - c["auto"]["psnr"].get<double>();
        const bool below = c["auto"]["psnr"].get<double>() < c["noisy"]["psnr"].get<double>() ||
                           c["auto"]["ssim"].get<double>() < c["noisy"]["ssim"].get<double>();
        if (gap > check_gap || below) {
          fmt::print(stderr, "FAIL {} | {} | {}: gap {:.2f} dB{}\n", c["scan"].get<std::string>(), c["texture"].get<std::string>(),
                     c["setting"].get<std::string>(), gap, below ? ", below the noisy input" : "");
          ++failures;
        }
      }
      if (failures > 0) return 1;
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "validate_params: {}\n", e.what());
    return 1;
  }
  return 0;
}
