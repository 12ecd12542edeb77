// Experiment (not part of the product): how fast pageable host memory reaches the device through
// pinned staging buffers, and which host copy fills them fastest. Build on the device machine:
//   nvcc -O3 -arch=sm_90 -Xcompiler -fopenmp,-mavx2 bench/timeline/staging_probe.cu -o /tmp/staging_probe
// Prints one line per variant: milliseconds (median of 7) and GB/s.
#include <cuda_runtime.h>
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <cstdlib>
#include <vector>

#define CHECK(x)                                                               \
  do {                                                                         \
    cudaError_t e = (x);                                                       \
    if (e != cudaSuccess) {                                                    \
      std::printf("%s: %s\n", #x, cudaGetErrorString(e));                      \
      std::exit(1);                                                            \
    }                                                                          \
  } while (0)

static double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

static double median_ms(const std::function<void()>& f, int reps = 7) {
  f();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    const double a = now_ms();
    f();
    t.push_back(now_ms() - a);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// Copies with non-temporal stores (the destination is not read first).
static void stream_copy(char* to, const char* from, size_t bytes) {
  size_t i = std::min(bytes, size_t((32 - (reinterpret_cast<uintptr_t>(to) & 31)) & 31));
  std::memcpy(to, from, i);
  for (; i + 128 <= bytes; i += 128) {
    __m256i a = _mm256_loadu_si256((const __m256i*)(from + i));
    __m256i b = _mm256_loadu_si256((const __m256i*)(from + i + 32));
    __m256i c = _mm256_loadu_si256((const __m256i*)(from + i + 64));
    __m256i d = _mm256_loadu_si256((const __m256i*)(from + i + 96));
    _mm256_stream_si256((__m256i*)(to + i), a);
    _mm256_stream_si256((__m256i*)(to + i + 32), b);
    _mm256_stream_si256((__m256i*)(to + i + 64), c);
    _mm256_stream_si256((__m256i*)(to + i + 96), d);
  }
  std::memcpy(to + i, from + i, bytes - i);
  _mm_sfence();
}

// As the product's copy_finite: memcpy, then the exponent bits read back from the destination.
static bool copy_then_check(float* to, const float* from, size_t n) {
  std::memcpy(to, from, n * 4);
  uint32_t bad = 0;
  for (size_t i = 0; i < n; ++i) {
    uint32_t b;
    std::memcpy(&b, to + i, 4);
    bad |= (b & 0x7f800000u) == 0x7f800000u;
  }
  return bad == 0;
}

// One pass: each 32 bytes loaded once, stored, and their exponents tested.
static bool copy_and_check(float* to, const float* from, size_t n) {
  const __m256i exp = _mm256_set1_epi32(0x7f800000);
  __m256i bad = _mm256_setzero_si256();
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i v = _mm256_loadu_si256((const __m256i*)(from + i));
    _mm256_storeu_si256((__m256i*)(to + i), v);
    bad = _mm256_or_si256(bad, _mm256_cmpeq_epi32(_mm256_and_si256(v, exp), exp));
  }
  bool ok = _mm256_testz_si256(bad, bad);
  for (; i < n; ++i) {
    to[i] = from[i];
    ok = ok && std::isfinite(from[i]);
  }
  return ok;
}

// op(begin, end) on page-aligned pieces of [0, bytes), one per thread.
template <typename Op>
static void in_pieces(size_t bytes, int threads, Op op) {
  const size_t piece = (bytes / threads + 4095) / 4096 * 4096;
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int t = 0; t < threads; ++t) {
    const size_t begin = std::min(bytes, t * piece), end = std::min(bytes, begin + piece);
    if (end > begin) op(begin, end);
  }
}

static void parallel_check_copy(char* to, const char* from, size_t bytes, int threads, int variant) {
  in_pieces(bytes, threads, [&](size_t begin, size_t end) {
    if (variant == 1) copy_then_check((float*)(to + begin), (const float*)(from + begin), (end - begin) / 4);
    else copy_and_check((float*)(to + begin), (const float*)(from + begin), (end - begin) / 4);
  });
}

static void parallel_copy(char* to, const char* from, size_t bytes, int threads, bool streaming) {
  in_pieces(bytes, threads, [&](size_t begin, size_t end) {
    if (streaming) stream_copy(to + begin, from + begin, end - begin);
    else std::memcpy(to + begin, from + begin, end - begin);
  });
}

