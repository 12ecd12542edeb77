// Device discovery for the CUDA backend.

#include "cuda/backend.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/device_buffer.hpp"
#include "cuda/device_util.cuh"

#include "cpu/host_copy.hpp"
#include "cpu/thread_pool.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

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

void create_context() { CTD_CUDA_CHECK(cudaFree(nullptr)); }

int current_device() {
  int device = 0;
  CTD_CUDA_CHECK(cudaGetDevice(&device));
  return device;
}

void end_context(int device) noexcept {
  // A thread's first call binds it to the device's primary context; the reset then ends that
  // context for the whole process (on a thread that never used it, the reset did nothing).
  if (cudaSetDevice(device) != cudaSuccess || cudaFree(nullptr) != cudaSuccess) return;
  cudaDeviceSynchronize();
  cudaDeviceReset();
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

namespace {

// Pinned staging: kSlots buffers of kChunk bytes, each with the event of the last copy through it,
// filled and emptied on every core (one core copies ~11 GB/s on the H100 host, the bus takes 55;
// bench/NOTES.md, "Staging on every core").
constexpr std::size_t kChunk = std::size_t(16) << 20;
constexpr int kSlots = 4;
constexpr std::size_t kDirectBytes = std::size_t(4) << 20;  // smaller copies go straight from pageable memory

class Staging {
 public:
  // One block for all slots: allocated, its pages touched on every core, then pinned with
  // cudaHostRegister (8-14 ms for 64 MiB on the H100 host, against 30-36 ms for cudaHostAlloc).
  Staging() : pool_(cpu::hardware_threads()) {
    try {
      block_ = static_cast<char*>(std::aligned_alloc(kPage, kSlots * kChunk));
      if (!block_) throw Error(ErrorKind::OutOfMemory, "cannot allocate the staging buffers for host copies");
      each_piece(kSlots * kChunk, [&](std::size_t begin, std::size_t end) { std::memset(block_ + begin, 0, end - begin); });
      CTD_CUDA_CHECK(cudaHostRegister(block_, kSlots * kChunk, cudaHostRegisterDefault));
      registered_ = true;
      for (int k = 0; k < kSlots; ++k) {
        slots_[k].host = block_ + k * kChunk;
        CTD_CUDA_CHECK(cudaEventCreateWithFlags(&slots_[k].done, cudaEventDisableTiming));
      }
    } catch (...) {
      release();
      throw;
    }
  }
  ~Staging() { release(); }
  Staging(const Staging&) = delete;
  Staging& operator=(const Staging&) = delete;

  // `copy_piece(to, from, bytes)` fills the pinned buffers; pieces are whole pages.
  template <class Copy>
  void to_device(char* device, const char* host, std::size_t bytes, cudaStream_t stream, Copy&& copy_piece,
                 const ChunkHook& queued) {
    for (std::size_t offset = 0, k = 0; offset < bytes; offset += kChunk, ++k) {
      Slot& slot = slots_[k % kSlots];
      const std::size_t length = std::min(kChunk, bytes - offset);
      CTD_CUDA_CHECK(cudaEventSynchronize(slot.done));  // its last copy has left the buffer
      copy(slot.host, host + offset, length, copy_piece);
      CTD_CUDA_CHECK(cudaMemcpyAsync(device + offset, slot.host, length, cudaMemcpyHostToDevice, stream));
      CTD_CUDA_CHECK(cudaEventRecord(slot.done, stream));
      if (queued) queued(offset, offset + length);
    }
  }

  void to_host(char* host, const char* device, std::size_t bytes, cudaStream_t stream, const ChunkHook& queuing) {
    const std::size_t chunks = (bytes + kChunk - 1) / kChunk;
    auto enqueue = [&](std::size_t k) {
      Slot& slot = slots_[k % kSlots];
      const std::size_t offset = k * kChunk, length = std::min(kChunk, bytes - offset);
      if (queuing) queuing(offset, offset + length);
      CTD_CUDA_CHECK(cudaMemcpyAsync(slot.host, device + offset, length, cudaMemcpyDeviceToHost, stream));
      CTD_CUDA_CHECK(cudaEventRecord(slot.done, stream));
    };
    for (std::size_t k = 0; k < std::min<std::size_t>(kSlots, chunks); ++k) enqueue(k);
    for (std::size_t k = 0; k < chunks; ++k) {
      Slot& slot = slots_[k % kSlots];
      CTD_CUDA_CHECK(cudaEventSynchronize(slot.done));
      const std::size_t offset = k * kChunk;
      // The caller's output is written past the caches: it is not read again during the copy.
      copy(host + offset, slot.host, std::min(kChunk, bytes - offset), cpu::streaming_copy);
      if (k + kSlots < chunks) enqueue(k + kSlots);
    }
  }

 private:
  struct Slot {
    char* host = nullptr;
    cudaEvent_t done = nullptr;
  };
  static constexpr std::size_t kPage = 4096;
  // What the constructor made, as far as it got.
  void release() noexcept {
    for (Slot& slot : slots_) {
      if (!slot.done) continue;
      cudaEventSynchronize(slot.done);
      cudaEventDestroy(slot.done);
    }
    if (registered_) cudaHostUnregister(block_);
    std::free(block_);
  }
  // body(begin, end) over [0, bytes) in whole pages, on every core.
  template <class Body>
  void each_piece(std::size_t bytes, Body&& body) {
    const std::int64_t piece = (std::int64_t(kChunk) / pool_.threads() + kPage - 1) / kPage * kPage;
    pool_.parallel_for((std::int64_t(bytes) + piece - 1) / piece, [&](std::int64_t first, std::int64_t last) {
      body(std::size_t(first * piece), std::min(bytes, std::size_t(last * piece)));
    });
  }
  template <class Copy>
  void copy(char* to, const char* from, std::size_t bytes, Copy&& copy_piece) {
    each_piece(bytes, [&](std::size_t begin, std::size_t end) { copy_piece(to + begin, from + begin, end - begin); });
  }
  cpu::ThreadPool pool_;
  char* block_ = nullptr;
  bool registered_ = false;
  Slot slots_[kSlots];
};

// Staging sets are made once (pinning their memory takes 8-14 ms on the H100 host) and lent to
// one copying thread at a time.
class StagingPool {
 public:
  std::unique_ptr<Staging> take() {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      if (!free_.empty()) {
        std::unique_ptr<Staging> staging = std::move(free_.back());
        free_.pop_back();
        return staging;
      }
    }
    return std::make_unique<Staging>();
  }
  void give_back(std::unique_ptr<Staging> staging) {
    const std::lock_guard<std::mutex> lock(mutex_);
    free_.push_back(std::move(staging));
  }

 private:
  std::mutex mutex_;
  std::vector<std::unique_ptr<Staging>> free_;
};

StagingPool& staging_pool() {
  static StagingPool pool;
  return pool;
}

// A staging set for the duration of one copy.
class StagingLease {
 public:
  StagingLease() : staging_(staging_pool().take()) {}
  ~StagingLease() { staging_pool().give_back(std::move(staging_)); }
  StagingLease(const StagingLease&) = delete;
  StagingLease& operator=(const StagingLease&) = delete;
  Staging* operator->() const { return staging_.get(); }

 private:
  std::unique_ptr<Staging> staging_;
};

}  // namespace

