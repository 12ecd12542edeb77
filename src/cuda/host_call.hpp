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

// One step of a filter queued from host memory in steps (run_from_host_in_steps): it reads the
// input slices [0, input_slices) (mirrored reads included), and once it is done the output slices
// [0, output_slices) are final. Both counts never decrease from step to step; the last step's
// output_slices is the volume's depth.
struct HostStep {
  int input_slices = 0;
  int output_slices = 0;
};

// As run_from_host, for a filter queued in steps: the volume goes up slice by slice, each step is
// queued on a second stream as soon as the input it reads is there, and the output comes down as
// the steps finish it, so that the upload, the filter and the download overlap. The output is
// the same as in one piece when the steps make the same sums in the same order.
// `queue_step(i, d_in, d_out, d_workspace, stream)` queues step i. The times overlap: upload_ms
// and download_ms are the host's two loops (their sum is about the call's time), kernel_ms the
// filter's (beside both), and `overlapped` is set.
template <class T, class QueueStep>
HostTimes run_from_host_in_steps(ConstVolumeView<T> in, VolumeView<float> out, std::size_t workspace_bytes,
                                 const std::vector<HostStep>& steps, const std::function<void()>& uploaded,
                                 bool output_statistics, QueueStep&& queue_step) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, std::int16_t>, "float32 or int16 input");
  const Dims& dims = in.dims;
  const std::size_t n = std::size_t(dims.count()), plane = std::size_t(dims.nx) * std::size_t(dims.ny);
  const int count = int(steps.size());
  constexpr bool converted = !std::is_same_v<T, float>;
  const HostCallMemory memory{n * sizeof(float), n * sizeof(float), workspace_bytes, converted ? n * sizeof(T) : 0};
  float* d_in = static_cast<float*>(memory.part(0));
  float* d_out = static_cast<float*>(memory.part(1));
  void* d_workspace = workspace_bytes > 0 ? memory.part(2) : nullptr;
  const cudaStream_t copies = memory.stream(), filter = memory.second_stream();
  const auto input_there = std::make_unique<SyncEvent[]>(std::size_t(count));
  const auto output_there = std::make_unique<SyncEvent[]>(std::size_t(count));
  HostTimes times;
  times.overlapped = true;
  times.upload_bytes = double(n * sizeof(T));
  Event start, stop;
  // Each step is queued on the filter's stream as soon as the upload has queued its input (the
  // int16 conversion runs there too, so that the copies' stream holds copies only).
  int queued = 0;
  std::size_t converted_slices = 0;
  auto queue_ready_steps = [&](std::size_t, std::size_t uploaded_bytes) {
    const std::int64_t slices_there = std::int64_t(uploaded_bytes / (plane * sizeof(T)));
    while (queued < count) {
      const HostStep& step = steps[std::size_t(queued)];
      const std::int64_t needed = std::min<std::int64_t>(dims.nz, step.input_slices);
      if (needed > slices_there) break;
      input_there[queued].record(copies);
      input_there[queued].wait(filter);
      if (queued == 0) start.record(filter);
      if constexpr (converted) {
        if (std::size_t(needed) > converted_slices) {
          const std::size_t first = converted_slices * plane, length = (std::size_t(needed) - converted_slices) * plane;
          int16_to_float(static_cast<const T*>(memory.part(3)) + first, d_in + first, length, filter);
          converted_slices = std::size_t(needed);
        }
      }
      queue_step(queued, static_cast<const float*>(d_in), d_out, d_workspace, filter);
      output_there[queued].record(filter);
      ++queued;
    }
  };
  times.upload_ms = host_ms([&] {
    if constexpr (converted) {
      copy_bytes_to_device(memory.part(3), in.data, n * sizeof(T), copies, queue_ready_steps);
    } else {
      times.input_finite = copy_finite_to_device(d_in, in.data, n, copies, queue_ready_steps);
    }
    if (times.input_finite) queue_ready_steps(0, n * sizeof(T));  // all there: what is left (direct copies have no pieces)
    stop.record(filter);
  });
  if (!times.input_finite) {
    CTD_CUDA_CHECK(cudaStreamSynchronize(filter));  // the steps queued so far read this memory
    return times;
  }
  if (uploaded) uploaded();
  // Each piece comes down once the steps that finish it are done.
  int waited = 0;
  std::int64_t final_slices = 0;
  times.download_ms = host_ms([&] {
    copy_to_host(out.data, d_out, n, copies, [&](std::size_t, std::size_t end) {
      const std::int64_t last_slice = std::int64_t((end - 1) / (plane * sizeof(float)));
      while (final_slices <= last_slice && waited < count) {
        output_there[waited].wait(copies);
        final_slices = steps[std::size_t(waited)].output_slices;
        ++waited;
      }
    });
  });
  times.kernel_ms = stop.elapsed_since(start);
  // `copies` has waited for the last step.
  if (output_statistics) times.output_statistics = statistics_device(d_out, n, copies);
  return times;
}


// How many parts a filter run in steps cuts its work into (nlm_slide_steps, the compressive
// filter's): 8 MiB of float voxels or more each, at most 8; 1 (no steps) for volumes under 16 MiB.
inline int step_chunks(const Dims& dims) {
  return int(std::clamp<std::int64_t>(dims.count() * std::int64_t(sizeof(float)) / (std::int64_t(8) << 20), 1, 8));
}

// How many slabs run_from_host_in_slabs cuts a volume into: 8 MiB of float voxels or more each,
// at least 4 slices and the halo's depth each, at most 16; 1 (no slabs) for volumes under 16 MiB.
inline int slab_count(const Dims& dims, int halo_z) {
  const std::int64_t by_size = dims.count() * std::int64_t(sizeof(float)) / (std::int64_t(8) << 20);
  const std::int64_t by_depth = dims.nz / std::max(4, halo_z);
  return int(std::clamp<std::int64_t>(std::min(by_size, by_depth), 1, 16));
}

// For a filter whose output slices [z0, z1) need only the input slices (z0 - halo_z, z1 + halo_z)
// (mirrored inside the volume): steps of consecutive slabs, `queue_slab(d_in, d_out, z0, z1,
// stream)` filtering each.
template <class T, class QueueSlab>
HostTimes run_from_host_in_slabs(ConstVolumeView<T> in, VolumeView<float> out, int halo_z, int slabs,
                                 const std::function<void()>& uploaded, bool output_statistics,
                                 QueueSlab&& queue_slab) {
  // Slab k holds the output slices [z[k], z[k + 1]).
  std::vector<int> z(std::size_t(slabs) + 1);
  for (int k = 0; k <= slabs; ++k) z[std::size_t(k)] = int(std::int64_t(in.dims.nz) * k / slabs);
  std::vector<HostStep> steps(static_cast<std::size_t>(slabs));
  for (std::size_t k = 0; k < steps.size(); ++k) {
    steps[k] = {int(std::min<std::int64_t>(in.dims.nz, std::int64_t(z[k + 1]) + halo_z)), z[k + 1]};
  }
  return run_from_host_in_steps(in, out, 0, steps, uploaded, output_statistics,
                                [&](int k, const float* d_in, float* d_out, void*, cudaStream_t stream) {
                                  queue_slab(d_in, d_out, z[std::size_t(k)], z[std::size_t(k) + 1], stream);
                                });
}

}  // namespace ctd::cuda
