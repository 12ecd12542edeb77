// Device discovery for the CUDA backend.

#include "cuda/backend.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/device_buffer.hpp"
#include "cuda/device_util.cuh"

#include <unordered_map>

namespace ctd::cuda {

bool device_present(std::string* why) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    cudaGetLastError();  // clear the sticky error so later calls are not confused by it
    if (why) *why = std::string("no usable CUDA driver or device (") + cudaGetErrorString(status) + ")";
    return false;
  }
  if (count == 0) {
    if (why) *why = "no CUDA device found";
    return false;
  }
  return true;
}

std::string device_name() {
  if (!device_present()) return {};
  int device = 0;
  CTD_CUDA_CHECK(cudaGetDevice(&device));
  cudaDeviceProp properties{};
  CTD_CUDA_CHECK(cudaGetDeviceProperties(&properties, device));
  return properties.name;
}

void require_device() {
  std::string why;
  if (!device_present(&why)) throw Error(ErrorKind::Cuda, why);
}

namespace {
// One attribute of the current device.
int attribute(cudaDeviceAttr which) {
  int device = 0, value = 0;
  CTD_CUDA_CHECK(cudaGetDevice(&device));
  CTD_CUDA_CHECK(cudaDeviceGetAttribute(&value, which, device));
  return value;
}
}  // namespace

std::size_t max_shared_bytes() { return std::size_t(attribute(cudaDevAttrMaxSharedMemoryPerBlockOptin)); }

std::size_t shared_bytes_per_sm() {
  static const std::size_t bytes = std::size_t(attribute(cudaDevAttrMaxSharedMemoryPerMultiprocessor));
  return bytes;
}

std::size_t reserved_shared_bytes_per_block() {
  static const std::size_t bytes = std::size_t(attribute(cudaDevAttrReservedSharedMemoryPerBlock));
  return bytes;
}

int sm_count() {
  static const int count = attribute(cudaDevAttrMultiProcessorCount);
  return count;
}

float* stream_workspace(std::size_t floats, cudaStream_t stream) {
  thread_local std::unordered_map<cudaStream_t, DeviceBuffer<float>> workspaces;
  DeviceBuffer<float>& buffer = workspaces[stream];
  if (buffer.size() >= floats) return buffer.data();
  buffer = DeviceBuffer<float>();  // free the smaller one first (cudaFree waits for work using it)
  std::size_t free_bytes = 0, total_bytes = 0;
  CTD_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  if (floats * sizeof(float) > free_bytes) {
    throw Error(ErrorKind::OutOfMemory, "the filter needs " + std::to_string((floats * sizeof(float)) >> 20) +
                                            " MiB of device workspace, " + std::to_string(free_bytes >> 20) +
                                            " MiB are free");
  }
  buffer = DeviceBuffer<float>(floats);
  return buffer.data();
}

}  // namespace ctd::cuda
