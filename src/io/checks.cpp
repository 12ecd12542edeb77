// Checks the libraries do not make: header sanity before any allocation, and data that is
// really there (the readers of ITK's MetaImage, NRRD and TIFF accept data cut short and print a
// warning at most). Every mismatch is an Io error naming the file, what was declared and what
// was found.

#include "io/io_internal.hpp"

#include <fmt/format.h>

#include <png.h>
#include <tiffio.h>
#include <unistd.h>
#include <zlib.h>

#include <cctype>
#include <cstdio>
#include <cstring>
#include <fstream>

namespace ctd::io::detail {
namespace {

constexpr std::uint64_t kMaxExtent = std::uint64_t(1) << 24;  // voxels along one axis, at most
constexpr std::uint64_t kMaxHeaderBytes = 1 << 16;              // text headers (MetaImage, NRRD)

std::string trim(const std::string& s) {
  const auto first = s.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return {};
  return s.substr(first, s.find_last_not_of(" \t\r\n") - first + 1);
}

std::string size_text(std::uint64_t bytes) {
  if (bytes >= (std::uint64_t(1) << 30)) return fmt::format("{:.1f} GiB", double(bytes) / double(1 << 30));
  return fmt::format("{:.1f} MiB", double(bytes) / double(1 << 20));
}

// Inflates a zlib or gzip stream (several gzip members too, unless `one_stream`: MetaIO reads
// the first only and pads the rest) from `offset` of `file`, and fails unless it holds at least
// `expected` bytes and ends cleanly.
void check_compressed_stream(const fs::path& file, std::uint64_t offset, std::uint64_t expected, const fs::path& shown,
                             bool one_stream) {
  std::ifstream in(file, std::ios::binary);
  if (!in) fail(ErrorKind::Io, fmt::format("cannot open {}", quoted(file)));
  in.seekg(std::streamoff(offset));
  z_stream z{};
  if (inflateInit2(&z, 15 + 32) != Z_OK) fail(ErrorKind::OutOfMemory, "zlib: cannot start inflating");
  std::vector<unsigned char> input(1 << 20), output(1 << 20);
  std::uint64_t produced = 0;
  int status = Z_OK;
  bool ended = false;
  while (!ended) {
    in.read(reinterpret_cast<char*>(input.data()), std::streamsize(input.size()));
    const auto got = std::size_t(in.gcount());
    if (got == 0) break;
    z.next_in = input.data();
    z.avail_in = unsigned(got);
    while (z.avail_in > 0) {
      z.next_out = output.data();
      z.avail_out = unsigned(output.size());
      status = inflate(&z, Z_NO_FLUSH);
      produced += output.size() - z.avail_out;
      if (status == Z_STREAM_END) {
        // Another gzip member may follow (parallel gzip writers make several).
        if (z.avail_in > 0 && produced < expected) {
          if (one_stream) {
            inflateEnd(&z);
            fail(ErrorKind::Unsupported, fmt::format("{} holds its voxels as several compressed streams; the MetaImage "
                                                     "reader reads the first only ({} of {} bytes)",
                                                     quoted(shown), produced, expected));
          }
          inflateReset(&z);
          continue;
        }
        ended = true;
        break;
      }
      if (status != Z_OK && status != Z_BUF_ERROR) break;
      if (status == Z_BUF_ERROR && z.avail_in > 0) break;
    }
    if (!ended && status != Z_OK && status != Z_BUF_ERROR) break;
  }
  const std::string reason = z.msg ? z.msg : "";
  inflateEnd(&z);
  if (!ended && status != Z_OK && status != Z_BUF_ERROR) {
    fail(ErrorKind::Io, fmt::format("{} is corrupt: its compressed data does not inflate ({})", quoted(shown),
                                    reason.empty() ? "zlib error" : reason));
  }
  if (produced < expected) {
    fail(ErrorKind::Io, fmt::format("{} is truncated: its header declares {} bytes of voxel data, the compressed "
                                    "data holds {}",
                                    quoted(shown), expected, produced));
  }
  if (!ended) {
    fail(ErrorKind::Io, fmt::format("{} is truncated: its compressed data ends before the end of its stream",
                                    quoted(shown)));
  }
}

void check_plain_data(const fs::path& file, std::uint64_t offset, std::uint64_t expected, const fs::path& shown) {
  std::error_code ec;
  const std::uint64_t size = fs::file_size(file, ec);
  if (ec) fail(ErrorKind::Io, fmt::format("cannot read {} (data of {}): {}", quoted(file), quoted(shown), ec.message()));
  if (size < offset + expected) {
    fail(ErrorKind::Io, fmt::format("{} is truncated: its header declares {} bytes of voxel data{}, {} holds {}",
                                    quoted(shown), expected, offset ? fmt::format(" from byte {}", offset) : "",
                                    file == shown ? "the file" : quoted(file), size > offset ? size - offset : 0));
  }
}

// The text header's lines until `last_key` (MetaImage) or the first empty line (NRRD), as
// key -> value, and the byte where the data starts when it follows the header.
struct TextHeader {
  std::map<std::string, std::string> fields;  // keys lower-cased
  std::uint64_t data_offset = 0;
};

TextHeader read_text_header(const fs::path& path, char separator, const std::string& last_key) {
  std::ifstream in(path, std::ios::binary);
  TextHeader header;
  std::string line;
  std::uint64_t position = 0;
  while (position < kMaxHeaderBytes && std::getline(in, line)) {
    position += line.size() + 1;
    const std::string trimmed = trim(line);
    if (last_key.empty() && trimmed.empty()) break;  // NRRD: the blank line ends the header
    const auto at = trimmed.find(separator);
    if (at == std::string::npos) continue;
    std::string key = lower_case(trim(trimmed.substr(0, at)));
    // NRRD key/value pairs use ":=", fields ":"
    if (separator == ':' && at + 1 < trimmed.size() && trimmed[at + 1] == '=') continue;
    header.fields[key] = trim(trimmed.substr(at + 1));
    if (!last_key.empty() && key == last_key) break;
  }
  header.data_offset = position;
  return header;
}

}  // namespace

void check_header(const fs::path& path, const std::vector<std::uint64_t>& extent, const std::vector<double>& spacing,
                  std::size_t bytes_per_voxel, const ReadOptions& options) {
  if (extent.empty()) fail(ErrorKind::Io, fmt::format("{} has a corrupt header: it declares 0 dimensions", quoted(path)));
  std::uint64_t voxels = 1;
  std::string dims_text;
  for (std::size_t i = 0; i < extent.size(); ++i) {
    // Libraries hold sizes unsigned: a negative one in the header arrives as 2^32 - n.
    const std::int64_t shown = extent[i] > 0x7fffffffu && extent[i] <= 0xffffffffu ? std::int64_t(std::int32_t(extent[i]))
                                                                                   : std::int64_t(extent[i]);
    dims_text += fmt::format("{}{}", i ? " x " : "", shown);
    if (extent[i] == 0 || extent[i] > kMaxExtent) {
      fail(ErrorKind::Io, fmt::format("{} has a corrupt header: dimension {} is {} (expected 1 to {})", quoted(path),
                                      i + 1, shown, kMaxExtent));
    }
    voxels *= extent[i];  // < 2^72 only after three axes of 2^24: checked below
    if (voxels > (std::uint64_t(1) << 48)) {
      fail(ErrorKind::Io, fmt::format("{} has a corrupt header: {} voxels is beyond any image", quoted(path), dims_text));
    }
  }
  for (std::size_t i = 0; i < spacing.size(); ++i) {
    if (!(std::isfinite(spacing[i]) && spacing[i] > 0)) {
      fail(ErrorKind::Io, fmt::format("{} has a corrupt header: voxel spacing {} along axis {} (expected a number > 0)",
                                      quoted(path), spacing[i], i + 1));
    }
  }
  if (options.max_voxels > 0 && voxels > std::uint64_t(options.max_voxels)) {
    fail(ErrorKind::Unsupported, fmt::format("{} has {} voxels ({}); {}", quoted(path), voxels, dims_text,
                                             options.max_voxels_reason.empty() ? "too many for this run"
                                                                               : options.max_voxels_reason));
  }
  // The voxels as read plus the float32 volume must fit in memory.
  const std::uint64_t need = voxels * (bytes_per_voxel + sizeof(float));
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  if (pages > 0 && page > 0 && need > std::uint64_t(pages) * std::uint64_t(page)) {
    fail(ErrorKind::OutOfMemory, fmt::format("{} ({} voxels) needs {} to read, more than this machine's {} of memory",
                                             quoted(path), dims_text, size_text(need),
                                             size_text(std::uint64_t(pages) * std::uint64_t(page))));
  }
}

DataLayout metaimage_layout(const fs::path& path) {
  const TextHeader h = read_text_header(path, '=', "elementdatafile");
  const auto field = [&](const char* key) {
    const auto it = h.fields.find(key);
    return it == h.fields.end() ? std::string() : it->second;
  };
  const std::string data = field("elementdatafile");
  if (data.empty()) fail(ErrorKind::Io, fmt::format("{} has no ElementDataFile line: not a complete MetaImage header", quoted(path)));
  DataLayout layout;
  // A list of files, or a file name pattern: one file a slice, left to MetaIO.
  if (lower_case(data) == "list" || data.find('%') != std::string::npos) return layout;
  const bool local = lower_case(data) == "local";
  layout.file = local ? path : path.parent_path() / data;
  layout.encoding = lower_case(field("compresseddata")) == "true" ? DataLayout::Encoding::Compressed : DataLayout::Encoding::Plain;
  layout.one_stream = true;
  layout.offset = local ? h.data_offset : 0;
  const std::string header_size = field("headersize");
  if (!local && !header_size.empty()) {
    const long long skip = std::atoll(header_size.c_str());
    if (skip == -1) layout.at_end = true;  // the data is at the end of the file
    if (skip > 0) layout.offset = std::uint64_t(skip);
  }
  std::string msb = lower_case(field("binarydatabyteordermsb"));
  if (msb.empty()) msb = lower_case(field("elementbyteordermsb"));
  layout.byte_order = msb == "true" ? ByteOrder::Big : ByteOrder::Little;  // MetaIO's default: LSB first
  return layout;
}

DataLayout nrrd_layout(const fs::path& path) {
  const TextHeader h = read_text_header(path, ':', "");
  const auto field = [&](const char* key) {
    const auto it = h.fields.find(key);
    return it == h.fields.end() ? std::string() : it->second;
  };
  DataLayout layout;
  std::string data = field("data file");
  if (data.empty()) data = field("datafile");
  // Several data files (a list or a pattern): left to the NRRD library.
  if (lower_case(data).starts_with("list") || data.find(' ') != std::string::npos || data.find('%') != std::string::npos) return layout;
  const long long line_skip = std::atoll(field("line skip").c_str()), byte_skip = std::atoll(field("byte skip").c_str());
  if (line_skip != 0 || byte_skip != 0) return layout;  // rare layouts: left to the NRRD library
  layout.file = data.empty() ? path : (fs::path(data).is_absolute() ? fs::path(data) : path.parent_path() / data);
  layout.offset = data.empty() ? h.data_offset : 0;
  const std::string encoding = lower_case(field("encoding"));
  if (encoding == "gzip" || encoding == "gz") layout.encoding = DataLayout::Encoding::Compressed;
  else if (encoding == "raw") layout.encoding = DataLayout::Encoding::Plain;
  else layout.file.clear();  // text, hex, bzip2: left to the NRRD library
  const std::string endian = lower_case(field("endian"));
  if (endian == "big") layout.byte_order = ByteOrder::Big;
  if (endian == "little") layout.byte_order = ByteOrder::Little;
  return layout;
}

void check_data(const DataLayout& layout, std::uint64_t expected, const fs::path& path) {
  if (layout.file.empty()) return;
  if (layout.at_end) {
    // Only its size can be checked.
    std::error_code ec;
    const std::uint64_t size = fs::file_size(layout.file, ec);
    if (layout.encoding == DataLayout::Encoding::Plain && !ec && size < expected) check_plain_data(layout.file, 0, expected, path);
    return;
  }
  if (layout.encoding == DataLayout::Encoding::Compressed) {
    check_compressed_stream(layout.file, layout.offset, expected, path, layout.one_stream);
  }
  else check_plain_data(layout.file, layout.offset, expected, path);
}

void check_tiff_data(const fs::path& path) {
  // libtiff reports a strip or directory it cannot read through its handlers and goes on;
  // decode every strip and tile once and keep the first error.
  static thread_local std::string first_error;
  first_error.clear();
  const TIFFErrorHandler old_error = TIFFSetErrorHandler([](const char* module, const char* format, va_list args) {
    if (!first_error.empty()) return;
    char text[512];
    std::vsnprintf(text, sizeof text, format, args);
    first_error = fmt::format("{}{}", module ? fmt::format("{}: ", module) : "", text);
  });
  // Warnings are mostly unknown tags, but libtiff also warns when a tag's value is cut off.
  const TIFFErrorHandler old_warning = TIFFSetWarningHandler([](const char* module, const char* format, va_list args) {
    char text[512];
    std::vsnprintf(text, sizeof text, format, args);
    if (first_error.empty() && std::strstr(text, "IO error") != nullptr) {
      first_error = fmt::format("{}{}", module ? fmt::format("{}: ", module) : "", text);
    }
  });
  TIFF* tiff = TIFFOpen(path.c_str(), "r");
  std::uint64_t pages = 0;
  if (tiff) {
    std::vector<unsigned char> buffer;
    // ITK sizes its buffers from the first page: every page must have its size and pixel type
    // (a page whose BitsPerSample is missing overflowed ITK's buffer, found by fuzzing).
    auto layout = [&] {
      std::uint32_t width = 0, height = 0;
      std::uint16_t bits = 1, samples = 1, format = SAMPLEFORMAT_UINT, planar = PLANARCONFIG_CONTIG;
      std::uint32_t subfile = 0;  // ITK counts the pages marked as pages: they must all be alike
      TIFFGetField(tiff, TIFFTAG_SUBFILETYPE, &subfile);
      TIFFGetField(tiff, TIFFTAG_IMAGEWIDTH, &width);
      TIFFGetField(tiff, TIFFTAG_IMAGELENGTH, &height);
      TIFFGetFieldDefaulted(tiff, TIFFTAG_BITSPERSAMPLE, &bits);
      TIFFGetFieldDefaulted(tiff, TIFFTAG_SAMPLESPERPIXEL, &samples);
      TIFFGetFieldDefaulted(tiff, TIFFTAG_SAMPLEFORMAT, &format);
      TIFFGetFieldDefaulted(tiff, TIFFTAG_PLANARCONFIG, &planar);
      return fmt::format("{} x {}, {} bits, {} sample(s), format {}, planar {}, subfile type {}", width, height, bits, samples,
                         format, planar, subfile);
    };
    const std::string first_layout = layout();
    do {
      ++pages;
      if (const std::string this_layout = layout(); this_layout != first_layout && first_error.empty()) {
        first_error = fmt::format("page {} is {}, page 1 is {}: the pages of a stack must match", pages, this_layout, first_layout);
        break;
      }
      if (TIFFIsTiled(tiff)) {
        buffer.resize(std::size_t(TIFFTileSize64(tiff)));
        for (uint32_t t = 0; t < TIFFNumberOfTiles(tiff) && first_error.empty(); ++t) {
          if (TIFFReadEncodedTile(tiff, t, buffer.data(), tmsize_t(buffer.size())) < 0 && first_error.empty()) {
            first_error = fmt::format("cannot read tile {} of page {}", t, pages);
          }
        }
      } else {
        buffer.resize(std::size_t(TIFFStripSize64(tiff)));
        for (uint32_t s = 0; s < TIFFNumberOfStrips(tiff) && first_error.empty(); ++s) {
          if (TIFFReadEncodedStrip(tiff, s, buffer.data(), tmsize_t(buffer.size())) < 0 && first_error.empty()) {
            first_error = fmt::format("cannot read strip {} of page {}", s, pages);
          }
        }
      }
    } while (first_error.empty() && TIFFReadDirectory(tiff));
    TIFFClose(tiff);
  }
  TIFFSetErrorHandler(old_error);
  TIFFSetWarningHandler(old_warning);
  if (!tiff && first_error.empty()) first_error = "not a TIFF file";
  if (!first_error.empty()) {
    std::string reason = first_error;
    for (char& c : reason) {
      if (c == '\n' || c == '\r') c = ' ';
    }
    fail(ErrorKind::Io, fmt::format("{} is truncated or corrupt: {}", quoted(path), trim(reason)));
  }
}

}  // namespace ctd::io::detail

