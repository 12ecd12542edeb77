#pragma once
// Volumes and non-owning views. Voxels are stored x-fastest, then y, then z; a 2D image is a
// volume with nz = 1. Filters compute in float32.

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

namespace ctd {

struct Dims {
  std::int64_t nx = 1, ny = 1, nz = 1;

  std::int64_t count() const noexcept { return nx * ny * nz; }
  // A volume with a single slice is filtered as a 2D image (2D patches and windows).
  bool is_2d() const noexcept { return nz == 1; }
  bool operator==(const Dims& o) const noexcept { return nx == o.nx && ny == o.ny && nz == o.nz; }
  bool operator!=(const Dims& o) const noexcept { return !(*this == o); }
};

// Physical placement, kept so that a volume written back lands where it was read from.
struct Geometry {
  std::array<double, 3> spacing{1.0, 1.0, 1.0};  // mm between voxel centres along x, y, z
  std::array<double, 3> origin{0.0, 0.0, 0.0};   // mm, centre of voxel (0,0,0), patient LPS
  std::array<double, 9> direction{1, 0, 0, 0, 1, 0, 0, 0, 1};  // row-major, columns = axes
};

template <class T>
struct VolumeView {
  T* data = nullptr;
  Dims dims;

  std::int64_t index(std::int64_t x, std::int64_t y, std::int64_t z) const noexcept {
    return (z * dims.ny + y) * dims.nx + x;
  }
  T& operator()(std::int64_t x, std::int64_t y, std::int64_t z) const noexcept {
    return data[index(x, y, z)];
  }
  // A view of mutable voxels converts to a read-only view.
  // (Only to its own voxel type: U is deduced from the target, so it is tied to T.)
  template <class U = T, std::enable_if_t<std::is_same_v<U, T> && !std::is_const_v<U>, int> = 0>
  operator VolumeView<const U>() const noexcept {
    return {data, dims};
  }
};

template <class T>
using ConstVolumeView = VolumeView<const T>;

namespace detail {
// Memory for voxels: blocks of 4 MiB and more are aligned to 2 MiB and offered to the kernel for
// transparent huge pages (Linux), which makes their first touch and their release several times
// cheaper; smaller ones come from operator new. Throws std::bad_alloc.
void* allocate_voxel_bytes(std::size_t bytes);
void free_voxel_bytes(void* p, std::size_t bytes) noexcept;

// Leaves new elements uninitialised, so that a large volume can be zeroed on all cores (the
// first touch of its pages is most of the cost).
template <class T>
struct UninitializedAllocator : std::allocator<T> {
  using value_type = T;
  T* allocate(std::size_t n) {
    if (n > std::size_t(-1) / sizeof(T)) throw std::bad_alloc();
    return static_cast<T*>(allocate_voxel_bytes(n * sizeof(T)));
  }
  void deallocate(T* p, std::size_t n) noexcept { free_voxel_bytes(p, n * sizeof(T)); }
  template <class U>
  struct rebind {
    using other = UninitializedAllocator<U>;
  };
  UninitializedAllocator() = default;
  template <class U>
  UninitializedAllocator(const UninitializedAllocator<U>&) noexcept {}
  template <class U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};
}  // namespace detail

// An owning float32 volume with its geometry; a new volume holds zeros.
class Volume {
 public:
  Volume() = default;
  explicit Volume(Dims dims, Geometry geometry = {});

  const Dims& dims() const noexcept { return dims_; }
  Geometry geometry;

  float* data() noexcept { return voxels_.data(); }
  const float* data() const noexcept { return voxels_.data(); }
  std::int64_t size() const noexcept { return dims_.count(); }

  VolumeView<float> view() noexcept { return {voxels_.data(), dims_}; }
  ConstVolumeView<float> view() const noexcept { return {voxels_.data(), dims_}; }

 private:
  Dims dims_{0, 0, 0};
  std::vector<float, detail::UninitializedAllocator<float>> voxels_;
};

}  // namespace ctd
