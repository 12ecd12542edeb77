#include "cpu/thread_pool.hpp"

#include <ctdenoise/error.hpp>
#include <ctdenoise/volume.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <new>

namespace ctd {

Volume::Volume(Dims dims, Geometry geometry_) : geometry(geometry_), dims_(dims) {
  if (dims.nx < 1 || dims.ny < 1 || dims.nz < 1) {
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("volume dimensions must be >= 1, got {}x{}x{}", dims.nx, dims.ny, dims.nz));
  }
  try {
    voxels_.resize(static_cast<std::size_t>(dims.count()));  // uninitialised
    cpu::for_each_piece(dims.count(), 1 << 20, 0, [this](std::int64_t, std::int64_t begin, std::int64_t end) {
      std::fill(voxels_.data() + begin, voxels_.data() + end, 0.0f);
    });
  } catch (const std::exception&) {  // bad_alloc, or length_error past max_size
    throw Error(ErrorKind::OutOfMemory,
                fmt::format("cannot allocate a {}x{}x{} float volume ({:.1f} GiB)", dims.nx, dims.ny,
                            dims.nz, static_cast<double>(dims.count()) * 4.0 / (1u << 30)));
  }
}

}  // namespace ctd
