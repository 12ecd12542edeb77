// Headerless raw volumes: the caller gives dims, pixel type and byte order.

#include "io/io_internal.hpp"

#include <fmt/format.h>

#include <bit>
#include <cstring>
#include <fstream>

namespace ctd::io::detail {

Image read_raw(const fs::path& path, const RawLayout& layout, const ReadOptions& options) {
  const Dims& d = layout.dims;
  if (d.nx < 1 || d.ny < 1 || d.nz < 1) {
    fail(ErrorKind::InvalidArgument, fmt::format("raw dimensions must be >= 1, got {}x{}x{}", d.nx, d.ny, d.nz));
  }
  for (double s : layout.spacing) {
    if (!(std::isfinite(s) && s > 0)) fail(ErrorKind::InvalidArgument, fmt::format("raw spacing must be > 0, got {}", s));
  }
  if (fs::is_directory(path)) fail(ErrorKind::Io, fmt::format("{} is a folder, not a raw file", quoted(path)));
  const std::size_t width = size_of(layout.type);
  check_header(path, {std::uint64_t(d.nx), std::uint64_t(d.ny), std::uint64_t(d.nz)}, {layout.spacing.begin(), layout.spacing.end()},
               width, options);
  const std::uint64_t need = layout.header_bytes + std::uint64_t(d.count()) * width;
  const std::uint64_t have = fs::file_size(path);
  if (have != need) {
    fail(ErrorKind::Io, fmt::format("{} has {} bytes, but {}x{}x{} {} voxels{} need {}{}", quoted(path), have, d.nx,
                                    d.ny, d.nz, to_string(layout.type),
                                    layout.header_bytes ? fmt::format(" after a {}-byte header", layout.header_bytes) : "",
                                    need, have < need ? " (truncated file or wrong dims)" : " (wrong dims or type?)"));
  }
  StageClock clock;
  Image image;
  Geometry geometry;
  geometry.spacing = layout.spacing;
  image.volume = Volume(d, geometry);
  read_plain_voxels(path, layout.header_bytes, layout.type, layout.byte_order, options, image);
  image.info.stages.emplace_back("file", clock.lap());  // read and converted in one pass
  image.info.path = path;
  image.info.format = Format::Raw;
  image.info.pixel_type = layout.type;
  image.info.raw = layout;
  return image;
}

std::int64_t write_raw(const Volume& volume, PixelType type, ByteOrder order, const fs::path& path, StageTimes& stages) {
  StageClock clock;
  const std::int64_t clamped = write_plain_voxels(volume, type, order, path, 0);
  stages.emplace_back("file", clock.lap());  // converted and written in one pass
  return clamped;
}

}  // namespace ctd::io::detail
