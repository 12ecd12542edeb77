#pragma once
// The before/after picture: input | output | difference, for the middle axial, coronal and
// sagittal slices of a volume (one row for a 2D image), shown through a CT window.

#include <ctdenoise/volume.hpp>

#include <cstdint>
#include <optional>
#include <vector>

namespace ctd::cli {

struct Window {
  double center, width;  // image units (HU for CT), width > 0
};

struct Picture {
  int width = 0, height = 0;
  std::vector<std::uint8_t> pixels;  // 8-bit gray, row-major
};

// Without a window, the input's 0.5th..99.5th percentiles span black to white. The difference
// panel maps output - input to gray, 0 at mid-gray, +-3 standard deviations of it to white/black.
Picture make_preview(const Volume& input, const Volume& output, std::optional<Window> window);

}  // namespace ctd::cli