struct Staging {
  size_t chunk;
  int slots;
  std::vector<char*> host;
  std::vector<cudaEvent_t> done;
  Staging(size_t chunk_, int slots_) : chunk(chunk_), slots(slots_), host(slots_), done(slots_) {
    for (int i = 0; i < slots; ++i) {
      CHECK(cudaHostAlloc((void**)&host[i], chunk, cudaHostAllocDefault));
      CHECK(cudaEventCreateWithFlags(&done[i], cudaEventDisableTiming));
    }
  }
  void up_checked(char* dev, const char* src, size_t bytes, cudaStream_t s, int threads, int variant) {
    for (size_t off = 0, k = 0; off < bytes; off += chunk, ++k) {
      const int i = int(k % slots);
      const size_t len = std::min(chunk, bytes - off);
      CHECK(cudaEventSynchronize(done[i]));
      if (variant == 0) parallel_copy(host[i], src + off, len, threads, false);
      else parallel_check_copy(host[i], src + off, len, threads, variant);
      CHECK(cudaMemcpyAsync(dev + off, host[i], len, cudaMemcpyHostToDevice, s));
      CHECK(cudaEventRecord(done[i], s));
    }
    CHECK(cudaStreamSynchronize(s));
  }
  void up(char* dev, const char* src, size_t bytes, cudaStream_t s, int threads, bool streaming) {
    for (size_t off = 0, k = 0; off < bytes; off += chunk, ++k) {
      const int i = int(k % slots);
      const size_t len = std::min(chunk, bytes - off);
      CHECK(cudaEventSynchronize(done[i]));
      parallel_copy(host[i], src + off, len, threads, streaming);
      CHECK(cudaMemcpyAsync(dev + off, host[i], len, cudaMemcpyHostToDevice, s));
      CHECK(cudaEventRecord(done[i], s));
    }
    CHECK(cudaStreamSynchronize(s));
  }
  void down(char* dst, const char* dev, size_t bytes, cudaStream_t s, int threads, bool streaming) {
    const size_t chunks = (bytes + chunk - 1) / chunk;
    auto enqueue = [&](size_t k) {
      const int i = int(k % slots);
      const size_t off = k * chunk, len = std::min(chunk, bytes - off);
      CHECK(cudaMemcpyAsync(host[i], dev + off, len, cudaMemcpyDeviceToHost, s));
      CHECK(cudaEventRecord(done[i], s));
    };
    for (size_t k = 0; k < std::min<size_t>(slots, chunks); ++k) enqueue(k);
    for (size_t k = 0; k < chunks; ++k) {
      const int i = int(k % slots);
      CHECK(cudaEventSynchronize(done[i]));
      const size_t off = k * chunk;
      parallel_copy(dst + off, host[i], std::min(chunk, bytes - off), threads, streaming);
      if (k + slots < chunks) enqueue(k + slots);
    }
  }
};

