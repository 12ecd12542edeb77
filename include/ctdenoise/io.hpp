#pragma once
// Medical image I/O (library target ctdenoise_io, through ITK/GDCM). Reads DICOM (file or series
// folder), NIfTI, MetaImage, NRRD, TIFF, PNG and headerless raw into a float32 Volume in the
// image's own units (HU for CT: DICOM rescale slope/intercept applied), and writes them back.
// Errors are ctd::Error: Io (missing, unreadable, corrupt or truncated, not writable, exists),
// Unsupported (pixel type or format combination, over ReadOptions::max_voxels), InvalidArgument
// (bad raw layout), OutOfMemory (an image larger than this machine's memory, from its header).

#include <ctdenoise/volume.hpp>

#include <array>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ctd::io {

enum class PixelType { UInt8, Int8, UInt16, Int16, UInt32, Int32, Float32, Float64 };
std::string_view to_string(PixelType type) noexcept;        // "uint8", "int16", "float32", ...
PixelType pixel_type_from_string(std::string_view name);    // throws InvalidArgument
std::size_t size_of(PixelType type) noexcept;

enum class ByteOrder { Little, Big };

enum class Format { Dicom, DicomSeries, Nifti, MetaImage, Nrrd, Tiff, Png, Raw };
std::string_view to_string(Format format) noexcept;

// How to read a headerless raw file (x fastest, then y, then z).
struct RawLayout {
  Dims dims;
  PixelType type = PixelType::UInt16;
  ByteOrder byte_order = ByteOrder::Little;
  std::array<double, 3> spacing{1.0, 1.0, 1.0};
  std::uint64_t header_bytes = 0;  // bytes to skip at the start
};

struct DicomSource;  // per-slice DICOM attributes of a DICOM input (opaque; used when writing DICOM)

// Seconds spent in each stage of a read or a write, in the order they ran: "probe" (a DICOM
// folder, checked in a child process), "file" (read or written, and decoded or encoded, by the
// format's library), "convert" (to or from float32), "compress" (.nii.gz), "commit" (the output
// moved into place).
using StageTimes = std::vector<std::pair<std::string, double>>;

// Where an image came from and what it held, kept so the output can match it.
struct ImageInfo {
  std::filesystem::path path;
  Format format = Format::Nifti;
  PixelType pixel_type = PixelType::Float32;  // the type that holds the values as read (HU for DICOM)
  std::size_t file_count = 1;
  std::map<std::string, std::string> attributes;  // e.g. Modality, SeriesDescription (DICOM)
  std::vector<std::string> notes;                 // decisions the reader made that the user should know
  std::shared_ptr<const DicomSource> dicom;       // set for DICOM input
  std::optional<RawLayout> raw;                   // set for raw input
  StageTimes stages;                              // how long the read took
};

struct Image {
  Volume volume;
  ImageInfo info;
  // The voxels as the file stores them, where ReadOptions::keep_int16 asked for them and the file
  // holds plain int16 voxels equal to `volume`'s (raw, NRRD, MetaImage); otherwise empty.
  std::vector<std::int16_t, ctd::detail::UninitializedAllocator<std::int16_t>> int16_voxels;
};

struct ReadOptions {
  std::optional<RawLayout> raw;  // read the file as headerless raw with this layout
  std::string series_uid;        // DICOM folder with several series: the one to read
  // Images of more voxels are refused (Unsupported) from their header, before their data is
  // read; 0: no limit. The reason ends the message, e.g. "CUDA takes under 2^31 voxels".
  std::int64_t max_voxels = 0;
  std::string max_voxels_reason;
  // Also keep plain int16 voxels as stored (Image::int16_voxels): the filters upload int16 to the
  // GPU as it is, half the bytes of float32.
  bool keep_int16 = false;
};

Image read_image(const std::filesystem::path& path, const ReadOptions& options = {});

// The format an output path asks for: by extension (.nii, .nii.gz, .mhd, .mha, .nrrd, .nhdr,
// .tif, .tiff, .png, .dcm, .raw); a path with no extension (or an existing folder) is a DICOM
// series folder. Throws Unsupported for anything else.
Format output_format(const std::filesystem::path& path);

struct WriteOptions {
  bool overwrite = false;     // replace an existing output
  bool float_output = false;  // write float32 instead of the input's pixel type
  std::string description;    // DICOM: appended to SeriesDescription, stored as DerivationDescription
  int compression_level = 6;  // .nii.gz: gzip level, 1 (fastest) to 12 (smallest; libdeflate's scale);
                              // compressed .nrrd/.mha: zlib's level, the same number up to 9
  bool compress = false;      // .nrrd and .mha: gzip (NRRD) or zlib (MetaImage) data, compressed on all cores
};

struct WriteResult {
  PixelType pixel_type = PixelType::Float32;
  std::int64_t clamped_voxels = 0;  // voxels outside the output type's range
  std::vector<std::filesystem::path> files;
  StageTimes stages;  // how long the write took
};

// The pixel type an output gets: the input's, unless float_output; where the format cannot hold
// that type, the nearest it can (DICOM: int16), or Unsupported (PNG holds only uint8 and uint16).
PixelType output_pixel_type(const ImageInfo& source, Format format, bool float_output);

// Fails early (before any filtering) when the output cannot be written: it exists and overwrite
// is off, its folder is missing or not writable, or the format cannot hold the image.
void check_output(const std::filesystem::path& path, const ImageInfo& source, const Dims& dims,
                  const WriteOptions& options);

// Writes to a temporary name in the output's folder, then renames into place: a failure leaves
// neither a partial output nor a changed old one.
WriteResult write_image(const Volume& volume, const ImageInfo& source, const std::filesystem::path& path,
                        const WriteOptions& options = {});

// ITK, GDCM, nifticlib and libtiff print warnings and errors of their own; ctdenoise holds them
// back (its errors say what failed, in one line) unless this is set (CLI --verbose).
void show_library_messages(bool shown);

// Small side outputs (preview pictures, reports), written atomically like images.
void write_gray8_png(const std::vector<std::uint8_t>& pixels, int width, int height,
                     const std::filesystem::path& path, bool overwrite);
void write_text_file(const std::string& text, const std::filesystem::path& path, bool overwrite);
// Fails early when a side output could not be written (exists without overwrite, folder missing).
void check_side_output(const std::filesystem::path& path, bool overwrite);

}  // namespace ctd::io
