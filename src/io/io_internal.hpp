#pragma once
// Shared pieces of the I/O target. ITK and GDCM stay inside src/io.

#include <ctdenoise/error.hpp>
#include <ctdenoise/io.hpp>

#include <itkCommonEnums.h>
#include <itkMacro.h>
#include <itkImage.h>
#include <itkMetaDataDictionary.h>

#include "cpu/thread_pool.hpp"
#include "io/gzip.hpp"

#include <algorithm>
#include <bit>
#include <atomic>
#include <chrono>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace ctd::io {

// Per-slice DICOM attributes of the input, in slice order (one entry for a single file).
struct DicomSource {
  std::vector<itk::MetaDataDictionary> slices;
};

namespace detail {

namespace fs = std::filesystem;

[[noreturn]] inline void fail(ErrorKind kind, const std::string& message) { throw Error(kind, message); }

// ITK messages span lines and carry file:line noise; keep one readable line.
std::string one_line(const std::string& message);
std::string quoted(const fs::path& path);  // 'path' for messages
inline std::string lower_case(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}
// OutOfMemory for ITK's allocation failures, Io for the rest.
ErrorKind kind_of(const itk::ExceptionObject& e);

void register_itk_factories();  // also silences ITK/GDCM warnings: failures arrive as exceptions

// While alive, what the libraries print on stderr is held back (shown afterwards only when
// show_library_messages(true)). Wraps every ITK, GDCM and libtiff call.
class LibraryOutputCapture {
 public:
  LibraryOutputCapture();
  ~LibraryOutputCapture();
  LibraryOutputCapture(const LibraryOutputCapture&) = delete;
  LibraryOutputCapture& operator=(const LibraryOutputCapture&) = delete;
};

// Header sanity, before any voxel is allocated: every extent 1..2^24, spacing finite and > 0,
// the options' voxel limit, and memory for the voxels as read plus the float32 volume.
void check_header(const fs::path& path, const std::vector<std::uint64_t>& extent, const std::vector<double>& spacing,
                  std::size_t bytes_per_voxel, const ReadOptions& options);
// The raw NIfTI header (the library repairs negative dimensions and zero spacing silently).
void check_nifti_header(const fs::path& path);
// ITK's NIfTI reader accepts voxel data cut short and turns NaN and infinite floats into 0: the
// file is read once more to check its length (voxel_count voxels of the stored datatype) and
// (float32/float64 voxels) its values. `bytes`: the whole file, inflated (nifti_file_bytes).
void check_nifti_data(const fs::path& path, const std::vector<char>& bytes, std::uint64_t voxel_count);
// The whole NIfTI file, inflated when it is gzip-compressed; Io when it is truncated or corrupt.
std::vector<char> nifti_file_bytes(const fs::path& path, std::uint64_t voxel_bytes);
// Where the voxels of a NIfTI-1 file's bytes (nifti_file_bytes) lie, when they can be taken as
// they are: the machine's byte order, no scaling, a plain scalar type, aligned for it. Otherwise
// nullopt: the library reads them.
struct NiftiVoxels {
  std::uint64_t offset;
  PixelType type;
};
std::optional<NiftiVoxels> nifti_plain_voxels(const std::vector<char>& bytes);
// The declared voxel bytes are all there (uncompressed: the file is long enough; compressed: the
// stream inflates to them and ends cleanly).
// Where a MetaImage's or NRRD's voxels are, as its header says. `file` is empty where the
// format's library is left to find them (lists of files, skipped lines, text encodings).
struct DataLayout {
  enum class Encoding { Plain, Compressed };
  fs::path file;
  std::uint64_t offset = 0;     // where the voxels start in `file`
  bool at_end = false;          // MetaImage HeaderSize -1: the voxels end the file
  Encoding encoding = Encoding::Plain;
  std::optional<ByteOrder> byte_order;  // NRRD leaves it out for one-byte types
  bool one_stream = false;              // compressed MetaImage: MetaIO reads one zlib/gzip stream only
};
DataLayout metaimage_layout(const fs::path& header);
DataLayout nrrd_layout(const fs::path& header);
// Fails unless the data the layout names holds `expected_bytes` (inflated, when compressed).
void check_data(const DataLayout& layout, std::uint64_t expected_bytes, const fs::path& shown);

// Whether values stored in `order` must be byte-swapped on this machine, and the swap of
// `count` values of `width` bytes in place.
inline bool needs_swap(ByteOrder order) { return (order == ByteOrder::Big) != (std::endian::native == std::endian::big); }
inline void swap_bytes(char* data, std::size_t count, std::size_t width) {
  if (width == 1) return;
  for (std::size_t i = 0; i < count; ++i) std::reverse(data + i * width, data + (i + 1) * width);
}

// Reads `count` voxels of `type`, stored uncompressed from `offset` of `file`, as float: in
// pieces on all cores, each read and converted by one thread (disks and the page cache give
// more with several requests in flight, and the conversion needs no pass of its own). Fails
// (Io) where the file ends early.
// Into image.volume (sized), keeping the stored voxels in image.int16_voxels as well where the
// options ask for it and they are int16.
void read_plain_voxels(const fs::path& file, std::uint64_t offset, PixelType type, ByteOrder order, const ReadOptions& options,
                       Image& image);
// Every strip or tile of every page decodes; every row of a PNG decodes (before ITK's reader,
// which lets libpng abort the process on a corrupt PNG).
void check_tiff_data(const fs::path& path);
void check_png_data(const fs::path& path);
// The staged .mhd at `staged` replaces `existing`, whose header names a data file: renames the
// staged data file to a name the old header does not use (stem.raw or stem-1.raw), points the
// staged header at it, and returns the old data file (to remove once the new pair is in place).
fs::path switch_metaimage_data_file(const fs::path& staged, const fs::path& existing);

// The PixelType of an ITK component type; Unsupported for 64-bit integers and the like.
PixelType pixel_type_of(itk::IOComponentEnum component, const fs::path& path);

Image read_itk(const fs::path& path, const ReadOptions& options);  // NIfTI, MetaImage, NRRD, TIFF, PNG
Image read_dicom(const fs::path& path, const ReadOptions& options);  // a file or a series folder
// Parses and decodes the file (or every file of the folder) with GDCM in a child process, and
// fails (Io) naming the file on which GDCM stopped the process (its assertions abort).
void probe_dicom_in_child(const fs::path& path);
Image read_raw(const fs::path& path, const RawLayout& layout, const ReadOptions& options);

// Writers convert to `type` (rounded, clamped) and return how many voxels were clamped.
// write_itk and write_raw add their stages ("convert", "write", "compress") to `stages`.
std::int64_t write_itk(const Volume& volume, PixelType type, Format format, const fs::path& path,
                       const WriteOptions& options, StageTimes& stages);
std::int64_t write_dicom(const Volume& volume, const ImageInfo& source, PixelType type, const fs::path& path,
                         const WriteOptions& options);
std::int64_t write_raw(const Volume& volume, PixelType type, ByteOrder order, const fs::path& path, StageTimes& stages);
// Converts the volume to `type` in `order` and writes it from byte `offset` of `file` (created
// if missing, cut to end with the voxels): in pieces on all cores, each converted and written by
// one thread, so conversion and writing overlap and no converted copy of the volume is made.
// Returns how many voxels were clamped.
std::int64_t write_plain_voxels(const Volume& volume, PixelType type, ByteOrder order, const fs::path& file,
                                std::uint64_t offset);
// Seconds since the last lap (or since construction), for StageTimes.
class StageClock {
 public:
  double lap() {
    const auto now = std::chrono::steady_clock::now();
    const double seconds = std::chrono::duration<double>(now - last_).count();
    last_ = now;
    return seconds;
  }

