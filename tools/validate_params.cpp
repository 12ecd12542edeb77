// The validation matrix of the automatic parameters (docs/parameters.md): real CT, several noise
// textures and doses, several radii, 2D and 3D, NLM and the bilateral filter. For each case it
// compares the automatic value with the best of a sweep against the noise-free reference.
//
//   validate_params --data ../shared/data [--reduced] [--json out.json] [--markdown out.md]
//
// Run by scripts/validate_params.sh (the full matrix) and by CTest (--reduced).

#include <ctdenoise/auto_params.hpp>
#include <ctdenoise/error.hpp>
#include <ctdenoise/io.hpp>
#include <ctdenoise/metrics.hpp>
#include <ctdenoise/simulate.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
using i64 = std::int64_t;
using nlohmann::json;

constexpr double kDataRange = 2000;  // HU: PSNR and SSIM over the soft-tissue-to-bone range

struct Scan {
  std::string name;
  ctd::Volume volume;  // HU, below -1024 kept as padding
};

ctd::Volume crop(const ctd::Volume& v, i64 x0, i64 y0, i64 z0, ctd::Dims size) {
  ctd::Volume out(size, v.geometry);
  const ctd::Dims d = v.dims();
  for (i64 z = 0; z < size.nz; ++z)
    for (i64 y = 0; y < size.ny; ++y)
      for (i64 x = 0; x < size.nx; ++x) out.view()(x, y, z) = v.data()[((z0 + z) * d.ny + y0 + y) * d.nx + x0 + x];
  return out;
}

// The central box of `size` (clipped to the volume).
ctd::Volume centre_crop(const ctd::Volume& v, ctd::Dims size, i64 z_centre = -1) {
  const ctd::Dims d = v.dims();
  size = {std::min(size.nx, d.nx), std::min(size.ny, d.ny), std::min(size.nz, d.nz)};
  const i64 zc = z_centre < 0 ? d.nz / 2 : z_centre;
  const i64 z0 = std::clamp<i64>(zc - size.nz / 2, 0, d.nz - size.nz);
  return crop(v, (d.nx - size.nx) / 2, (d.ny - size.ny) / 2, z0, size);
}

ctd::Volume read_cthead(const fs::path& folder) {
  // 113 headerless big-endian uint16 slices, 12-bit values; CT numbers + 1024 (MANIFEST).
  ctd::Volume v({256, 256, 113});
  v.geometry.spacing = {1, 1, 2};
  for (int s = 0; s < 113; ++s) {
    std::ifstream f(folder / fmt::format("CThead.{}", s + 1), std::ios::binary);
    std::vector<unsigned char> bytes(256 * 256 * 2);
    if (!f.read(reinterpret_cast<char*>(bytes.data()), std::streamsize(bytes.size()))) {
      throw ctd::Error(ctd::ErrorKind::Io, fmt::format("cannot read CThead slice {}", s + 1));
    }
    for (i64 i = 0; i < 256 * 256; ++i) v.data()[s * 256 * 256 + i] = float((bytes[2 * i] << 8 | bytes[2 * i + 1]) - 1024);
  }
  return v;
}

struct Texture {
  std::string name;  // e.g. "white", "FBP ramp 360 views", "FBP ramp 360 views, z-correlated"
  std::string kind;  // white | fbp
  double level = 0;  // white: sigma (HU); fbp: photons per bin for 90 views (scaled by 90 / views)
  int views = 0;
  ctd::FbpWindow window = ctd::FbpWindow::Ramp;
  bool z_correlated = false;
};

// z-smoothing by [1 2 1] / 4 (mirror border): a reconstruction with overlapping slices.
ctd::Volume smooth_z(const ctd::Volume& v) {
  ctd::Volume out(v.dims(), v.geometry);
  const ctd::Dims d = v.dims();
  const i64 plane = d.nx * d.ny;
  for (i64 z = 0; z < d.nz; ++z) {
    const i64 zm = z > 0 ? z - 1 : std::min<i64>(1, d.nz - 1), zp = z + 1 < d.nz ? z + 1 : std::max<i64>(0, d.nz - 2);
    for (i64 i = 0; i < plane; ++i) {
      out.data()[z * plane + i] =
          0.25f * v.data()[zm * plane + i] + 0.5f * v.data()[z * plane + i] + 0.25f * v.data()[zp * plane + i];
    }
  }
  return out;
}

