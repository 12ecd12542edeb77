// Uncompressed voxels written straight into the file on all cores (raw, NRRD and MetaImage data).

#include "io/io_internal.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ctd::io::detail {

std::int64_t write_plain_voxels(const Volume& volume, PixelType type, ByteOrder order, const fs::path& file,
                                std::uint64_t offset) {
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0) fail(ErrorKind::Io, fmt::format("cannot write {}: {}", quoted(file.filename()), std::strerror(errno)));
  bool closed = false;
  struct Closer {
    int fd;
    bool& closed;
    ~Closer() {
      if (!closed) ::close(fd);
    }
  } closer{fd, closed};
  auto failed = [&](int error) {
    fail(ErrorKind::Io, fmt::format("cannot write {}: {}", quoted(file.filename()), std::strerror(error)));
  };
  const bool swap = needs_swap(order);
  const std::int64_t clamped = with_pixel_type(type, [&](auto t) {
    using T = decltype(t);
    constexpr std::int64_t kPiece = (std::int64_t(4) << 20) / std::int64_t(sizeof(T));
    std::atomic<std::int64_t> outside{0};
    cpu::for_each_piece(volume.size(), kPiece, 0, [&](std::int64_t, std::int64_t begin, std::int64_t end) {
      thread_local std::vector<T> buffer;
      buffer.resize(std::size_t(kPiece));
      outside += convert_piece(volume.data() + begin, end - begin, buffer.data());
      char* bytes = reinterpret_cast<char*>(buffer.data());
      if (swap) swap_bytes(bytes, std::size_t(end - begin), sizeof(T));
      const std::size_t wanted = std::size_t(end - begin) * sizeof(T);
      for (std::size_t done = 0; done < wanted;) {
        const ::ssize_t n = ::pwrite(fd, bytes + done, wanted - done, ::off_t(offset + std::uint64_t(begin) * sizeof(T) + done));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) failed(n < 0 ? errno : ENOSPC);
        done += std::size_t(n);
      }
    });
    return outside.load();
  });
  // Exactly the header and the voxels, whatever the file held before.
  if (::ftruncate(fd, ::off_t(offset + std::uint64_t(volume.size()) * size_of(type))) != 0) failed(errno);
  closed = true;
  if (::close(fd) != 0) failed(errno);  // network file systems report write errors here
  return clamped;
}

}  // namespace ctd::io::detail
