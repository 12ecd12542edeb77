// Device discovery for the CUDA backend.

#include "cuda/backend.hpp"
#include "cuda/cuda_check.hpp"

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

}  // namespace ctd::cuda
