// Outputs are written into a hidden folder beside the destination and renamed into place, so a
// failure (or Ctrl-C) never leaves a half-written file under the output's name.

#include "io/io_internal.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

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

namespace {

// Staging folders left by a process that was killed (kill -9, power loss): their owner is gone.
void remove_abandoned_staging(const fs::path& folder) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(folder, ec)) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with(".ctdenoise-tmp-") && !name.starts_with(".ctdenoise-old-")) continue;
    const long pid = std::atol(name.c_str() + std::strlen(".ctdenoise-tmp-"));
    if (pid > 0 && ::kill(pid_t(pid), 0) != 0 && errno == ESRCH) {
      std::error_code ignored;
      fs::remove_all(entry.path(), ignored);
    }
  }
}

}  // namespace

StagedOutput::StagedOutput(const fs::path& destination, bool overwrite)
    : destination_(destination), overwrite_(overwrite) {
  const fs::path parent = destination.parent_path().empty() ? fs::path(".") : destination.parent_path();
  remove_abandoned_staging(parent);
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
      // A folder cannot be renamed over another: the two are swapped in one step (a kill at any
      // moment leaves the old folder or the new one under the name), then the old one is dropped.
      if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_EXCHANGE) != 0) {
        fail(ErrorKind::Io, fmt::format("cannot replace {}: {}", quoted(to), std::strerror(errno)));
      }
      fs::remove_all(from, ec);
    } else {
      fs::rename(from, to, ec);
      if (ec) fail(ErrorKind::Io, fmt::format("cannot move the output into {}: {}", quoted(to), ec.message()));
    }
    written.push_back(to);
  }
  return written;
}

}  // namespace ctd::io::detail
