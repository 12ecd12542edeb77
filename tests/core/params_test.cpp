// Bad parameters are rejected with ErrorKind::InvalidArgument (never clamped); the rest of the
// front-end contract: device routing, dims checks, non-finite input.

#include "common/test_util.hpp"

#include <ctdenoise/ctdenoise.hpp>

#include <chrono>
#include <future>
#include <limits>

namespace {

using ctd::ErrorKind;
using testing_util::throws_kind;

ctd::NlmParams good_nlm() {
  ctd::NlmParams p;
  p.h = 10;
  return p;
}

ctd::BilateralParams good_bf() {
  ctd::BilateralParams p;
  p.sigma_spatial = 1.5f;
  p.sigma_range = 20;
  return p;
}

TEST(NlmParams, DefaultsWithHAreValid) { EXPECT_NO_THROW(ctd::validate(good_nlm())); }

TEST(NlmParams, RejectsEachBadField) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<std::pair<const char*, std::function<void(ctd::NlmParams&)>>> cases = {
      {"search_radius 0", [](auto& p) { p.search_radius = 0; }},
      {"search_radius -3", [](auto& p) { p.search_radius = -3; }},
      {"patch_radius 0", [](auto& p) { p.patch_radius = 0; }},
      {"h 0", [](auto& p) { p.h = 0; }},
      {"h negative", [](auto& p) { p.h = -1; }},
      {"h NaN", [=](auto& p) { p.h = nan; }},
      {"h inf", [=](auto& p) { p.h = inf; }},
      {"noise_sigma negative", [](auto& p) { p.noise_sigma = -0.5f; }},
      {"noise_sigma NaN", [=](auto& p) { p.noise_sigma = nan; }},
      {"patch_sigma 0", [](auto& p) { p.patch_kernel = ctd::PatchKernel::Gaussian; p.patch_sigma = 0; }},
      {"L1 + Gaussian", [](auto& p) { p.distance = ctd::PatchDistance::L1; p.patch_kernel = ctd::PatchKernel::Gaussian; }},
      {"L1 + noise", [](auto& p) { p.distance = ctd::PatchDistance::L1; p.noise_sigma = 3; }},
  };
  for (auto& [name, mutate] : cases) {
    auto p = good_nlm();
    mutate(p);
    EXPECT_TRUE(throws_kind([&] { ctd::validate(p); }, ErrorKind::InvalidArgument)) << name;
  }
}

TEST(NlmParams, ErrorNamesTheField) {
  auto p = good_nlm();
  p.patch_radius = 0;
  try {
    ctd::validate(p);
    FAIL() << "no throw";
  } catch (const ctd::Error& e) {
    EXPECT_NE(std::string(e.what()).find("patch_radius"), std::string::npos) << e.what();
  }
}

TEST(BilateralParams, RejectsEachBadField) {
  std::vector<std::pair<const char*, std::function<void(ctd::BilateralParams&)>>> cases = {
      {"sigma_spatial 0", [](auto& p) { p.sigma_spatial = 0; }},
      {"sigma_spatial negative", [](auto& p) { p.sigma_spatial = -2; }},
      {"sigma_range 0", [](auto& p) { p.sigma_range = 0; }},
      {"sigma_range NaN", [](auto& p) { p.sigma_range = std::numeric_limits<float>::quiet_NaN(); }},
      {"sigma_range whose 1 / (2 sigma_r^2) overflows float", [](auto& p) { p.sigma_range = 1e-20f; }},
      {"radius 0 in y", [](auto& p) { p.radius = std::array<int, 3>{2, 0, 2}; }},
      {"spacing 0 with mm", [](auto& p) { p.spatial_unit = ctd::SpatialUnit::Millimetre; p.spacing = {1, 0, 1}; }},
  };
  for (auto& [name, mutate] : cases) {
    auto p = good_bf();
    mutate(p);
    EXPECT_TRUE(throws_kind([&] { ctd::validate(p); }, ErrorKind::InvalidArgument)) << name;
  }
}