void prepare_staging() {
  StagingLease lease;  // made, and given back for the first copy to take
}

namespace {

struct HostCallCache {
  DeviceBuffer<std::byte> memory;
  cudaStream_t stream = nullptr, second = nullptr;
  ~HostCallCache() {
    if (stream) cudaStreamDestroy(stream);
    if (second) cudaStreamDestroy(second);
  }
};

HostCallCache& host_call_cache() {
  thread_local HostCallCache cache;
  return cache;
}

std::size_t aligned(std::size_t bytes) { return (bytes + 255) / 256 * 256; }

}  // namespace

HostCallMemory::HostCallMemory(std::initializer_list<std::size_t> part_bytes) {
  std::size_t total = 0;
  for (std::size_t bytes : part_bytes) total += aligned(bytes);
  HostCallCache& cache = host_call_cache();
  if (!cache.stream) CTD_CUDA_CHECK(cudaStreamCreateWithFlags(&cache.stream, cudaStreamNonBlocking));
  if (cache.memory.size() < total) {
    std::size_t free_bytes = 0, total_bytes = 0;
    CTD_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    if (total > free_bytes + cache.memory.size()) {
      throw Error(ErrorKind::OutOfMemory, "the volume needs " + std::to_string(total >> 20) + " MiB of device memory, " +
                                              std::to_string((free_bytes + cache.memory.size()) >> 20) + " MiB are free");
    }
    cache.memory = DeviceBuffer<std::byte>();  // the smaller block first
    cache.memory = DeviceBuffer<std::byte>(total);
  }
  std::size_t offset = 0, index = 0;
  for (std::size_t bytes : part_bytes) {
    parts_[index++] = cache.memory.data() + offset;
    offset += aligned(bytes);
  }
}