// (reference, noisy) for a clean scan and a texture; the seed varies with the dose.
std::pair<ctd::Volume, ctd::Volume> make_pair(const ctd::Volume& clean, const Texture& t, std::uint64_t seed) {
  if (t.kind == "white") {
    ctd::Volume noisy = clean;
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> noise(0, t.level);
    for (i64 i = 0; i < noisy.size(); ++i) {
      if (clean.data()[i] >= -1024) noisy.data()[i] = float(clean.data()[i] + noise(rng));
    }
    return {clean, noisy};
  }
  ctd::LowDoseParams p;
  p.angles = t.views;
  p.window = t.window;
  p.seed = seed;
  p.photons = std::numeric_limits<double>::infinity();
  ctd::Volume reference = ctd::simulate_low_dose(clean, p);
  p.photons = t.level * 90.0 / t.views;
  ctd::Volume noisy = ctd::simulate_low_dose(clean, p);
  if (t.z_correlated) return {smooth_z(reference), smooth_z(noisy)};
  return {reference, noisy};
}

struct Setting {
  std::string filter;  // nlm | bilateral
  std::string label;
  ctd::NlmParams nlm;
  ctd::BilateralParams bf;
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

std::vector<Setting> settings(bool flat, bool reduced) {
  std::vector<Setting> out;
  auto nlm = [&](int rs, int rp, ctd::PatchDistance distance = ctd::PatchDistance::L2) {
    Setting s;
    s.filter = "nlm";
    s.nlm.search_radius = rs;
    s.nlm.patch_radius = rp;
    s.nlm.distance = distance;
    s.label = fmt::format("NLM search {} patch {}{}", rs, rp, distance == ctd::PatchDistance::L1 ? " L1" : "");
    out.push_back(s);
  };
  auto bf = [&](float sigma, ctd::SpatialUnit unit) {
    Setting s;
    s.filter = "bilateral";
    s.bf.sigma_spatial = sigma;
    s.bf.spatial_unit = unit;
    s.label = fmt::format("bilateral sigma_s {} {}", sigma, unit == ctd::SpatialUnit::Voxel ? "vox" : "mm");
    out.push_back(s);
  };
  if (reduced) {
    nlm(flat ? 5 : 3, 1);
    bf(1.5f, ctd::SpatialUnit::Voxel);
    return out;
  }
  nlm(5, 1);
  nlm(3, 1);
  nlm(flat ? 7 : 4, 2);
  if (flat) nlm(5, 2, ctd::PatchDistance::L1);
  bf(1, ctd::SpatialUnit::Voxel);
  bf(2, ctd::SpatialUnit::Voxel);
  bf(1.5f, ctd::SpatialUnit::Millimetre);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::string data_dir = "../shared/data", json_path, markdown_path;
  bool reduced = false;
  int threads = 0;
  std::string only, dump;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw std::runtime_error(a + " needs a value");
      return argv[++i];
    };
    if (a == "--data") data_dir = next();
    else if (a == "--json") json_path = next();
    else if (a == "--markdown") markdown_path = next();
    else if (a == "--reduced") reduced = true;
    else if (a == "--threads") threads = std::stoi(next());
    else if (a == "--only") only = next();  // a substring of the case names to run
    else if (a == "--dump") dump = next();  // folder for each case's reference and noisy image (float32 raw)
    else {
      fmt::print(stderr, "usage: validate_params [--data DIR] [--reduced] [--json FILE] [--markdown FILE] [--only TEXT]\n");
      return 2;
    }
  }
  const fs::path data(data_dir);
  ctd::ExecContext context;
  context.threads = threads;
  context.device = ctd::Device::Cpu;

  try {
    // The scans: 2D slices (256 x 256 central crops) and 3D boxes.
    auto read = [&](const char* rel) { return ctd::io::read_image(data / rel).volume; };
    const ctd::Volume siemens = read("dicom_series_siemens_biograph_mct_20slices/uncompressed_derived");
    const ctd::Volume ct1 = read("dicom_wg04_ct1_ge/CT1_UNC.dcm");
    const ctd::Volume catphan = read("dicom_catphan_philips_brilliance64/dicom_file01.dcm");
    const ctd::Volume cthead = read_cthead(data / "cthead_stanford");
    const ctd::Volume totalseg = read("nifti_totalseg_example_ct/example_ct.nii.gz");
        std::vector<Scan> scans2d = {
        {"Siemens abdomen", centre_crop(siemens, {256, 256, 1}, 10)},
        {"WG-04 CT1 chest", centre_crop(ct1, {256, 256, 1})},
        {"Catphan", centre_crop(catphan, {256, 256, 1})},
        {"CThead", centre_crop(cthead, {256, 256, 1}, 60)},
    };
    std::vector<Scan> scans3d = {
        {"Siemens abdomen", centre_crop(siemens, {112, 112, 16})},
        {"CThead", centre_crop(cthead, {112, 112, 16}, 60)},
        {"TotalSegmentator abdomen", centre_crop(totalseg, {112, 96, 16})},
    };
    if (reduced) {
      scans2d = {{"Siemens abdomen", centre_crop(siemens, {128, 128, 1}, 10)}};
      scans3d = {{"CThead", centre_crop(cthead, {64, 64, 10}, 60)}};
    }
    std::vector<Texture> textures2d, textures3d;
    for (double sigma : {20.0, 40.0, 60.0}) textures2d.push_back({fmt::format("white sigma {}", sigma), "white", sigma});
    for (int views : {90, 360, 1152})
      for (double photons : {4e6, 1e6, 2.5e5})
        textures2d.push_back({fmt::format("FBP ramp {} views, I0 {:.0e}", views, photons), "fbp", photons, views});
    for (double photons : {4e6, 1e6, 2.5e5})
      textures2d.push_back({fmt::format("FBP Hann 360 views, I0 {:.0e}", photons), "fbp", photons, 360, ctd::FbpWindow::Hann});
    for (double sigma : {20.0, 40.0, 60.0}) textures3d.push_back({fmt::format("white sigma {}", sigma), "white", sigma});
    for (double photons : {4e6, 1e6, 2.5e5})
      textures3d.push_back({fmt::format("FBP ramp 360 views, I0 {:.0e}", photons), "fbp", photons, 360});
    for (double photons : {4e6, 1e6, 2.5e5}) {
      Texture t{fmt::format("FBP ramp 360 views, I0 {:.0e}, z-correlated", photons), "fbp", photons, 360};
      t.z_correlated = true;
      textures3d.push_back(t);
    }
    if (reduced) {
      textures2d = {{"white sigma 20", "white", 20.0}, {"FBP ramp 90 views, I0 1e+06", "fbp", 1e6, 90}};
      textures3d = {{"FBP ramp 360 views, I0 1e+06, z-correlated", "fbp", 1e6, 360}};
      textures3d.back().z_correlated = true;
    }

    json cases = json::array();
    for (const bool flat : {true, false}) {
      for (const Scan& scan : flat ? scans2d : scans3d) {
        for (std::size_t ti = 0; ti < (flat ? textures2d : textures3d).size(); ++ti) {
          const Texture& t = (flat ? textures2d : textures3d)[ti];
          const std::string case_name = fmt::format("{} {} | {}", flat ? "2D" : "3D", scan.name, t.name);
          bool any = false;
          for (const Setting& s : settings(flat, reduced)) any = any || (case_name + " | " + s.label).find(only) != std::string::npos;
          if (!any) continue;
          const auto start = std::chrono::steady_clock::now();
          const auto [reference, noisy] = make_pair(scan.volume, t, 1000 + ti);
          const Quality noisy_q = quality(reference, noisy);
          if (!dump.empty()) {
            std::string stem = case_name;
            for (char& c : stem) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
            std::ofstream(fs::path(dump) / (stem + "_ref.raw"), std::ios::binary)
                .write(reinterpret_cast<const char*>(reference.data()), std::streamsize(reference.size() * 4));
            std::ofstream(fs::path(dump) / (stem + "_noisy.raw"), std::ios::binary)
                .write(reinterpret_cast<const char*>(noisy.data()), std::streamsize(noisy.size() * 4));
          }
          for (const Setting& s : settings(flat, reduced)) {
            if ((case_name + " | " + s.label).find(only) == std::string::npos) continue;
            ctd::AutoChoice choice;
            auto choose = [&](const ctd::NoiseModel& model) {
              if (s.filter == "nlm") return ctd::auto_nlm_h(noisy.view(), s.nlm, model, context);
              ctd::BilateralParams p = s.bf;
              p.spacing = noisy.geometry.spacing;
              return ctd::auto_bilateral_sigma_range(noisy.view(), p, model, context);
            };
            choice = choose(ctd::estimate_noise_model(noisy.view()));
            const ctd::Volume auto_out = run(s, noisy, choice.value, context);
            const Quality auto_q = quality(reference, auto_out);
            const auto [best_value, best_psnr] = best_of_sweep(
                [&](double v) { return ctd::psnr(reference.view(), run(s, noisy, v, context).view(), kDataRange); },
                choice.value);
            const Quality best_q = quality(reference, run(s, noisy, best_value, context));
            const double reference_noise = ctd::estimate_noise_model(reference.view()).sigma;
            // The oracle: the noise model measured on the added noise alone (noisy - reference).
            ctd::Volume added = noisy;
            for (i64 i = 0; i < added.size(); ++i) added.data()[i] -= reference.data()[i];
            double sum2 = 0;
            i64 n2 = 0;
            for (i64 i = 0; i < added.size(); ++i) {
              if (reference.data()[i] >= -1024) {
                sum2 += double(added.data()[i]) * added.data()[i];
                ++n2;
              }
            }
            const double true_sigma = std::sqrt(sum2 / double(std::max<i64>(1, n2)));
            const ctd::NoiseModel oracle_model = ctd::estimate_noise_model(added.view());
            const ctd::AutoChoice oracle = choose(oracle_model);
            const Quality oracle_q = quality(reference, run(s, noisy, oracle.value, context));
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
                      {"added_noise_sigma", oracle_model.sigma},
                      {"oracle", {{"value", oracle.value}, {"psnr", oracle_q.psnr}, {"ssim", oracle_q.ssim}}},
                      {"auto_seconds", choice.seconds}};
            cases.push_back(c);
            fmt::print("{} | {}: noise {:.1f} (pr {:.1f}, ref {:.1f}) | auto {:.1f} -> {:.2f} dB {:.4f} | best {:.1f} -> "
                       "{:.2f} dB {:.4f} | noisy {:.2f} {:.4f} | gap {:+.2f} dB {:+.4f} | oracle noise {:.1f} (true {:.1f}) h {:.1f} gap {:+.2f}\n",
                       case_name, s.label, choice.noise.sigma, choice.noise.pseudo_residual_sigma, reference_noise,
                       choice.value, auto_q.psnr, auto_q.ssim, best_value, best_q.psnr, best_q.ssim, noisy_q.psnr,
                       noisy_q.ssim, auto_q.psnr - best_q.psnr, auto_q.ssim - best_q.ssim, oracle_model.sigma, true_sigma, oracle.value,
                       oracle_q.psnr - best_q.psnr);
            if (std::getenv("CTD_CURVE")) {
              for (const auto& pt : oracle.curve) {
                const ctd::Volume f = run(s, noisy, pt.value, context);
                double mse = 0;
                for (i64 i = 0; i < f.size(); ++i) mse += double(f.data()[i] - reference.data()[i]) * (f.data()[i] - reference.data()[i]);
                fmt::print("   h {:8.2f}  SURE {:9.2f}  true {:9.2f}\n", pt.value, pt.mse, mse / double(f.size()));
              }
            }
            std::fflush(stdout);
          }
          (void)start;
        }
      }
    }
    if (!json_path.empty()) std::ofstream(json_path) << cases.dump(1) << "\n";
    (void)markdown_path;
  } catch (const std::exception& e) {
    fmt::print(stderr, "validate_params: {}\n", e.what());
    return 1;
  }
  return 0;
}