TEST(BilateralParams, DefaultRadiusIsThreeSigmaPerAxis) {
  auto p = good_bf();
  p.sigma_spatial = 1.0f;
  EXPECT_EQ(ctd::bilateral_radius(p, {9, 9, 9}), (std::array<int, 3>{3, 3, 3}));
  EXPECT_EQ(ctd::bilateral_radius(p, {9, 9, 1}), (std::array<int, 3>{3, 3, 0}));  // 2D: no z window
  p.spatial_unit = ctd::SpatialUnit::Millimetre;
  p.sigma_spatial = 2.0f;
  p.spacing = {0.5, 0.8, 2.5};
  EXPECT_EQ(ctd::bilateral_radius(p, {9, 9, 9}), (std::array<int, 3>{12, 8, 3}));
  p.radius = std::array<int, 3>{4, 5, 6};
  EXPECT_EQ(ctd::bilateral_radius(p, {9, 9, 9}), (std::array<int, 3>{4, 5, 6}));
}

TEST(Filters, RefuseNonFiniteInputNamingTheVoxel) {
  ctd::Volume in = testing_util::random_volume({4, 3, 2}, 7), out(in.dims());
  in.data()[in.view().index(2, 1, 1)] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(throws_kind([&] { ctd::nlm(in.view(), out.view(), good_nlm()); }, ErrorKind::InvalidArgument));
  in.data()[0] = std::numeric_limits<float>::infinity();
  try {
    ctd::bilateral(in.view(), out.view(), good_bf());
    FAIL() << "no throw";
  } catch (const ctd::Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("2 NaN or infinite"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("(x=0, y=0, z=0)"), std::string::npos) << e.what();
  }
}

TEST(Filters, RejectMismatchedDims) {
  ctd::Volume in = testing_util::random_volume({4, 3, 2}, 1), out({4, 3, 3});
  EXPECT_TRUE(throws_kind([&] { ctd::nlm(in.view(), out.view(), good_nlm()); }, ErrorKind::InvalidArgument));
  EXPECT_TRUE(throws_kind([&] { ctd::bilateral(in.view(), out.view(), good_bf()); }, ErrorKind::InvalidArgument));
}

TEST(Filters, CudaWithoutADeviceIsAClearErrorAndAutoRunsOnCpu) {
  if (!ctd::cuda_device_name().empty()) GTEST_SKIP() << "a CUDA device is present (tests/cuda covers it)";
  ctd::Volume in = testing_util::random_volume({5, 4, 3}, 2), out(in.dims());
  ctd::ExecContext cuda;
  cuda.device = ctd::Device::Cuda;
  // A build without CUDA says so (Unsupported); a CUDA build on a machine without a GPU says
  // there is no device (Cuda).
  const ErrorKind expected = CTD_HAVE_CUDA ? ErrorKind::Cuda : ErrorKind::Unsupported;
  EXPECT_TRUE(throws_kind([&] { ctd::nlm(in.view(), out.view(), good_nlm(), cuda); }, expected));
  EXPECT_TRUE(throws_kind([&] { ctd::bilateral(in.view(), out.view(), good_bf(), cuda); }, expected));
  EXPECT_EQ(ctd::bilateral(in.view(), out.view(), good_bf(), {}).algorithm, "direct");
  auto bf_fused = good_bf();
  bf_fused.algorithm = ctd::BilateralAlgorithm::Fused;  // CUDA only
  EXPECT_TRUE(throws_kind([&] { ctd::bilateral(in.view(), out.view(), bf_fused, {}); }, ErrorKind::Unsupported));
  const auto run = ctd::nlm(in.view(), out.view(), good_nlm(), {});
  EXPECT_EQ(run.device, ctd::Device::Cpu);
  EXPECT_EQ(run.algorithm, "displacement");
  auto fused = good_nlm();
  fused.algorithm = ctd::NlmAlgorithm::Fused;
  ctd::ExecContext cpu;
  cpu.device = ctd::Device::Cpu;
  EXPECT_TRUE(throws_kind([&] { ctd::nlm(in.view(), out.view(), fused, cpu); }, ErrorKind::Unsupported));
}