cudaStream_t HostCallMemory::stream() const { return host_call_cache().stream; }

cudaStream_t HostCallMemory::second_stream() const {
  HostCallCache& cache = host_call_cache();
  if (!cache.second) CTD_CUDA_CHECK(cudaStreamCreateWithFlags(&cache.second, cudaStreamNonBlocking));
  return cache.second;
}

void release_host_call_memory() noexcept {
  HostCallCache& cache = host_call_cache();
  if (cache.stream) cudaStreamSynchronize(cache.stream);
  if (cache.second) cudaStreamSynchronize(cache.second);
  cache.memory = DeviceBuffer<std::byte>();
}

void copy_bytes_to_device(void* device, const void* host, std::size_t bytes, cudaStream_t stream,
                          const ChunkHook& queued) {
  if (bytes <= kDirectBytes) {
    CTD_CUDA_CHECK(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, stream));
    if (queued) queued(0, bytes);
    return;
  }
  StagingLease()->to_device(static_cast<char*>(device), static_cast<const char*>(host), bytes, stream,
                            [](char* to, const char* from, std::size_t n) { std::memcpy(to, from, n); }, queued);
}

bool copy_finite_to_device(float* device, const float* host, std::size_t count, cudaStream_t stream,
                           const ChunkHook& queued) {
  const std::size_t bytes = count * sizeof(float);
  if (bytes <= kDirectBytes) {
    bool finite = true;
    for (std::size_t i = 0; i < count && finite; ++i) finite = std::isfinite(host[i]);
    if (finite) CTD_CUDA_CHECK(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, stream));
    if (finite && queued) queued(0, bytes);
    return finite;
  }
  std::atomic<bool> finite = true;
  StagingLease()->to_device(reinterpret_cast<char*>(device), reinterpret_cast<const char*>(host), bytes, stream,
                      [&](char* to, const char* from, std::size_t n) {
                        if (!cpu::copy_finite(reinterpret_cast<float*>(to), reinterpret_cast<const float*>(from),
                                              n / sizeof(float))) {
                          finite.store(false, std::memory_order_relaxed);
                        }
                      },
                      // Nothing more is queued on input found not finite (a filter's steps would read it).
                      [&](std::size_t first, std::size_t end) {
                        if (queued && finite.load(std::memory_order_relaxed)) queued(first, end);
                      });
  return finite.load();
}

namespace {

__global__ void int16_to_float_kernel(const std::int16_t* __restrict__ in, float* __restrict__ out, std::size_t count) {
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += std::size_t(gridDim.x) * blockDim.x) {
    out[i] = float(in[i]);
  }
}

}  // namespace