// The first pinned buffers of a process, as the CLI's one call makes them: `alloc VARIANT` in a
// fresh process, after the context exists. VARIANT: hostalloc-4x16 (four cudaHostAlloc of 16 MiB),
// hostalloc-64, register-64 (malloc, pages touched on 16 threads, cudaHostRegister).
static int time_first_alloc(const std::string& variant) {
  CHECK(cudaFree(nullptr));
  const size_t mib = size_t(1) << 20;
  const double t0 = now_ms();
  if (variant == "hostalloc-4x16") {
    for (int i = 0; i < 4; ++i) {
      void* p;
      CHECK(cudaHostAlloc(&p, 16 * mib, cudaHostAllocDefault));
    }
  } else if (variant == "hostalloc-64") {
    void* p;
    CHECK(cudaHostAlloc(&p, 64 * mib, cudaHostAllocDefault));
  } else if (variant == "register-64") {
    char* p = static_cast<char*>(std::aligned_alloc(4096, 64 * mib));
#pragma omp parallel for num_threads(16)
    for (int t = 0; t < 16; ++t) std::memset(p + t * 4 * mib, 0, 4 * mib);
    CHECK(cudaHostRegister(p, 64 * mib, cudaHostRegisterDefault));
  } else {
    std::printf("unknown variant %s\n", variant.c_str());
    return 2;
  }
  std::printf("first pinned 64 MiB, %-16s %.2f ms\n", variant.c_str(), now_ms() - t0);
  return 0;
}

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "alloc") return time_first_alloc(argv[2]);
  if (argc == 2 && std::string(argv[1]) == "check") {  // float upload of 512 MiB, checked finite or not
    const size_t bytes = size_t(512) << 20;
    std::vector<float> src(bytes / 4);
    for (size_t i = 0; i < src.size(); ++i) src[i] = float(i % 4093);
    char* dev;
    CHECK(cudaMalloc(&dev, bytes));
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    Staging st(size_t(16) << 20, 4);
    const char* names[] = {"memcpy, no check", "memcpy then check (product)", "one pass copy and check (AVX2)"};
    for (int round = 0; round < 3; ++round) {
      for (int v = 0; v < 3; ++v) {
        const double ms = median_ms([&] { st.up_checked(dev, (const char*)src.data(), bytes, s, 16, v); });
        std::printf("staged float up 512 MiB, 16 MiB x 4, 16 thr, %-32s %7.2f ms %6.1f GB/s\n", names[v], ms, bytes / ms / 1e6);
      }
    }
    return 0;
  }
  const size_t up_bytes = size_t(256) << 20, down_bytes = size_t(512) << 20;
  std::vector<char> src(up_bytes), dst(down_bytes);
  for (size_t i = 0; i < up_bytes; ++i) src[i] = char(i * 7);
  std::memset(dst.data(), 1, down_bytes);
  char *dev_up, *dev_down, *pinned;
  CHECK(cudaMalloc(&dev_up, up_bytes));
  CHECK(cudaMalloc(&dev_down, down_bytes));
  CHECK(cudaMemset(dev_down, 3, down_bytes));
  CHECK(cudaHostAlloc((void**)&pinned, down_bytes, cudaHostAllocDefault));
  std::memset(pinned, 2, down_bytes);
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  std::printf("omp max threads %d\n", omp_get_max_threads());
  auto report = [](const char* name, size_t bytes, double ms) {
    std::printf("%-48s %8.2f ms %6.1f GB/s\n", name, ms, bytes / ms / 1e6);
  };
  report("pinned -> device 256 MiB", up_bytes, median_ms([&] {
           CHECK(cudaMemcpyAsync(dev_up, pinned, up_bytes, cudaMemcpyHostToDevice, s));
           CHECK(cudaStreamSynchronize(s));
         }));
  report("device -> pinned 512 MiB", down_bytes, median_ms([&] {
           CHECK(cudaMemcpyAsync(pinned, dev_down, down_bytes, cudaMemcpyDeviceToHost, s));
           CHECK(cudaStreamSynchronize(s));
         }));
  report("pageable -> device (driver) 256 MiB", up_bytes, median_ms([&] {
           CHECK(cudaMemcpyAsync(dev_up, src.data(), up_bytes, cudaMemcpyHostToDevice, s));
           CHECK(cudaStreamSynchronize(s));
         }));
  report("device -> pageable (driver) 512 MiB", down_bytes, median_ms([&] {
           CHECK(cudaMemcpyAsync(dst.data(), dev_down, down_bytes, cudaMemcpyDeviceToHost, s));
           CHECK(cudaStreamSynchronize(s));
         }));
  char name[128];
  for (int threads : {1, 4, 8, 16}) {
    for (bool streaming : {false, true}) {
      std::snprintf(name, sizeof name, "host copy into pinned, %2d threads, %s", threads, streaming ? "stream" : "memcpy");
      report(name, up_bytes, median_ms([&] { parallel_copy(pinned, src.data(), up_bytes, threads, streaming); }));
      std::snprintf(name, sizeof name, "host copy out of pinned, %2d threads, %s", threads, streaming ? "stream" : "memcpy");
      report(name, down_bytes, median_ms([&] { parallel_copy(dst.data(), pinned, down_bytes, threads, streaming); }));
    }
  }
  for (size_t chunk_mib : {4, 8, 16}) {
    for (int slots : {4, 8}) {
      Staging st(chunk_mib << 20, slots);
      for (int threads : {8, 16}) {
        for (bool streaming : {false, true}) {
          std::snprintf(name, sizeof name, "staged up   %2zu MiB x %d, %2d thr, %s", chunk_mib, slots, threads,
                        streaming ? "stream" : "memcpy");
          report(name, up_bytes, median_ms([&] { st.up(dev_up, src.data(), up_bytes, s, threads, streaming); }));
          std::snprintf(name, sizeof name, "staged down %2zu MiB x %d, %2d thr, %s", chunk_mib, slots, threads,
                        streaming ? "stream" : "memcpy");
          report(name, down_bytes, median_ms([&] { st.down(dst.data(), dev_down, down_bytes, s, threads, streaming); }));
        }
      }
    }
  }
  // Registering the caller's memory instead of staging it.
  report("cudaHostRegister + unregister 512 MiB", down_bytes, median_ms([&] {
           CHECK(cudaHostRegister(dst.data(), down_bytes, cudaHostRegisterDefault));
           CHECK(cudaHostUnregister(dst.data()));
         }, 3));
  return 0;
}
