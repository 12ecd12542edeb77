// The automatic parameters on the GPU: the same choice as on the CPU (the filters agree to
// float rounding, so the risk curves do), in a fraction of the time.

#include "common/ct_phantom.hpp"
#include "common/test_util.hpp"

#include <ctdenoise/auto_params.hpp>

#include <chrono>
#include <limits>
#include <random>

namespace {

#define CTD_REQUIRE_CUDA_DEVICE() \
  if (ctd::cuda_device_name().empty()) GTEST_SKIP() << "no CUDA device"

// The tests' CT-like phantom (tests/common/ct_phantom.hpp) with white noise inside its field of view.
ctd::Volume noisy_phantom(ctd::Dims dims, double sigma) {
  ctd::Volume v = ctd_test::ct_phantom(dims);
  std::mt19937 rng(17);
  std::normal_distribution<double> noise(0, sigma);
  for (std::int64_t i = 0; i < v.size(); ++i)
    if (v.data()[i] > -1024) v.data()[i] = float(v.data()[i] + noise(rng));
  return v;
}

TEST(AutoParamsCuda, ChoosesWhatTheCpuChooses) {
  CTD_REQUIRE_CUDA_DEVICE();
  for (ctd::Dims dims : {ctd::Dims{512, 512, 1}, ctd::Dims{256, 256, 64}}) {
    const ctd::Volume noisy = noisy_phantom(dims, 30);
    ctd::ExecContext cpu, gpu;
    cpu.device = ctd::Device::Cpu;
    gpu.device = ctd::Device::Cuda;
    ctd::NlmParams nlm;
    nlm.search_radius = dims.is_2d() ? 5 : 3;
    const auto t0 = std::chrono::steady_clock::now();
    const ctd::AutoChoice on_gpu = ctd::auto_nlm_h(noisy.view(), nlm, gpu);
    const double gpu_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const ctd::AutoChoice on_cpu = ctd::auto_nlm_h(noisy.view(), nlm, cpu);
    EXPECT_NEAR(on_gpu.value, on_cpu.value, 0.02 * on_cpu.value) << "nz " << dims.nz;
    ctd::BilateralParams bf;
    bf.sigma_spatial = 1.5f;
    const ctd::AutoChoice bf_gpu = ctd::auto_bilateral_sigma_range(noisy.view(), bf, gpu);
    const ctd::AutoChoice bf_cpu = ctd::auto_bilateral_sigma_range(noisy.view(), bf, cpu);
    EXPECT_NEAR(bf_gpu.value, bf_cpu.value, 0.02 * bf_cpu.value) << "nz " << dims.nz;
    std::printf("%lldx%lldx%lld: h %.3f (GPU) %.3f (CPU); auto on the GPU %.3f s (CPU %.3f s); sigma_range %.3f / %.3f\n",
                (long long)dims.nx, (long long)dims.ny, (long long)dims.nz, on_gpu.value, on_cpu.value, gpu_s,
                on_cpu.seconds, bf_gpu.value, bf_cpu.value);
    RecordProperty("nz" + std::to_string(dims.nz), std::to_string(gpu_s) + " s on the GPU, " + std::to_string(on_cpu.seconds) + " s on the CPU");
  }
}

// NaN voxels read on the GPU: the padding search and the noise model leave them out as on the
// CPU (a NaN once broke the padding search's sort), and the automatic h ends on the filters'
// clear refusal (the image is under kAutoSampleVoxels, so the choice filters all of it; in a
// larger image the final filter refuses them).
TEST(AutoParamsCuda, NonFiniteVoxelsAreLeftOutOfTheModelAndRefusedByTheChoice) {
  CTD_REQUIRE_CUDA_DEVICE();
  ctd::Volume noisy = noisy_phantom({120, 110, 8}, 25);
  ASSERT_LE(noisy.size(), ctd::kAutoSampleVoxels);
  for (std::int64_t i : {std::int64_t(3), noisy.size() / 2, noisy.size() - 1}) noisy.data()[i] = std::numeric_limits<float>::quiet_NaN();
  ctd::ExecContext cpu, gpu;
  cpu.device = ctd::Device::Cpu;
  gpu.device = ctd::Device::Cuda;
  const ctd::NoiseModel on_gpu = ctd::estimate_noise_model(noisy.view(), gpu);
  const ctd::NoiseModel on_cpu = ctd::estimate_noise_model(noisy.view(), cpu);
  EXPECT_NEAR(on_gpu.sigma, 25.0, 2.5);
  EXPECT_NEAR(on_gpu.sigma, on_cpu.sigma, 0.01 * on_cpu.sigma);
  try {
    ctd::auto_nlm_h(noisy.view(), ctd::NlmParams{}, on_gpu, gpu);
    FAIL() << "no throw";
  } catch (const ctd::Error& e) {
    EXPECT_EQ(e.kind(), ctd::ErrorKind::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("NaN or infinite"), std::string::npos) << e.what();
  }
}

}  // namespace
