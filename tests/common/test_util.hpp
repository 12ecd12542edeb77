#pragma once
// Inputs and comparisons shared by the tests (never by src/).

#include "reference/reference.hpp"

#include <ctdenoise/error.hpp>
#include <ctdenoise/volume.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <cstdint>
#include <cstring>
#include <algorithm>
#include <random>
#include <sstream>
#include <cstdlib>
#include <string>
#include <string_view>
#include <unistd.h>
#include <vector>

namespace testing_util {

// CTD_TEST_VARIANTS=a,b limits the variants a test loops over (the sanitizer runs use it: racecheck
// is slow on some kernels); unset: all.
inline bool variant_selected(std::string_view name) {
  const char* list = std::getenv("CTD_TEST_VARIANTS");
  if (list == nullptr || *list == 0) return true;
  // Split by hand: GCC 12 warns (-Wrestrict, falsely) on "," + string + "," here.
  std::string_view rest(list);
  while (!rest.empty()) {
    const std::size_t comma = rest.find(',');
    if (rest.substr(0, comma) == name) return true;
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return false;
}

// Seeded uniform noise in [lo, hi).
inline ctd::Volume random_volume(ctd::Dims dims, std::uint32_t seed, float lo = 0.0f, float hi = 100.0f) {
  ctd::Volume v(dims);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  for (std::int64_t i = 0; i < v.size(); ++i) v.data()[i] = dist(rng);
  return v;
}

// A piecewise-smooth pattern with edges plus noise: what CT looks like to a denoiser.
// `i % 113` (a prime) breaks any tiling symmetry.
inline ctd::Volume structured_volume(ctd::Dims dims, std::uint32_t seed) {
  ctd::Volume v(dims);
  std::mt19937 rng(seed);
  std::normal_distribution<float> noise(0.0f, 8.0f);
  for (std::int64_t z = 0; z < dims.nz; ++z)
    for (std::int64_t y = 0; y < dims.ny; ++y)
      for (std::int64_t x = 0; x < dims.nx; ++x) {
        const std::int64_t i = (z * dims.ny + y) * dims.nx + x;
        const float step = (x + y > dims.nx / 2 + z) ? 60.0f : -40.0f;
        v.data()[i] = step + static_cast<float>(i % 113) * 0.3f + noise(rng);
      }
  return v;
}

inline ref::Image to_ref(const ctd::Volume& v) {
  ref::Image im{static_cast<int>(v.dims().nx), static_cast<int>(v.dims().ny), static_cast<int>(v.dims().nz), {}};
  im.values.assign(v.data(), v.data() + v.size());
  return im;
}

struct Comparison {
  double relative_l2 = 0, max_abs = 0;
  std::int64_t worst = -1;
  std::string where(const ctd::Dims& d) const {
    std::ostringstream s;
    s << "max |error| " << max_abs << " at (x=" << worst % d.nx << ", y=" << (worst / d.nx) % d.ny
      << ", z=" << worst / (d.nx * d.ny) << "), relative L2 " << relative_l2;
    return s.str();
  }
};

inline Comparison compare(const ctd::Volume& got, const std::vector<double>& expected) {
  Comparison c;
  double diff2 = 0, ref2 = 0;
  for (std::int64_t i = 0; i < got.size(); ++i) {
    const double e = std::fabs(double(got.data()[i]) - expected[static_cast<std::size_t>(i)]);
    diff2 += e * e;
    ref2 += expected[static_cast<std::size_t>(i)] * expected[static_cast<std::size_t>(i)];
    if (!(e <= c.max_abs)) {  // also catches NaN
      c.max_abs = e;
      c.worst = i;
    }
  }
  c.relative_l2 = std::sqrt(diff2 / std::max(ref2, 1e-300));
  return c;
}

inline bool bit_identical(const ctd::Volume& a, const ctd::Volume& b) {
  return a.dims() == b.dims() && std::equal(a.data(), a.data() + a.size(), b.data(),
                                            [](float x, float y) { return std::memcmp(&x, &y, sizeof x) == 0; });
}

// The volume's voxels rounded to int16, and the volume set to those values: the same input both
// ways, for comparing int16 and float32 calls.
inline std::vector<std::int16_t> round_to_int16(ctd::Volume& v) {
  std::vector<std::int16_t> out(std::size_t(v.size()));
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i] = std::int16_t(std::lround(v.data()[i]));
    v.data()[i] = float(out[i]);
  }
  return out;
}

