#pragma once
// gzip and zlib data for the readers and writers (gzip.cpp), compressed and inflated on all cores.

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace ctd::io::detail {

namespace fs = std::filesystem;

// Compresses `source` into `destination` as gzip_members.
void gzip_file(const fs::path& source, const fs::path& destination, int level);
// The whole content of a gzip file (every member); Io when it is truncated or corrupt. size_hint:
// the expected size, if known.
std::vector<char> gunzip_file(const fs::path& source, std::size_t size_hint);
// The content of `data` when it is several gzip members as gzip_members writes them (the same
// plain header, the same inflated size but the last), inflated side by side on all cores; nullopt
// for any other gzip data (one stream, other headers) or when a member does not check out, for
// the caller to inflate in order.
std::optional<std::vector<char>> inflate_members_in_parallel(const std::vector<char>& data);
// `data` as gzip members of 4 MiB, compressed on all cores with libdeflate (level 1-12).
std::string gzip_members(const char* data, std::size_t size, int level);
// `data` as one zlib stream (MetaIO reads no more than one), deflated on all cores with zlib at
// `level` (1-12, capped at zlib's 9).
std::string zlib_stream(const char* data, std::size_t size, int level);

}  // namespace ctd::io::detail
