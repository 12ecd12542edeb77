#pragma once
// A progress bar on stderr for work longer than about a second; silent when disabled (--quiet,
// or stderr is not a terminal). Ctrl-C is turned into a ctd::Error of kind Cancelled at the next
// progress report, so outputs are never left half-written.

#include <chrono>
#include <string>

namespace ctd::cli {

void install_interrupt_handler();
bool interrupted() noexcept;

// Run as a 3D Slicer CLI module: every progress bar also reports to Slicer's progress bar, as
// <filter-start>, <filter-progress> and <filter-end> lines on stdout (even with --quiet).
void report_progress_to_slicer();

class ProgressBar {
 public:
  ProgressBar(std::string label, bool enabled);
  ~ProgressBar();
  // Redraws at most ten times a second; throws Cancelled after Ctrl-C.
  void update(double fraction_done);

 private:
  std::string label_;
  bool enabled_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_, last_draw_, last_slicer_report_;
};

// One line on stderr naming a stage without a measure of its progress ("nlm: reading x.nrrd"),
// cleared when the stage ends; silent when disabled.
class StageLine {
 public:
  StageLine(const std::string& text, bool enabled);
  ~StageLine();
  StageLine(const StageLine&) = delete;
  StageLine& operator=(const StageLine&) = delete;

 private:
  std::size_t width_ = 0;
};

// Whether a bar should be shown: not --quiet and stderr is a terminal.
bool progress_wanted(bool quiet);

}  // namespace ctd::cli
