#include "progress.hpp"

#include <ctdenoise/error.hpp>

#include <fmt/format.h>

#include <unistd.h>

#include <csignal>
#include <cstdio>

namespace ctd::cli {
namespace {

volatile std::sig_atomic_t g_interrupted = 0;
bool g_slicer = false;

extern "C" void on_interrupt(int) { g_interrupted = 1; }

}  // namespace

void install_interrupt_handler() {
  std::signal(SIGINT, on_interrupt);
  std::signal(SIGTERM, on_interrupt);
}

bool interrupted() noexcept { return g_interrupted != 0; }

void report_progress_to_slicer() { g_slicer = true; }

bool progress_wanted(bool quiet) { return !quiet && ::isatty(STDERR_FILENO); }

StageLine::StageLine(const std::string& text, bool enabled) {
  if (!enabled) return;
  width_ = text.size() + 4;
  fmt::print(stderr, "\r{} ...", text);
  std::fflush(stderr);
}

StageLine::~StageLine() {
  if (width_ == 0) return;
  fmt::print(stderr, "\r{}\r", std::string(width_, ' '));
  std::fflush(stderr);
}

ProgressBar::ProgressBar(std::string label, bool enabled)
    : label_(std::move(label)),
      enabled_(enabled),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_),
      last_slicer_report_(start_) {
  if (g_slicer) {
    fmt::print("<filter-start><filter-name>{}</filter-name><filter-comment>{}</filter-comment></filter-start>\n",
               label_, label_);
    std::fflush(stdout);
  }
}

ProgressBar::~ProgressBar() {
  if (drawn_) std::fputs("\n", stderr);
  if (g_slicer) {
    fmt::print("<filter-end><filter-name>{}</filter-name></filter-end>\n", label_);
    std::fflush(stdout);
  }
}

void ProgressBar::update(double fraction) {
  if (interrupted()) throw Error(ErrorKind::Cancelled, "interrupted");
  const auto now = std::chrono::steady_clock::now();
  if (g_slicer && (fraction >= 1.0 || now - last_slicer_report_ >= std::chrono::milliseconds(100))) {
    last_slicer_report_ = now;
    fmt::print("<filter-progress>{:.4f}</filter-progress>\n", fraction);
    std::fflush(stdout);
  }
  if (!enabled_) return;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const bool finished = fraction >= 1.0;
  // Only work that lasts longer than a second gets a bar, redrawn at most ten times a second.
  if (elapsed < 1.0 || (!finished && now - last_draw_ < std::chrono::milliseconds(100))) return;
  last_draw_ = now;
  constexpr int kWidth = 30;
  const int filled = static_cast<int>(fraction * kWidth);
  const double eta = fraction > 0 ? elapsed * (1 - fraction) / fraction : 0;
  fmt::print(stderr, "\r{} [{}{}] {:3.0f}%  {:.1f} s elapsed, {:.1f} s left ", label_, std::string(filled, '#'),
             std::string(kWidth - filled, '.'), fraction * 100, elapsed, eta);
  std::fflush(stderr);
  drawn_ = true;
}

}  // namespace ctd::cli
