// The floor of any CUDA process on the machine: creates the context (optionally with device and
// pinned memory in use, as the CLI has) and returns. Prints the times at which main started and
// ended; bench/process_timeline.sh takes the time from main's end to the process's end.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>

static double now() {
  timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return double(t.tv_sec) + t.tv_nsec * 1e-9;
}

int main(int argc, char** argv) {
  const double start = now();
  if (cudaFree(nullptr) != cudaSuccess) return 1;
  const double context = now();
  const size_t bytes = argc > 1 ? size_t(std::atoll(argv[1])) : 0;
  void* device = nullptr;
  void* pinned = nullptr;
  if (bytes > 0) {
    if (cudaMalloc(&device, bytes) != cudaSuccess || cudaMallocHost(&pinned, 32 << 20) != cudaSuccess) return 1;
    cudaMemset(device, 1, bytes);
    cudaDeviceSynchronize();
  }
  std::printf("{\"main_start\": %.6f, \"context_s\": %.4f, \"main_end\": %.6f}\n", start, context - start, now());
  return 0;
}
