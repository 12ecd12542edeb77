#include "core/exec_internal.hpp"
#include "cpu/thread_pool.hpp"
#if CTD_HAVE_CUDA
#include "cuda/backend.hpp"
#endif

#include <ctdenoise/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>

namespace ctd {

std::string_view to_string(Device device) noexcept {
  switch (device) {
    case Device::Auto: return "auto";
    case Device::Cpu: return "cpu";
    case Device::Cuda: return "cuda";
  }
  return "?";
}

Device device_from_string(std::string_view name) {
  if (name == "auto") return Device::Auto;
  if (name == "cpu") return Device::Cpu;
  if (name == "cuda") return Device::Cuda;
  throw Error(ErrorKind::InvalidArgument,
              fmt::format("unknown device '{}' (expected auto, cpu or cuda)", name));
}

Device available_device(Device requested) {
  if (requested == Device::Cpu) return Device::Cpu;
#if CTD_HAVE_CUDA
  std::string why;
  const bool present = cuda::device_present(&why);
  if (requested == Device::Cuda && !present) throw Error(ErrorKind::Cuda, "cannot run on CUDA: " + why);
  return present ? Device::Cuda : Device::Cpu;
#else
  if (requested == Device::Cuda) {
    throw Error(ErrorKind::Unsupported, "this build of ctdenoise has no CUDA backend (no CUDA compiler when it was "
                                        "built); use --device cpu");
  }
  return Device::Cpu;
#endif
}

void initialize_cuda() noexcept {
#if CTD_HAVE_CUDA
  try {
    if (cuda::device_present()) {
      cuda::create_context();
      cuda::prepare_staging();
    }
  } catch (...) {
    // left to the first real call, which reports it
  }
#endif
}

void release_cuda_memory() noexcept {
#if CTD_HAVE_CUDA
  if (cuda::device_present()) cuda::release_host_call_memory();
#endif
}

std::future<double> end_cuda_context_before_exit() {
#if CTD_HAVE_CUDA
  if (cuda::device_present()) {
    const int device = cuda::current_device();
    return std::async(std::launch::async, [device] {
      const auto start = std::chrono::steady_clock::now();
      cuda::end_context(device);
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    });
  }
#endif
  std::promise<double> nothing_to_end;
  nothing_to_end.set_value(0.0);
  return nothing_to_end.get_future();
}

std::string cuda_device_name() {
#if CTD_HAVE_CUDA
  return cuda::device_name();
#else
  return {};
#endif
}

namespace detail {

namespace {

int resolve_threads(int requested) {
  if (requested < 0) {
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("threads must be >= 0 (0 = all hardware threads), got {}", requested));
  }
  if (requested > 0) return requested;
  return cpu::hardware_threads();
}

void check_same_dims(const Dims& in, const Dims& out) {
  if (in.nx < 1 || in.ny < 1 || in.nz < 1) {
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("input dimensions must be >= 1, got {}x{}x{}", in.nx, in.ny, in.nz));
  }
  if (!(in == out)) {
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("output dimensions {}x{}x{} differ from input {}x{}x{}", out.nx, out.ny,
                            out.nz, in.nx, in.ny, in.nz));
  }
}

}  // namespace

void check_finite(ConstVolumeView<float> in, int threads) {
  constexpr std::int64_t kPiece = 1 << 20;
  const std::int64_t n = in.dims.count();
  std::vector<std::int64_t> bad_in((n + kPiece - 1) / kPiece), first_in(bad_in.size(), -1);
  cpu::for_each_piece(n, kPiece, threads, [&](std::int64_t piece, std::int64_t begin, std::int64_t end) {
    std::int64_t bad = 0;
    for (std::int64_t i = begin; i < end; ++i) bad += std::isfinite(in.data[i]) ? 0 : 1;
    bad_in[std::size_t(piece)] = bad;
    for (std::int64_t i = begin; bad > 0 && i < end; ++i) {
      if (!std::isfinite(in.data[i])) {
        first_in[std::size_t(piece)] = i;
        break;
      }
    }
  });
  std::int64_t bad = 0, first = -1;
  for (std::size_t p = 0; p < bad_in.size(); ++p) {
    if (first < 0) first = first_in[p];
    bad += bad_in[p];
  }
  if (bad > 0) {
    const std::int64_t x = first % in.dims.nx, y = (first / in.dims.nx) % in.dims.ny,
                       z = first / (in.dims.nx * in.dims.ny);
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("input has {} NaN or infinite voxel(s), the first at (x={}, y={}, z={})",
                            bad, x, y, z));
  }
}

