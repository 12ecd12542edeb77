// The floor of any CUDA process on the machine: creates the context (optionally with device and
// pinned memory in use, as the CLI has) and returns. Prints the times at which main started and
// ended; bench/process_timeline.sh takes the time from main's end to the process's end.
//   context_only [DEVICE_BYTES] [keep|reset|reset-beside-work]
// "reset" ends the context (cudaDeviceReset) before main returns and times it; "reset-beside-work"
// ends it on another thread while main sleeps 0.1 s (as the CLI's write of a 287 MB file), to
// see whether the process's exit gets shorter by what the reset took (the CLI does this since
// 2026-11-26: ctd::end_cuda_context_before_exit).
#include <cuda.h>
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <thread>

static double now() {
  timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return double(t.tv_sec) + t.tv_nsec * 1e-9;
}

int main(int argc, char** argv) {
  const double start = now();
  if (cuInit(0) != CUDA_SUCCESS) return 1;  // the driver alone, then the context
  const double driver = now();
  if (cudaFree(nullptr) != cudaSuccess) return 1;
  const double context = now();
  const size_t bytes = argc > 1 ? size_t(std::atoll(argv[1])) : 0;
  const char* mode = argc > 2 ? argv[2] : "keep";
  void* device = nullptr;
  void* pinned = nullptr;
  if (bytes > 0) {
    if (cudaMalloc(&device, bytes) != cudaSuccess || cudaMallocHost(&pinned, 32 << 20) != cudaSuccess) return 1;
    cudaMemset(device, 1, bytes);
    cudaDeviceSynchronize();
  }
  double reset_s = 0;
  if (std::strcmp(mode, "reset") == 0) {
    const double t = now();
    cudaDeviceReset();
    reset_s = now() - t;
  } else if (std::strcmp(mode, "reset-beside-work") == 0) {
    std::thread reset([&] {
      const double t = now();
      cudaFree(nullptr);  // binds this thread to the context: on a thread that never used it the reset does nothing
      cudaDeviceReset();
      reset_s = now() - t;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    reset.join();
  }
  std::printf("{\"mode\": \"%s\", \"main_start\": %.6f, \"driver_s\": %.4f, \"context_s\": %.4f, \"reset_s\": %.4f, \"main_end\": %.6f}\n",
              mode, start, driver - start, context - driver, reset_s, now());
  return 0;
}