 private:
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};

// std::nearbyint in the default rounding mode (halves to even) for |v| <= 2^51: adding and
// taking away 1.5 x 2^52 drops the bits below the units. std::nearbyint is a library call on
// baseline x86-64, which made it most of the output conversion's time.
inline double round_half_even(double v) {
  constexpr double kShift = 6755399441055744.0;
  return (v + kShift) - kShift;
}

// Rounds and clamps n float voxels into T; returns how many were outside T's range.
template <class T>
std::int64_t convert_piece(const float* in, std::int64_t n, T* out) {
  std::int64_t outside = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    if constexpr (std::numeric_limits<T>::is_integer) {
      const double lo = double(std::numeric_limits<T>::lowest()), hi = double(std::numeric_limits<T>::max());
      const double v = round_half_even(std::clamp(double(in[i]), lo - 1, hi + 1));
      outside += v < lo || v > hi;
      out[i] = static_cast<T>(std::clamp(v, lo, hi));
    } else {
      out[i] = static_cast<T>(in[i]);
    }
  }
  return outside;
}

// convert_piece over the whole volume, on all cores.
template <class T>
std::int64_t convert_voxels(const Volume& volume, T* out) {
  constexpr std::int64_t kPiece = 1 << 20;
  std::atomic<std::int64_t> clamped{0};
  cpu::for_each_piece(volume.size(), kPiece, 0, [&](std::int64_t, std::int64_t begin, std::int64_t end) {
    clamped += convert_piece(volume.data() + begin, end - begin, out + begin);
  });
  return clamped;
}

