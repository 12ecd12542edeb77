// CUDA bilateral variants against the naive double-precision reference (exact variants) and the
// compressive filter against the exact one, on the device. Without a CUDA device every test here
// is skipped, never passed.

#include "common/bilateral_case.hpp"
#include "common/test_util.hpp"

#include <ctdenoise/ctdenoise.hpp>

#if CTD_HAVE_CUDA
#include "cuda/device_output.hpp"

#include <cuda_runtime.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstdint>
#include <string>
#include <vector>

namespace {

using testing_util::compare;
using Case = testing_util::BilateralCase;

#define CTD_REQUIRE_CUDA_DEVICE() \
  if (ctd::cuda_device_name().empty()) GTEST_SKIP() << "no CUDA device"

const ctd::BilateralAlgorithm kExact[] = {ctd::BilateralAlgorithm::Naive, ctd::BilateralAlgorithm::Tiled,
                                          ctd::BilateralAlgorithm::Fused};

const Case kCases[] = {
    {"single voxel", {1, 1, 1}, 1.0f, 20},
    {"single row", {10, 1, 1}, 1.2f, 20},
    {"odd 2D larger than the tiles", {75, 41, 1}, 1.5f, 25},
    {"2D B1-like window", {70, 50, 1}, 2.7f, 30, std::array<int, 3>{8, 8, 1}},
    {"2D per-axis radius", {12, 9, 1}, 2.0f, 30, std::array<int, 3>{1, 3, 1}},
    {"2D radius larger than image", {4, 3, 1}, 3.0f, 30, std::array<int, 3>{6, 7, 1}},
    {"2D y radius beyond the register column", {30, 40, 1}, 4.0f, 30, std::array<int, 3>{3, 12, 1}},
    {"3D B3-like window", {21, 37, 13}, 3.3f, 30, std::array<int, 3>{10, 10, 10}},
    {"2x2x2", {2, 2, 2}, 1.0f, 40},
    {"odd non-cubic 3D", {37, 19, 11}, 1.0f, 25},
    {"3D per-axis radius", {8, 6, 7}, 1.7f, 15, std::array<int, 3>{2, 1, 3}},
    {"3D radius larger than volume", {3, 4, 2}, 2.0f, 30, std::array<int, 3>{5, 5, 4}},
    {"sigma in mm, anisotropic", {9, 8, 6}, 2.0f, 20, std::nullopt, ctd::SpatialUnit::Millimetre, {0.7, 0.9, 2.0}},
    {"sigma in mm, 2D", {11, 10, 1}, 1.5f, 20, std::nullopt, ctd::SpatialUnit::Millimetre, {0.6, 0.8, 5.0}},
    {"small range sigma", {9, 9, 3}, 1.0f, 2},
};

ctd::Volume run_cuda(const ctd::Volume& in, const ctd::BilateralParams& p) {
  ctd::Volume out(in.dims());
  std::fill(out.data(), out.data() + out.size(), -12345.0f);  // poison: every voxel must be written
  ctd::ExecContext cuda;
  cuda.device = ctd::Device::Cuda;
  const auto run = ctd::bilateral(in.view(), out.view(), p, cuda);
  EXPECT_EQ(run.device, ctd::Device::Cuda);
  EXPECT_EQ(run.algorithm, ctd::to_string(p.algorithm));
  EXPECT_GT(run.details.count("kernel_ms"), 0u);
  return out;
}

class BilateralCuda : public ::testing::TestWithParam<Case> {};

TEST_P(BilateralCuda, EveryExactVariantMatchesTheReference) {
  CTD_REQUIRE_CUDA_DEVICE();
  const Case& c = GetParam();
  for (int pattern = 0; pattern < 2; ++pattern) {
    const ctd::Volume in = pattern == 0 ? testing_util::random_volume(c.dims, 4321)
                                        : testing_util::structured_volume(c.dims, 17);
    const auto expected = ref::bilateral(testing_util::to_ref(in), testing_util::to_ref(c));
    for (auto algorithm : kExact) {
      if (!testing_util::variant_selected(ctd::to_string(algorithm))) continue;
      const auto cmp = compare(run_cuda(in, testing_util::to_params(c, algorithm)), expected);
      EXPECT_LE(cmp.relative_l2, 1e-5) << c.name << " " << ctd::to_string(algorithm) << " pattern " << pattern << ": "
                                       << cmp.where(in.dims());
      RecordProperty(std::string(ctd::to_string(algorithm)) + "_max_abs_error_pattern" + std::to_string(pattern),
                     std::to_string(cmp.max_abs));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, BilateralCuda, ::testing::ValuesIn(kCases), testing_util::case_name);

// Seed 002's accuracy: the compressive filter on CUDA reaches the requested PSNR against the exact
// filter, on adversarial uniform noise over the range and on structured data, 2D and 3D.
TEST(BilateralCudaCompressive, ReachesTheRequestedAccuracyAgainstTheExactFilter) {
  CTD_REQUIRE_CUDA_DEVICE();
  struct Setting {
    ctd::Dims dims;
    float sigma_spatial, sigma_range_fraction, accuracy_db;
  };
  const Setting settings[] = {{{67, 45, 1}, 2.0f, 0.05f, 50}, {{67, 45, 1}, 3.0f, 0.2f, 50},
                              {{41, 37, 29}, 1.0f, 0.1f, 50}, {{41, 37, 29}, 2.0f, 0.15f, 40},
                              {{70, 33, 21}, 3.0f, 0.1f, 70}};
  for (const Setting& s : settings) {
    for (int pattern = 0; pattern < 2; ++pattern) {
      const ctd::Volume in = pattern == 0 ? testing_util::random_volume(s.dims, 99, 0, 1000)
                                          : testing_util::structured_volume(s.dims, 5);
      const auto [lo, hi] = std::minmax_element(in.data(), in.data() + in.size());
      const double range = double(*hi) - *lo;
      ctd::BilateralParams p;
      p.sigma_spatial = s.sigma_spatial;
      p.sigma_range = float(s.sigma_range_fraction * range);
      p.accuracy_db = s.accuracy_db;
      p.algorithm = ctd::BilateralAlgorithm::Fused;
      const ctd::Volume exact = run_cuda(in, p);
      p.algorithm = ctd::BilateralAlgorithm::Compressive;
      const ctd::Volume approximate = run_cuda(in, p);
      EXPECT_GE(testing_util::psnr(exact, approximate, range), s.accuracy_db)
          << s.dims.nx << "x" << s.dims.ny << "x" << s.dims.nz << " sigma_s " << s.sigma_spatial << " sigma_r "
          << s.sigma_range_fraction << " pattern " << pattern;
      // The CPU compressive filter computes the same series: the two agree far beyond the request.
      ctd::Volume cpu(in.dims());
      ctd::ExecContext context;
      context.device = ctd::Device::Cpu;
      ctd::bilateral(in.view(), cpu.view(), p, context);
      EXPECT_GE(testing_util::psnr(cpu, approximate, range), s.accuracy_db + 10);
    }
  }
}

// Seed 002 goes to sigma_s = 50 (window radius 150): beyond the exact kernels' tables, so the
// CUDA compressive filter is checked against the CPU's, which computes the same series.
TEST(BilateralCudaCompressive, LargeSigmaAgreesWithTheCpu) {
  CTD_REQUIRE_CUDA_DEVICE();
  const ctd::Volume in = testing_util::structured_volume({210, 160, 1}, 12);
  const auto [lo, hi] = std::minmax_element(in.data(), in.data() + in.size());
  ctd::BilateralParams p;
  p.sigma_spatial = 50;
  p.sigma_range = 0.1f * (*hi - *lo);
  p.algorithm = ctd::BilateralAlgorithm::Compressive;
  const ctd::Volume gpu = run_cuda(in, p);
  ctd::Volume cpu(in.dims());
  ctd::ExecContext context;
  context.device = ctd::Device::Cpu;
  ctd::bilateral(in.view(), cpu.view(), p, context);
  EXPECT_GE(testing_util::psnr(cpu, gpu, double(*hi) - *lo), 60.0);
}

// The direct passes let a block walk several tiles of 64 outputs along its lines through a ring
// in shared memory (CTD_COMPRESSIVE_STEPS forces the walk length). Every walk length computes
// the same sums in the same order, so the outputs are bit-identical, and they agree with the CPU:
// lines of 2-3 tiles with partial last tiles and walks that end early, mirror borders inside a
// walk, a window wider than a tile (sigma_s 12: 80 taps), 2D and 3D.
struct WalkCase {
  const char* name;
  ctd::Dims dims;
  float sigma_spatial;
};
class CompressiveWalk : public ::testing::TestWithParam<WalkCase> {};

TEST_P(CompressiveWalk, EveryWalkLengthGivesTheSameOutput) {
  CTD_REQUIRE_CUDA_DEVICE();
  const WalkCase& c = GetParam();
  const ctd::Volume in = testing_util::random_volume(c.dims, 7, -1000, 2000);
  const auto [lo, hi] = std::minmax_element(in.data(), in.data() + in.size());
  const double range = double(*hi) - *lo;
  ctd::BilateralParams p;
  p.sigma_spatial = c.sigma_spatial;
  p.sigma_range = float(0.1 * range);
  p.algorithm = ctd::BilateralAlgorithm::Compressive;
  ctd::Volume no_walk;
  {
    const testing_util::ScopedEnv steps("CTD_COMPRESSIVE_STEPS", "1");
    no_walk = run_cuda(in, p);
  }
  for (const char* value : {"2", "3", static_cast<const char*>(nullptr)}) {
    const testing_util::ScopedEnv steps("CTD_COMPRESSIVE_STEPS", value);
    EXPECT_TRUE(testing_util::bit_identical(no_walk, run_cuda(in, p))) << "steps " << (value ? value : "auto");
  }
  ctd::Volume cpu(in.dims());
  ctd::ExecContext context;
  context.device = ctd::Device::Cpu;
  ctd::bilateral(in.view(), cpu.view(), p, context);
  EXPECT_GE(testing_util::psnr(cpu, no_walk, range), 60.0);
}

const WalkCase kWalkCases[] = {{"small 3D, two tiles per axis", {70, 66, 65}, 2.0f},
                               {"3D, partial tiles", {150, 133, 97}, 3.0f},
                               {"3D, window wider than a tile", {150, 133, 97}, 12.0f},
                               {"2D", {301, 200, 1}, 5.0f}};
INSTANTIATE_TEST_SUITE_P(Cases, CompressiveWalk, ::testing::ValuesIn(kWalkCases), testing_util::case_name);

// The recursive Gaussian on CUDA (float, one thread per line) computes the CPU's recursive filter
// (double): 2D and 3D, odd sizes, a single voxel, anisotropic spacing, sigma_s up to 50; and it
// stays close to the exact filter (the CPU's own recursive filter reaches 52-79 dB there).
TEST(BilateralCudaCompressive, RecursiveGaussianAgreesWithTheCpuAndTheExactFilter) {
  CTD_REQUIRE_CUDA_DEVICE();
  struct Setting {
    ctd::Dims dims;
    float sigma_spatial;
    ctd::SpatialUnit unit = ctd::SpatialUnit::Voxel;
    std::array<double, 3> spacing{1.0, 1.0, 1.0};
  };
  const Setting settings[] = {{{80, 61, 1}, 3.0f},
                              {{33, 29, 21}, 1.0f},
                              {{33, 29, 21}, 6.0f},
                              {{1, 1, 1}, 1.0f},
                              {{7, 1, 1}, 2.0f},
                              {{37, 19, 11}, 2.0f, ctd::SpatialUnit::Millimetre, {0.7, 0.9, 2.0}},
                              {{210, 160, 1}, 50.0f}};
  for (const Setting& s : settings) {
    const ctd::Volume in = testing_util::structured_volume(s.dims, 12);
    const auto [lo, hi] = std::minmax_element(in.data(), in.data() + in.size());
    const double range = std::max(1.0, double(*hi) - *lo);
    ctd::BilateralParams p;
    p.sigma_spatial = s.sigma_spatial;
    p.spatial_unit = s.unit;
    p.spacing = s.spacing;
    p.sigma_range = float(0.1 * range);
    p.algorithm = ctd::BilateralAlgorithm::Compressive;
    p.gaussian = ctd::BilateralParams::Gaussian::Recursive;
    const ctd::Volume gpu = run_cuda(in, p);
    const std::string where = std::to_string(s.dims.nx) + "x" + std::to_string(s.dims.ny) + "x" +
                              std::to_string(s.dims.nz) + " sigma_s " + std::to_string(s.sigma_spatial);
    EXPECT_TRUE(testing_util::bit_identical(gpu, run_cuda(in, p))) << where;
    ctd::Volume cpu(in.dims());
    ctd::ExecContext context;
    context.device = ctd::Device::Cpu;
    ctd::bilateral(in.view(), cpu.view(), p, context);
    const double vs_cpu = testing_util::psnr(cpu, gpu, range);
    EXPECT_GE(vs_cpu, 80.0) << where;
    RecordProperty("psnr_vs_cpu_" + std::to_string(s.dims.nz) + "_sigma" + std::to_string(int(s.sigma_spatial)),
                   std::to_string(vs_cpu));
    if (s.sigma_spatial <= 6) {
      const Case c{"recursive", s.dims, s.sigma_spatial, p.sigma_range, std::nullopt, s.unit, s.spacing};
      const auto exact = ref::bilateral(testing_util::to_ref(in), testing_util::to_ref(c));
      ctd::Volume exact_volume(in.dims());
      std::copy(exact.begin(), exact.end(), exact_volume.data());
      EXPECT_GE(testing_util::psnr(exact_volume, gpu, range), 45.0) << where;
    }
  }
}

TEST(BilateralCudaProperties, BitIdenticalRerunsAndCloseToCpu) {
  CTD_REQUIRE_CUDA_DEVICE();
  const ctd::Volume in = testing_util::structured_volume({70, 41, 13}, 8);
  for (auto algorithm : {ctd::BilateralAlgorithm::Naive, ctd::BilateralAlgorithm::Tiled,
                         ctd::BilateralAlgorithm::Fused, ctd::BilateralAlgorithm::Compressive}) {
    if (!testing_util::variant_selected(ctd::to_string(algorithm))) continue;
    ctd::BilateralParams p;
    p.sigma_spatial = 1.6f;
    p.sigma_range = 30;
    p.algorithm = algorithm;
    const ctd::Volume a = run_cuda(in, p), b = run_cuda(in, p);
    EXPECT_TRUE(testing_util::bit_identical(a, b)) << ctd::to_string(algorithm);
    if (algorithm == ctd::BilateralAlgorithm::Compressive) continue;
    ctd::Volume cpu(in.dims());
    p.algorithm = ctd::BilateralAlgorithm::Direct;
    ctd::ExecContext context;
    context.device = ctd::Device::Cpu;
    ctd::bilateral(in.view(), cpu.view(), p, context);
    std::vector<double> cpu_values(cpu.data(), cpu.data() + cpu.size());
    EXPECT_LE(compare(a, cpu_values).relative_l2, 1e-5) << ctd::to_string(algorithm);
  }
}

// Auto: tiled where the grid is small and the window too (Mueller et al.'s 256^2 rows), fused otherwise.
TEST(BilateralCudaProperties, AutoPicksTiledForSmallImagesAndFusedOtherwise) {
  CTD_REQUIRE_CUDA_DEVICE();
  ctd::ExecContext cuda;
  cuda.device = ctd::Device::Cuda;
  ctd::BilateralParams p;
  p.sigma_spatial = 1;  // window 7^2 or 7^3
  p.sigma_range = 20;
  for (auto [dims, expected] : {std::pair{ctd::Dims{256, 256, 1}, "tiled"}, std::pair{ctd::Dims{512, 512, 1}, "fused"},
                                std::pair{ctd::Dims{40, 30, 20}, "tiled"}, std::pair{ctd::Dims{80, 70, 60}, "fused"}}) {
    const ctd::Volume in = testing_util::random_volume(dims, 3);
    ctd::Volume out(dims);
    EXPECT_EQ(ctd::bilateral(in.view(), out.view(), p, cuda).algorithm, expected) << dims.nx << "x" << dims.ny;
  }
}

TEST(BilateralCudaProperties, UnsupportedRequestsAreClearErrors) {
  CTD_REQUIRE_CUDA_DEVICE();
  const ctd::Volume in = testing_util::random_volume({16, 16, 4}, 1);
  ctd::Volume out(in.dims());
  ctd::ExecContext cuda;
  cuda.device = ctd::Device::Cuda;
  ctd::BilateralParams p;
  p.sigma_spatial = 2;
  p.sigma_range = 20;
  p.algorithm = ctd::BilateralAlgorithm::Direct;  // the CPU's exact variant
  EXPECT_TRUE(testing_util::throws_kind([&] { ctd::bilateral(in.view(), out.view(), p, cuda); }, ctd::ErrorKind::Unsupported));
  p.algorithm = ctd::BilateralAlgorithm::Compressive;
  p.radius = std::array<int, 3>{300, 300, 300};  // beyond the direct passes' tap table
  EXPECT_TRUE(testing_util::throws_kind([&] { ctd::bilateral(in.view(), out.view(), p, cuda); }, ctd::ErrorKind::Unsupported));
  p.gaussian = ctd::BilateralParams::Gaussian::Recursive;  // has no window: runs
  EXPECT_EQ(ctd::bilateral(in.view(), out.view(), p, cuda).device, ctd::Device::Cuda);
  p.gaussian = ctd::BilateralParams::Gaussian::Direct;
  p.algorithm = ctd::BilateralAlgorithm::Tiled;
  p.radius = std::array<int, 3>{20, 20, 20};  // 68921 taps: more than constant memory holds
  EXPECT_TRUE(testing_util::throws_kind([&] { ctd::bilateral(in.view(), out.view(), p, cuda); }, ctd::ErrorKind::Unsupported));
  // With the device left to the library, a CPU-only variant runs on the CPU.
  p.radius.reset();
  p.algorithm = ctd::BilateralAlgorithm::Direct;
  EXPECT_EQ(ctd::bilateral(in.view(), out.view(), p).device, ctd::Device::Cpu);
}

#if CTD_HAVE_CUDA
struct DeviceApiCase {
  ctd::BilateralAlgorithm algorithm;
  ctd::BilateralParams::Gaussian gaussian;
  ctd::Dims dims;
};

class BilateralCudaDeviceApi : public ::testing::TestWithParam<DeviceApiCase> {};

// The device API on the caller's stream gives the host API's output bit for bit, for every CUDA
// variant, 2D and 3D; after its first call it allocates nothing. The compressive filter measures
// the value range on the device, or takes it from the caller (then it does not wait).
TEST_P(BilateralCudaDeviceApi, MatchesTheHostApiOnTheCallersStream) {
  CTD_REQUIRE_CUDA_DEVICE();
  const DeviceApiCase c = GetParam();
  const ctd::Volume in = testing_util::structured_volume(c.dims, 6);
  const std::size_t bytes = std::size_t(in.size()) * sizeof(float);
  float *d_in = nullptr, *d_out = nullptr;
  ASSERT_EQ(cudaMalloc(&d_in, bytes), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&d_out, bytes), cudaSuccess);
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(d_in, in.data(), bytes, cudaMemcpyHostToDevice), cudaSuccess);
  ctd::BilateralParams p;
  p.sigma_spatial = 1.5f;
  p.sigma_range = 40;
  p.algorithm = c.algorithm;
  p.gaussian = c.gaussian;
  const ctd::FilterRun device_run = ctd::bilateral_device(d_in, d_out, in.dims(), p, stream);
  EXPECT_EQ(device_run.algorithm, std::string(ctd::to_string(c.algorithm)));
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  ctd::Volume out(in.dims());
  ASSERT_EQ(cudaMemcpy(out.data(), d_out, bytes, cudaMemcpyDeviceToHost), cudaSuccess);

  ctd::ExecContext cuda;
  cuda.device = ctd::Device::Cuda;
  ctd::Volume host(in.dims());
  const ctd::FilterRun host_run = ctd::bilateral(in.view(), host.view(), p, cuda);
  EXPECT_TRUE(testing_util::bit_identical(out, host));
  if (c.algorithm == ctd::BilateralAlgorithm::Compressive) {
    EXPECT_EQ(device_run.details.at("terms"), host_run.details.at("terms"));
    EXPECT_EQ(device_run.details.at("period"), host_run.details.at("period"));
  }

  // Repeated calls with the range given: no allocation, same output.
  const auto [lo, hi] = std::minmax_element(in.data(), in.data() + in.size());
  size_t free_before = 0, free_after = 0, total = 0;
  cudaMemGetInfo(&free_before, &total);
  ASSERT_EQ(cudaMemset(d_out, 0, bytes), cudaSuccess);
  for (int iteration = 0; iteration < 3; ++iteration) {
    ctd::bilateral_device(d_in, d_out, in.dims(), p, stream, std::pair{*lo, *hi});
  }
  cudaMemGetInfo(&free_after, &total);
  EXPECT_EQ(free_before, free_after) << "no device allocation per call";
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(out.data(), d_out, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_TRUE(testing_util::bit_identical(out, host));
  cudaStreamDestroy(stream);
  cudaFree(d_in);
  cudaFree(d_out);
}

// From host memory the fused filter goes up and down in slabs (8 MiB or more each, at least as
// thick as the window's z radius and 4 slices), filtered while they travel: its output must be
// the device API's in one piece, bit for bit, from float32 and from int16, for slabs as thin as
// the halo, odd sizes, and a volume too small for slabs.
TEST(BilateralCudaHostApi, SlabsGiveTheOutputOfOnePiece) {
  CTD_REQUIRE_CUDA_DEVICE();
  struct SlabCase {
    ctd::Dims dims;
    float sigma_spatial;
  };
  for (const SlabCase c : {SlabCase{{301, 257, 70}, 1.0f}, SlabCase{{160, 130, 411}, 1.5f},
                           SlabCase{{1024, 1024, 9}, 1.0f}, SlabCase{{512, 512, 40}, 2.0f}, SlabCase{{37, 29, 5}, 1.0f}}) {
    ctd::Volume in = testing_util::structured_volume(c.dims, 12);
    const std::vector<std::int16_t> in16 = testing_util::round_to_int16(in);
    const std::size_t bytes = std::size_t(in.size()) * sizeof(float);
    ctd::BilateralParams p;
    p.sigma_spatial = c.sigma_spatial;
    p.sigma_range = 40;
    p.algorithm = ctd::BilateralAlgorithm::Fused;
    const ctd::Volume expected = testing_util::device_output(
        in, [&](const float* d_in, float* d_out) { ctd::bilateral_device(d_in, d_out, c.dims, p, nullptr); });
    ctd::ExecContext cuda;
    cuda.device = ctd::Device::Cuda;
    const int rz = ctd::bilateral_radius(p, c.dims)[2];
    const bool slabbed = bytes >= (std::size_t(16) << 20) && c.dims.nz / std::max(4, rz) >= 2;
    for (bool int16 : {false, true}) {
      ctd::Volume out(c.dims);
      const ctd::FilterRun run =
          int16 ? ctd::bilateral(ctd::ConstVolumeView<std::int16_t>{in16.data(), c.dims}, out.view(), p, cuda)
                : ctd::bilateral(in.view(), out.view(), p, cuda);
      EXPECT_EQ(run.details.count("overlapped"), slabbed ? 1u : 0u) << c.dims.count();
      EXPECT_TRUE(testing_util::bit_identical(out, expected))
          << c.dims.nx << "x" << c.dims.ny << "x" << c.dims.nz << (int16 ? " int16" : " float32");
      EXPECT_GT(run.details.at("kernel_ms"), 0.0);
    }
  }
}

// From host memory the compressive filter (direct passes, 3D) runs in steps beside the copies:
// the DC term's in-plane passes on each slab as it arrives, the last pass in parts along z that go
// down as they are done. Its output and series must be the device API's in one piece, bit for bit,
// from float32 and from int16, for depths that are not a multiple of the passes' tiles, a window
// wider than a slab's share of a tile, one term, and a volume too small for steps.
TEST(BilateralCudaHostApi, CompressiveStepsGiveTheOutputOfOnePiece) {
  CTD_REQUIRE_CUDA_DEVICE();
  struct StepCase {
    ctd::Dims dims;
    float sigma_spatial, sigma_range;
  };
  for (const StepCase c : {StepCase{{301, 257, 70}, 2.0f, 40.0f}, StepCase{{160, 130, 411}, 3.0f, 60.0f},
                           StepCase{{128, 96, 517}, 10.0f, 30.0f}, StepCase{{301, 257, 70}, 1.5f, 4000.0f},
                           StepCase{{37, 29, 5}, 1.0f, 40.0f}}) {
    ctd::Volume in = testing_util::structured_volume(c.dims, 14);
    const std::vector<std::int16_t> in16 = testing_util::round_to_int16(in);
    const std::size_t bytes = std::size_t(in.size()) * sizeof(float);
    ctd::BilateralParams p;
    p.sigma_spatial = c.sigma_spatial;
    p.sigma_range = c.sigma_range;
    p.algorithm = ctd::BilateralAlgorithm::Compressive;
    ctd::FilterRun device_run;
    const ctd::Volume expected = testing_util::device_output(
        in, [&](const float* d_in, float* d_out) { device_run = ctd::bilateral_device(d_in, d_out, c.dims, p, nullptr); });
    ctd::ExecContext cuda;
    cuda.device = ctd::Device::Cuda;
    const bool stepped = bytes >= (std::size_t(16) << 20);
    const std::string name = std::to_string(c.dims.nx) + "x" + std::to_string(c.dims.ny) + "x" +
                             std::to_string(c.dims.nz) + " sigma_s " + std::to_string(c.sigma_spatial);
    for (bool int16 : {false, true}) {
      ctd::Volume out(c.dims);
      const ctd::FilterRun run =
          int16 ? ctd::bilateral(ctd::ConstVolumeView<std::int16_t>{in16.data(), c.dims}, out.view(), p, cuda)
                : ctd::bilateral(in.view(), out.view(), p, cuda);
      EXPECT_EQ(run.details.count("overlapped"), stepped ? 1u : 0u) << name;
      EXPECT_EQ(run.details.at("terms"), device_run.details.at("terms")) << name;
      EXPECT_EQ(run.details.at("period"), device_run.details.at("period")) << name;
      EXPECT_TRUE(testing_util::bit_identical(out, expected)) << name << (int16 ? " int16" : " float32");
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Variants, BilateralCudaDeviceApi,
    ::testing::Values(DeviceApiCase{ctd::BilateralAlgorithm::Naive, ctd::BilateralParams::Gaussian::Direct, {37, 23, 5}},
                      DeviceApiCase{ctd::BilateralAlgorithm::Tiled, ctd::BilateralParams::Gaussian::Direct, {61, 47, 1}},
                      DeviceApiCase{ctd::BilateralAlgorithm::Fused, ctd::BilateralParams::Gaussian::Direct, {45, 33, 9}},
                      DeviceApiCase{ctd::BilateralAlgorithm::Compressive, ctd::BilateralParams::Gaussian::Direct,
                                    {52, 41, 6}},
                      DeviceApiCase{ctd::BilateralAlgorithm::Compressive, ctd::BilateralParams::Gaussian::Recursive,
                                    {70, 29, 1}}),
    [](const auto& variant) {
      return std::string(ctd::to_string(variant.param.algorithm)) +
             (variant.param.gaussian == ctd::BilateralParams::Gaussian::Recursive ? "Recursive" : "") +
             (variant.param.dims.is_2d() ? "2d" : "3d");
    });

// The tiled kernel's weights sit in constant memory, shared by all streams: two streams with
// different weights, queued back to back while the first kernel still runs, must each get their
// own weights (the same voxels as the host API). Without the library ordering tiled calls across
// streams this failed on the H100 while other processes shared the GPU (2026-11-24), though not
// on an idle one.
TEST(BilateralCudaDeviceApi, TiledCallsOnTwoStreamsKeepTheirOwnWeights) {
  CTD_REQUIRE_CUDA_DEVICE();
  const ctd::Volume large = testing_util::structured_volume({1536, 1280, 1}, 3);
  const ctd::Volume small = testing_util::structured_volume({300, 200, 1}, 4);
  ctd::BilateralParams wide, narrow;
  wide.sigma_spatial = 3;  // radius 9: a long kernel
  wide.sigma_range = 60;
  narrow.sigma_spatial = 0.8f;
  narrow.sigma_range = 25;
  wide.algorithm = narrow.algorithm = ctd::BilateralAlgorithm::Tiled;
  auto device_copy = [](const ctd::Volume& v) {
    float* d = nullptr;
    EXPECT_EQ(cudaMalloc(&d, std::size_t(v.size()) * sizeof(float)), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(d, v.data(), std::size_t(v.size()) * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
    return d;
  };
  float* d_large = device_copy(large);
  float* d_small = device_copy(small);
  float *d_large_out = nullptr, *d_small_out = nullptr;
  ASSERT_EQ(cudaMalloc(&d_large_out, std::size_t(large.size()) * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&d_small_out, std::size_t(small.size()) * sizeof(float)), cudaSuccess);
  cudaStream_t first, second;
  ASSERT_EQ(cudaStreamCreateWithFlags(&first, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&second, cudaStreamNonBlocking), cudaSuccess);
  for (int round = 0; round < 10; ++round) {
    ctd::bilateral_device(d_large, d_large_out, large.dims(), wide, first);
    ctd::bilateral_device(d_small, d_small_out, small.dims(), narrow, second);
  }
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  ctd::Volume large_out(large.dims()), small_out(small.dims());
  ASSERT_EQ(cudaMemcpy(large_out.data(), d_large_out, std::size_t(large.size()) * sizeof(float), cudaMemcpyDeviceToHost),
            cudaSuccess);
  ASSERT_EQ(cudaMemcpy(small_out.data(), d_small_out, std::size_t(small.size()) * sizeof(float), cudaMemcpyDeviceToHost),
            cudaSuccess);
  ctd::ExecContext cuda;
  cuda.device = ctd::Device::Cuda;
  ctd::Volume large_host(large.dims()), small_host(small.dims());
  ctd::bilateral(large.view(), large_host.view(), wide, cuda);
  ctd::bilateral(small.view(), small_host.view(), narrow, cuda);
  EXPECT_TRUE(testing_util::bit_identical(large_out, large_host));
  EXPECT_TRUE(testing_util::bit_identical(small_out, small_host));
  for (float* d : {d_large, d_small, d_large_out, d_small_out}) cudaFree(d);
  cudaStreamDestroy(first);
  cudaStreamDestroy(second);
}

TEST(BilateralCudaDeviceApi, BadRequestsAreClearErrors) {
  CTD_REQUIRE_CUDA_DEVICE();
  ctd::BilateralParams p;
  p.sigma_spatial = 1;
  p.sigma_range = 10;
  float* none = nullptr;
  p.algorithm = ctd::BilateralAlgorithm::Direct;  // the CPU's
  EXPECT_TRUE(testing_util::throws_kind([&] { ctd::bilateral_device(none, none, {8, 8, 1}, p); },
                                        ctd::ErrorKind::Unsupported));
  p.algorithm = ctd::BilateralAlgorithm::Compressive;
  EXPECT_TRUE(testing_util::throws_kind(
      [&] { ctd::bilateral_device(none, none, {8, 8, 1}, p, nullptr, std::pair{5.0f, 1.0f}); },
      ctd::ErrorKind::InvalidArgument));
  EXPECT_TRUE(testing_util::throws_kind([&] { ctd::bilateral_device(none, none, {0, 8, 1}, p); },
                                        ctd::ErrorKind::InvalidArgument));
}
#endif

}  // namespace
