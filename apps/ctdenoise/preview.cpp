#include "preview.hpp"

#include <algorithm>
#include <array>
#include <cmath>

namespace ctd::cli {
namespace {

using i64 = std::int64_t;

// A 2D cut through a volume, resampled (nearest voxel) so that pixels are square in mm.
struct Cut {
  int width = 0, height = 0;
  std::vector<float> values;
};

enum class Plane { Axial, Coronal, Sagittal };

Cut cut(const Volume& v, Plane plane) {
  const Dims d = v.dims();
  const auto& s = v.geometry.spacing;
  // Horizontal axis h, vertical axis u (drawn bottom-up for z so that head is up), fixed axis.
  const int h_axis = plane == Plane::Sagittal ? 1 : 0;
  const int u_axis = plane == Plane::Axial ? 1 : 2;
  const i64 n[3] = {d.nx, d.ny, d.nz};
  const double aspect = s[u_axis] / s[h_axis];
  Cut c;
  c.width = static_cast<int>(n[h_axis]);
  c.height = std::max(1, static_cast<int>(std::lround(double(n[u_axis]) * aspect)));
  c.values.resize(std::size_t(c.width) * std::size_t(c.height));
  for (int row = 0; row < c.height; ++row) {
    i64 u = std::min<i64>(n[u_axis] - 1, static_cast<i64>(double(row) / aspect));
    if (u_axis == 2) u = n[2] - 1 - u;
    for (int col = 0; col < c.width; ++col) {
      i64 p[3] = {d.nx / 2, d.ny / 2, d.nz / 2};
      p[h_axis] = col;
      p[u_axis] = u;
      c.values[std::size_t(row) * std::size_t(c.width) + std::size_t(col)] = v.view()(p[0], p[1], p[2]);
    }
  }
  return c;
}

double percentile(std::vector<float> values, double q) {
  if (values.empty()) return 0;
  const auto k = static_cast<std::size_t>(q * double(values.size() - 1));
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(k), values.end());
  return values[k];
}

std::uint8_t to_gray(double v, double lo, double hi) {
  const double t = hi > lo ? (v - lo) / (hi - lo) : 0.5;
  return static_cast<std::uint8_t>(std::lround(std::clamp(t, 0.0, 1.0) * 255.0));
}

}  // namespace

Picture make_preview(const Volume& input, const Volume& output, std::optional<Window> window) {
  double lo, hi;
  if (window) {
    lo = window->center - window->width / 2;
    hi = window->center + window->width / 2;
  } else {
    std::vector<float> sample;
    const i64 step = std::max<i64>(1, input.size() / 200000);
    for (i64 i = 0; i < input.size(); i += step) sample.push_back(input.data()[i]);
    lo = percentile(sample, 0.005);
    hi = percentile(sample, 0.995);
  }
  double diff2 = 0;
  for (i64 i = 0; i < input.size(); ++i) diff2 += std::pow(double(output.data()[i]) - input.data()[i], 2);
  const double diff_range = std::max(3.0 * std::sqrt(diff2 / double(input.size())), 1e-6);

  std::vector<Plane> planes{Plane::Axial};
  if (!input.dims().is_2d()) planes = {Plane::Axial, Plane::Coronal, Plane::Sagittal};
  constexpr int kGap = 4;
  std::vector<std::array<Cut, 2>> rows;
  int width = 0, height = 0;
  for (Plane p : planes) {
    rows.push_back({cut(input, p), cut(output, p)});
    width = std::max(width, 3 * rows.back()[0].width + 2 * kGap);
    height += rows.back()[0].height + (height > 0 ? kGap : 0);
  }
  Picture pic;
  pic.width = width;
  pic.height = height;
  pic.pixels.assign(std::size_t(width) * std::size_t(height), 0);
  int top = 0;
  for (const auto& [before, after] : rows) {
    for (int y = 0; y < before.height; ++y)
      for (int x = 0; x < before.width; ++x) {
        const std::size_t i = std::size_t(y) * std::size_t(before.width) + std::size_t(x);
        std::uint8_t* line = pic.pixels.data() + std::size_t(top + y) * std::size_t(width);
        line[x] = to_gray(before.values[i], lo, hi);
        line[before.width + kGap + x] = to_gray(after.values[i], lo, hi);
        line[2 * (before.width + kGap) + x] = to_gray(after.values[i] - before.values[i], -diff_range, diff_range);
      }
    top += before.height + kGap;
  }
  return pic;
}

}  // namespace ctd::cli