namespace ctd::io::detail {

namespace {

// A NIfTI header's fields, read in the file's byte order (sizeof_hdr is 348 for NIfTI-1 and 540
// for NIfTI-2 in the file's order; anything else means the other order).
class NiftiBytes {
 public:
  explicit NiftiBytes(const unsigned char* bytes) : bytes_(bytes) {
    std::int32_t sizeof_hdr;
    std::memcpy(&sizeof_hdr, bytes, 4);
    swapped_ = sizeof_hdr != 348 && sizeof_hdr != 540;
  }
  template <class T>
  T load(std::size_t offset) const {
    T value;
    std::memcpy(&value, bytes_ + offset, sizeof value);
    if (swapped_) {
      auto* b = reinterpret_cast<unsigned char*>(&value);
      std::reverse(b, b + sizeof value);
    }
    return value;
  }

 private:
  const unsigned char* bytes_;
  bool swapped_;
};

}  // namespace

// ITK's NIfTI reader accepts a file whose voxel data is cut short, and its NIfTI library turns
// NaN and infinite floats into 0 without a word. Both would go unnoticed, so read the file once
// more (zlib reads plain and gzipped files alike) to check its length and its float values.
std::vector<char> nifti_file_bytes(const fs::path& path, std::uint64_t voxel_bytes) {
  std::ifstream in(path, std::ios::binary);
  unsigned char magic[2] = {};
  in.read(reinterpret_cast<char*>(magic), 2);
  if (magic[0] == 0x1f && magic[1] == 0x8b) return gunzip_file(path, voxel_bytes + 544);
  in.seekg(0);
  std::vector<char> bytes(fs::file_size(path));
  if (!in.read(bytes.data(), std::streamsize(bytes.size()))) fail(ErrorKind::Io, fmt::format("cannot read {}", quoted(path)));
  return bytes;
}

void check_nifti_data(const fs::path& path, const std::vector<char>& bytes, std::uint64_t voxel_count) {
  if (bytes.size() < 348) fail(ErrorKind::Io, fmt::format("cannot read {}: truncated or corrupt file", quoted(path)));
  // vox_offset: a float at byte 108 (NIfTI-1, 348-byte header) or an int64 at byte 168 (NIfTI-2).
  const NiftiBytes h(reinterpret_cast<const unsigned char*>(bytes.data()));
  const std::int32_t header_size = h.load<std::int32_t>(0);
  const bool nifti2 = header_size == 540 && bytes.size() >= 540;
  const double offset = nifti2 ? double(h.load<std::int64_t>(168)) : double(h.load<float>(108));
  // The voxels as stored (the library reports scaled ones, e.g. int16 with scl_slope 0.5, as
  // float32): the datatype's size, else bitpix.
  const std::int16_t datatype = h.load<std::int16_t>(nifti2 ? 12 : 70), bitpix = h.load<std::int16_t>(nifti2 ? 14 : 72);
  std::uint64_t stored_size = bitpix > 0 ? std::uint64_t(bitpix) / 8 : 0;
  switch (datatype) {
    case 2: case 256: stored_size = 1; break;
    case 4: case 512: stored_size = 2; break;
    case 8: case 16: case 768: stored_size = 4; break;
    case 64: case 1024: case 1280: stored_size = 8; break;
    default: break;
  }
  const std::uint64_t voxel_bytes = voxel_count * stored_size;
  const bool float32 = datatype == 16, float64 = datatype == 64;
  const auto start = static_cast<std::uint64_t>(std::max(offset, double(header_size)));
  if (bytes.size() < start + voxel_bytes) {
    fail(ErrorKind::Io, fmt::format("{} is truncated: its voxel data needs {} bytes, the file holds {}", quoted(path),
                                    start + voxel_bytes, bytes.size()));
  }
  std::uint64_t bad = 0;
  auto count = [&](auto zero) {
    using T = decltype(zero);
    for (std::uint64_t at = start; at + sizeof(T) <= start + voxel_bytes; at += sizeof(T)) {
      bad += std::isfinite(h.load<T>(at)) ? 0 : 1;
    }
  };
  if (float32) count(float{});
  if (float64) count(double{});
  if (bad > 0) {
    fail(ErrorKind::InvalidArgument,
         fmt::format("{} has {} NaN or infinite voxel(s); replace them before filtering", quoted(path), bad));
  }
}

std::optional<NiftiVoxels> nifti_plain_voxels(const std::vector<char>& bytes) {
  if (bytes.size() < 348) return std::nullopt;
  std::int32_t header_size = 0;
  std::memcpy(&header_size, bytes.data(), 4);
  if (header_size != 348) return std::nullopt;  // NIfTI-2 or the other byte order: the library's
  const NiftiBytes h(reinterpret_cast<const unsigned char*>(bytes.data()));
  const float slope = h.load<float>(112), intercept = h.load<float>(116);
  if (!((slope == 0 || slope == 1) && intercept == 0)) return std::nullopt;  // scaled: the library's
  std::optional<PixelType> type;
  switch (h.load<std::int16_t>(70)) {
    case 2: type = PixelType::UInt8; break;
    case 4: type = PixelType::Int16; break;
    case 8: type = PixelType::Int32; break;
    case 16: type = PixelType::Float32; break;
    case 64: type = PixelType::Float64; break;
    case 256: type = PixelType::Int8; break;
    case 512: type = PixelType::UInt16; break;
    case 768: type = PixelType::UInt32; break;
    default: return std::nullopt;
  }
  const auto offset = static_cast<std::uint64_t>(std::max(double(h.load<float>(108)), 348.0));
  if (offset % size_of(*type) != 0) return std::nullopt;  // not aligned for the type
  return NiftiVoxels{offset, *type};
}

void check_nifti_header(const fs::path& path) {
  gzFile file = gzopen(path.c_str(), "rb");
  if (!file) fail(ErrorKind::Io, fmt::format("cannot open {}", quoted(path)));
  unsigned char bytes[540] = {};
  const int got = gzread(file, bytes, sizeof bytes);
  gzclose(file);
  if (got < 348) fail(ErrorKind::Io, fmt::format("{} is truncated: a NIfTI header has 348 bytes, the file {}", quoted(path), got));
  const NiftiBytes h(bytes);
  const bool nifti2 = h.load<std::int32_t>(0) == 540;
  if (nifti2 && got < 540) fail(ErrorKind::Io, fmt::format("{} is truncated: a NIfTI-2 header has 540 bytes", quoted(path)));
  auto dim = [&](int i) { return nifti2 ? h.load<std::int64_t>(16 + 8 * std::size_t(i)) : std::int64_t(h.load<std::int16_t>(40 + 2 * std::size_t(i))); };
  auto pixdim = [&](int i) { return nifti2 ? h.load<double>(104 + 8 * std::size_t(i)) : double(h.load<float>(76 + 4 * std::size_t(i))); };
  const std::int64_t rank = dim(0);
  if (rank < 1 || rank > 7) fail(ErrorKind::Io, fmt::format("{} has a corrupt header: {} dimensions (dim[0] must be 1 to 7)", quoted(path), rank));
  for (int i = 1; i <= rank; ++i) {
    if (dim(i) < 1) fail(ErrorKind::Io, fmt::format("{} has a corrupt header: dimension {} is {} (dim[{}] must be >= 1)", quoted(path), i, dim(i), i));
  }
  // The orientation (quaternion and affine rows): ITK's SVD of it aborts on non-finite values
  // and never ends on some absurd ones (both found by fuzzing). Lengths beyond a kilometre are
  // not a scan.
  const std::size_t quatern = nifti2 ? 360 : 256, srow = nifti2 ? 408 : 280;
  auto field = [&](std::size_t k) { return nifti2 ? h.load<double>(quatern + 8 * k) : double(h.load<float>(quatern + 4 * k)); };
  auto affine = [&](std::size_t k) { return nifti2 ? h.load<double>(srow + 8 * k) : double(h.load<float>(srow + 4 * k)); };
  constexpr double kMaxMillimetres = 1e6;
  for (std::size_t k = 0; k < 6; ++k) {
    const double limit = k < 3 ? 1.0 + 1e-6 : kMaxMillimetres;  // quaternion b, c, d; then the offsets
    if (!(std::fabs(field(k)) <= limit)) {
      fail(ErrorKind::Io, fmt::format("{} has a corrupt header: orientation value {} ({} must be within +-{})", quoted(path),
                                      field(k), k < 3 ? "quatern_b/c/d" : "qoffset_x/y/z", limit));
    }
  }
  for (std::size_t k = 0; k < 12; ++k) {
    if (!(std::fabs(affine(k)) <= kMaxMillimetres)) {
      fail(ErrorKind::Io, fmt::format("{} has a corrupt header: affine value {} (srow_x/y/z must be within +-{})",
                                      quoted(path), affine(k), kMaxMillimetres));
    }
  }
  if (!(std::fabs(pixdim(0)) <= 1)) {
    fail(ErrorKind::Io, fmt::format("{} has a corrupt header: qfac (pixdim[0]) is {}", quoted(path), pixdim(0)));
  }
  for (int i = 1; i <= std::min<std::int64_t>(rank, 3); ++i) {
    if (!(std::isfinite(pixdim(i)) && pixdim(i) > 0 && pixdim(i) <= kMaxMillimetres)) {
      fail(ErrorKind::Io, fmt::format("{} has a corrupt header: voxel spacing {} along axis {} (pixdim[{}] must be a number > 0)",
                                      quoted(path), pixdim(i), i, i));
    }
  }
}

}  // namespace ctd::io::detail

