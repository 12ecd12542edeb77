// Uncompressed voxels read straight from the file on all cores (raw, NRRD and MetaImage data).

#include "io/io_internal.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <type_traits>

namespace ctd::io::detail {

namespace {

void read_pieces(const fs::path& file, std::uint64_t offset, PixelType type, ByteOrder order, std::int64_t count, float* out,
                 std::int16_t* stored) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(ErrorKind::Io, fmt::format("cannot open {}: {}", quoted(file), std::strerror(errno)));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  const bool swap = needs_swap(order);
  with_pixel_type(type, [&](auto t) {
    using T = decltype(t);
    constexpr std::int64_t kPieceBytes = std::int64_t(8) << 20;
    constexpr std::int64_t kPiece = kPieceBytes / std::int64_t(sizeof(T));
    cpu::for_each_piece(count, kPiece, 0, [&](std::int64_t, std::int64_t begin, std::int64_t end) {
      thread_local std::vector<T> buffer;
      buffer.resize(std::size_t(kPiece));
      char* bytes = reinterpret_cast<char*>(buffer.data());
      const std::size_t wanted = std::size_t(end - begin) * sizeof(T);
      std::size_t got = 0;
      while (got < wanted) {
        const ::ssize_t n = ::pread(fd, bytes + got, wanted - got, ::off_t(offset + std::uint64_t(begin) * sizeof(T) + got));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) fail(ErrorKind::Io, fmt::format("cannot read {}: {}", quoted(file), std::strerror(errno)));
        if (n == 0) {
          fail(ErrorKind::Io, fmt::format("{} ended early: {} bytes of voxel data from byte {} were expected", quoted(file),
                                          std::uint64_t(count) * sizeof(T), offset));
        }
        got += std::size_t(n);
      }
      if (swap) swap_bytes(bytes, std::size_t(end - begin), sizeof(T));
      for (std::int64_t i = 0; i < end - begin; ++i) out[begin + i] = static_cast<float>(buffer[std::size_t(i)]);
      if constexpr (std::is_same_v<T, std::int16_t>) {
        if (stored) std::memcpy(stored + begin, buffer.data(), std::size_t(end - begin) * sizeof(T));
      }
    });
  });
}

}  // namespace

void read_plain_voxels(const fs::path& file, std::uint64_t offset, PixelType type, ByteOrder order, const ReadOptions& options,
                       Image& image) {
  const bool keep = options.keep_int16 && type == PixelType::Int16;
  if (keep) image.int16_voxels.resize(std::size_t(image.volume.size()));  // not zeroed: every voxel is read
  read_pieces(file, offset, type, order, image.volume.size(), image.volume.data(), keep ? image.int16_voxels.data() : nullptr);
}

}  // namespace ctd::io::detail
