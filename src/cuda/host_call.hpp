#pragma once
// A filter called with host memory: upload, queue the filter, download, each stage timed.

#include "cuda/backend.hpp"
#include "cuda/device_buffer.hpp"

#include <cstddef>

namespace ctd::cuda {

// `queue(d_in, d_out, d_workspace, stream)` queues the filter over device memory; the input and
// output volumes and `workspace_bytes` of workspace are the calling thread's kept memory.
template <class Queue>
HostTimes run_from_host(ConstVolumeView<float> in, VolumeView<float> out, std::size_t workspace_bytes, Queue&& queue) {
  const std::size_t n = std::size_t(in.dims.count());
  const HostCallMemory memory{n * sizeof(float), n * sizeof(float), workspace_bytes};
  float* d_in = static_cast<float*>(memory.part(0));
  float* d_out = static_cast<float*>(memory.part(1));
  void* d_workspace = workspace_bytes > 0 ? memory.part(2) : nullptr;
  const cudaStream_t stream = memory.stream();
  HostTimes times;
  times.upload_ms = host_ms([&] {
    copy_to_device(d_in, in.data, n, stream);
    CTD_CUDA_CHECK(cudaStreamSynchronize(stream));
  });
  Event start, stop;
  start.record(stream);
  queue(d_in, d_out, d_workspace, stream);
  stop.record(stream);
  times.kernel_ms = stop.elapsed_since(start);
  times.download_ms = host_ms([&] { copy_to_host(out.data, d_out, n, stream); });
  return times;
}

}  // namespace ctd::cuda