namespace ctd::io::detail {
namespace {

struct PngFailure {
  char message[256] = {};
};

extern "C" void png_failed(png_structp png, png_const_charp message) {
  auto* failure = static_cast<PngFailure*>(png_get_error_ptr(png));
  std::snprintf(failure->message, sizeof failure->message, "%s", message ? message : "libpng error");
  png_longjmp(png, 1);
}

extern "C" void png_warned(png_structp, png_const_charp) {}

// Decodes the whole file with libpng under its error jump; false with `failure` set on an error.
// Plain C objects only between setjmp and longjmp.
bool decode_png(std::FILE* file, PngFailure& failure) {
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &failure, png_failed, png_warned);
  if (!png) return false;
  png_infop info = png_create_info_struct(png);
  png_bytep row = nullptr;
  if (!info || setjmp(png_jmpbuf(png))) {
    std::free(row);
    png_destroy_read_struct(&png, info ? &info : nullptr, nullptr);
    return false;
  }
  png_init_io(png, file);
  png_read_info(png, info);
  const int passes = png_set_interlace_handling(png);
  png_read_update_info(png, info);
  row = static_cast<png_bytep>(std::malloc(png_get_rowbytes(png, info)));
  if (!row) png_error(png, "out of memory for one row");
  const png_uint_32 height = png_get_image_height(png, info);
  for (int pass = 0; pass < passes; ++pass)
    for (png_uint_32 y = 0; y < height; ++y) png_read_row(png, row, nullptr);
  png_read_end(png, nullptr);
  std::free(row);
  png_destroy_read_struct(&png, &info, nullptr);
  return true;
}

}  // namespace

