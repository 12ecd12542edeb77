// CUDA NLM variants against the naive double-precision reference and the CPU backend, on the
// device. Without a CUDA device every test here is skipped, never passed.

#include "common/nlm_case.hpp"
#include "common/test_util.hpp"

#include <ctdenoise/ctdenoise.hpp>

#if CTD_HAVE_CUDA
#include "cuda/device_output.hpp"

#include <cuda_runtime.h>
#endif

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <thread>
#include <vector>
#include <cmath>
#include <string>

namespace {

using testing_util::compare;

#define CTD_REQUIRE_CUDA_DEVICE() \
  if (ctd::cuda_device_name().empty()) GTEST_SKIP() << "no CUDA device"

const ctd::NlmAlgorithm kVariants[] = {ctd::NlmAlgorithm::Naive,        ctd::NlmAlgorithm::Tiled,
                                       ctd::NlmAlgorithm::ZSlide,       ctd::NlmAlgorithm::Displacement,
                                       ctd::NlmAlgorithm::RowWise,      ctd::NlmAlgorithm::Fused};

// zslide slides along z: 2D images are refused; displacement's separable sums refuse the L1
// kernel (both tested below), not filtered.
bool applies(ctd::NlmAlgorithm algorithm, const ctd::Dims& dims, ctd::PatchDistance distance = ctd::PatchDistance::L2) {
  if (!testing_util::variant_selected(ctd::to_string(algorithm))) return false;
  if (algorithm == ctd::NlmAlgorithm::ZSlide && dims.is_2d()) return false;
  return !(algorithm == ctd::NlmAlgorithm::Displacement && distance == ctd::PatchDistance::L1);
}

using Case = testing_util::NlmCase;
using testing_util::to_params;
using testing_util::to_ref;

const Case kCases[] = {
    {"single voxel", {1, 1, 1}, 2, 1},
    {"single row 2D", {9, 1, 1}, 2, 1},
    {"odd 2D larger than a tile", {45, 19, 1}, 3, 2},
    {"2D radii larger than image", {5, 4, 1}, 7, 6},
    {"2x2x2", {2, 2, 2}, 1, 1},
    {"odd non-cubic 3D", {37, 11, 9}, 2, 1},
    {"3D N4-like radii", {23, 13, 7}, 4, 2},
    {"2D several tiles each way", {130, 70, 1}, 4, 3},
    {"2D split search window", {90, 50, 1}, 9, 2},
    {"2D interior tiles", {200, 120, 1}, 5, 2},  // blocks whose whole window is inside: no border test
    {"2D N1-like radii", {150, 97, 1}, 10, 4},   // window parts that start inside a window row
    {"3D interior tiles", {80, 30, 28}, 2, 1},
    {"3D N4-like patch, interior tiles", {70, 20, 20}, 3, 2},  // pass A in half rows, pass B in runs of 4
    {"3D patch radius 3", {33, 17, 11}, 2, 3},                   // pass A in whole rows, pass B in runs of 8
    {"2D split window centre max", {50, 40, 1}, 8, 1, 40, 0, ctd::PatchKernel::Uniform, 1, ctd::PatchDistance::L2,
     ctd::CentreWeight::Max},
    {"2D patch radius 7", {70, 40, 1}, 3, 7},
    {"3D patch radius 4 two z tiles", {35, 12, 10}, 2, 4},
    {"3D radii larger than volume", {4, 3, 3}, 5, 4},
    {"one-voxel-wide 3D", {1, 5, 6}, 2, 1},
    {"gaussian patch 2D", {34, 9, 1}, 3, 2, 40, 0, ctd::PatchKernel::Gaussian, 1.3f},
    {"gaussian patch 3D", {17, 6, 5}, 2, 2, 40, 0, ctd::PatchKernel::Gaussian, 0.8f},
    {"noise bias 3D", {18, 9, 6}, 2, 1, 30, 9},
    {"L1 2D", {33, 10, 1}, 3, 2, 20, 0, ctd::PatchKernel::Uniform, 1, ctd::PatchDistance::L1},
    {"L1 3D", {16, 5, 6}, 2, 1, 20, 0, ctd::PatchKernel::Uniform, 1, ctd::PatchDistance::L1},
    {"centre max 2D", {40, 8, 1}, 2, 1, 40, 0, ctd::PatchKernel::Uniform, 1, ctd::PatchDistance::L2, ctd::CentreWeight::Max},
    {"centre max 3D", {15, 6, 5}, 2, 1, 40, 0, ctd::PatchKernel::Uniform, 1, ctd::PatchDistance::L2, ctd::CentreWeight::Max},
};



ctd::Volume run_cuda(const ctd::Volume& in, const ctd::NlmParams& p) {
  ctd::Volume out(in.dims());
  std::fill(out.data(), out.data() + out.size(), -12345.0f);  // poison: every voxel must be written
  ctd::ExecContext cuda;
  cuda.device = ctd::Device::Cuda;
  const auto run = ctd::nlm(in.view(), out.view(), p, cuda);
  EXPECT_EQ(run.device, ctd::Device::Cuda);
  EXPECT_EQ(run.algorithm, ctd::to_string(p.algorithm));
  return out;
}

class NlmCuda : public ::testing::TestWithParam<Case> {};

TEST_P(NlmCuda, EveryVariantMatchesTheReference) {
  CTD_REQUIRE_CUDA_DEVICE();
  const Case& c = GetParam();
  for (int pattern = 0; pattern < 2; ++pattern) {
    const ctd::Volume in = pattern == 0 ? testing_util::random_volume(c.dims, 777)
                                        : testing_util::structured_volume(c.dims, 31);
    const auto expected = ref::nlm(testing_util::to_ref(in), to_ref(c));
    for (auto algorithm : kVariants) {
      if (!applies(algorithm, c.dims, c.distance)) continue;
      const ctd::Volume out = run_cuda(in, to_params(c, algorithm));
      const auto cmp = compare(out, expected);
      EXPECT_LE(cmp.relative_l2, 1e-5) << c.name << " " << ctd::to_string(algorithm) << " pattern " << pattern << ": "
                                       << cmp.where(in.dims());
      RecordProperty(std::string(ctd::to_string(algorithm)) + "_max_abs_error_pattern" + std::to_string(pattern),
                     std::to_string(cmp.max_abs));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, NlmCuda, ::testing::ValuesIn(kCases), testing_util::case_name);

// Every L2 case of one dimensionality through `fused` with one kernel forced by the environment
// variable `env`: against the reference, and a rerun for bit-identity. Returns the cases run.
int check_forced_fused_kernel(const char* env, const char* kernel, bool two_d) {
  const testing_util::ScopedEnv forced(env, kernel);
  int cases = 0;
  for (const Case& c : kCases) {
    if (c.dims.is_2d() != two_d || c.distance != ctd::PatchDistance::L2) continue;
    const ctd::Volume in = testing_util::random_volume(c.dims, two_d ? 778 : 779);
    const ctd::Volume out = run_cuda(in, to_params(c, ctd::NlmAlgorithm::Fused));
    const auto cmp = compare(out, ref::nlm(testing_util::to_ref(in), to_ref(c)));
    EXPECT_LE(cmp.relative_l2, 1e-5) << kernel << ", " << c.name << ": " << cmp.where(in.dims());
    EXPECT_TRUE(testing_util::bit_identical(out, run_cuda(in, to_params(c, ctd::NlmAlgorithm::Fused))))
        << kernel << ", " << c.name;
    ++cases;
  }
  return cases;
}

std::string kernel_name(const ::testing::TestParamInfo<const char*>& kernel_info) {
  std::string name = kernel_info.param;
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

// The 2D fused kernel has three forms: symmetric pairs with S updated per pair (rows, small search
// windows), symmetric pairs through a register ring (ring, search radius up to about 45) and the
// one-sided kernel beyond. CTD_NLM_FUSED_2D forces each, so that every case reaches all three.
class NlmCudaFused2d : public ::testing::TestWithParam<const char*> {};

TEST_P(NlmCudaFused2d, MatchesTheReferenceOnEvery2dCase) {
  CTD_REQUIRE_CUDA_DEVICE();
  EXPECT_GE(check_forced_fused_kernel("CTD_NLM_FUSED_2D", GetParam(), true), 9);
}

INSTANTIATE_TEST_SUITE_P(Kernels, NlmCudaFused2d, ::testing::Values("rows", "ring", "one-sided"), kernel_name);

// The 3D fused kernel has two forms: symmetric pairs (a shared accumulator over the targets, the
// blocks in non-overlapping colours) and the one-sided kernel (centre weight max, or too little
// shared memory for the symmetric one). CTD_NLM_FUSED_3D forces each.
class NlmCudaFused3d : public ::testing::TestWithParam<const char*> {};

TEST_P(NlmCudaFused3d, MatchesTheReferenceOnEvery3dCase) {
  CTD_REQUIRE_CUDA_DEVICE();
  EXPECT_GE(check_forced_fused_kernel("CTD_NLM_FUSED_3D", GetParam(), false), 12);
}

INSTANTIATE_TEST_SUITE_P(Kernels, NlmCudaFused3d, ::testing::Values("symmetric", "one-sided"), kernel_name);

TEST(NlmCudaProperties, BitIdenticalRerunsAndCloseToCpu) {
  CTD_REQUIRE_CUDA_DEVICE();
  const ctd::Volume in = testing_util::structured_volume({70, 41, 13}, 8);
  for (auto algorithm : kVariants) {
    if (!applies(algorithm, in.dims())) continue;
    ctd::NlmParams p;
    p.h = 25;
    p.search_radius = 3;
    p.patch_radius = 2;
    p.algorithm = algorithm;
    const ctd::Volume a = run_cuda(in, p), b = run_cuda(in, p);
    EXPECT_TRUE(testing_util::bit_identical(a, b)) << ctd::to_string(algorithm);
    ctd::Volume cpu(in.dims());
    p.algorithm = ctd::NlmAlgorithm::Auto;
    ctd::ExecContext context;
    context.device = ctd::Device::Cpu;
    ctd::nlm(in.view(), cpu.view(), p, context);
    std::vector<double> cpu_values(cpu.data(), cpu.data() + cpu.size());
    EXPECT_LE(compare(a, cpu_values).relative_l2, 1e-5) << ctd::to_string(algorithm);
  }
}

TEST(NlmCudaProperties, RealCtCropFromTheSiemensSeries) {
  CTD_REQUIRE_CUDA_DEVICE();
  // Written by bench/make_device_data.sh (HU, float32, 96 x 80 x 12); carried to the device.
  const std::string path = CTD_SOURCE_DIR "/.devdata/siemens_crop_96x80x12_f32.raw";
  std::ifstream file(path, std::ios::binary);
  if (!file) GTEST_SKIP() << "no real CT crop at " << path;
  ctd::Volume in({96, 80, 12});
  file.read(reinterpret_cast<char*>(in.data()), std::streamsize(in.size() * 4));
  ASSERT_TRUE(file);
  for (auto algorithm : kVariants) {
    if (!applies(algorithm, in.dims())) continue;
    ctd::NlmParams p;
    p.h = 25;
    p.search_radius = 3;
    p.patch_radius = 1;
    p.algorithm = algorithm;
    ref::NlmSettings s;
    s.h = 25;
    s.search_radius = 3;
    s.patch_radius = 1;
    const auto cmp = compare(run_cuda(in, p), ref::nlm(testing_util::to_ref(in), s));
    EXPECT_LE(cmp.relative_l2, 1e-5) << ctd::to_string(algorithm) << ": " << cmp.where(in.dims());
  }
}

TEST(NlmCudaProperties, UnsupportedRequestsAreClearErrors) {
  CTD_REQUIRE_CUDA_DEVICE();
  const ctd::Volume in = testing_util::random_volume({16, 16, 1}, 1);
  ctd::Volume out(in.dims());
  ctd::ExecContext cuda;
  cuda.device = ctd::Device::Cuda;
  ctd::NlmParams p;
  p.h = 10;
  p.algorithm = ctd::NlmAlgorithm::Displacement;
  p.distance = ctd::PatchDistance::L1;  // not separable
  EXPECT_TRUE(testing_util::throws_kind([&] { ctd::nlm(in.view(), out.view(), p, cuda); }, ctd::ErrorKind::Unsupported));
  p.distance = ctd::PatchDistance::L2;
  p.algorithm = ctd::NlmAlgorithm::ZSlide;  // needs 3D
  EXPECT_TRUE(testing_util::throws_kind([&] { ctd::nlm(in.view(), out.view(), p, cuda); }, ctd::ErrorKind::Unsupported));
  p.algorithm = ctd::NlmAlgorithm::Fused;
  p.search_radius = 200;  // the apron no longer fits in shared memory
  EXPECT_TRUE(testing_util::throws_kind([&] { ctd::nlm(in.view(), out.view(), p, cuda); }, ctd::ErrorKind::Unsupported));
}

#if CTD_HAVE_CUDA
class NlmCudaDeviceApi : public ::testing::TestWithParam<ctd::NlmAlgorithm> {};

// fused needs no workspace; displacement and rowwise allocate theirs on the first call only.
TEST_P(NlmCudaDeviceApi, QueuesOnTheCallersStreamWithoutAllocating) {
  CTD_REQUIRE_CUDA_DEVICE();
  const ctd::Volume in = testing_util::structured_volume({50, 30, 7}, 4);
  const std::size_t bytes = std::size_t(in.size()) * sizeof(float);
  float *d_in = nullptr, *d_out = nullptr;
  ASSERT_EQ(cudaMalloc(&d_in, bytes), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&d_out, bytes), cudaSuccess);
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(d_in, in.data(), bytes, cudaMemcpyHostToDevice), cudaSuccess);
  ctd::NlmParams p;
  p.h = 25;
  p.search_radius = 2;
  p.algorithm = GetParam();
  ctd::nlm_device(d_in, d_out, in.dims(), p, stream);  // first call: module loads, workspace allocated
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  size_t free_before = 0, free_after = 0, total = 0;
  cudaMemGetInfo(&free_before, &total);
  for (int iteration = 0; iteration < 3; ++iteration) ctd::nlm_device(d_in, d_out, in.dims(), p, stream);
  cudaMemGetInfo(&free_after, &total);
  EXPECT_EQ(free_before, free_after) << "no device allocation per call";
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  ctd::Volume out(in.dims());
  ASSERT_EQ(cudaMemcpy(out.data(), d_out, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  ctd::Volume host(in.dims());
  ctd::ExecContext cuda;
  cuda.device = ctd::Device::Cuda;
  ctd::nlm(in.view(), host.view(), p, cuda);
  EXPECT_TRUE(testing_util::bit_identical(out, host));
  cudaStreamDestroy(stream);
  cudaFree(d_in);
  cudaFree(d_out);
}

// Volumes over 4 MiB travel through pinned staging buffers of 16 MiB, four of them reused in
// turn: 20.3 million voxels (81.4 MB, four chunks and a part, one slot reused) of uneven size.
// The host API's output must be the device API's, bit for bit, and the input left untouched.
TEST(NlmCudaHostApi, LargeVolumeThroughPinnedStagingMatchesTheDeviceApi) {
  CTD_REQUIRE_CUDA_DEVICE();
  const ctd::Dims dims{301, 257, 263};
  const ctd::Volume in = testing_util::structured_volume(dims, 11);
  const ctd::Volume untouched = in;
  const std::size_t bytes = std::size_t(in.size()) * sizeof(float);
  float *d_in = nullptr, *d_out = nullptr;
  ASSERT_EQ(cudaMalloc(&d_in, bytes), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&d_out, bytes), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(d_in, in.data(), bytes, cudaMemcpyHostToDevice), cudaSuccess);
  ctd::NlmParams p;
  p.h = 20;
  p.search_radius = 1;
  p.patch_radius = 1;
  p.algorithm = ctd::NlmAlgorithm::Fused;
  ctd::nlm_device(d_in, d_out, dims, p, nullptr);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  ctd::Volume device_out(dims);
  ASSERT_EQ(cudaMemcpy(device_out.data(), d_out, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  cudaFree(d_in);
  cudaFree(d_out);
  ctd::ExecContext cuda;
  cuda.device = ctd::Device::Cuda;
  for (int call = 0; call < 2; ++call) {  // the second call reuses the staging buffers
    ctd::Volume host_out(dims);
    const ctd::FilterRun run = ctd::nlm(in.view(), host_out.view(), p, cuda);
    EXPECT_TRUE(testing_util::bit_identical(host_out, device_out)) << "call " << call;
    EXPECT_GT(run.details.at("upload_ms"), 0.0);
    EXPECT_GT(run.details.at("download_ms"), 0.0);
  }
  EXPECT_TRUE(testing_util::bit_identical(in, untouched));
  // The two volumes stay on the device for the next call until released.
  size_t free_kept = 0, free_released = 0, total = 0;
  ASSERT_EQ(cudaMemGetInfo(&free_kept, &total), cudaSuccess);
  ctd::release_cuda_memory();
  ASSERT_EQ(cudaMemGetInfo(&free_released, &total), cudaSuccess);
  EXPECT_GE(free_released, free_kept + 2 * bytes);
}

// From host memory the symmetric 3D kernel starts on the first slices uploaded (its first colour
// in chunks along z) and its last colour's slices go down while it runs on: the output must be the
// device API's in one piece, bit for bit, from float32 and from int16, with a uniform and a
// Gaussian patch, for ragged depths, chunks of one z block, and a volume too small for chunks.
TEST(NlmCudaHostApi, StepsOfTheSymmetric3dKernelGiveTheOutputOfOnePiece) {
  CTD_REQUIRE_CUDA_DEVICE();
  struct StepCase {
    ctd::Dims dims;
    int search_radius, patch_radius;
    ctd::PatchKernel kernel;
  };
  for (const StepCase c : {StepCase{{301, 257, 70}, 1, 1, ctd::PatchKernel::Uniform},
                           StepCase{{160, 130, 411}, 2, 1, ctd::PatchKernel::Gaussian},
                           StepCase{{512, 512, 40}, 3, 2, ctd::PatchKernel::Uniform},
                           StepCase{{199, 233, 243}, 4, 2, ctd::PatchKernel::Uniform},
                           StepCase{{37, 29, 5}, 2, 1, ctd::PatchKernel::Uniform}}) {
    ctd::Volume in = testing_util::structured_volume(c.dims, 13);
    const std::vector<std::int16_t> in16 = testing_util::round_to_int16(in);
    const std::size_t bytes = std::size_t(in.size()) * sizeof(float);
    ctd::NlmParams p;
    p.h = 25;
    p.search_radius = c.search_radius;
    p.patch_radius = c.patch_radius;
    p.patch_kernel = c.kernel;
    p.algorithm = ctd::NlmAlgorithm::Fused;
    const ctd::Volume expected =
        testing_util::device_output(in, [&](const float* d_in, float* d_out) { ctd::nlm_device(d_in, d_out, c.dims, p, nullptr); });
    ctd::ExecContext cuda;
    cuda.device = ctd::Device::Cuda;
    const bool stepped = bytes >= (std::size_t(16) << 20);
    const std::string name = std::to_string(c.dims.nx) + "x" + std::to_string(c.dims.ny) + "x" + std::to_string(c.dims.nz);
    for (bool int16 : {false, true}) {
      ctd::Volume out(c.dims);
      const ctd::FilterRun run = int16 ? ctd::nlm(ctd::ConstVolumeView<std::int16_t>{in16.data(), c.dims}, out.view(), p, cuda)
                                       : ctd::nlm(in.view(), out.view(), p, cuda);
      EXPECT_EQ(run.details.count("overlapped"), stepped ? 1u : 0u) << name;
      EXPECT_TRUE(testing_util::bit_identical(out, expected)) << name << (int16 ? " int16" : " float32");
      EXPECT_GT(run.details.at("kernel_ms"), 0.0);
    }
  }
}

// Small filters for the host-call tests below.
ctd::NlmParams small_nlm(int search_radius) {
  ctd::NlmParams p;
  p.h = 20;
  p.search_radius = search_radius;
  p.patch_radius = 1;
  return p;
}

ctd::BilateralParams small_bilateral() {
  ctd::BilateralParams p;
  p.sigma_spatial = 1;
  p.sigma_range = 50;
  return p;
}

// Float input is checked finite while it is copied into the staging buffers (and before the
// direct copy of small volumes): a NaN or an infinity anywhere, the last voxel included, is the
// same error as on the CPU, and the output is left as it was.
TEST(NlmCudaHostApi, NonFiniteInputIsRefusedDuringTheUploadAndTheOutputIsUntouched) {
  CTD_REQUIRE_CUDA_DEVICE();
  ctd::ExecContext cuda;
  cuda.device = ctd::Device::Cuda;
  const ctd::NlmParams nlm = small_nlm(1);
  const ctd::BilateralParams bilateral = small_bilateral();
  for (const ctd::Dims dims : {ctd::Dims{37, 29, 5}, ctd::Dims{301, 257, 70}}) {  // direct; staged (5 chunks)
    ctd::Volume in = testing_util::random_volume(dims, 5);
    const std::int64_t last = in.size() - 1, middle = in.view().index(dims.nx / 2, 3, dims.nz - 2);
    in.data()[middle] = std::numeric_limits<float>::quiet_NaN();
    in.data()[last] = -std::numeric_limits<float>::infinity();
    ctd::Volume out = testing_util::random_volume(dims, 6);
    const ctd::Volume before = out;
    const std::string where = "(x=" + std::to_string(dims.nx / 2) + ", y=3, z=" + std::to_string(dims.nz - 2) + ")";
    ctd::BilateralParams compressive = bilateral;  // in steps for the staged size: none may run on the bad input
    compressive.algorithm = ctd::BilateralAlgorithm::Compressive;
    for (int filter = 0; filter < 3; ++filter) {
      try {
        if (filter == 0) ctd::nlm(in.view(), out.view(), nlm, cuda);
        else ctd::bilateral(in.view(), out.view(), filter == 1 ? bilateral : compressive, cuda);
        ADD_FAILURE() << "no error for " << dims.count() << " voxels";
      } catch (const ctd::Error& e) {
        EXPECT_EQ(e.kind(), ctd::ErrorKind::InvalidArgument);
        EXPECT_NE(std::string(e.what()).find("2 NaN or infinite"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find(where), std::string::npos) << e.what();
      }
      EXPECT_TRUE(testing_util::bit_identical(out, before)) << dims.count() << " voxels, filter " << filter;
    }
    in.data()[middle] = 1.0f;  // only the last voxel: the staged path's final, partial chunk
    EXPECT_THROW(ctd::nlm(in.view(), out.view(), nlm, cuda), ctd::Error);
    in.data()[last] = 2.0f;  // all finite again: the same call runs
    EXPECT_NO_THROW(ctd::nlm(in.view(), out.view(), nlm, cuda));
  }
}

// ExecContext::on_uploaded is called once per call, after which the call no longer reads its
// input: changing the input in the callback leaves the output as it was without the change. For
// a small volume (direct copy), a staged one, int16 input and both filters.
TEST(NlmCudaHostApi, OnUploadedComesOnceAndTheInputIsNotReadAfterIt) {
  CTD_REQUIRE_CUDA_DEVICE();
  const ctd::NlmParams nlm = small_nlm(2);
  const ctd::BilateralParams bilateral = small_bilateral();
  for (const ctd::Dims dims : {ctd::Dims{37, 29, 5}, ctd::Dims{301, 257, 70}}) {
    const ctd::Volume in = testing_util::random_volume(dims, 9);
    std::vector<std::int16_t> in16(std::size_t(in.size()));
    for (std::size_t i = 0; i < in16.size(); ++i) in16[i] = std::int16_t(std::lround(in.data()[i]));
    for (int filter = 0; filter < 2; ++filter) {
      for (bool int16 : {false, true}) {
        ctd::ExecContext plain;
        plain.device = ctd::Device::Cuda;
        auto run = [&](ctd::Volume& input, std::vector<std::int16_t>& input16, ctd::Volume& out,
                       const ctd::ExecContext& context) {
          if (filter == 0) {
            if (int16) return ctd::nlm(ctd::ConstVolumeView<std::int16_t>{input16.data(), dims}, out.view(), nlm, context);
            return ctd::nlm(input.view(), out.view(), nlm, context);
          }
          if (int16) return ctd::bilateral(ctd::ConstVolumeView<std::int16_t>{input16.data(), dims}, out.view(), bilateral, context);
          return ctd::bilateral(input.view(), out.view(), bilateral, context);
        };
        ctd::Volume in_copy = in, expected(dims), got(dims);
        std::vector<std::int16_t> in16_copy = in16;
        run(in_copy, in16_copy, expected, plain);
        int calls = 0;
        ctd::ExecContext watched = plain;
        watched.on_uploaded = [&] {
          ++calls;
          std::fill(in_copy.data(), in_copy.data() + in_copy.size(), 1e4f);
          std::fill(in16_copy.begin(), in16_copy.end(), std::int16_t(9999));
        };
        run(in_copy, in16_copy, got, watched);
        EXPECT_EQ(calls, 1);
        EXPECT_TRUE(testing_util::bit_identical(got, expected))
            << dims.count() << " voxels, filter " << filter << ", int16 " << int16;
      }
    }
  }
}

// Host threads calling at once each borrow their own staging buffers: every output is the one
// the same call gives alone.
TEST(NlmCudaHostApi, ConcurrentCallsFromHostThreadsGiveTheSameOutputs) {
  CTD_REQUIRE_CUDA_DEVICE();
  const ctd::Dims dims{301, 257, 70};
  ctd::NlmParams p;
  p.h = 20;
  p.search_radius = 1;
  p.patch_radius = 1;
  ctd::ExecContext cuda;
  cuda.device = ctd::Device::Cuda;
  std::vector<ctd::Volume> inputs, expected, got;
  for (int t = 0; t < 4; ++t) {
    inputs.push_back(testing_util::random_volume(dims, 20 + t));
    expected.emplace_back(dims);
    got.emplace_back(dims);
    ctd::nlm(inputs[t].view(), expected[t].view(), p, cuda);
  }
  for (int round = 0; round < 3; ++round) {
    std::vector<std::thread> threads;
    std::vector<std::string> errors(4);
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        try {
          ctd::nlm(inputs[t].view(), got[t].view(), p, cuda);
        } catch (const std::exception& e) {
          errors[t] = e.what();
        }
      });
    }
    for (auto& thread : threads) thread.join();
    for (int t = 0; t < 4; ++t) EXPECT_EQ(errors[t], "") << "thread " << t;
    for (int t = 0; t < 4; ++t) EXPECT_TRUE(testing_util::bit_identical(got[t], expected[t])) << "round " << round << " thread " << t;
  }
}

INSTANTIATE_TEST_SUITE_P(Variants, NlmCudaDeviceApi,
                         ::testing::Values(ctd::NlmAlgorithm::Fused, ctd::NlmAlgorithm::Displacement,
                                           ctd::NlmAlgorithm::RowWise),
                         [](const auto& variant) { return std::string(ctd::to_string(variant.param)); });
#endif

}  // namespace
