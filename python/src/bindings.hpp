#pragma once
// What the binding files of ctdenoise._core share.

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <cstdint>
#include <tuple>
#include <utility>

namespace ctdpy {

namespace nb = nanobind;
using namespace nb::literals;

// Host voxels as the Python layer hands them over: float32, C-contiguous, x fastest.
using HostIn = nb::ndarray<const float, nb::c_contig, nb::device::cpu>;
using HostInInt16 = nb::ndarray<const std::int16_t, nb::c_contig, nb::device::cpu>;  // filters only
using HostOut = nb::ndarray<float, nb::c_contig, nb::device::cpu>;
using DimsTuple = std::tuple<std::int64_t, std::int64_t, std::int64_t>;  // (nx, ny, nz)

// Runs f with the GIL released (filters and file I/O take seconds; other Python threads go on).
template <class F>
auto without_gil(F&& f) {
  nb::gil_scoped_release release;
  return f();
}

void bind_io(nb::module_& m);  // read and write, or stubs that say the build has no file I/O

}  // namespace ctdpy
