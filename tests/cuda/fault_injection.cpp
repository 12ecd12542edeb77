// Test-only LD_PRELOAD library (never linked into ctdenoise): makes the CUDA runtime fail the
// way a full GPU or a lost device does, so the tests can check what the CLI does then.
//   CTD_TEST_CUDA_MALLOC_LIMIT=BYTES  cudaMalloc of more than BYTES fails (out of memory)
//   CTD_TEST_CUDA_LOST_AFTER=N        after N synchronisations, every one fails as on a lost
//                                     device (cudaErrorLaunchFailure)

#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <atomic>
#include <cstdlib>

namespace {

template <class F>
F real(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}

bool over_limit(size_t bytes) {
  const char* limit = std::getenv("CTD_TEST_CUDA_MALLOC_LIMIT");
  return limit != nullptr && bytes > std::strtoull(limit, nullptr, 10);
}

bool device_lost() {
  static std::atomic<long> calls{0};
  const char* after = std::getenv("CTD_TEST_CUDA_LOST_AFTER");
  return after != nullptr && calls++ >= std::atol(after);
}

}  // namespace

extern "C" cudaError_t cudaMalloc(void** pointer, size_t bytes) {
  static const auto next = real<cudaError_t (*)(void**, size_t)>("cudaMalloc");
  if (over_limit(bytes)) return cudaErrorMemoryAllocation;
  return next(pointer, bytes);
}

extern "C" cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  static const auto next = real<cudaError_t (*)(cudaStream_t)>("cudaStreamSynchronize");
  if (device_lost()) return cudaErrorLaunchFailure;
  return next(stream);
}

extern "C" cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  static const auto next = real<cudaError_t (*)(cudaEvent_t)>("cudaEventSynchronize");
  if (device_lost()) return cudaErrorLaunchFailure;
  return next(event);
}
