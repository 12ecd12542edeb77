// The filters' int16 overloads on CUDA (uploaded as int16, converted on the GPU): the same output
// as their float overloads, and half the bytes on the bus.

#include "common/int16_input.hpp"

TEST(Int16InputCuda, SameOutputAsFloatAndHalfTheUpload) {
  if (ctd::cuda_device_name().empty()) GTEST_SKIP() << "no CUDA device";
  testing_util::expect_int16_overloads_match(ctd::Device::Cuda);
}
