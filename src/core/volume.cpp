#include "cpu/thread_pool.hpp"

#include <ctdenoise/error.hpp>
#include <ctdenoise/volume.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <new>

#ifdef __linux__
#include <sys/mman.h>
#endif

namespace ctd {

namespace detail {

namespace {
constexpr std::size_t kHugePage = std::size_t(2) << 20;
constexpr std::size_t kHugeFrom = std::size_t(4) << 20;
}  // namespace

void* allocate_voxel_bytes(std::size_t bytes) {
  if (bytes < kHugeFrom) return ::operator new(bytes);
  const std::size_t rounded = (bytes + kHugePage - 1) / kHugePage * kHugePage;
  void* p = std::aligned_alloc(kHugePage, rounded);
  if (!p) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
  madvise(p, rounded, MADV_HUGEPAGE);  // a hint: without it the pages are the usual ones
#endif
  return p;
}

void free_voxel_bytes(void* p, std::size_t bytes) noexcept {
  if (bytes < kHugeFrom) ::operator delete(p);
  else std::free(p);
}

}  // namespace detail

Volume::Volume(Dims dims, Geometry geometry_) : geometry(geometry_), dims_(dims) {
  if (dims.nx < 1 || dims.ny < 1 || dims.nz < 1) {
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("volume dimensions must be >= 1, got {}x{}x{}", dims.nx, dims.ny, dims.nz));
  }
  try {
    voxels_.resize(static_cast<std::size_t>(dims.count()));  // uninitialised
    cpu::for_each_piece(dims.count(), 1 << 16, 0, [this](std::int64_t, std::int64_t begin, std::int64_t end) {
      std::fill(voxels_.data() + begin, voxels_.data() + end, 0.0f);
    });
  } catch (const std::exception&) {  // bad_alloc, or length_error past max_size
    throw Error(ErrorKind::OutOfMemory,
                fmt::format("cannot allocate a {}x{}x{} float volume ({:.1f} GiB)", dims.nx, dims.ny,
                            dims.nz, static_cast<double>(dims.count()) * 4.0 / (1u << 30)));
  }
}

}  // namespace ctd
