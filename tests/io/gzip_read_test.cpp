// Reading gzip data (.nii.gz): several members inflated side by side, any other gzip data in
// order, and corrupt or truncated data refused. Compressed here with zlib, or with the library's
// own writer (gzip_members); the expected content is the test's own bytes.

#include "common/test_util.hpp"
#include "io/gzip.hpp"

#include <ctdenoise/error.hpp>

#include <gtest/gtest.h>
#include <zlib.h>

#include <fstream>
#include <random>

namespace {

namespace fs = std::filesystem;
using testing_util::TempDir;

// Compressible, not trivial: a slow ramp of int16-like pairs under random bytes.
std::string content(std::size_t size, std::uint32_t seed) {
  std::string s(size, '\0');
  std::mt19937 rng(seed);
  for (std::size_t i = 0; i < size; ++i) s[i] = char((i / 4096 + (rng() % 7)) & 0xff);
  return s;
}

// One gzip stream made by zlib at `level` (0: stored blocks, the content verbatim).
std::string zlib_gzip(const std::string& data, int level) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&z, uLong(data.size())) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = uInt(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = uInt(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

fs::path write_file(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
  return path;
}

std::string read_back(const fs::path& path) {
  const std::vector<char> v = ctd::io::detail::gunzip_file(path, 0);
  return std::string(v.begin(), v.end());
}

std::vector<char> bytes_of(const std::string& s) { return std::vector<char>(s.begin(), s.end()); }

TEST(GzipRead, SeveralMembersAreInflatedSideBySide) {
  TempDir dir;
  // Members of 4 MiB: one short member after full ones, an exact multiple, and one byte over.
  for (const std::size_t size : {std::size_t(9 << 20) + 12345, std::size_t(8 << 20), std::size_t(4 << 20) + 1}) {
    const std::string data = content(size, 3);
    const std::string gz = ctd::io::detail::gzip_members(data.data(), data.size(), 6);
    const std::optional<std::vector<char>> parallel = ctd::io::detail::inflate_members_in_parallel(bytes_of(gz));
    ASSERT_TRUE(parallel.has_value()) << size;
    EXPECT_TRUE(std::string(parallel->begin(), parallel->end()) == data) << size;
    EXPECT_TRUE(read_back(write_file(dir.path() / "m.gz", gz)) == data) << size;
  }
}

TEST(GzipRead, OtherGzipDataIsInflatedInOrder) {
  TempDir dir;
  const std::string a = content((5 << 20) + 77, 5), b = content(3 << 20, 7);
  // One stream (what most tools write), and members of different makers (zlib's header differs
  // from libdeflate's).
  const std::string one_stream = zlib_gzip(a, 6);
  const std::string mixed = zlib_gzip(a, 6) + ctd::io::detail::gzip_members(b.data(), b.size(), 6);
  EXPECT_FALSE(ctd::io::detail::inflate_members_in_parallel(bytes_of(one_stream)).has_value());
  EXPECT_TRUE(read_back(write_file(dir.path() / "one.gz", one_stream)) == a);
  EXPECT_FALSE(ctd::io::detail::inflate_members_in_parallel(bytes_of(mixed)).has_value());
  EXPECT_TRUE(read_back(write_file(dir.path() / "mixed.gz", mixed)) == a + b);
}

TEST(GzipRead, AHeaderInsideTheDataIsNotTakenForAMember) {
  // Two members stored verbatim (zlib level 0) whose content holds their own 10-byte header:
  // the search finds a false member start inside the first member, that member then fails its
  // check, and the file is inflated in order, whole.
  TempDir dir;
  const std::string probe = zlib_gzip("x", 0);
  const std::string header = probe.substr(0, 10);
  std::string first = content(1 << 20, 9);
  first.replace(1000, header.size(), header);
  const std::string second = content(1 << 20, 13);
  const std::string gz = zlib_gzip(first, 0) + zlib_gzip(second, 0);
  EXPECT_FALSE(ctd::io::detail::inflate_members_in_parallel(bytes_of(gz)).has_value());
  EXPECT_TRUE(read_back(write_file(dir.path() / "false.gz", gz)) == first + second);
}

TEST(GzipRead, CorruptOrTruncatedDataIsRefused) {
  TempDir dir;
  const std::string data = content(9 << 20, 17);
  std::string gz = ctd::io::detail::gzip_members(data.data(), data.size(), 6);
  std::string corrupt = gz;
  corrupt[corrupt.size() / 2] = char(corrupt[corrupt.size() / 2] ^ 0x55);
  EXPECT_THROW(read_back(write_file(dir.path() / "corrupt.gz", corrupt)), ctd::Error);
  EXPECT_THROW(read_back(write_file(dir.path() / "cut.gz", gz.substr(0, gz.size() - 5))), ctd::Error);
  // A whole member missing from the middle: each member checks out, yet the file reads in order
  // as the members that are there (gzip has no index), as gunzip would.
  const std::string one = zlib_gzip("abc", 6);
  EXPECT_TRUE(read_back(write_file(dir.path() / "short.gz", one + one)) == "abcabc");
}

}  // namespace
