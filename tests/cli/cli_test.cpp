// The ctdenoise command end to end: outputs, reports, exit codes, and that failures leave no
// output behind.

#include "common/test_util.hpp"

#include <ctdenoise/auto_params.hpp>
#include <ctdenoise/exec.hpp>
#include <ctdenoise/io.hpp>

#include <nlohmann/json.hpp>

#include <sys/wait.h>

#include <algorithm>
#include <fstream>
#include <limits>
#include <random>

namespace {

namespace fs = std::filesystem;
using testing_util::TempDir;

struct Result {
  int code = -1;
  std::string out, err;
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Runs the CLI with `args` (already shell-quoted where needed) from inside `dir`.
Result run(const TempDir& dir, const std::string& args) {
  const std::string command = "cd '" + dir.path().string() + "' && '" CTD_CLI_PATH "' " + args + " >'" +
                              (dir / ".stdout").string() + "' 2>'" + (dir / ".stderr").string() + "'";
  const int status = std::system(command.c_str());
  Result r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(dir / ".stdout");
  r.err = slurp(dir / ".stderr");
  fs::remove(dir / ".stdout");
  fs::remove(dir / ".stderr");
  return r;
}

// Visible files left in the folder (the captured stdout/stderr are removed by run()).
std::vector<std::string> files(const TempDir& dir) { return testing_util::entries(dir.path()); }

std::string ct_small() { return (testing_util::shared_data() / "dicom_pydicom_ct_small/CT_small.dcm").string(); }

// A small CT-like NIfTI volume in the temp folder (no shared data needed).
void make_input(const TempDir& dir, const std::string& name, ctd::Dims dims = {21, 17, 6}) {
  ctd::Volume v = testing_util::structured_volume(dims, 5);
  v.geometry.spacing = {0.8, 0.8, 2.0};
  ctd::io::ImageInfo info;
  info.pixel_type = ctd::io::PixelType::Int16;
  ctd::io::write_image(v, info, dir / name);
}

TEST(Cli, HelpAndVersion) {
  TempDir dir;
  const Result help = run(dir, "--help");
  EXPECT_EQ(help.code, 0);
  for (const char* word : {"nlm", "bilateral", "info", "demo"}) EXPECT_NE(help.out.find(word), std::string::npos) << word;
  const Result nlm_help = run(dir, "nlm --help");
  EXPECT_EQ(nlm_help.code, 0);
  EXPECT_NE(nlm_help.out.find("HU for CT"), std::string::npos) << "units are documented";
  const Result version = run(dir, "--version");
  EXPECT_EQ(version.code, 0);
  EXPECT_NE(version.out.find(CTD_EXPECTED_VERSION), std::string::npos);
}

TEST(Cli, NlmWritesOutputPreviewAndReport) {
  TempDir dir;
  make_input(dir, "in.nii.gz");
  const Result r = run(dir, "nlm in.nii.gz out.nii.gz --h 20 --search-radius 2 --threads 2 --json report.json "
                            "--preview preview.png");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(files(dir), (std::vector<std::string>{"in.nii.gz", "out.nii.gz", "preview.png", "report.json"}));
  const auto report = nlohmann::json::parse(slurp(dir / "report.json"));
  EXPECT_EQ(report["command"], "nlm");
  EXPECT_EQ(report["parameters"]["h"], 20.0);
  EXPECT_EQ(report["parameters"]["search_radius"], 2);
  EXPECT_EQ(report["device"], "cpu");
  EXPECT_EQ(report["algorithm"], "displacement");
  EXPECT_EQ(report["threads"], 2);
  EXPECT_EQ(report["input"]["dims"], (std::vector<int>{21, 17, 6}));
  EXPECT_EQ(report["output"]["pixel_type"], "int16");
  EXPECT_GT(report["timings_s"]["filter"].get<double>(), 0.0);
  // Every stage in the order it ran, adding up to no more than the total.
  std::vector<std::string> stages;
  double staged = 0;
  for (const auto& s : report["stages_s"]) {
    stages.push_back(s["stage"].get<std::string>());
    EXPECT_GE(s["seconds"].get<double>(), 0.0) << stages.back();
    staged += s["seconds"].get<double>();
  }
  EXPECT_EQ(stages, (std::vector<std::string>{"read: file", "read: convert", "filter", "write: convert", "write: file",
                                              "write: compress", "write: commit", "preview", "report"}));
  EXPECT_LE(staged, report["timings_s"]["total"].get<double>());
  EXPECT_LT(report["output"]["statistics"]["std"].get<double>(), report["input"]["statistics"]["std"].get<double>());
  const auto preview = ctd::io::read_image(dir / "preview.png");
  EXPECT_EQ(preview.info.pixel_type, ctd::io::PixelType::UInt8);
  EXPECT_EQ(preview.volume.dims().nx, 3 * 21 + 2 * 4);  // input | output | difference
}

TEST(Cli, BilateralInMillimetresOnRealDicom) {
  CTD_REQUIRE_SHARED_DATA();
  TempDir dir;
  const Result r = run(dir, "bilateral '" + ct_small() + "' out.dcm --sigma-spatial-mm 1.5 --sigma-range 40 --json r.json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto report = nlohmann::json::parse(slurp(dir / "r.json"));
  EXPECT_EQ(report["parameters"]["sigma_spatial_unit"], "mm");
  EXPECT_EQ(report["parameters"]["radius"], (std::vector<int>{7, 7, 0}));  // ceil(3 * 1.5 / 0.661468), 2D
  const auto out = ctd::io::read_image(dir / "out.dcm");
  EXPECT_EQ(out.info.attributes.at("PatientName"), "CompressedSamples^CT1");
}

TEST(Cli, CompressiveBilateralReportsItsSeries) {
  TempDir dir;
  make_input(dir, "in.nii.gz");
  const Result r = run(dir, "bilateral in.nii.gz out.nii.gz --algorithm compressive --sigma-spatial 1.5 "
                            "--sigma-range 30 --accuracy-db 45 --json r.json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto report = nlohmann::json::parse(slurp(dir / "r.json"));
  EXPECT_EQ(report["algorithm"], "compressive");
  EXPECT_EQ(report["parameters"]["accuracy_db"], 45.0);
  EXPECT_GE(report["details"]["terms"].get<double>(), 1.0);
  EXPECT_GT(report["details"]["period"].get<double>(), 0.0);
  EXPECT_EQ(run(dir, "bilateral in.nii.gz o2.nii.gz --algorithm compressive --sigma-spatial 1 --sigma-range 30 "
                     "--accuracy-db 0").code, 2);
  const Result rec = run(dir, "bilateral in.nii.gz o3.nii.gz --algorithm compressive --gaussian recursive "
                              "--sigma-spatial 2 --sigma-range 30 --json r3.json");
  ASSERT_EQ(rec.code, 0) << rec.err;
  EXPECT_EQ(nlohmann::json::parse(slurp(dir / "r3.json"))["parameters"]["gaussian"], "recursive");
  const Result fixed = run(dir, "bilateral in.nii.gz o4.nii.gz --algorithm compressive --terms 4 --sigma-spatial 1 "
                                "--sigma-range 30 --json r4.json");
  ASSERT_EQ(fixed.code, 0) << fixed.err;
  EXPECT_EQ(nlohmann::json::parse(slurp(dir / "r4.json"))["details"]["terms"], 4.0);
  EXPECT_EQ(run(dir, "bilateral in.nii.gz o5.nii.gz --algorithm compressive --terms -2 --sigma-spatial 1 "
                     "--sigma-range 30").code, 2);
  EXPECT_FALSE(std::filesystem::exists(dir / "o5.nii.gz"));
}

TEST(Cli, CompareGivesPsnrSsimNoiseAndCnr) {
  TempDir dir;
  make_input(dir, "a.nii.gz");
  ASSERT_EQ(run(dir, "nlm a.nii.gz b.nii.gz --h 20 --search-radius 2 -q").code, 0);
  Result r = run(dir, "compare a.nii.gz b.nii.gz --roi-a 1,1,1,9,8,5 --roi-b 12,9,1,20,16,5 --json c.json");
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* word : {"PSNR:", "SSIM:", "RMSE:", "noise:", "CNR:"}) EXPECT_NE(r.out.find(word), std::string::npos) << word;
  const auto report = nlohmann::json::parse(slurp(dir / "c.json"));
  EXPECT_GT(report["psnr_db"].get<double>(), 10.0);
  EXPECT_LT(report["ssim"].get<double>(), 1.0);
  EXPECT_LT(report["noise_sigma_in_flat_region"]["test"].get<double>(),
            report["noise_sigma_in_flat_region"]["reference"].get<double>());
  r = run(dir, "compare a.nii.gz a.nii.gz");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("SSIM:  1.00000"), std::string::npos) << r.out;
  make_input(dir, "small.nii.gz", {5, 5, 5});
  EXPECT_EQ(run(dir, "compare a.nii.gz small.nii.gz").code, 2) << "different sizes";
  EXPECT_EQ(run(dir, "compare a.nii.gz b.nii.gz --roi-a 1,1,1,9,8,5").code, 2) << "CNR needs two regions";
  EXPECT_EQ(run(dir, "compare a.nii.gz b.nii.gz --roi-a 1,1,1,99,8,5 --roi-b 1,1,1,2,2,2").code, 2) << "outside";
}

TEST(Cli, SimulateMakesANoisierImageAndRecordsHow) {
  TempDir dir;
  make_input(dir, "clean.nii.gz", {48, 40, 2});
  Result r = run(dir, "simulate clean.nii.gz low.nii.gz --photons 3e3 --angles 60 --fbp-window hann --seed 7 --json s.json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto report = nlohmann::json::parse(slurp(dir / "s.json"));
  EXPECT_EQ(report["parameters"]["angles"], 60);
  EXPECT_EQ(report["parameters"]["window"], "hann");
  EXPECT_EQ(report["parameters"]["seed"], 7);
  r = run(dir, "simulate clean.nii.gz g.nii.gz --gaussian-noise 30 --json g.json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto g = nlohmann::json::parse(slurp(dir / "g.json"));
  EXPECT_GT(g["output"]["statistics"]["std"].get<double>(), g["input"]["statistics"]["std"].get<double>());
  EXPECT_EQ(run(dir, "simulate clean.nii.gz x.nii.gz --photons 0").code, 2);
  EXPECT_EQ(run(dir, "simulate clean.nii.gz x.nii.gz --fbp-window cosine").code, 2);
}

TEST(Cli, AutomaticParametersComeFromTheNoiseModelAndTheStrengthScalesThem) {
  TempDir dir;
  make_input(dir, "in.nii.gz");
  Result r = run(dir, "nlm in.nii.gz out.nii.gz --search-radius 2 --noise-sigma auto --json r.json");
  ASSERT_EQ(r.code, 0) << r.err;
  auto report = nlohmann::json::parse(slurp(dir / "r.json"));
  const auto& p = report["parameters"];
  EXPECT_GT(p["noise_model"]["sigma"].get<double>(), 1.0);
  EXPECT_GT(p["noise_sigma"].get<double>(), 0.0);
  const double optimum = p["h_auto"]["optimum"].get<double>();
  EXPECT_NEAR(p["h"].get<double>(), optimum, 1e-4 * optimum);
  EXPECT_GE(p["h_auto"]["risk_curve"].size(), 5u);
  EXPECT_EQ(p["h_auto"]["noise_over_image"].get<std::string>(), "one level");
  EXPECT_EQ(p["strength"].get<double>(), 1.0);
  EXPECT_GT(report["timings_s"]["auto"].get<double>(), 0.0);
  // Twice the strength: twice the optimum (the choice is deterministic).
  r = run(dir, "nlm in.nii.gz out2.nii.gz --search-radius 2 --noise-sigma auto --strength 2 --json r2.json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto p2 = nlohmann::json::parse(slurp(dir / "r2.json"))["parameters"];
  EXPECT_NEAR(p2["h"].get<double>(), 2 * optimum, 1e-4 * optimum);
  EXPECT_EQ(p2["h_auto"]["optimum"].get<double>(), optimum);
  // A strength needs something automatic to scale, and must be positive.
  EXPECT_EQ(run(dir, "nlm in.nii.gz o3.nii.gz --h 20 --strength 2").code, 2);
  EXPECT_EQ(run(dir, "nlm in.nii.gz o3.nii.gz --strength 0").code, 2);
  EXPECT_EQ(run(dir, "bilateral in.nii.gz o3.nii.gz --sigma-spatial 1 --sigma-range 30 --strength 2").code, 2);
  r = run(dir, "bilateral in.nii.gz bf.nii.gz --sigma-spatial 1 --strength 0.5 --json b.json");
  ASSERT_EQ(r.code, 0) << r.err;
  report = nlohmann::json::parse(slurp(dir / "b.json"));
  EXPECT_NEAR(report["parameters"]["sigma_range"].get<double>(),
              0.5 * report["parameters"]["sigma_range_auto"]["optimum"].get<double>(), 1e-3);
  EXPECT_EQ(report["parameters"]["strength"].get<double>(), 0.5);
}

// Noise alone of `sigma`, white, on the grid make_input writes (0.8 x 0.8 x 2 mm), as float32.
void make_noise(const TempDir& dir, const std::string& name, ctd::Dims dims, double sigma, std::uint32_t seed,
                std::array<double, 3> spacing = {0.8, 0.8, 2.0}) {
  ctd::Volume v(dims);
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0, sigma);
  for (std::int64_t i = 0; i < v.size(); ++i) v.data()[i] = float(normal(rng));
  v.geometry.spacing = spacing;
  ctd::io::ImageInfo info;
  info.pixel_type = ctd::io::PixelType::Float32;
  ctd::io::write_image(v, info, dir / name);
}

TEST(Cli, TheNoiseCanBeMeasuredOnAnotherImage) {
  TempDir dir;
  make_input(dir, "in.nii.gz", {40, 36, 6});
  make_noise(dir, "noise.nii", {48, 44, 8}, 20, 3);
  Result r = run(dir, "nlm in.nii.gz out.nii.gz --search-radius 2 --device cpu --noise-from noise.nii --json r.json");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("from noise.nii"), std::string::npos) << r.out;
  const auto p = nlohmann::json::parse(slurp(dir / "r.json"))["parameters"];
  EXPECT_EQ(p["noise_model_from"].get<std::string>(), "noise.nii");
  // The model is the noise image's, and the choice the library's with that model on the input.
  const ctd::io::Image in = ctd::io::read_image(dir / "in.nii.gz");
  const ctd::NoiseModel model = ctd::estimate_noise_model(ctd::io::read_image(dir / "noise.nii").volume.view());
  EXPECT_NEAR(model.sigma, 20, 2);
  EXPECT_DOUBLE_EQ(p["noise_model"]["sigma"].get<double>(), model.sigma);
  ctd::NlmParams nlm;
  nlm.search_radius = 2;
  ctd::ExecContext cpu;
  cpu.device = ctd::Device::Cpu;
  EXPECT_NEAR(p["h"].get<double>(), ctd::auto_nlm_h(in.volume.view(), nlm, model, cpu).value, 1e-4 * p["h"].get<double>());
  // Without it, the input's own noise.
  r = run(dir, "nlm in.nii.gz own.nii.gz --search-radius 2 --device cpu --json own.json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto own = nlohmann::json::parse(slurp(dir / "own.json"))["parameters"];
  EXPECT_EQ(own["noise_model_from"].get<std::string>(), "input");
  EXPECT_NE(own["noise_model"]["sigma"].get<double>(), model.sigma);

  r = run(dir, "bilateral in.nii.gz bf.nii.gz --sigma-spatial 1 --device cpu --noise-from noise.nii --json b.json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto b = nlohmann::json::parse(slurp(dir / "b.json"))["parameters"];
  ctd::BilateralParams bf;
  bf.sigma_spatial = 1;
  bf.spacing = in.volume.geometry.spacing;
  EXPECT_NEAR(b["sigma_range"].get<double>(), ctd::auto_bilateral_sigma_range(in.volume.view(), bf, model, cpu).value,
              1e-4 * b["sigma_range"].get<double>());
  // A 3D noise image serves a 2D input (its in-plane grid matches).
  make_input(dir, "slice.nii.gz", {40, 36, 1});
  EXPECT_EQ(run(dir, "nlm slice.nii.gz s.nii.gz --device cpu --noise-from noise.nii").code, 0);
}

TEST(Cli, SmoothNoiseTheModelCannotConfirmIsNamedWithWhatToDo) {
  CTD_REQUIRE_SHARED_DATA();
  // CT1's chest with white noise blurred by 2 voxels (60 HU) inside its field of view: the model
  // cannot tell it from the chest's tissue and says so (docs/parameters.md, "What is not reached").
  TempDir dir;
  ctd::io::Image chest = ctd::io::read_image(testing_util::shared_data() / "dicom_wg04_ct1_ge/CT1_UNC.dcm");
  const std::vector<double> field = testing_util::blurred_noise(chest.volume.dims(), 2.0, 71);
  for (std::int64_t i = 0; i < chest.volume.size(); ++i) {
    if (chest.volume.data()[i] != -3024.0f) chest.volume.data()[i] += float(60 * field[std::size_t(i)]);
  }
  ctd::io::ImageInfo info;
  info.pixel_type = ctd::io::PixelType::Float32;
  ctd::io::write_image(chest.volume, info, dir / "chest.nii");
  const Result r = run(dir, "nlm chest.nii out.nii --search-radius 2 --device cpu --json r.json");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("nlm: note: smooth structure of "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--noise-from"), std::string::npos) << r.out;
  const auto model = nlohmann::json::parse(slurp(dir / "r.json"))["parameters"]["noise_model"];
  EXPECT_NEAR(model["unconfirmed_smooth_noise"]["sigma"].get<double>(), 60, 12);
  const Result described = run(dir, "info chest.nii");
  EXPECT_NE(described.out.find("was taken for anatomy"), std::string::npos) << described.out;
  // Noise the model reads leaves no note.
  const Result plain = run(dir, "nlm " + ct_small() + " small.nii --device cpu");
  ASSERT_EQ(plain.code, 0) << plain.err;
  EXPECT_EQ(plain.out.find("note:"), std::string::npos) << plain.out;
}

TEST(Cli, ConvertKeepsVoxelsAndGeometry) {
  TempDir dir;
  make_input(dir, "in.nii.gz");
  ASSERT_EQ(run(dir, "convert in.nii.gz out.nrrd -q").code, 0);
  const auto a = ctd::io::read_image(dir / "in.nii.gz"), b = ctd::io::read_image(dir / "out.nrrd");
  ASSERT_EQ(a.volume.dims(), b.volume.dims());
  for (std::int64_t i = 0; i < a.volume.size(); ++i) ASSERT_EQ(a.volume.data()[i], b.volume.data()[i]);
  EXPECT_EQ(b.volume.geometry.spacing[2], 2.0);
  EXPECT_EQ(run(dir, "convert in.nii.gz out.nrrd").code, 3) << "no overwrite";
}

TEST(Cli, InfoDescribesAnImage) {
  TempDir dir;
  make_input(dir, "in.nrrd");
  const Result r = run(dir, "info in.nrrd --json info.json");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("21 x 17 x 6"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("int16"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("noise:      sigma"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("noise model: sigma"), std::string::npos) << r.out;
  EXPECT_EQ(nlohmann::json::parse(slurp(dir / "info.json"))["spacing_mm"][2], 2.0);
  EXPECT_EQ(nlohmann::json::parse(slurp(dir / "info.json"))["statistics"]["non_finite_voxels"], 0);
}

// Air stored clipped at -1024 HU, as scanners store it, is named as such, and padding as padding.
TEST(Cli, InfoNamesAClipFloorApartFromPadding) {
  TempDir dir;
  ctd::Volume v({96, 80, 3});
  std::mt19937 rng(3);
  std::normal_distribution<float> noise(0.0f, 30.0f);
  for (std::int64_t z = 0; z < 3; ++z)
    for (std::int64_t y = 0; y < 80; ++y)
      for (std::int64_t x = 0; x < 96; ++x) {
        const float value = (x > 30 && x < 70 && y > 20 && y < 60 ? 40.0f : -1000.0f) + noise(rng);
        v.view()(x, y, z) = x < 10 ? -3024.0f : std::max(value, -1024.0f);
      }
  ctd::io::write_image(v, {}, dir / "clipped.mha");
  const Result r = run(dir, "info clipped.mha --json info.json");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("padding -3024 left out"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("clipped:    values clipped at -1024"), std::string::npos) << r.out;
  EXPECT_EQ(nlohmann::json::parse(slurp(dir / "info.json"))["noise_sigma"]["model"]["clipped_value"], -1024.0);
}

// An image with NaN voxels is described (its figures over the finite voxels, the others counted),
// not refused: info is where a user finds out why the filters refuse it.
TEST(Cli, InfoCountsNonFiniteVoxels) {
  TempDir dir;
  ctd::Volume v = testing_util::random_volume({40, 30, 3}, 5, -50, 50);
  v.data()[7] = std::numeric_limits<float>::quiet_NaN();
  v.data()[99] = std::numeric_limits<float>::infinity();
  ctd::io::write_image(v, {}, dir / "nan.mha");
  const Result r = run(dir, "info nan.mha --json info.json");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("over the finite voxels; 2 NaN or infinite voxel(s)"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("nan,"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("noise:      sigma"), std::string::npos) << r.out;
  const auto j = nlohmann::json::parse(slurp(dir / "info.json"));
  EXPECT_EQ(j["statistics"]["non_finite_voxels"], 2);
  EXPECT_LT(j["statistics"]["max"].get<double>(), 50.0);
}

TEST(Cli, RawInput) {
  TempDir dir;
  std::vector<std::uint16_t> voxels(9 * 8 * 3);
  for (std::size_t i = 0; i < voxels.size(); ++i) voxels[i] = std::uint16_t((i * 37) % 113 * 10);
  std::ofstream(dir / "v.raw", std::ios::binary).write(reinterpret_cast<const char*>(voxels.data()), std::streamsize(voxels.size() * 2));
  const Result r = run(dir, "bilateral v.raw out.raw --raw-dims 9,8,3 --raw-type uint16 --sigma-spatial 1 --sigma-range 50");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(fs::file_size(dir / "out.raw"), voxels.size() * 2);
  EXPECT_EQ(run(dir, "info v.raw").code, 2) << "raw without a layout is a usage error";
}

TEST(Cli, RefusesToOverwriteUnlessAsked) {
  TempDir dir;
  make_input(dir, "in.nii.gz");
  std::ofstream(dir / "out.nii.gz") << "precious";
  Result r = run(dir, "nlm in.nii.gz out.nii.gz --h 20");
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("--overwrite"), std::string::npos) << r.err;
  EXPECT_EQ(slurp(dir / "out.nii.gz"), "precious");
  r = run(dir, "nlm in.nii.gz out.nii.gz --h 20 --overwrite");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(slurp(dir / "out.nii.gz"), "precious");
  EXPECT_EQ(run(dir, "nlm in.nii.gz in.nii.gz --h 20").code, 3) << "output = input needs --overwrite";
}

// A bad output is reported before the automatic parameters' work (seconds to a minute on a large
// volume), not after it.
TEST(Cli, BadOutputsAreRefusedBeforeTheAutomaticParameters) {
  TempDir dir;
  make_input(dir, "in.nii.gz");
  for (const char* args : {"nlm in.nii.gz nowhere/out.nii.gz", "bilateral in.nii.gz out.png --sigma-spatial 1",
                           "nlm in.nii.gz out.nii.gz --preview p.jpg"}) {
    const Result r = run(dir, args);
    EXPECT_NE(r.code, 0) << args;
    EXPECT_EQ(r.out.find("noise sigma"), std::string::npos) << args << " measured the noise first:\n" << r.out;
  }
}

struct BadRun {
  const char* name;
  const char* args;
  int code;
  const char* message;  // a piece of the one-line error
};

const BadRun kBadRuns[] = {
    {"missing_input", "nlm nope.nii.gz out.nii.gz --h 10", 3, "no such file"},
    {"empty_input", "nlm empty.nii out.nii.gz --h 10", 3, "is empty"},
    {"truncated_input", "nlm truncated.nii.gz out.nii.gz --h 10", 3, "truncated"},
    {"corrupt_input", "nlm corrupt.nii out.nii.gz --h 10", 3, "corrupt"},
    {"nan_voxels", "nlm nan.nii out.nii.gz --h 10", 2, "NaN"},
    {"nan_voxels_automatic_h", "nlm nan.mha out.nii.gz", 2, "NaN"},
    {"nan_voxels_automatic_range", "bilateral nan.mha out.nii.gz --sigma-spatial 1", 2, "NaN"},
    {"nan_voxels_compared", "compare nan.nii.gz nan.mha", 2, "NaN"},
    {"automatic_h_without_noise", "nlm constant.nii.gz out.nii.gz", 2, "--h auto: the image shows no noise"},
    {"automatic_range_on_one_voxel", "bilateral one.nii.gz out.nii.gz --sigma-spatial 1", 2, "--sigma-range auto: too few usable voxels"},
    {"automatic_noise_sigma_on_one_voxel", "nlm one.nii.gz out.nii.gz --h 5 --noise-sigma auto", 2, "--noise-sigma auto: too few usable voxels"},
    {"h_zero", "nlm in.nii.gz out.nii.gz --h 0", 2, "h must be"},
    {"h_negative", "nlm in.nii.gz out.nii.gz --h -3", 2, "h must be"},
    {"h_not_a_number", "nlm in.nii.gz out.nii.gz --h abc", 2, "--h"},
    {"sigma_range_not_a_number", "bilateral in.nii.gz out.nii.gz --sigma-spatial 1 --sigma-range 3x", 2, "--sigma-range"},
    {"search_radius_zero", "nlm in.nii.gz out.nii.gz --h 10 --search-radius 0", 2, "search_radius"},
    {"patch_radius_zero", "nlm in.nii.gz out.nii.gz --h 10 --patch-radius 0", 2, "patch_radius"},
    {"noise_sigma_negative", "nlm in.nii.gz out.nii.gz --h 10 --noise-sigma -1", 2, "noise_sigma"},
    {"l1_with_gaussian", "nlm in.nii.gz out.nii.gz --h 10 --distance l1 --patch-kernel gaussian", 2, "L1"},
    {"unknown_algorithm", "nlm in.nii.gz out.nii.gz --h 10 --algorithm bogus", 2, "unknown NLM algorithm"},
    {"cuda_algorithm_on_cpu", "nlm in.nii.gz out.nii.gz --h 10 --device cpu --algorithm fused", 4, "CUDA only"},
    {"sigma_range_zero", "bilateral in.nii.gz out.nii.gz --sigma-spatial 1 --sigma-range 0", 2, "sigma_range"},
    {"sigma_spatial_missing", "bilateral in.nii.gz out.nii.gz --sigma-range 10", 2, "--sigma-spatial"},
    {"both_sigmas", "bilateral in.nii.gz out.nii.gz --sigma-spatial 1 --sigma-spatial-mm 1 --sigma-range 9", 2, "exactly one"},
    {"radius_zero", "bilateral in.nii.gz out.nii.gz --sigma-spatial 1 --sigma-range 10 --radius 2,0,2", 2, "radius"},
    {"radius_garbage", "bilateral in.nii.gz out.nii.gz --sigma-spatial 1 --sigma-range 10 --radius 2,x", 2, "--radius"},
    {"cuda_unavailable", "nlm in.nii.gz out.nii.gz --h 10 --device cuda", CTD_HAVE_CUDA ? 5 : 4, "CUDA"},
    {"unknown_device", "nlm in.nii.gz out.nii.gz --h 10 --device gpu", 2, "unknown device"},
    {"unknown_extension", "nlm in.nii.gz out.jpg --h 10", 4, "output format"},
    {"png_for_a_volume", "nlm in.nii.gz out.png --h 10", 4, "PNG"},
    {"missing_output_folder", "nlm in.nii.gz nowhere/out.nii.gz --h 10", 3, "does not exist"},
    {"bad_window", "nlm in.nii.gz out.nii.gz --h 10 --preview p.png --window 40", 2, "--window"},
    {"preview_not_png", "nlm in.nii.gz out.nii.gz --h 10 --preview p.jpg", 2, ".png"},
    {"raw_size_mismatch", "nlm in.nii.gz out.nii.gz --h 10 --raw-dims 5,5,5 --raw-type uint16", 3, "bytes"},
    {"unknown_subcommand", "denoise in.nii.gz", 2, ""},
    {"dicom_folder_without_images", "nlm emptydir out.nii.gz --h 10", 3, "no readable DICOM"},
    {"noise_from_missing", "nlm in.nii.gz out.nii.gz --noise-from nope.nii", 3, "--noise-from: "},
    {"noise_from_a_slice_for_a_volume", "nlm in.nii.gz out.nii.gz --noise-from noise_slice.nii", 2, "one slice"},
    {"noise_from_another_grid", "bilateral in.nii.gz out.nii.gz --sigma-spatial 1 --noise-from noise_1mm.nii", 2, "voxels are 1 x 1 x 1 mm"},
    {"noise_from_without_noise", "nlm in.nii.gz out.nii.gz --noise-from constant_grid.nii", 2, "constant_grid.nii shows no noise"},
    {"noise_from_without_automatic_values", "nlm in.nii.gz out.nii.gz --h 10 --noise-from noise_1mm.nii", 2, "use --h or --noise-sigma auto"},
};

class CliBadInput : public ::testing::TestWithParam<BadRun> {};

TEST_P(CliBadInput, OneLineMessageExitCodeAndNoOutput) {
  const BadRun& c = GetParam();
  if (std::string(c.name) == "cuda_unavailable" && !ctd::cuda_device_name().empty()) GTEST_SKIP() << "a GPU is here";
  TempDir dir;
  make_input(dir, "in.nii.gz");
  std::ofstream(dir / "empty.nii").close();
  std::ofstream(dir / "corrupt.nii") << std::string(2000, 'z');
  make_input(dir, "truncated.nii.gz", {40, 40, 8});
  fs::resize_file(dir / "truncated.nii.gz", fs::file_size(dir / "truncated.nii.gz") / 2);
  ctd::Volume nan = testing_util::random_volume({6, 5, 4}, 3);
  nan.data()[17] = std::numeric_limits<float>::quiet_NaN();
  ctd::io::write_image(nan, {}, dir / "nan.nii");
  ctd::io::write_image(nan, {}, dir / "nan.mha");  // MetaImage keeps NaN voxels (the NIfTI reader refuses them)
  nan.data()[17] = 1.0f;
  ctd::io::write_image(nan, {}, dir / "nan.nii.gz");  // the same image without its NaN
  ctd::Volume constant({9, 8, 3});
  for (std::int64_t i = 0; i < constant.size(); ++i) constant.data()[i] = 100.0f;
  ctd::io::write_image(constant, {}, dir / "constant.nii.gz");
  ctd::io::write_image(ctd::Volume({1, 1, 1}), {}, dir / "one.nii.gz");
  fs::create_directory(dir / "emptydir");
  make_noise(dir, "noise_slice.nii", {30, 30, 1}, 10, 1);
  make_noise(dir, "noise_1mm.nii", {30, 30, 6}, 10, 2, {1.0, 1.0, 1.0});
  make_noise(dir, "constant_grid.nii", {30, 30, 6}, 0, 3);
  const auto before = files(dir);

  const Result r = run(dir, c.args);
  EXPECT_EQ(r.code, c.code) << c.args << "\nstderr: " << r.err;
  EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
  if (r.code != 0 && std::string(c.name) != "unknown_subcommand") {
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line: " << r.err;
  }
  EXPECT_EQ(files(dir), before) << "nothing written, nothing left behind";
}

INSTANTIATE_TEST_SUITE_P(Cases, CliBadInput, ::testing::ValuesIn(kBadRuns), testing_util::case_name);

TEST(Cli, MixedDicomSeriesFolderIsRefusedWithAList) {
  TempDir dir;
  ctd::io::ImageInfo info;
  info.pixel_type = ctd::io::PixelType::Int16;
  ctd::io::write_image(testing_util::structured_volume({8, 8, 2}, 1), info, dir / "a");
  ctd::io::write_image(testing_util::structured_volume({8, 8, 3}, 2), info, dir / "b");
  fs::create_directory(dir / "mixed");
  for (const char* s : {"a", "b"})
    for (const auto& f : fs::directory_iterator(dir / s)) fs::copy_file(f.path(), dir / "mixed" / (std::string(s) + f.path().filename().string()));
  const Result r = run(dir, "nlm mixed out.nii.gz --h 10");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("2 DICOM series"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--series"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "out.nii.gz"));
}

TEST(Cli, DemoWritesVolumePreviewAndReportAndKeepsThem) {
  TempDir dir;
  Result r = run(dir, "demo --output-dir demo --quiet");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(testing_util::entries(dir / "demo"), (std::vector<std::string>{"denoised.nii.gz", "preview.png", "report.json"}));
  EXPECT_NE(r.out.find("preview.png"), std::string::npos) << "says where it wrote";
  const auto report = nlohmann::json::parse(slurp(dir / "demo" / "report.json"));
  EXPECT_EQ(report["input"]["dims"], (std::vector<int>{122, 101, 112}));
  r = run(dir, "demo --output-dir demo --quiet");
  EXPECT_EQ(r.code, 3) << "a second run does not overwrite without --overwrite";
  EXPECT_EQ(run(dir, "demo --output-dir demo --quiet --overwrite").code, 0);
}

}  // namespace
