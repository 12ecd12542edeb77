// The filters' int16 overloads on CUDA (uploaded as int16, converted on the GPU): the same output
// as their float overloads, and half the bytes on the bus.

#include "common/int16_input.hpp"

#include <thread>

TEST(Int16InputCuda, SameOutputAsFloatAndHalfTheUpload) {
  if (ctd::cuda_device_name().empty()) GTEST_SKIP() << "no CUDA device";
  testing_util::expect_int16_overloads_match(ctd::Device::Cuda);
}

// initialize_cuda makes one set of pinned staging buffers ahead; the first thread to copy a large
// volume takes it, and later threads make their own: every copy gives the same voxels.
TEST(HostCallStagingCuda, MadeAheadServesTheFirstThread) {
  if (ctd::cuda_device_name().empty()) GTEST_SKIP() << "no CUDA device";
  ctd::initialize_cuda();
  const ctd::Dims dims{256, 200, 41};  // 8 MB of float: through the staging buffers
  const ctd::Volume in = testing_util::random_volume(dims, 5, -1000, 1000);
  ctd::NlmParams p;
  p.search_radius = 1;
  p.patch_radius = 1;
  p.h = 300;
  ctd::ExecContext cuda;
  cuda.device = ctd::Device::Cuda;
  std::vector<ctd::Volume> outs;
  for (int t = 0; t < 3; ++t) outs.emplace_back(dims);
  for (int t = 0; t < 3; ++t) {
    std::thread([&, t] { ctd::nlm(in.view(), outs[std::size_t(t)].view(), p, cuda); }).join();
  }
  for (int t = 1; t < 3; ++t) {
    EXPECT_EQ(std::memcmp(outs[0].data(), outs[std::size_t(t)].data(), std::size_t(in.size()) * sizeof(float)), 0) << t;
  }
}
