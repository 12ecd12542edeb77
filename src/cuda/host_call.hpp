#pragma once
// A filter called with host memory: upload, queue the filter, download, each stage timed.

#include "cuda/backend.hpp"
#include "cuda/device_buffer.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <type_traits>
#include <vector>

namespace ctd::cuda {

// `uploaded` (if set) is called once the input is on the device; with `output_statistics` the
// output's statistics are measured on the device once it is down (statistics_device).
// `queue(d_in, d_out, d_workspace, stream)` queues the filter over device memory; the input and
// output volumes and `workspace_bytes` of workspace are the calling thread's kept memory. Int16
// input is uploaded as it is (half the bytes of float32) and converted on the device; the upload
// time counts the conversion. Float input is checked finite as it is copied: where it is not,
// nothing runs and input_finite is false.
template <class T, class Queue>
HostTimes run_from_host(ConstVolumeView<T> in, VolumeView<float> out, std::size_t workspace_bytes,
                        const std::function<void()>& uploaded, bool output_statistics, Queue&& queue) {
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
  if (output_statistics) times.output_statistics = statistics_device(d_out, n, stream);
  return times;
}

// How many slabs run_from_host_in_slabs cuts a volume into: 8 MiB of float voxels or more each,
// at least 4 slices and the halo's depth each, at most 16; 1 (no slabs) for volumes under 16 MiB.
inline int slab_count(const Dims& dims, int halo_z) {
  const std::int64_t by_size = dims.count() * std::int64_t(sizeof(float)) / (std::int64_t(8) << 20);
  const std::int64_t by_depth = dims.nz / std::max(4, halo_z);
  return int(std::clamp<std::int64_t>(std::min(by_size, by_depth), 1, 16));
}

// As run_from_host, for a filter whose output slices [z0, z1) need only the input slices
// (z0 - halo_z, z1 + halo_z) (mirrored inside the volume): the volume goes up in slabs of
// consecutive slices, `queue_slab(d_in, d_out, z0, z1, stream)` filters each slab on a second
// stream as soon as its input is there, and the slabs come down as they are done, so that the
// upload, the filter and the download overlap. The output is the same as in one piece. The times
// overlap: upload_ms and download_ms are the host's two loops (their sum is about the call's
// time), kernel_ms the filter's (beside both), and `overlapped` is set.
template <class T, class QueueSlab>
HostTimes run_from_host_in_slabs(ConstVolumeView<T> in, VolumeView<float> out, int halo_z, int slabs,
                                 const std::function<void()>& uploaded, bool output_statistics,
                                 QueueSlab&& queue_slab) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, std::int16_t>, "float32 or int16 input");
  const Dims& dims = in.dims;
  const std::size_t n = std::size_t(dims.count()), plane = std::size_t(dims.nx) * std::size_t(dims.ny);
  constexpr bool converted = !std::is_same_v<T, float>;
  const HostCallMemory memory{n * sizeof(float), n * sizeof(float), 0, converted ? n * sizeof(T) : 0};
  float* d_in = static_cast<float*>(memory.part(0));
  float* d_out = static_cast<float*>(memory.part(1));
  const cudaStream_t copies = memory.stream(), filter = memory.second_stream();
  // Slab k holds the output slices [z[k], z[k + 1]).
  std::vector<int> z(std::size_t(slabs) + 1);
  for (int k = 0; k <= slabs; ++k) z[std::size_t(k)] = int(std::int64_t(dims.nz) * k / slabs);
  const auto input_there = std::make_unique<SyncEvent[]>(std::size_t(slabs));
  const auto output_there = std::make_unique<SyncEvent[]>(std::size_t(slabs));
  HostTimes times;
  times.overlapped = true;
  times.upload_bytes = double(n * sizeof(T));
  Event start, stop;
  // Each slab is queued on the filter's stream as soon as the upload has queued its input (the
  // int16 conversion runs there too, so that the copies' stream holds copies only).
  int queued = 0;
  std::size_t converted_slices = 0;
  auto queue_ready_slabs = [&](std::size_t, std::size_t uploaded_bytes) {
    const std::int64_t slices_there = std::int64_t(uploaded_bytes / (plane * sizeof(T)));
    while (queued < slabs) {
      const std::int64_t needed = std::min<std::int64_t>(dims.nz, std::int64_t(z[std::size_t(queued) + 1]) + halo_z);
      if (needed > slices_there) break;
      input_there[queued].record(copies);
      input_there[queued].wait(filter);
      if (queued == 0) start.record(filter);
      if constexpr (converted) {
        const std::size_t first = converted_slices * plane, count = (std::size_t(needed) - converted_slices) * plane;
        int16_to_float(static_cast<const T*>(memory.part(3)) + first, d_in + first, count, filter);
        converted_slices = std::size_t(needed);
      }
      queue_slab(d_in, d_out, z[std::size_t(queued)], z[std::size_t(queued) + 1], filter);
      output_there[queued].record(filter);
      ++queued;
    }
  };
  times.upload_ms = host_ms([&] {
    if constexpr (converted) {
      copy_bytes_to_device(memory.part(3), in.data, n * sizeof(T), copies, queue_ready_slabs);
    } else {
      times.input_finite = copy_finite_to_device(d_in, in.data, n, copies, queue_ready_slabs);
    }
    stop.record(filter);
  });
  if (!times.input_finite) {
    CTD_CUDA_CHECK(cudaStreamSynchronize(filter));  // the slabs queued so far read this memory
    return times;
  }
  if (uploaded) uploaded();
  // Each piece comes down once the slabs that write it are done.
  int waited = 0;
  times.download_ms = host_ms([&] {
    copy_to_host(out.data, d_out, n, copies, [&](std::size_t, std::size_t end) {
      const std::int64_t last_slice = std::int64_t((end - 1) / (plane * sizeof(float)));
      for (; waited < slabs && z[std::size_t(waited)] <= last_slice; ++waited) output_there[waited].wait(copies);
    });
  });
  times.kernel_ms = stop.elapsed_since(start);
  // `copies` has waited for every slab.
  if (output_statistics) times.output_statistics = statistics_device(d_out, n, copies);
  return times;
}

}  // namespace ctd::cuda