// Runs `body` and checks it throws ctd::Error of `kind`.
template <class F>
::testing::AssertionResult throws_kind(F&& body, ctd::ErrorKind kind) {
  try {
    body();
  } catch (const ctd::Error& e) {
    if (e.kind() == kind) return ::testing::AssertionSuccess() << e.what();
    return ::testing::AssertionFailure() << "threw kind '" << ctd::to_string(e.kind()) << "': " << e.what();
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "threw a non-ctd exception: " << e.what();
  }
  return ::testing::AssertionFailure() << "did not throw";
}

// A fresh folder under the system temp dir, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    static int counter = 0;
    path_ = std::filesystem::temp_directory_path() /
            ("ctdenoise-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

// Names in `dir` (not recursive), sorted: to check that failures leave nothing behind.
inline std::vector<std::string> entries(const std::filesystem::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// The shared real-data folder (../shared/data), or empty when it is not there.
inline std::filesystem::path shared_data() {
  const std::filesystem::path dir = CTD_TEST_DATA_DIR;
  return std::filesystem::is_directory(dir) ? dir : std::filesystem::path();
}

#define CTD_REQUIRE_SHARED_DATA()                                                                    \
  if (testing_util::shared_data().empty()) GTEST_SKIP() << "no real CT data at " CTD_TEST_DATA_DIR

// PSNR of `approx` against `exact` over `range`, in dB (999 when identical); the tests' own,
// independent of ctd::psnr.
inline double psnr(const ctd::Volume& exact, const ctd::Volume& approx, double range) {
  double se = 0;
  for (std::int64_t i = 0; i < exact.size(); ++i) se += std::pow(double(exact.data()[i]) - approx.data()[i], 2);
  const double rmse = std::sqrt(se / double(exact.size()));
  return rmse == 0 ? 999.0 : 20 * std::log10(range / rmse);
}

// Sets an environment variable (value null: unsets it) for one scope, then unsets it: the CUDA
// backend reads a few for tests (CTD_NLM_FUSED_2D, CTD_NLM_FUSED_3D, CTD_COMPRESSIVE_STEPS).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    value ? setenv(name, value, 1) : unsetenv(name);
  }
  ~ScopedEnv() { unsetenv(name_); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
};

// Test name from a parameter's `name` field, for INSTANTIATE_TEST_SUITE_P.
struct CaseName {
  template <class P>
  std::string operator()(const ::testing::TestParamInfo<P>& param_info) const {
    std::string name = param_info.param.name;
    for (char& ch : name) {
      if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
    }
    return name;
  }
};
inline constexpr CaseName case_name{};

// White noise of unit variance filtered in-plane along x by `taps_x`, then along y by `taps_y`
// (odd numbers, each normalised to unit gain on variance; borders clamped), slice by slice.
inline std::vector<double> filtered_noise(const ctd::Dims& d, const std::vector<double>& taps_x,
                                          const std::vector<double>& taps_y, unsigned seed) {
  std::vector<double> field(std::size_t(d.count()));
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0, 1);
  for (double& f : field) f = normal(rng);
  for (const bool along_x : {true, false}) {
    const std::vector<double>& taps = along_x ? taps_x : taps_y;
    const std::int64_t reach = std::int64_t(taps.size() / 2);
    double energy = 0;
    for (double t : taps) energy += t * t;
    std::vector<double> out(field.size());
    for (std::int64_t z = 0; z < d.nz; ++z)
      for (std::int64_t y = 0; y < d.ny; ++y)
        for (std::int64_t x = 0; x < d.nx; ++x) {
          double acc = 0;
          for (std::int64_t k = -reach; k <= reach; ++k) {
            const std::int64_t xx = along_x ? std::clamp<std::int64_t>(x + k, 0, d.nx - 1) : x;
            const std::int64_t yy = along_x ? y : std::clamp<std::int64_t>(y + k, 0, d.ny - 1);
            acc += taps[std::size_t(k + reach)] * field[std::size_t((z * d.ny + yy) * d.nx + xx)];
          }
          out[std::size_t((z * d.ny + y) * d.nx + x)] = acc / std::sqrt(energy);
        }
    field = std::move(out);
  }
  return field;
}