// Converts n voxels of T to float, on all cores.
template <class T>
void voxels_to_float(const T* in, std::int64_t n, float* out) {
  constexpr std::int64_t kPiece = 1 << 20;
  cpu::for_each_piece(n, kPiece, 0, [&](std::int64_t, std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) out[i] = static_cast<float>(in[i]);
  });
}

// A Volume of an ITK image's size and geometry (its voxels not copied).
template <class T>
Volume empty_volume(const itk::Image<T, 3>& image) {
  const auto size = image.GetLargestPossibleRegion().GetSize();
  Geometry geometry;
  for (unsigned i = 0; i < 3; ++i) {
    geometry.spacing[i] = image.GetSpacing()[i];
    geometry.origin[i] = image.GetOrigin()[i];
    for (unsigned j = 0; j < 3; ++j) geometry.direction[3 * i + j] = image.GetDirection()(i, j);
  }
  return Volume({std::int64_t(size[0]), std::int64_t(size[1]), std::int64_t(size[2])}, geometry);
}

// Voxels (converted to float on all cores) and geometry of an ITK image as a Volume.
template <class T>
Volume to_volume(const itk::Image<T, 3>& image) {
  Volume volume = empty_volume(image);
  voxels_to_float(image.GetBufferPointer(), volume.size(), volume.data());
  return volume;
}

// Calls f(T{}) with the C++ type of a PixelType.
template <class F>
decltype(auto) with_pixel_type(PixelType type, F&& f) {
  switch (type) {
    case PixelType::UInt8: return f(std::uint8_t{});
    case PixelType::Int8: return f(std::int8_t{});
    case PixelType::UInt16: return f(std::uint16_t{});
    case PixelType::Int16: return f(std::int16_t{});
    case PixelType::UInt32: return f(std::uint32_t{});
    case PixelType::Int32: return f(std::int32_t{});
    case PixelType::Float32: return f(float{});
    case PixelType::Float64: return f(double{});
  }
  return f(float{});
}

// An output written into a hidden folder beside its destination, moved into place by commit().
// Destroyed without commit (an error on the way), it removes everything it wrote.
class StagedOutput {
 public:
  StagedOutput(const fs::path& destination, bool overwrite);
  ~StagedOutput();
  StagedOutput(const StagedOutput&) = delete;
  StagedOutput& operator=(const StagedOutput&) = delete;

  // Where the writer puts the output (same file or folder name as the destination).
  fs::path path() const { return staging_ / destination_.filename(); }
  // Moves every staged file into the destination folder (the main one last) and returns them.
  std::vector<fs::path> commit();

 private:
  fs::path destination_, staging_;
  bool overwrite_;
};

}  // namespace detail
}  // namespace ctd::io
