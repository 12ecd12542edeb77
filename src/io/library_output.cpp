// ITK, GDCM, nifticlib, MetaIO and libtiff print their warnings and errors on stderr (file
// descriptor 2) as they go. ctdenoise reports failures itself, one line each, so while a
// library reads or writes, descriptor 2 points at a temporary file; its text is shown afterwards
// only when the caller asked for the libraries' own words (CLI --verbose).

#include "io/io_internal.hpp"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <iostream>
#include <mutex>

namespace ctd::io {
namespace {

std::atomic<bool> g_shown{false};
std::mutex g_mutex;
int g_depth = 0;       // nested captures share the outermost one
int g_saved_fd = -1;   // the real stderr while captured
std::FILE* g_sink = nullptr;

}  // namespace

void show_library_messages(bool shown) { g_shown = shown; }

namespace detail {

LibraryOutputCapture::LibraryOutputCapture() {
  const std::lock_guard lock(g_mutex);
  if (g_depth++ > 0) return;
  std::fflush(stderr);
  std::cerr.flush();
  g_sink = std::tmpfile();
  g_saved_fd = g_sink ? ::dup(STDERR_FILENO) : -1;
  if (g_saved_fd < 0 || ::dup2(::fileno(g_sink), STDERR_FILENO) < 0) {
    // Without a spare descriptor the messages simply stay on stderr.
    if (g_saved_fd >= 0) ::close(g_saved_fd);
    if (g_sink) std::fclose(g_sink);
    g_saved_fd = -1;
    g_sink = nullptr;
  }
}

LibraryOutputCapture::~LibraryOutputCapture() {
  const std::lock_guard lock(g_mutex);
  if (--g_depth > 0 || g_sink == nullptr) return;
  std::fflush(stderr);
  std::cerr.flush();
  ::dup2(g_saved_fd, STDERR_FILENO);
  ::close(g_saved_fd);
  g_saved_fd = -1;
  std::string text;
  std::rewind(g_sink);
  char buffer[4096];
  std::size_t got;
  while ((got = std::fread(buffer, 1, sizeof buffer, g_sink)) > 0 && text.size() < (1u << 20)) text.append(buffer, got);
  std::fclose(g_sink);
  g_sink = nullptr;
  if (g_shown && !text.empty()) {
    std::fputs(text.c_str(), stderr);
    if (text.back() != '\n') std::fputc('\n', stderr);
  }
}

}  // namespace detail
}  // namespace ctd::io