void check_png_data(const fs::path& path) {
  // ITK's PNG reader sets no error jump for libpng, which then aborts the process on a corrupt
  // header: the file is decoded here first.
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (!file) fail(ErrorKind::Io, fmt::format("cannot open {}", quoted(path)));
  PngFailure failure;
  const bool ok = decode_png(file, failure);
  std::fclose(file);
  if (!ok) {
    fail(ErrorKind::Io, fmt::format("{} is truncated or corrupt: {}", quoted(path),
                                    failure.message[0] ? failure.message : "libpng cannot decode it"));
  }
}

}  // namespace ctd::io::detail

namespace ctd::io::detail {

fs::path switch_metaimage_data_file(const fs::path& staged, const fs::path& existing) {
  const std::string old_name = read_text_header(existing, '=', "elementdatafile").fields["elementdatafile"];
  const std::string stem = existing.stem().string();
  const std::string staged_name = stem + ".raw";  // what ITK wrote
  std::string new_name = staged_name;
  for (int k = 1; new_name == old_name || (new_name != staged_name && fs::exists(existing.parent_path() / new_name)); ++k) {
    new_name = fmt::format("{}-{}.raw", stem, k);
  }
  if (new_name == staged_name) return old_name.empty() || lower_case(old_name) == "local" ? fs::path() : existing.parent_path() / old_name;
  fs::rename(staged.parent_path() / staged_name, staged.parent_path() / new_name);
  std::ifstream in(staged, std::ios::binary);
  std::string header{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  in.close();
  const std::string line = "ElementDataFile = " + staged_name;
  const auto at = header.find(line);
  if (at == std::string::npos) fail(ErrorKind::Io, fmt::format("cannot update the data file name in {}", quoted(staged.filename())));
  header.replace(at, line.size(), "ElementDataFile = " + new_name);
  std::ofstream(staged, std::ios::binary | std::ios::trunc) << header;
  return old_name.empty() || lower_case(old_name) == "local" ? fs::path() : existing.parent_path() / old_name;
}

}  // namespace ctd::io::detail
