#pragma once
// Small pieces every CUDA filter shares: the mirror border on the device, and device checks.

#include <cstddef>

namespace ctd::cuda {

// Mirror border without repeating the edge voxel (c b | a b c d | c b), any distance out.
__host__ __device__ __forceinline__ int mirror(int i, int n) {
  if (i >= 0 && i < n) return i;
  if (n == 1) return 0;
  const int period = 2 * (n - 1);
  int m = i % period;
  if (m < 0) m += period;
  return m < n ? m : period - m;
}

// Throws ErrorKind::Cuda naming what is missing when there is no driver or device.
void require_device();
// Shared memory a block may opt in to on the current device.
std::size_t max_shared_bytes();
// Streaming multiprocessors of the current device.
int sm_count();
// Shared memory of one SM, and what the system keeps of it per resident block.
std::size_t shared_bytes_per_sm();
std::size_t reserved_shared_bytes_per_block();

}  // namespace ctd::cuda
