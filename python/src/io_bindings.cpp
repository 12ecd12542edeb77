// ctdenoise._core's file I/O: read_image and write_image through the C++ readers and writers
// (DICOM file or series, NIfTI, MetaImage, NRRD, TIFF, PNG, raw), and the Metadata that carries
// what a read found to the write (geometry, pixel type, DICOM attributes for derived series).

#include "bindings.hpp"

#include <ctdenoise/error.hpp>
#include <ctdenoise/io.hpp>

#include <nanobind/stl/array.h>
#include <nanobind/stl/filesystem.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <cstring>
#include <memory>
#include <string>

namespace ctdpy {

using namespace ctd;

namespace {

struct Metadata {
  io::ImageInfo info;
  Geometry geometry;
  Dims dims{0, 0, 0};  // as read; (0, 0, 0) for metadata made in Python
};

nb::tuple read(const std::filesystem::path& path, std::optional<std::array<std::int64_t, 3>> raw_dims,
               const std::string& raw_type, const std::string& raw_byte_order, std::array<double, 3> raw_spacing,
               std::uint64_t raw_header, const std::string& series_uid) {
  io::ReadOptions options;
  options.series_uid = series_uid;
  if (raw_dims) {
    io::RawLayout raw;
    raw.dims = {(*raw_dims)[0], (*raw_dims)[1], (*raw_dims)[2]};
    raw.type = io::pixel_type_from_string(raw_type);
    if (raw_byte_order != "little" && raw_byte_order != "big") {
      throw Error(ErrorKind::InvalidArgument, "raw_byte_order must be 'little' or 'big', got '" + raw_byte_order + "'");
    }
    raw.byte_order = raw_byte_order == "big" ? io::ByteOrder::Big : io::ByteOrder::Little;
    raw.spacing = raw_spacing;
    raw.header_bytes = raw_header;
    options.raw = raw;
  }
  auto image = without_gil([&] { return std::make_unique<io::Image>(io::read_image(path, options)); });
  auto metadata = std::make_unique<Metadata>();
  metadata->info = image->info;
  metadata->geometry = image->volume.geometry;
  metadata->dims = image->volume.dims();
  const Dims d = metadata->dims;
  float* data = image->volume.data();
  // The array owns the volume: no copy.
  nb::capsule owner(image.release(), [](void* p) noexcept { delete static_cast<io::Image*>(p); });
  nb::object array =
      d.nz == 1 ? nb::cast(nb::ndarray<nb::numpy, float>(data, {std::size_t(d.ny), std::size_t(d.nx)}, owner))
                : nb::cast(nb::ndarray<nb::numpy, float>(data, {std::size_t(d.nz), std::size_t(d.ny), std::size_t(d.nx)},
                                                         owner));
  return nb::make_tuple(array, nb::cast(metadata.release(), nb::rv_policy::take_ownership));
}

nb::dict write(const std::filesystem::path& path, HostIn in, DimsTuple dims, const Metadata& metadata, bool overwrite,
               bool float_output, const std::string& description, int compression_level, bool compress) {
  const Dims d{std::get<0>(dims), std::get<1>(dims), std::get<2>(dims)};
  if (std::int64_t(in.size()) != d.count()) throw Error(ErrorKind::InvalidArgument, "the array does not hold its dimensions' voxels");
  if (metadata.info.dicom && metadata.dims != d) {
    throw Error(ErrorKind::InvalidArgument,
                "the array is " + std::to_string(d.nx) + "x" + std::to_string(d.ny) + "x" + std::to_string(d.nz) +
                    " (x, y, z) but the DICOM series read was " + std::to_string(metadata.dims.nx) + "x" +
                    std::to_string(metadata.dims.ny) + "x" + std::to_string(metadata.dims.nz) +
                    ": a derived series keeps the slices of its source");
  }
  io::WriteOptions options;
  options.overwrite = overwrite;
  options.float_output = float_output;
  options.description = description;
  options.compression_level = compression_level;
  options.compress = compress;
  const io::WriteResult result = without_gil([&] {
    io::check_output(path, metadata.info, d, options);
    Volume volume(d, metadata.geometry);
    std::memcpy(volume.data(), in.data(), std::size_t(d.count()) * sizeof(float));
    return io::write_image(volume, metadata.info, path, options);
  });
  nb::dict r;
  r["pixel_type"] = std::string(io::to_string(result.pixel_type));
  r["clamped_voxels"] = result.clamped_voxels;
  nb::list files;
  for (const auto& f : result.files) files.append(f.string());
  r["files"] = files;
  nb::dict stages;
  for (const auto& [name, seconds] : result.stages) stages[name.c_str()] = seconds;
  r["stages_s"] = stages;
  return r;
}

}  // namespace

void bind_io(nb::module_& m) {
  m.attr("has_io") = true;
  nb::class_<Metadata>(m, "Metadata",
                       "What a read found, kept so that a write lands where the image came from: geometry, pixel "
                       "type, format and, for DICOM, the source's attributes (a derived series).")
      .def(nb::init<>())
      .def_prop_ro("path", [](const Metadata& md) { return md.info.path.string(); }, "The file or folder read ('' if none).")
      .def_prop_ro("format", [](const Metadata& md) { return std::string(io::to_string(md.info.format)); })
      .def_prop_rw(
          "pixel_type", [](const Metadata& md) { return std::string(io::to_string(md.info.pixel_type)); },
          [](Metadata& md, const std::string& name) { md.info.pixel_type = io::pixel_type_from_string(name); },
          "The voxel type written back ('int16', 'float32', ...), unless write(..., float_output=True).")
      .def_prop_ro("file_count", [](const Metadata& md) { return md.info.file_count; })
      .def_prop_ro("attributes", [](const Metadata& md) { return md.info.attributes; },
                   "DICOM attributes of the source (Modality, SeriesDescription, ...).")
      .def_prop_ro("notes", [](const Metadata& md) { return md.info.notes; }, "Decisions the reader made.")
      .def_prop_ro("dims_xyz", [](const Metadata& md) { return std::array<std::int64_t, 3>{md.dims.nx, md.dims.ny, md.dims.nz}; },
                   "Voxels along x, y, z as read ((0, 0, 0) for new metadata).")
      .def_prop_ro(
          "spacing",
          [](const Metadata& md) {
            const auto& s = md.geometry.spacing;
            return md.dims.nz == 1 && md.dims.nx > 0 ? nb::make_tuple(s[1], s[0]) : nb::make_tuple(s[2], s[1], s[0]);
          },
          "mm between voxel centres along each axis of the array read: (z, y, x), or (y, x) for one slice.")
      .def_prop_rw(
          "spacing_xyz", [](const Metadata& md) { return md.geometry.spacing; },
          [](Metadata& md, std::array<double, 3> s) { md.geometry.spacing = s; }, "mm between voxel centres along x, y, z.")
      .def_prop_rw(
          "origin_xyz", [](const Metadata& md) { return md.geometry.origin; },
          [](Metadata& md, std::array<double, 3> o) { md.geometry.origin = o; },
          "mm, the centre of voxel (0, 0, 0) in patient (LPS) coordinates.")
      .def_prop_rw(
          "direction", [](const Metadata& md) { return md.geometry.direction; },
          [](Metadata& md, std::array<double, 9> d) { md.geometry.direction = d; },
          "Direction cosines, row-major 3 x 3, columns = the x, y, z axes.");
  m.def("read_image", &read, "path"_a, "raw_dims"_a = nb::none(), "raw_type"_a = "uint16", "raw_byte_order"_a = "little",
        "raw_spacing"_a = std::array<double, 3>{1, 1, 1}, "raw_header"_a = 0, "series_uid"_a = "");
  m.def("write_image", &write, "path"_a, "array"_a, "dims"_a, "metadata"_a, "overwrite"_a, "float_output"_a,
        "description"_a, "compression_level"_a, "compress"_a);
}

}  // namespace ctdpy
