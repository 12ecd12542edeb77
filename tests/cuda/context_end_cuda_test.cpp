// ctd::end_cuda_context_before_exit: after a filter run on CUDA from host memory (the context,
// its cached device memory, streams and pinned staging all in use), the end returns once the
// driver no longer holds the device's primary context, asked through the driver API (loaded
// here with dlopen, so that the binary starts where there is no driver). Runs in a child process (a death test re-executed with only this test),
// since nothing may use CUDA after the end and the process must end with std::_Exit. Without a
// CUDA device the test is skipped; without one the end is a ready 0 (core test).

#include "common/test_util.hpp"

#include <ctdenoise/ctdenoise.hpp>

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

namespace {

// Whether the driver holds device 0's primary context (cuDevicePrimaryCtxGetState); -1 where the
// driver cannot be asked. Not through the runtime, whose calls would create the context again.
int primary_context_active() {
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!driver) return -1;
  using Init = int (*)(unsigned);
  using DeviceGet = int (*)(int*, int);
  using GetState = int (*)(int, unsigned*, int*);
  const auto init = reinterpret_cast<Init>(dlsym(driver, "cuInit"));
  const auto device_get = reinterpret_cast<DeviceGet>(dlsym(driver, "cuDeviceGet"));
  const auto get_state = reinterpret_cast<GetState>(dlsym(driver, "cuDevicePrimaryCtxGetState"));
  int device = 0, active = -1;
  unsigned flags = 0;
  if (!init || !device_get || !get_state || init(0) != 0 || device_get(&device, 0) != 0 ||
      get_state(device, &flags, &active) != 0) {
    return -1;
  }
  return active;
}

// The child's verdict as its exit code: 0 the context ended, 2 not, 3 the driver could not be asked.
[[noreturn]] void filter_then_end_context() {
  const ctd::Dims dims{67, 45, 9};
  const ctd::Volume in = testing_util::structured_volume(dims, 5);
  ctd::Volume out(dims);
  ctd::NlmParams params;
  params.h = 40;
  params.search_radius = 2;
  params.patch_radius = 1;
  ctd::ExecContext context;
  context.device = ctd::Device::Cuda;
  ctd::nlm(in.view(), out.view(), params, context);
  if (primary_context_active() != 1) std::_Exit(3);  // the check can see a context at all
  const double seconds = ctd::end_cuda_context_before_exit().get();
  const int active = primary_context_active();
  if (active < 0) std::_Exit(3);
  std::fprintf(stderr, "context ended in %.4f s, still active: %d\n", seconds, active);
  std::fflush(nullptr);
  std::_Exit(active == 0 && seconds > 0 ? 0 : 2);
}

TEST(CudaContextEnd, EndsThePrimaryContextAfterAFilterRun) {
  if (ctd::cuda_device_name().empty()) GTEST_SKIP() << "no CUDA device";
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // the child starts afresh: no CUDA state forked
  EXPECT_EXIT(filter_then_end_context(), ::testing::ExitedWithCode(0), "still active: 0");
}

}  // namespace
