// Parallel gzip: the file is cut into 4 MiB chunks, each compressed as a gzip member of its own
// (libdeflate) on all cores, and the members are written in order. A file of several members is
// plain gzip: zlib (ITK, nifticlib), Python's gzip (nibabel) and gunzip read it whole.

#include "cpu/thread_pool.hpp"
#include "io/io_internal.hpp"

#include <fmt/format.h>

#include <libdeflate.h>

#include <fstream>
#include <thread>

namespace ctd::io::detail {

void gzip_file(const fs::path& source, const fs::path& destination, int level) {
  if (level < 1 || level > 12) {
    fail(ErrorKind::InvalidArgument, fmt::format("the compression level must be 1 (fastest) to 12 (smallest), got {}", level));
  }
  std::ifstream in(source, std::ios::binary);
  const std::uint64_t size = fs::file_size(source);
  std::vector<char> data(size);
  if (!in.read(data.data(), std::streamsize(size))) fail(ErrorKind::Io, fmt::format("cannot read back {}", quoted(source)));

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
      const std::uint64_t offset = std::uint64_t(c) * kChunk, length = std::min(kChunk, size - std::min(size, offset));
      auto& member = members[std::size_t(c)];
      member.resize(libdeflate_gzip_compress_bound(compressor, length));
      const std::size_t written = libdeflate_gzip_compress(compressor, data.data() + offset, length, member.data(), member.size());
      if (written == 0) failed = true;
      member.resize(written);
    }
    libdeflate_free_compressor(compressor);
  });
  if (failed) fail(ErrorKind::OutOfMemory, "gzip: cannot compress (libdeflate)");
  std::ofstream out(destination, std::ios::binary | std::ios::trunc);
  for (const auto& member : members) out.write(member.data(), std::streamsize(member.size()));
  if (!out.flush()) fail(ErrorKind::Io, fmt::format("cannot write {}", quoted(destination.filename())));
}

}  // namespace ctd::io::detail