// The same taps along x and y.
inline std::vector<double> filtered_noise(const ctd::Dims& d, const std::vector<double>& taps, unsigned seed) {
  return filtered_noise(d, taps, taps, seed);
}

// White noise of unit variance blurred in-plane by a Gaussian of `width` voxels (out to 3.5
// widths), slice by slice.
inline std::vector<double> blurred_noise(const ctd::Dims& d, double width, unsigned seed) {
  const int reach = int(std::ceil(3.5 * width));
  std::vector<double> taps;
  for (int k = -reach; k <= reach; ++k) taps.push_back(std::exp(-0.5 * k * k / (width * width)));
  return filtered_noise(d, taps, seed);
}

// `clean` with `noise` added inside its field of view: its padding (-3024, below -1024) stays.
inline ctd::Volume noise_inside(const ctd::Volume& clean, const ctd::Volume& noise) {
  ctd::Volume out = clean;
  for (std::int64_t i = 0; i < out.size(); ++i)
    if (clean.data()[i] > -1024) out.data()[i] += noise.data()[i];
  return out;
}

// `clean` plus white noise of `sigma`, optionally smoothed along x by [1 4 1] / 6 (then scaled back
// to sigma); padding (values below -1024) is left as it is.
inline ctd::Volume add_noise(const ctd::Volume& clean, double sigma, bool correlated, std::uint32_t seed) {
  const ctd::Dims d = clean.dims();
  std::vector<double> white(std::size_t(d.count()));
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0, 1);
  for (double& w : white) w = normal(rng);
  ctd::Volume out = clean;
  const double norm = std::sqrt(1.0 + 16.0 + 1.0) / 6.0;
  for (std::int64_t i = 0; i < d.count(); ++i) {
    if (clean.data()[i] < -1024) continue;
    double n = white[std::size_t(i)];
    if (correlated) {
      const std::int64_t x = i % d.nx;
      const double left = white[std::size_t(x > 0 ? i - 1 : i + 1)], right = white[std::size_t(x + 1 < d.nx ? i + 1 : i - 1)];
      n = (left + 4 * n + right) / 6.0 / norm;
    }
    out.data()[i] = float(clean.data()[i] + sigma * n);
  }
  return out;
}

// White noise filtered along x and y by `taps` (filtered_noise), times sigma.
inline ctd::Volume smooth_field(ctd::Dims d, const std::vector<double>& taps, double sigma, std::uint32_t seed) {
  const std::vector<double> field = filtered_noise(d, taps, seed);
  ctd::Volume v(d);
  for (std::int64_t i = 0; i < d.count(); ++i) v.data()[i] = float(sigma * field[std::size_t(i)]);
  return v;
}

// Gaussian taps of `sigma` voxels out to 4 sigma (not normalised).
inline std::vector<double> gaussian_taps(double sigma) {
  const int r = int(std::ceil(4 * sigma));
  std::vector<double> taps(std::size_t(2 * r + 1));
  for (int k = -r; k <= r; ++k) taps[std::size_t(k + r)] = std::exp(-0.5 * k * k / (sigma * sigma));
  return taps;
}

}  // namespace testing_util
