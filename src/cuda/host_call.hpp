#pragma once
// A filter called with host memory: upload, queue the filter, download, each stage timed.

#include "cuda/backend.hpp"
#include "cuda/device_buffer.hpp"

#include <cstddef>
#include <functional>
#include <cstdint>
#include <type_traits>

namespace ctd::cuda {

// `uploaded` (if set) is called once the input is on the device.
// `queue(d_in, d_out, d_workspace, stream)` queues the filter over device memory; the input and
// output volumes and `workspace_bytes` of workspace are the calling thread's kept memory. Int16
// input is uploaded as it is (half the bytes of float32) and converted on the device; the upload
// time counts the conversion. Float input is checked finite as it is copied: where it is not,
// nothing runs and input_finite is false.
template <class T, class Queue>
HostTimes run_from_host(ConstVolumeView<T> in, VolumeView<float> out, std::size_t workspace_bytes,
                        const std::function<void()>& uploaded, Queue&& queue) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, std::int16_t>, "float32 or int16 input");
  const std::size_t n = std::size_t(in.dims.count());
  constexpr bool converted = !std::is_same_v<T, float>;
  const HostCallMemory memory{n * sizeof(float), n * sizeof(float), workspace_bytes, converted ? n * sizeof(T) : 0};
  float* d_in = static_cast<float*>(memory.part(0));
  float* d_out = static_cast<float*>(memory.part(1));
  void* d_workspace = workspace_bytes > 0 ? memory.part(2) : nullptr;
  const cudaStream_t stream = memory.stream();
  HostTimes times;
  times.upload_bytes = double(n * sizeof(T));
  times.upload_ms = host_ms([&] {
    if constexpr (converted) {
      auto* d_raw = static_cast<T*>(memory.part(3));
      copy_bytes_to_device(d_raw, in.data, n * sizeof(T), stream);
      int16_to_float(d_raw, d_in, n, stream);
    } else {
      times.input_finite = copy_finite_to_device(d_in, in.data, n, stream);
    }
    CTD_CUDA_CHECK(cudaStreamSynchronize(stream));
  });
  if (!times.input_finite) return times;
  if (uploaded) uploaded();
  Event start, stop;
  start.record(stream);
  queue(d_in, d_out, d_workspace, stream);
  stop.record(stream);
  times.kernel_ms = stop.elapsed_since(start);
  times.download_ms = host_ms([&] { copy_to_host(out.data, d_out, n, stream); });
  return times;
}

}  // namespace ctd::cuda