TEST(Filters, RejectNegativeThreads) {
  ctd::Volume in = testing_util::random_volume({5, 4, 3}, 2), out(in.dims());
  ctd::ExecContext c;
  c.threads = -1;
  EXPECT_TRUE(throws_kind([&] { ctd::nlm(in.view(), out.view(), good_nlm(), c); }, ErrorKind::InvalidArgument));
}

TEST(Names, ParseAndPrintRoundTrip) {
  EXPECT_EQ(ctd::device_from_string("cuda"), ctd::Device::Cuda);
  EXPECT_EQ(ctd::to_string(ctd::Device::Cpu), "cpu");
  EXPECT_EQ(ctd::nlm_algorithm_from_string("displacement"), ctd::NlmAlgorithm::Displacement);
  EXPECT_EQ(ctd::bilateral_algorithm_from_string("direct"), ctd::BilateralAlgorithm::Direct);
  EXPECT_TRUE(throws_kind([] { ctd::device_from_string("gpu"); }, ErrorKind::InvalidArgument));
  EXPECT_EQ(ctd::nlm_algorithm_from_string("fused"), ctd::NlmAlgorithm::Fused);
  EXPECT_TRUE(throws_kind([] { ctd::nlm_algorithm_from_string("bogus"); }, ErrorKind::InvalidArgument));
}

// Without a CUDA device there is no context to end: the future is ready at once with 0 seconds
// (with one, tests/cuda/context_end_cuda_test.cpp checks the end in a child process).
TEST(CudaContextEnd, WithoutADeviceIsReadyAtOnceWithZero) {
  if (!ctd::cuda_device_name().empty()) GTEST_SKIP() << "a CUDA device is present: the end would end this process's context";
  std::future<double> end = ctd::end_cuda_context_before_exit();
  ASSERT_EQ(end.wait_for(std::chrono::seconds(0)), std::future_status::ready);
  EXPECT_EQ(end.get(), 0.0);
}

TEST(Volume, RejectsEmptyDims) {
  EXPECT_TRUE(throws_kind([] { ctd::Volume v({0, 3, 3}); }, ErrorKind::InvalidArgument));
}

// Volumes of 4 MiB and more start on a 2 MiB boundary (transparent huge pages); every size holds
// zeros, copies and moves keep the voxels.
TEST(Volume, LargeVolumesAreHugePageAlignedAndEverySizeStartsAtZero) {
  for (const ctd::Dims dims : {ctd::Dims{1, 1, 1}, ctd::Dims{17, 9, 3}, ctd::Dims{1024, 1023, 1}, ctd::Dims{1024, 1024, 1},
                               ctd::Dims{301, 257, 41}}) {
    ctd::Volume v(dims);
    const bool large = std::size_t(dims.count()) * sizeof(float) >= (std::size_t(4) << 20);
    if (large) {
      EXPECT_EQ(reinterpret_cast<std::uintptr_t>(v.data()) % (std::uintptr_t(2) << 20), 0u) << dims.count();
    }
    EXPECT_TRUE(std::all_of(v.data(), v.data() + v.size(), [](float x) { return x == 0.0f; })) << dims.count();
    for (std::int64_t i = 0; i < v.size(); ++i) v.data()[i] = float(i % 977);
    const ctd::Volume copy = v;
    ctd::Volume moved = std::move(v);
    for (std::int64_t i = 0; i < copy.size(); i += 101) {
      ASSERT_EQ(copy.data()[i], float(i % 977));
      ASSERT_EQ(moved.data()[i], float(i % 977));
    }
  }
}

TEST(Volume, ReportsOutOfMemoryAsItsKind) {
  EXPECT_TRUE(throws_kind([] { ctd::Volume v({1 << 20, 1 << 20, 1 << 16}); }, ErrorKind::OutOfMemory));
}

}  // namespace