namespace {

// Device and threads for a filter run: the parts of prepare_run that do not read the voxels.
PreparedRun route(const Dims& in, const Dims& out, const ExecContext& context, std::string_view filter,
                  bool has_cuda_variant) {
  check_same_dims(in, out);
  PreparedRun run;
  if (!has_cuda_variant && context.device == Device::Cuda) {
    throw Error(ErrorKind::Unsupported, fmt::format("the {} filter has no CUDA variant yet; use --device cpu", filter));
  }
  run.device = has_cuda_variant ? available_device(context.device) : Device::Cpu;
  // Left to us, a volume too large for the CUDA kernels runs on the CPU.
  if (context.device == Device::Auto && in.count() > kMaxCudaVoxels) run.device = Device::Cpu;
  run.threads = resolve_threads(context.threads);
  // Left to us (0), a small image gets fewer threads: the filters synchronise their threads once
  // per displacement or pass, and on a 16-core host that cost more than the work on images of a
  // few ten thousand voxels (a 64 x 64 x 7 volume filtered 4x slower on 16 threads than on 2).
  constexpr std::int64_t kVoxelsPerThread = 8192;
  if (context.threads == 0) {
    run.threads = int(std::clamp<std::int64_t>(in.count() / kVoxelsPerThread, 1, run.threads));
  }
  return run;
}

template <class T>
bool overlap(ConstVolumeView<T> in, VolumeView<float> out) {
  const auto* a = reinterpret_cast<const char*>(in.data);
  const auto* b = reinterpret_cast<const char*>(out.data);
  return a < b + out.dims.count() * std::int64_t(sizeof(float)) && b < a + in.dims.count() * std::int64_t(sizeof(T));
}

}  // namespace

PreparedRun prepare_run(ConstVolumeView<float> in, VolumeView<float> out, const ExecContext& context,
                        std::string_view filter, bool has_cuda_variant) {
  PreparedRun run = route(in.dims, out.dims, context, filter, has_cuda_variant);
  run.input = in;
  if (overlap(in, out)) {
    run.input_copy.assign(in.data, in.data + in.dims.count());
    run.input.data = run.input_copy.data();
  }
  return run;
}

PreparedRun prepare_run(ConstVolumeView<std::int16_t> in, VolumeView<float> out, const ExecContext& context,
                        std::string_view filter, bool has_cuda_variant) {
  PreparedRun run = route(in.dims, out.dims, context, filter, has_cuda_variant);
  run.int16_input = in;
  if (overlap(in, out)) {
    run.int16_copy.assign(in.data, in.data + in.dims.count());
    run.int16_input->data = run.int16_copy.data();
  }
  run.input.dims = in.dims;
  return run;
}

void PreparedRun::reject_non_finite_input() const {
  check_finite(input, threads);
  throw Error(ErrorKind::InvalidArgument, "input has NaN or infinite voxels (changed while it was read)");
}

ConstVolumeView<float> PreparedRun::float_input() {
  if (!int16_input) {
    check_finite(input, threads);
    return input;
  }
  const ConstVolumeView<std::int16_t> in = *int16_input;
  input_copy.resize(std::size_t(in.dims.count()));
  cpu::for_each_piece(in.dims.count(), std::int64_t(1) << 20, threads, [&](std::int64_t, std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) input_copy[std::size_t(i)] = float(in.data[i]);
  });
  return {input_copy.data(), in.dims};
}

}  // namespace detail
}  // namespace ctd
