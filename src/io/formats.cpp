// Format and pixel-type rules, and the read/write entry points that route to each format.

#include "io/io_internal.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include <cctype>

namespace ctd::io {

using detail::fail;
using detail::quoted;
namespace fs = std::filesystem;

std::string_view to_string(PixelType type) noexcept {
  switch (type) {
    case PixelType::UInt8: return "uint8";
    case PixelType::Int8: return "int8";
    case PixelType::UInt16: return "uint16";
    case PixelType::Int16: return "int16";
    case PixelType::UInt32: return "uint32";
    case PixelType::Int32: return "int32";
    case PixelType::Float32: return "float32";
    case PixelType::Float64: return "float64";
  }
  return "?";
}

PixelType pixel_type_from_string(std::string_view name) {
  for (auto t : {PixelType::UInt8, PixelType::Int8, PixelType::UInt16, PixelType::Int16, PixelType::UInt32,
                 PixelType::Int32, PixelType::Float32, PixelType::Float64}) {
    if (to_string(t) == name) return t;
  }
  fail(ErrorKind::InvalidArgument,
       fmt::format("unknown pixel type '{}' (uint8, int8, uint16, int16, uint32, int32, float32, float64)", name));
}

std::size_t size_of(PixelType type) noexcept {
  return detail::with_pixel_type(type, [](auto v) { return sizeof v; });
}

std::string_view to_string(Format format) noexcept {
  switch (format) {
    case Format::Dicom: return "DICOM";
    case Format::DicomSeries: return "DICOM series";
    case Format::Nifti: return "NIfTI";
    case Format::MetaImage: return "MetaImage";
    case Format::Nrrd: return "NRRD";
    case Format::Tiff: return "TIFF";
    case Format::Png: return "PNG";
    case Format::Raw: return "raw";
  }
  return "?";
}

namespace {

std::string lower_name(const fs::path& path) { return detail::lower_case(path.filename().string()); }

bool ends_with(const std::string& s, std::string_view suffix) { return s.ends_with(suffix); }

// "out/" (or "out//") names the folder "out", as "out" does: a DICOM series.
fs::path without_trailing_separators(fs::path path) {
  while (!path.has_filename() && path.has_relative_path()) path = path.parent_path();
  return path;
}

}  // namespace

Format output_format(const fs::path& given) {
  const fs::path path = without_trailing_separators(given);
  const std::string name = lower_name(path);
  if (name.empty() || fs::is_directory(path)) return Format::DicomSeries;
  if (ends_with(name, ".nii") || ends_with(name, ".nii.gz")) return Format::Nifti;
  if (ends_with(name, ".mhd") || ends_with(name, ".mha")) return Format::MetaImage;
  if (ends_with(name, ".nrrd") || ends_with(name, ".nhdr")) return Format::Nrrd;
  if (ends_with(name, ".tif") || ends_with(name, ".tiff")) return Format::Tiff;
  if (ends_with(name, ".png")) return Format::Png;
  if (ends_with(name, ".dcm")) return Format::Dicom;
  if (ends_with(name, ".raw")) return Format::Raw;
  if (path.extension().empty()) return Format::DicomSeries;
  fail(ErrorKind::Unsupported,
       fmt::format("cannot tell the output format of {}: use .nii, .nii.gz, .mhd, .mha, .nrrd, .nhdr, .tif, "
                   ".tiff, .png, .dcm, .raw, or a folder name (DICOM series)",
                   quoted(path)));
}

PixelType output_pixel_type(const ImageInfo& source, Format format, bool float_output) {
  const PixelType in = source.pixel_type;
  switch (format) {
    case Format::Png:
      if (float_output || (in != PixelType::UInt8 && in != PixelType::UInt16)) {
        fail(ErrorKind::Unsupported,
             fmt::format("PNG holds only uint8 or uint16 pixels, and this output would be {}; write .nii.gz, "
                         ".nrrd, .mha or .tif instead",
                         float_output ? "float32" : to_string(in)));
      }
      return in;
    case Format::Dicom:
    case Format::DicomSeries:
      if (float_output) {
        fail(ErrorKind::Unsupported, "DICOM output is written with integer pixels; drop --float or choose another format");
      }
      // DICOM CT stores 8- or 16-bit integers; anything else becomes int16 (rounded, clamped).
      if (in == PixelType::UInt8 || in == PixelType::UInt16 || in == PixelType::Int16) return in;
      return PixelType::Int16;
    case Format::Tiff:
      // TIFF holds 8/16-bit integers and float32: wider types become float32 (exact below 2^24).
      if (float_output || in == PixelType::Int32 || in == PixelType::UInt32 || in == PixelType::Float64) {
        return PixelType::Float32;
      }
      return in;
    default:
      return float_output ? PixelType::Float32 : in;
  }
}

void check_output(const fs::path& given, const ImageInfo& source, const Dims& dims, const WriteOptions& options) {
  const fs::path path = without_trailing_separators(given);
  const Format format = output_format(path);
  output_pixel_type(source, format, options.float_output);
  if (format == Format::Png && dims.nz > 1) {
    fail(ErrorKind::Unsupported, fmt::format("PNG holds one 2D image, but the volume has {} slices; write "
                                             ".nii.gz, .nrrd, .mha, .tif or a DICOM folder",
                                             dims.nz));
  }
  if (options.compress) {
    const std::string name = lower_name(path);
    if (!(name.ends_with(".nrrd") || name.ends_with(".mha"))) {
      fail(ErrorKind::Unsupported, fmt::format("compressed output is written as .nrrd or .mha (data in the header's "
                                               "file), or .nii.gz; not {}",
                                               quoted(path.filename())));
    }
  }
  if (format == Format::Dicom && dims.nz > 1) {
    fail(ErrorKind::Unsupported, fmt::format("a .dcm file holds one slice, but the volume has {}; give a folder "
                                             "name (no extension) to write a DICOM series",
                                             dims.nz));
  }
  const fs::path parent = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  std::error_code ec;
  if (!fs::is_directory(parent, ec)) fail(ErrorKind::Io, fmt::format("output folder {} does not exist", quoted(parent)));
  if (::access(parent.c_str(), W_OK | X_OK) != 0) {
    fail(ErrorKind::Io, fmt::format("cannot write to folder {} (permission denied)", quoted(parent)));
  }
  std::vector<fs::path> targets{path};
  if (format == Format::MetaImage && lower_name(path).ends_with(".mhd")) {
    targets.push_back(fs::path(path).replace_extension(".raw"));
  }
  for (const auto& target : targets) {
    if (!fs::exists(fs::symlink_status(target))) continue;
    if (!options.overwrite) {
      fail(ErrorKind::Io, fmt::format("{} already exists; pass --overwrite to replace it", quoted(target)));
    }
    if (fs::is_directory(target) != (format == Format::DicomSeries)) {
      fail(ErrorKind::Io, fmt::format("{} exists and is {}; it cannot be replaced by this output", quoted(target),
                                      fs::is_directory(target) ? "a folder" : "a file"));
    }
  }
}

Image read_image(const fs::path& path, const ReadOptions& options) {
  detail::register_itk_factories();
  std::error_code ec;
  const auto status = fs::status(path, ec);
  if (!fs::exists(status)) fail(ErrorKind::Io, fmt::format("{}: no such file or folder", quoted(path)));
  if (options.raw) return detail::read_raw(path, *options.raw, options);
  if (fs::is_directory(status)) return detail::read_dicom(path, options);
  if (!fs::is_regular_file(status)) fail(ErrorKind::Io, fmt::format("{} is not a regular file", quoted(path)));
  if (fs::file_size(path) == 0) fail(ErrorKind::Io, fmt::format("{} is empty", quoted(path)));
  if (lower_name(path).ends_with(".raw")) {
    fail(ErrorKind::InvalidArgument,
         fmt::format("{} is headerless raw data: give its layout (--raw-dims NX,NY,NZ and --raw-type)", quoted(path)));
  }
  if (::access(path.c_str(), R_OK) != 0) fail(ErrorKind::Io, fmt::format("cannot read {} (permission denied)", quoted(path)));
  return detail::read_itk(path, options);  // hands DICOM files on to read_dicom
}

WriteResult write_image(const Volume& volume, const ImageInfo& source, const fs::path& given,
                        const WriteOptions& options) {
  const fs::path path = without_trailing_separators(given);
  detail::register_itk_factories();
  check_output(path, source, volume.dims(), options);
  const Format format = output_format(path);
  WriteResult result;
  result.pixel_type = output_pixel_type(source, format, options.float_output);

  detail::StagedOutput staged(path, options.overwrite);
  const detail::LibraryOutputCapture quiet;
  detail::StageClock clock;
  switch (format) {
    case Format::Dicom:
    case Format::DicomSeries:
      result.clamped_voxels = detail::write_dicom(volume, source, result.pixel_type, staged.path(), options);
      result.stages.emplace_back("file", clock.lap());  // slice by slice: conversion included
      break;
    case Format::Raw:
      result.clamped_voxels = detail::write_raw(volume, result.pixel_type,
                                                source.raw ? source.raw->byte_order : ByteOrder::Little, staged.path(),
                                                result.stages);
      break;
    default:
      result.clamped_voxels =
          detail::write_itk(volume, result.pixel_type, format, staged.path(), options, result.stages);
      break;
  }
  clock.lap();
  // A .mhd replacing an existing one: its data goes to a file the old header does not name, so
  // that renaming the header switches from the old pair to the new one in one step.
  fs::path old_data;
  if (format == Format::MetaImage && lower_name(path).ends_with(".mhd") && fs::exists(path)) {
    old_data = detail::switch_metaimage_data_file(staged.path(), path);
  }
  result.files = staged.commit();
  if (!old_data.empty()) {
    std::error_code ignored;
    fs::remove(old_data, ignored);
  }
  result.stages.emplace_back("commit", clock.lap());  // into place: renames, and the old output removed
  return result;
}

}  // namespace ctd::io
