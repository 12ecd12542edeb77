// gzip with libdeflate. Writing: the file is cut into 4 MiB chunks, each compressed as a gzip
// member of its own on all cores, and the members are written in order. A file of several
// members is plain gzip: zlib (ITK, nifticlib), Python's gzip (nibabel) and gunzip read it whole.
// Reading: such members side by side on all cores; any other gzip file (one stream, as most
// tools write it) member after member, two to four times as fast as zlib.

#include "cpu/thread_pool.hpp"
#include "io/gzip.hpp"
#include "io/io_internal.hpp"

#include <fmt/format.h>

#include <libdeflate.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <fstream>
#include <optional>

namespace ctd::io::detail {
namespace {

void check_level(int level) {
  if (level < 1 || level > 12) {
    fail(ErrorKind::InvalidArgument, fmt::format("the compression level must be 1 (fastest) to 12 (smallest), got {}", level));
  }
}

std::uint32_t little_endian_u32(const char* p) {
  const auto* b = reinterpret_cast<const unsigned char*>(p);
  return std::uint32_t(b[0]) | std::uint32_t(b[1]) << 8 | std::uint32_t(b[2]) << 16 | std::uint32_t(b[3]) << 24;
}

// Member after member on one core: any gzip file.
std::vector<char> inflate_in_order(const std::vector<char>& data, std::size_t size_hint, const fs::path& source) {
  libdeflate_decompressor* decompressor = libdeflate_alloc_decompressor();
  if (!decompressor) fail(ErrorKind::OutOfMemory, "gzip: cannot start decompressing (libdeflate)");
  std::vector<char> out(std::max<std::size_t>(size_hint, 1 << 20));
  std::size_t in_at = 0, out_at = 0;
  libdeflate_result result = LIBDEFLATE_SUCCESS;
  while (in_at < data.size()) {
    std::size_t used = 0, produced = 0;
    result = libdeflate_gzip_decompress_ex(decompressor, data.data() + in_at, data.size() - in_at, out.data() + out_at,
                                           out.size() - out_at, &used, &produced);
    if (result == LIBDEFLATE_INSUFFICIENT_SPACE) {
      out.resize(out.size() * 2);
      continue;
    }
    if (result != LIBDEFLATE_SUCCESS) break;
    in_at += used;
    out_at += produced;
  }
  libdeflate_free_decompressor(decompressor);
  if (result != LIBDEFLATE_SUCCESS || out_at == 0) {
    fail(ErrorKind::Io, fmt::format("cannot read {}: the gzip data is truncated or corrupt", quoted(source)));
  }
  out.resize(out_at);
  return out;
}

}  // namespace

std::string gzip_members(const char* data, std::size_t size, int level) {
  check_level(level);
  constexpr std::uint64_t kChunk = 4 << 20;
  const std::int64_t chunks = std::int64_t((size + kChunk - 1) / kChunk);
  std::vector<std::vector<char>> members(std::size_t(std::max<std::int64_t>(chunks, 1)));
  cpu::ThreadPool pool(int(std::min<std::int64_t>(cpu::hardware_threads(), std::max<std::int64_t>(chunks, 1))));
  std::atomic<bool> failed{false};
  pool.parallel_for(std::int64_t(members.size()), [&](std::int64_t begin, std::int64_t end) {
    libdeflate_compressor* compressor = libdeflate_alloc_compressor(level);
    if (!compressor) {
      failed = true;
      return;
    }
    for (std::int64_t c = begin; c < end; ++c) {
      const std::uint64_t offset = std::uint64_t(c) * kChunk, length = std::min<std::uint64_t>(kChunk, size - std::min<std::uint64_t>(size, offset));
      auto& member = members[std::size_t(c)];
      member.resize(libdeflate_gzip_compress_bound(compressor, length));
      const std::size_t written = libdeflate_gzip_compress(compressor, data + offset, length, member.data(), member.size());
      if (written == 0) failed = true;
      member.resize(written);
    }
    libdeflate_free_compressor(compressor);
  });
  if (failed) fail(ErrorKind::OutOfMemory, "gzip: cannot compress (libdeflate)");
  std::string out;
  std::size_t total = 0;
  for (const auto& member : members) total += member.size();
  out.reserve(total);
  for (const auto& member : members) out.append(member.data(), member.size());
  return out;
}

void gzip_file(const fs::path& source, const fs::path& destination, int level) {
  std::ifstream in(source, std::ios::binary);
  const std::uint64_t size = fs::file_size(source);
  std::vector<char> data(size);
  if (!in.read(data.data(), std::streamsize(size))) fail(ErrorKind::Io, fmt::format("cannot read back {}", quoted(source)));
  const std::string members = gzip_members(data.data(), data.size(), level);
  std::ofstream out(destination, std::ios::binary | std::ios::trunc);
  out.write(members.data(), std::streamsize(members.size()));
  if (!out.flush()) fail(ErrorKind::Io, fmt::format("cannot write {}", quoted(destination.filename())));
}

std::optional<std::vector<char>> inflate_members_in_parallel(const std::vector<char>& data) {
  // Members whose header is the first member's, 10 bytes without optional fields (FLG = 0), as
  // gzip_members and other parallel compressors write them. Those bytes occurring by chance
  // inside compressed data (a chance of 2^-80 per byte) would make a member fail below.
  constexpr std::size_t kHeader = 10, kTrailer = 8;
  if (data.size() < 2 * (kHeader + kTrailer) || static_cast<unsigned char>(data[0]) != 0x1f ||
      static_cast<unsigned char>(data[1]) != 0x8b || data[2] != 8 || data[3] != 0) {
    return std::nullopt;
  }
  constexpr std::int64_t kPiece = 16 << 20;
  const std::int64_t searched = std::int64_t(data.size() - kHeader);
  std::vector<std::vector<std::size_t>> found(std::size_t((searched + kPiece) / kPiece));
  cpu::for_each_piece(searched + 1, kPiece, 0, [&](std::int64_t piece, std::int64_t begin, std::int64_t end) {
    const char* at = data.data() + begin;
    const char* const last = data.data() + end;
    while ((at = static_cast<const char*>(std::memchr(at, 0x1f, std::size_t(last - at)))) != nullptr) {
      if (std::memcmp(at, data.data(), kHeader) == 0) found[std::size_t(piece)].push_back(std::size_t(at - data.data()));
      ++at;
    }
  });
  std::vector<std::size_t> starts;
  for (const auto& f : found) starts.insert(starts.end(), f.begin(), f.end());
  if (starts.size() < 2) return std::nullopt;  // one member: nothing to share out
  // Each member ends with its inflated size (mod 2^32): where each one's bytes go is known
  // before any is inflated. As gzip_members writes them, every member but the last holds the
  // same size, and the last no more; anything else (a truncated or corrupt end) is left to the
  // reader in order, before a buffer of a size read from damaged bytes is allocated.
  const std::size_t members = starts.size();
  std::vector<std::size_t> out_at(members + 1, 0);
  for (std::size_t m = 0; m < members; ++m) {
    const std::size_t end = m + 1 < members ? starts[m + 1] : data.size();
    if (end - starts[m] < kHeader + kTrailer) return std::nullopt;
    const std::size_t inflated = little_endian_u32(data.data() + end - 4);
    const std::size_t first = out_at[1];
    if (m > 0 && (m + 1 < members ? inflated != first : inflated > first)) return std::nullopt;
    if (inflated / 1032 > end - starts[m]) return std::nullopt;  // beyond deflate's largest ratio
    out_at[m + 1] = out_at[m] + inflated;
  }
  std::vector<char> out(out_at[members]);
  std::atomic<bool> whole{true};
  cpu::ThreadPool pool(int(std::min<std::size_t>(std::size_t(cpu::hardware_threads()), members)));
  pool.parallel_for(std::int64_t(members), [&](std::int64_t first, std::int64_t last) {
    libdeflate_decompressor* decompressor = libdeflate_alloc_decompressor();
    if (!decompressor) {
      whole = false;
      return;
    }
    for (std::int64_t m = first; m < last && whole; ++m) {
      const std::size_t begin = starts[std::size_t(m)], end = std::size_t(m) + 1 < members ? starts[std::size_t(m) + 1] : data.size();
      const std::size_t expected = out_at[std::size_t(m) + 1] - out_at[std::size_t(m)];
      std::size_t used = 0, produced = 0;
      // libdeflate checks the member's CRC-32 and size; the member must also end where the next begins.
      const libdeflate_result result = libdeflate_gzip_decompress_ex(
          decompressor, data.data() + begin, end - begin, out.data() + out_at[std::size_t(m)], expected, &used, &produced);
      if (result != LIBDEFLATE_SUCCESS || used != end - begin || produced != expected) whole = false;
    }
    libdeflate_free_decompressor(decompressor);
  });
  if (!whole) return std::nullopt;
  return out;
}

std::vector<char> gunzip_file(const fs::path& source, std::size_t size_hint) {
  std::ifstream in(source, std::ios::binary);
  const std::uint64_t size = fs::file_size(source);
  std::vector<char> data(size);
  if (!in.read(data.data(), std::streamsize(size))) fail(ErrorKind::Io, fmt::format("cannot read {}", quoted(source)));
  if (std::optional<std::vector<char>> whole = inflate_members_in_parallel(data)) return std::move(*whole);
  return inflate_in_order(data, size_hint, source);
}

std::string zlib_stream(const char* data, std::size_t size, int level) {
  check_level(level);
  // Chunks of 4 MiB, each deflated by a stream of its own that ends on a byte boundary (a full
  // flush: no reference back into the chunk before), all but the last without the final-block
  // bit. Laid end to end they are one deflate stream (the way pigz makes one); the chunks'
  // checksums are combined. (libdeflate, faster, ends every stream with a final block.)
  constexpr std::size_t kChunk = 4 << 20;
  const std::size_t chunks = std::max<std::size_t>(1, (size + kChunk - 1) / kChunk);
  struct Piece {
    std::string bytes;
    uLong check = 0;  // adler32 of the chunk
    uLong length = 0;
  };
  std::vector<Piece> pieces(chunks);
  cpu::for_each_piece(std::int64_t(chunks), 1, 0, [&](std::int64_t c, std::int64_t, std::int64_t) {
    Piece& piece = pieces[std::size_t(c)];
    const std::size_t offset = std::size_t(c) * kChunk, length = std::min(kChunk, size - std::min(size, offset));
    const Bytef* in = reinterpret_cast<const Bytef*>(data + offset);
    piece.length = uLong(length);
    piece.check = adler32(adler32(0, nullptr, 0), in, uInt(length));
    z_stream z{};
    if (deflateInit2(&z, std::min(level, 9), Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
      fail(ErrorKind::OutOfMemory, "cannot start compressing (zlib)");
    }
    piece.bytes.resize(deflateBound(&z, uLong(length)) + 16);
    z.next_in = const_cast<Bytef*>(in);
    z.avail_in = uInt(length);
    z.next_out = reinterpret_cast<Bytef*>(piece.bytes.data());
    z.avail_out = uInt(piece.bytes.size());
    const bool last = std::size_t(c) + 1 == chunks;
    const int status = deflate(&z, last ? Z_FINISH : Z_FULL_FLUSH);
    const bool ok = last ? status == Z_STREAM_END : status == Z_OK && z.avail_in == 0;
    piece.bytes.resize(piece.bytes.size() - z.avail_out);
    deflateEnd(&z);
    if (!ok) fail(ErrorKind::Io, "cannot compress (zlib)");
  });
  std::string out;
  uLong check = adler32(0, nullptr, 0);
  std::size_t total = 0;
  for (const Piece& piece : pieces) {
    check = adler32_combine(check, piece.check, z_off_t(piece.length));
    total += piece.bytes.size();
  }
  out.reserve(total + 32);
  out.append("\x78\x9c", 2);  // deflate, 32 KiB window, default level
  for (const Piece& piece : pieces) out += piece.bytes;
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(char((check >> shift) & 0xff));  // big-endian
  return out;
}

}  // namespace ctd::io::detail
