#pragma once
// Owning RAII types for device memory, streams and events. DeviceBuffer is move-only: copying
// device memory by accident is a performance bug, so a copy is spelled clone().

#include "cuda/cuda_check.hpp"

#include <ctdenoise/statistics.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <utility>

namespace ctd::cuda {

template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t count) : count_(count) {
    if (count > 0) CTD_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&data_), count * sizeof(T)));
  }
  ~DeviceBuffer() {
    if (data_) cudaFree(data_);  // errors here cannot be reported; never throw from a destructor
  }
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), count_(std::exchange(other.count_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
      DeviceBuffer(std::move(other)).swap(*this);
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  DeviceBuffer clone(cudaStream_t stream) const {
    DeviceBuffer copy(count_);
    if (count_ > 0) CTD_CUDA_CHECK(cudaMemcpyAsync(copy.data_, data_, count_ * sizeof(T), cudaMemcpyDeviceToDevice, stream));
    return copy;
  }
  void swap(DeviceBuffer& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(count_, other.count_);
  }

  T* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return count_; }

 private:
  T* data_ = nullptr;
  std::size_t count_ = 0;
};

// Scratch device memory kept per (host thread, stream) and grown on demand, so that a loop calling
// a filter on the same stream allocates only on its first call. Throws OutOfMemory, naming the
// need, when the device cannot hold it.
float* stream_workspace(std::size_t floats, cudaStream_t stream);

// Device memory and a stream for filter calls from host memory (nlm_host, bilateral_host), kept
// per host thread and grown on demand, so that a loop of calls allocates only on its first.
// Parts of it, each 256-byte aligned as cudaMalloc's own blocks.
class HostCallMemory {
 public:
  // Room for parts of the given sizes in bytes; throws OutOfMemory, naming the need, when the
  // device cannot hold them (what this thread already holds counts as free).
  explicit HostCallMemory(std::initializer_list<std::size_t> part_bytes);
  void* part(std::size_t index) const { return parts_[index]; }
  cudaStream_t stream() const;
  cudaStream_t second_stream() const;  // for work beside stream()'s (run_from_host_in_slabs)

 private:
  void* parts_[4] = {};
};

// Copies between pageable host memory and the device at the bus's speed: through pinned staging
// buffers (lent from a process-wide pool, one set per copying thread at a time), filled and
// drained on every core while the previous chunk is on the bus. Both return when the host memory may be reused (to_host: when it holds the data).
// copy_finite_to_device also says whether every voxel was finite (checked on the way); from the
// first piece that is not, it calls its hook no more.
// The hooks see the bytes [first, end) of each piece: the uploads call theirs once the piece's
// copy is queued on `stream`, copy_to_host before it queues the piece's copy (e.g. to make the
// stream wait for the kernel that writes it).
using ChunkHook = std::function<void(std::size_t first, std::size_t end)>;
bool copy_finite_to_device(float* device, const float* host, std::size_t count, cudaStream_t stream,
                           const ChunkHook& queued = {});
void copy_bytes_to_device(void* device, const void* host, std::size_t bytes, cudaStream_t stream,
                          const ChunkHook& queued = {});
// Queues out[i] = in[i] for `count` voxels on `stream` (exact: every int16 is a float).
void int16_to_float(const std::int16_t* in, float* out, std::size_t count, cudaStream_t stream);
void copy_to_host(float* host, const float* device, std::size_t count, cudaStream_t stream,
                  const ChunkHook& queuing = {});
// The statistics of `count` floats of device memory, after the work queued on `stream`: each
// block of a fixed grid reduces its strided share (double sums), the host adds the blocks' in
// order, so a volume gives the same figures on every run. Waits for `stream`.
Statistics statistics_device(const float* in, std::size_t count, cudaStream_t stream);

// Milliseconds the host spent in f().
template <class F>
double host_ms(F&& f) {
  const auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

class Stream {
 public:
  Stream() { CTD_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)); }
  ~Stream() { cudaStreamDestroy(stream_); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const noexcept { return stream_; }
  void synchronize() const { CTD_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

 private:
  cudaStream_t stream_ = nullptr;
};

class Event {
 public:
  Event() : Event(cudaEventDefault) {}
  ~Event() { cudaEventDestroy(event_); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  void record(cudaStream_t stream) { CTD_CUDA_CHECK(cudaEventRecord(event_, stream)); }
  // Makes `stream` wait for the work recorded before this event.
  void wait(cudaStream_t stream) const { CTD_CUDA_CHECK(cudaStreamWaitEvent(stream, event_, 0)); }
  // Milliseconds from `start` to this event (both recorded and completed).
  float elapsed_since(const Event& start) const {
    CTD_CUDA_CHECK(cudaEventSynchronize(event_));
    float ms = 0;
    CTD_CUDA_CHECK(cudaEventElapsedTime(&ms, start.event_, event_));
    return ms;
  }

 protected:
  explicit Event(unsigned flags) { CTD_CUDA_CHECK(cudaEventCreateWithFlags(&event_, flags)); }

 private:
  cudaEvent_t event_ = nullptr;
};

// An event for ordering streams only (no timing: cheaper to record and wait for).
class SyncEvent : public Event {
 public:
  SyncEvent() : Event(cudaEventDisableTiming) {}
};

}  // namespace ctd::cuda
