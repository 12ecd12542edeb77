// Outputs are written into a hidden folder beside the destination and renamed into place, so a
// failure (or Ctrl-C) never leaves a half-written file under the output's name.

#include "io/io_internal.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include <atomic>

namespace ctd::io::detail {
namespace {

fs::path unique_sibling(const fs::path& folder, const std::string& tag) {
  static std::atomic<int> counter{0};
  for (;;) {
    fs::path candidate = folder / fmt::format(".ctdenoise-{}-{}-{}", tag, ::getpid(), counter++);
    if (!fs::exists(fs::symlink_status(candidate))) return candidate;
  }
}

}  // namespace

StagedOutput::StagedOutput(const fs::path& destination, bool overwrite)
    : destination_(destination), overwrite_(overwrite) {
  const fs::path parent = destination.parent_path().empty() ? fs::path(".") : destination.parent_path();
  staging_ = unique_sibling(parent, "tmp");
  std::error_code ec;
  if (!fs::create_directory(staging_, ec)) {
    fail(ErrorKind::Io, fmt::format("cannot write to folder {}: {}", quoted(parent), ec.message()));
  }
}

StagedOutput::~StagedOutput() {
  std::error_code ignored;
  fs::remove_all(staging_, ignored);
}

std::vector<fs::path> StagedOutput::commit() {
  const fs::path parent = staging_.parent_path();
  std::vector<fs::path> staged;
  for (const auto& entry : fs::directory_iterator(staging_)) staged.push_back(entry.path());
  // The main file goes last, so its companions (a .mhd's .raw) are in place when it appears.
  std::stable_partition(staged.begin(), staged.end(),
                        [&](const fs::path& p) { return p.filename() != destination_.filename(); });
  for (const auto& from : staged) {
    const fs::path to = parent / from.filename();
    if (!overwrite_ && fs::exists(fs::symlink_status(to))) {
      fail(ErrorKind::Io, fmt::format("{} already exists; pass --overwrite to replace it", quoted(to)));
    }
  }
  std::vector<fs::path> written;
  for (const auto& from : staged) {
    const fs::path to = parent / from.filename();
    std::error_code ec;
    if (fs::is_directory(from) && fs::exists(to)) {
      // A folder cannot be renamed over another: move the old one aside, then drop it.
      const fs::path old = unique_sibling(parent, "old");
      fs::rename(to, old, ec);
      if (!ec) fs::rename(from, to, ec);
      if (ec) {
        std::error_code restore;
        if (!fs::exists(to)) fs::rename(old, to, restore);
        fail(ErrorKind::Io, fmt::format("cannot replace {}: {}", quoted(to), ec.message()));
      }
      fs::remove_all(old, ec);
    } else {
      fs::rename(from, to, ec);
      if (ec) fail(ErrorKind::Io, fmt::format("cannot move the output into {}: {}", quoted(to), ec.message()));
    }
    written.push_back(to);
  }
  return written;
}

}  // namespace ctd::io::detail