void int16_to_float(const std::int16_t* in, float* out, std::size_t count, cudaStream_t stream) {
  if (count == 0) return;
  constexpr unsigned kThreads = 256;
  const unsigned blocks = unsigned(std::min<std::size_t>((count + kThreads - 1) / kThreads, 65535));
  int16_to_float_kernel<<<blocks, kThreads, 0, stream>>>(in, out, count);
  CTD_CUDA_CHECK(cudaGetLastError());
}

namespace {

struct StatisticsPart {
  float min, max;
  double sum, sum2;
};

constexpr unsigned kStatisticsBlocks = 1024, kStatisticsThreads = 256;

// One part per block: its threads' strided shares, then a tree over the block in a fixed order.
__global__ void statistics_kernel(const float* __restrict__ in, std::size_t count, StatisticsPart* __restrict__ parts) {
  StatisticsPart p{INFINITY, -INFINITY, 0, 0};
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += std::size_t(gridDim.x) * blockDim.x) {
    const float v = in[i];
    p.min = fminf(p.min, v);
    p.max = fmaxf(p.max, v);
    p.sum += v;
    p.sum2 += double(v) * v;
  }
  __shared__ StatisticsPart shared[kStatisticsThreads];
  shared[threadIdx.x] = p;
  __syncthreads();
  for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) {
      StatisticsPart& a = shared[threadIdx.x];
      const StatisticsPart& b = shared[threadIdx.x + half];
      a.min = fminf(a.min, b.min);
      a.max = fmaxf(a.max, b.max);
      a.sum += b.sum;
      a.sum2 += b.sum2;
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) parts[blockIdx.x] = shared[0];
}

}  // namespace

Statistics statistics_device(const float* in, std::size_t count, cudaStream_t stream) {
  Statistics s;
  if (count == 0) return s;
  // The parts' memory: kept per thread and device (no allocation per call).
  int device = 0;
  CTD_CUDA_CHECK(cudaGetDevice(&device));
  thread_local std::unordered_map<int, DeviceBuffer<StatisticsPart>> parts_of;
  DeviceBuffer<StatisticsPart>& parts = parts_of[device];
  if (parts.size() == 0) parts = DeviceBuffer<StatisticsPart>(kStatisticsBlocks);
  const unsigned blocks = unsigned(std::min<std::size_t>(kStatisticsBlocks, (count + kStatisticsThreads - 1) / kStatisticsThreads));
  statistics_kernel<<<blocks, kStatisticsThreads, 0, stream>>>(in, count, parts.data());
  CTD_CUDA_CHECK(cudaGetLastError());
  std::vector<StatisticsPart> host(blocks);
  CTD_CUDA_CHECK(cudaMemcpyAsync(host.data(), parts.data(), blocks * sizeof(StatisticsPart), cudaMemcpyDeviceToHost, stream));
  CTD_CUDA_CHECK(cudaStreamSynchronize(stream));
  float lo = host[0].min, hi = host[0].max;
  double sum = 0, sum2 = 0;
  for (const StatisticsPart& p : host) lo = std::min(lo, p.min), hi = std::max(hi, p.max), sum += p.sum, sum2 += p.sum2;
  s.min = lo;
  s.max = hi;
  s.mean = sum / double(count);
  s.std = std::sqrt(std::max(0.0, sum2 / double(count) - s.mean * s.mean));
  return s;
}

void copy_to_host(float* host, const float* device, std::size_t count, cudaStream_t stream, const ChunkHook& queuing) {
  const std::size_t bytes = count * sizeof(float);
  if (bytes <= kDirectBytes) {
    if (queuing) queuing(0, bytes);
    CTD_CUDA_CHECK(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, stream));
    CTD_CUDA_CHECK(cudaStreamSynchronize(stream));
    return;
  }
  StagingLease()->to_host(reinterpret_cast<char*>(host), reinterpret_cast<const char*>(device), bytes, stream, queuing);
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
