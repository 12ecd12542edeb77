// The automatic parameters' reads on the GPU (src/cuda/image_reads.cu) give what the host's give,
// to the last bit: each read, the noise model (every path of it) and the automatic h and sigma_r
// of an image in device memory.

#include "common/test_util.hpp"

#include "core/image_reads.hpp"

#include <ctdenoise/auto_params.hpp>
#include <ctdenoise/noise.hpp>

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

namespace {

using i64 = std::int64_t;
using testing_util::bit_identical;
using testing_util::random_volume;

#define CTD_REQUIRE_CUDA_DEVICE() \
  if (ctd::cuda_device_name().empty()) GTEST_SKIP() << "no CUDA device"

// Float voxels in device memory for the test's lifetime.
class DeviceImage {
 public:
  explicit DeviceImage(const ctd::Volume& v) : dims_(v.dims()) {
    EXPECT_EQ(cudaMalloc(&data_, std::size_t(v.size()) * sizeof(float)), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(data_, v.data(), std::size_t(v.size()) * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
  }
  ~DeviceImage() { cudaFree(data_); }
  const float* data() const { return data_; }
  const ctd::Dims& dims() const { return dims_; }

 private:
  float* data_ = nullptr;
  ctd::Dims dims_;
};

bool same(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }

void expect_same_model(const ctd::NoiseModel& a, const ctd::NoiseModel& b, const std::string& what) {
  EXPECT_EQ(a.sigma, b.sigma) << what;
  EXPECT_EQ(a.pseudo_residual_sigma, b.pseudo_residual_sigma) << what;
  EXPECT_EQ(a.radius_xy, b.radius_xy) << what;
  EXPECT_EQ(a.radius_z, b.radius_z) << what;
  EXPECT_EQ(a.covariance, b.covariance) << what;
  EXPECT_EQ(a.samples, b.samples) << what;
  EXPECT_EQ(a.flat_blocks, b.flat_blocks) << what;
  EXPECT_TRUE(same(a.excluded_value, b.excluded_value)) << what;
  EXPECT_TRUE(same(a.clipped_value, b.clipped_value)) << what;
  EXPECT_EQ(a.fell_back_to_white, b.fell_back_to_white) << what;
  EXPECT_EQ(a.read_from_first_lags, b.read_from_first_lags) << what;
}

// A body (an ellipse with an insert) in padding, with noise of the given in-plane blur (voxels;
// 0: white) and correlation with the next slice, and smooth anatomy of the given strength.
ctd::Volume phantom(ctd::Dims d, std::uint32_t seed, double sigma, double blur, double slice_mix, double anatomy) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0, 1);
  std::vector<double> white(std::size_t(d.count()));
  for (double& w : white) w = normal(rng);
  std::vector<double> noise = white;
  if (blur > 0) {
    const int r = int(std::ceil(3 * blur));
    std::vector<double> taps(std::size_t(2 * r + 1));
    double norm = 0;
    for (int i = -r; i <= r; ++i) norm += taps[std::size_t(i + r)] = std::exp(-i * i / (2 * blur * blur));
    for (double& t : taps) t /= norm;
    for (int axis = 0; axis < 2; ++axis) {
      std::vector<double> out(noise.size(), 0);
      for (i64 z = 0; z < d.nz; ++z)
        for (i64 y = 0; y < d.ny; ++y)
          for (i64 x = 0; x < d.nx; ++x)
            for (int i = -r; i <= r; ++i) {
              const i64 xx = axis == 0 ? std::clamp<i64>(x + i, 0, d.nx - 1) : x, yy = axis == 1 ? std::clamp<i64>(y + i, 0, d.ny - 1) : y;
              out[std::size_t((z * d.ny + y) * d.nx + x)] += taps[std::size_t(i + r)] * noise[std::size_t((z * d.ny + yy) * d.nx + xx)];
            }
      noise = out;
    }
  }
  ctd::Volume v(d);
  double power = 0;
  for (double n : noise) power += n * n;
  const double scale = sigma / std::sqrt(power / double(noise.size()));
  for (i64 z = 0; z < d.nz; ++z)
    for (i64 y = 0; y < d.ny; ++y)
      for (i64 x = 0; x < d.nx; ++x) {
        const std::size_t i = std::size_t((z * d.ny + y) * d.nx + x);
        const double next = z + 1 < d.nz ? noise[i + std::size_t(d.nx * d.ny)] : noise[i];
        const double fx = (x - d.nx / 2.0) / (d.nx / 2.0), fy = (y - d.ny / 2.0) / (d.ny / 2.0);
        double value = -1024;
        if (fx * fx / 0.8 + fy * fy / 0.6 < 1) {
          value = 40 + anatomy * std::sin(x / 3.1) * std::cos(y / 4.3 + z) + scale * (noise[i] + slice_mix * next);
          if ((fx - 0.3) * (fx - 0.3) + fy * fy < 0.03) value += 300;
        }
        v.data()[i] = float(value);
      }
  return v;
}

TEST(ImageReadsCuda, EachReadGivesTheHostsBits) {
  CTD_REQUIRE_CUDA_DEVICE();
  const ctd::Dims d{45, 37, 9};
  ctd::Volume v = phantom(d, 3, 20, 0.8, 0.4, 5);
  // The padding value scattered in the body too, as clipped air is where a scanner stores its
  // floor outside the field of view as well: left out everywhere, or in its regions only.
  for (i64 i = 0; i < v.size(); ++i)
    if (v.data()[i] > -1000 && v.data()[i] < 25) v.data()[i] = -1024;
  const DeviceImage image(v);
  const auto host = ctd::detail::host_reads(v.view());
  const auto gpu = ctd::detail::device_reads(image.data(), d, nullptr);
  EXPECT_EQ(gpu->every(5, d.count() / 5), host->every(5, d.count() / 5));
  for (const ctd::detail::Excluded& padding : {ctd::detail::Excluded{-1024.0f}, ctd::detail::Excluded({-1024.0f}, -1024.0f)}) {
    for (const auto estimator : {ctd::NoiseEstimator::PseudoResidual, ctd::NoiseEstimator::WaveletMad})
      for (const auto& [z0, nz, step] : {std::tuple<i64, i64, i64>{0, 9, 1}, {2, 5, 7}, {4, 1, 3}, {3, 2, 2}}) {
        const auto a = host->residuals(estimator, z0, nz, padding, step), b = gpu->residuals(estimator, z0, nz, padding, step);
        ASSERT_EQ(a.size(), b.size());
        ASSERT_GT(a.size(), 10u);
        for (std::size_t i = 0; i < a.size(); ++i) {
          ASSERT_EQ(a[i].value, b[i].value) << i;
          ASSERT_EQ(a[i].range, b[i].range) << i;
        }
      }
    std::vector<ctd::detail::LagArea> areas;
    for (i64 z = 0; z < d.nz; z += 2)
      for (i64 y = -4; y < d.ny; y += 7)
        for (i64 x = -6; x < d.nx; x += 5) areas.push_back({x, y, z});
    std::vector<ctd::detail::Lag> lags;
    for (int dz = 0; dz <= 2; ++dz)
      for (int dy = -3; dy <= 3; ++dy)
        for (int dx = -3; dx <= 3; ++dx) lags.push_back({dx, dy, dz});
    lags.push_back({13, 0, 0});
    const std::size_t n = areas.size() * lags.size();
    for (const ctd::detail::Lag shift : {ctd::detail::Lag{0, 0, 0}, ctd::detail::Lag{3, 0, 0}, ctd::detail::Lag{0, -3, 1}}) {
      std::vector<double> host_sums(n), gpu_sums(n);
      std::vector<i64> host_counts(n), gpu_counts(n);
      host->lag_sums(areas, lags, shift, padding, host_sums.data(), host_counts.data());
      gpu->lag_sums(areas, lags, shift, padding, gpu_sums.data(), gpu_counts.data());
      EXPECT_EQ(gpu_sums, host_sums) << shift.dx << shift.dy << shift.dz;
      EXPECT_EQ(gpu_counts, host_counts) << shift.dx << shift.dy << shift.dz;
    }
  }
  EXPECT_EQ(gpu->unusable_per_block({1, 2, 0}, 8, 3, 5, 4, 3, -1024.0f), host->unusable_per_block({1, 2, 0}, 8, 3, 5, 4, 3, -1024.0f));
  const std::vector<ctd::detail::Corner> corners{{0, 0, 0}, {37, 29, 6}, {11, 3, 2}, {20, 20, 1}, {5, 17, 0}, {30, 1, 4}};
  ctd::Volume a({24, 16, 3}), b({24, 16, 3});
  host->copy_blocks(corners, {8, 8, 3}, a.view());
  gpu->copy_blocks(corners, {8, 8, 3}, b.view());
  EXPECT_TRUE(bit_identical(a, b));
}

TEST(ImageReadsCuda, TheNoiseModelIsTheHostsOnEveryPath) {
  CTD_REQUIRE_CUDA_DEVICE();
  ctd::ExecContext gpu;
  gpu.device = ctd::Device::Cuda;
  struct Case {
    const char* name;
    ctd::Dims dims;
    double sigma, blur, slice_mix, anatomy;
  };
  const Case cases[] = {
      {"white noise, 3D", {96, 80, 12}, 25, 0, 0, 3},
      {"smooth noise, 2D", {128, 112, 1}, 30, 1.2, 0, 2},
      {"wide smooth noise, 2D", {128, 112, 1}, 30, 1.5, 0, 2},
      {"wide smooth noise across slices", {80, 72, 10}, 30, 1.5, 0.8, 2},
      {"white noise across slices", {90, 77, 9}, 20, 0, 0.9, 3},
      {"anatomy stronger than noise", {101, 67, 5}, 4, 0, 0, 120},
      {"small slice", {12, 10, 1}, 10, 0, 0, 0},
  };
  int fell_back = 0, smooth = 0, measured = 0;
  for (const Case& c : cases) {
    const ctd::Volume v = phantom(c.dims, 7, c.sigma, c.blur, c.slice_mix, c.anatomy);
    const ctd::NoiseModel host = ctd::estimate_noise_model(v.view());
    expect_same_model(ctd::estimate_noise_model(v.view(), gpu), host, c.name);
    const DeviceImage image(v);
    expect_same_model(ctd::estimate_noise_model_device(image.data(), c.dims), host, c.name);
    // int16 voxels, uploaded as they are, against the host model of their float values.
    std::vector<std::int16_t> stored(std::size_t(v.size()));
    ctd::Volume rounded(c.dims);
    for (i64 i = 0; i < v.size(); ++i) {
      stored[std::size_t(i)] = std::int16_t(std::lround(v.data()[i]));
      rounded.data()[i] = stored[std::size_t(i)];
    }
    expect_same_model(ctd::estimate_noise_model(ctd::ConstVolumeView<std::int16_t>{stored.data(), c.dims}, gpu),
                      ctd::estimate_noise_model(rounded.view()), std::string(c.name) + " (int16)");
    fell_back += host.fell_back_to_white;
    smooth += !host.fell_back_to_white && host.radius_xy > 4;
    measured += !host.fell_back_to_white && host.radius_xy == 4;
    std::printf("%s: sigma %.4f, radius %d/%d, fell back %d\n", c.name, host.sigma, host.radius_xy, host.radius_z,
                int(host.fell_back_to_white));
  }
  // The cases reach the model's three ways: measured in the flat blocks, fitted as wide smooth
  // noise where those fail (its lags beyond 4 voxels), white noise of the pseudo-residual sigma.
  EXPECT_GT(fell_back, 0);
  EXPECT_GT(smooth, 0);
  EXPECT_GT(measured, 0);
  // A clip floor among the noise (a fifth of the body's voxels stored at 15): told from padding
  // (the -1024 around the body) by the device's per-block counts as by the host's.
  {
    ctd::Volume v = phantom({96, 80, 6}, 5, 30, 0.8, 0, 2);
    for (i64 i = 0; i < v.size(); ++i)
      if (v.data()[i] > -1000 && v.data()[i] < 15) v.data()[i] = 15;
    const ctd::NoiseModel host = ctd::estimate_noise_model(v.view());
    EXPECT_EQ(host.clipped_value, 15.0);
    EXPECT_EQ(host.excluded_value, -1024.0);
    expect_same_model(ctd::estimate_noise_model(v.view(), gpu), host, "clipped");
    // The same floor as the padding around the body: left out in its regions only.
    for (i64 i = 0; i < v.size(); ++i)
      if (v.data()[i] == 15) v.data()[i] = -1024;
    const ctd::NoiseModel both = ctd::estimate_noise_model(v.view());
    EXPECT_EQ(both.clipped_value, -1024.0);
    EXPECT_EQ(both.excluded_value, -1024.0);
    expect_same_model(ctd::estimate_noise_model(v.view(), gpu), both, "clipped as the padding");
  }
  // Too small to estimate: the same error on both.
  const ctd::Volume tiny = random_volume({4, 4, 1}, 1);
  EXPECT_THROW(ctd::estimate_noise_model(tiny.view(), gpu), ctd::Error);
  EXPECT_THROW(ctd::estimate_noise_model(tiny.view()), ctd::Error);
}

TEST(ImageReadsCuda, TheAutomaticValuesOfDeviceMemoryAreThoseOfHostMemory) {
  CTD_REQUIRE_CUDA_DEVICE();
  ctd::ExecContext gpu;
  gpu.device = ctd::Device::Cuda;
  // Used whole (at most 2^17 voxels, or a slice up to kAutoWholeSliceVoxels), and sampled in
  // blocks in 2D and 3D.
  for (const ctd::Dims d : {ctd::Dims{61, 53, 1}, ctd::Dims{512, 480, 1}, ctd::Dims{768, 720, 1}, ctd::Dims{200, 176, 24}}) {
    const ctd::Volume v = phantom(d, 11, 30, 0.6, 0.3, 4);
    const ctd::NoiseModel noise = ctd::estimate_noise_model(v.view());
    const DeviceImage image(v);
    ctd::NlmParams nlm;
    nlm.search_radius = d.is_2d() ? 5 : 3;
    nlm.patch_radius = d.is_2d() ? 2 : 1;
    const ctd::AutoChoice host = ctd::auto_nlm_h(v.view(), nlm, noise, gpu);
    const ctd::AutoChoice device = ctd::auto_nlm_h_device(image.data(), d, nlm, noise, gpu);
    EXPECT_EQ(device.value, host.value) << d.nx << "x" << d.ny << "x" << d.nz;
    EXPECT_EQ(device.sample, host.sample);
    EXPECT_EQ(device.noise_over_image, host.noise_over_image);
    ASSERT_EQ(device.curve.size(), host.curve.size());
    for (std::size_t i = 0; i < host.curve.size(); ++i) EXPECT_EQ(device.curve[i].mse, host.curve[i].mse) << i;
    ctd::BilateralParams bf;
    bf.sigma_spatial = 1.5f;
    EXPECT_EQ(ctd::auto_bilateral_sigma_range_device(image.data(), d, bf, noise, gpu, 1.3).value,
              ctd::auto_bilateral_sigma_range(v.view(), bf, noise, gpu, 1.3).value);
    std::printf("%lldx%lldx%lld: h %.4f, sample %lldx%lldx%lld, %s\n", (long long)d.nx, (long long)d.ny, (long long)d.nz,
                host.value, (long long)host.sample.nx, (long long)host.sample.ny, (long long)host.sample.nz,
                host.noise_over_image.c_str());
  }
  // An image with nothing but padding: the same refusal.
  ctd::Volume padded({800, 800, 1});  // sampled in blocks (over kAutoWholeSliceVoxels), none a candidate
  ASSERT_GT(padded.dims().count(), ctd::kAutoWholeSliceVoxels);
  std::fill(padded.data(), padded.data() + padded.size(), -1024.0f);
  for (i64 i = 0; i < 800; ++i) padded.data()[i * 801] = float(i);
  ctd::NoiseModel noise;
  noise.sigma = 10;
  noise.radius_xy = 0;
  noise.covariance = {100};
  noise.excluded_value = -1024;
  const DeviceImage image(padded);
  ctd::NlmParams nlm;
  EXPECT_THROW(ctd::auto_nlm_h_device(image.data(), padded.dims(), nlm, noise, gpu), ctd::Error);
  EXPECT_THROW(ctd::auto_nlm_h(padded.view(), nlm, noise, gpu), ctd::Error);
}

}  // namespace
