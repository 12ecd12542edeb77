#pragma once
// CTD_CUDA_CHECK(expr): throws ctd::Error (kind Cuda, or OutOfMemory for allocation failures)
// naming the file, line and expression. Use it on every CUDA runtime call and after every launch.

#include <ctdenoise/error.hpp>

#include <cuda_runtime.h>

#include <string>

namespace ctd::cuda {

[[noreturn]] inline void throw_cuda_error(cudaError_t status, const char* expression, const char* file, int line) {
  const ErrorKind kind = status == cudaErrorMemoryAllocation ? ErrorKind::OutOfMemory : ErrorKind::Cuda;
  throw Error(kind, std::string(cudaGetErrorName(status)) + " (" + cudaGetErrorString(status) + ") in " + expression +
                        " at " + file + ":" + std::to_string(line));
}

}  // namespace ctd::cuda

#define CTD_CUDA_CHECK(expr)                                                                     \
  do {                                                                                           \
    const cudaError_t ctd_status_ = (expr);                                                      \
    if (ctd_status_ != cudaSuccess) ::ctd::cuda::throw_cuda_error(ctd_status_, #expr, __FILE__, __LINE__); \
  } while (0)

// After a kernel launch: launch-configuration errors surface here, not at the next call.
#define CTD_CUDA_CHECK_LAUNCH() CTD_CUDA_CHECK(cudaGetLastError())
