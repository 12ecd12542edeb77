// The validation matrix's cases: scans, crops and noise textures (validation_cases.hpp).

#include "validation_cases.hpp"

#include <ctdenoise/error.hpp>

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <fstream>
#include <limits>
#include <random>
#include <vector>

namespace validation {

namespace fs = std::filesystem;
using i64 = std::int64_t;

ctd::Volume crop(const ctd::Volume& v, i64 x0, i64 y0, i64 z0, ctd::Dims size) {
  ctd::Volume out(size, v.geometry);
  const ctd::Dims d = v.dims();
  for (i64 z = 0; z < size.nz; ++z)
    for (i64 y = 0; y < size.ny; ++y)
      for (i64 x = 0; x < size.nx; ++x) out.view()(x, y, z) = v.data()[((z0 + z) * d.ny + y0 + y) * d.nx + x0 + x];
  return out;
}

// The central box of `size` (clipped to the volume).
ctd::Volume centre_crop(const ctd::Volume& v, ctd::Dims size, i64 z_centre) {
  const ctd::Dims d = v.dims();
  size = {std::min(size.nx, d.nx), std::min(size.ny, d.ny), std::min(size.nz, d.nz)};
  const i64 zc = z_centre < 0 ? d.nz / 2 : z_centre;
  const i64 z0 = std::clamp<i64>(zc - size.nz / 2, 0, d.nz - size.nz);
  return crop(v, (d.nx - size.nx) / 2, (d.ny - size.ny) / 2, z0, size);
}

namespace {

// Headerless numbered slices (prefix.1 ... prefix.n) of 16-bit CT numbers + 1024, as HU.
ctd::Volume read_numbered_slices(const fs::path& folder, const std::string& prefix, ctd::Dims dims,
                                 std::array<double, 3> spacing, bool big_endian_unsigned) {
  ctd::Volume v(dims);
  v.geometry.spacing = spacing;
  const i64 plane = dims.nx * dims.ny;
  for (i64 s = 0; s < dims.nz; ++s) {
    std::ifstream f(folder / fmt::format("{}.{}", prefix, s + 1), std::ios::binary);
    std::vector<unsigned char> bytes(std::size_t(plane * 2));
    if (!f.read(reinterpret_cast<char*>(bytes.data()), std::streamsize(bytes.size()))) {
      throw ctd::Error(ctd::ErrorKind::Io, fmt::format("cannot read {} slice {}", prefix, s + 1));
    }
    for (i64 i = 0; i < plane; ++i) {
      const int value = big_endian_unsigned ? bytes[2 * i] << 8 | bytes[2 * i + 1] : std::int16_t(bytes[2 * i] | bytes[2 * i + 1] << 8);
      v.data()[s * plane + i] = float(value - 1024);
    }
  }
  return v;
}

}  // namespace

// CThead: 113 big-endian uint16 slices, 12-bit values (MANIFEST). VTK's headsq: 93 little-endian
// int16 slices of 64 x 64, 3.2 x 3.2 x 1.5 mm, like FullHead's values.
ctd::Volume read_cthead(const fs::path& folder) { return read_numbered_slices(folder, "CThead", {256, 256, 113}, {1, 1, 2}, true); }
ctd::Volume read_headsq(const fs::path& folder) { return read_numbered_slices(folder, "quarter", {64, 64, 93}, {3.2, 3.2, 1.5}, false); }

// The Bonsai CT of the volume library (256^3 uint8, gzip), its values v mapped to 8 v - 1024 so that
// its range is CT's (air -1024, the densest wood about +1000).
ctd::Volume read_bonsai(const fs::path& file) {
  const i64 n = 256;
  std::vector<unsigned char> bytes(std::size_t(n * n * n));
  gzFile gz = gzopen(file.c_str(), "rb");
  const bool ok = gz != nullptr && gzread(gz, bytes.data(), unsigned(bytes.size())) == int(bytes.size());
  if (gz != nullptr) gzclose(gz);
  if (!ok) throw ctd::Error(ctd::ErrorKind::Io, fmt::format("cannot read {}", file.string()));
  ctd::Volume v({n, n, n});
  for (i64 i = 0; i < v.size(); ++i) v.data()[i] = 8.0f * bytes[std::size_t(i)] - 1024;
  return v;
}

namespace {

// Gaussian smoothing along one axis (sigma in voxels, mirror border), in place.
void gaussian_along(ctd::Volume& v, int axis, double sigma) {
  if (sigma <= 0) return;
  const ctd::Dims d = v.dims();
  const i64 n = axis == 0 ? d.nx : axis == 1 ? d.ny : d.nz;
  const i64 stride = axis == 0 ? 1 : axis == 1 ? d.nx : d.nx * d.ny;
  const int r = int(std::ceil(4 * sigma));
  std::vector<double> w(2 * r + 1);
  double sum = 0;
  for (int k = -r; k <= r; ++k) sum += w[k + r] = std::exp(-0.5 * k * k / (sigma * sigma));
  std::vector<double> line(n);
  auto mirror = [n](i64 i) {
    while (i < 0 || i >= n) i = i < 0 ? -i : 2 * (n - 1) - i;
    return n == 1 ? i64{0} : i;
  };
  for (i64 z = 0; z < (axis == 2 ? 1 : d.nz); ++z)
    for (i64 y = 0; y < (axis == 1 ? 1 : d.ny); ++y)
      for (i64 x = 0; x < (axis == 0 ? 1 : d.nx); ++x) {
        float* base = v.data() + (z * d.ny + y) * d.nx + x;
        for (i64 i = 0; i < n; ++i) {
          double acc = 0;
          for (int k = -r; k <= r; ++k) acc += w[k + r] * base[mirror(i + k) * stride];
          line[i] = acc / sum;
        }
        for (i64 i = 0; i < n; ++i) base[i * stride] = float(line[i]);
      }
}

}  // namespace

namespace {

// z-smoothing by [1 2 1] / 4 (mirror border): a reconstruction with overlapping slices.
ctd::Volume smooth_z(const ctd::Volume& v) {
  ctd::Volume out(v.dims(), v.geometry);
  const ctd::Dims d = v.dims();
  const i64 plane = d.nx * d.ny;
  for (i64 z = 0; z < d.nz; ++z) {
    const i64 zm = z > 0 ? z - 1 : std::min<i64>(1, d.nz - 1), zp = z + 1 < d.nz ? z + 1 : std::max<i64>(0, d.nz - 2);
    for (i64 i = 0; i < plane; ++i) {
      out.data()[z * plane + i] =
          0.25f * v.data()[zm * plane + i] + 0.5f * v.data()[z * plane + i] + 0.25f * v.data()[zp * plane + i];
    }
  }
  return out;
}

}  // namespace

// (reference, noisy) for a clean scan and a texture; the seed varies with the dose.
std::pair<ctd::Volume, ctd::Volume> make_pair(const ctd::Volume& clean, const Texture& t, std::uint64_t seed) {
  if (t.kind == "white" || t.kind == "blurred" || t.kind == "sharpened" || t.kind == "bandpass" || t.kind == "signal") {
    ctd::Volume noise(clean.dims(), clean.geometry);
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> normal(0, 1);
    for (i64 i = 0; i < noise.size(); ++i) noise.data()[i] = float(normal(rng));
    if (t.kind == "blurred" || t.kind == "sharpened" || t.kind == "bandpass") {  // through a Gaussian (or less it), scaled back to the level
      ctd::Volume smooth = noise;
      gaussian_along(smooth, 0, t.blur);
      gaussian_along(smooth, 1, t.blur_y < 0 ? t.blur : t.blur_y);
      gaussian_along(smooth, 2, t.blur_z);
      if (t.kind == "bandpass") {  // less a wider blur of the same noise: a ring-shaped noise power spectrum
        ctd::Volume wide = noise;
        for (int axis = 0; axis < 2; ++axis) gaussian_along(wide, axis, t.band_outer);
        for (i64 i = 0; i < noise.size(); ++i) smooth.data()[i] -= wide.data()[i];
      }
      for (i64 i = 0; i < noise.size(); ++i) noise.data()[i] = t.kind == "sharpened" ? noise.data()[i] - smooth.data()[i] : smooth.data()[i];
      double sum2 = 0;
      for (i64 i = 0; i < noise.size(); ++i) sum2 += double(noise.data()[i]) * noise.data()[i];
      const float scale = float(1 / std::sqrt(sum2 / double(noise.size())));
      for (i64 i = 0; i < noise.size(); ++i) noise.data()[i] *= scale;
    }
    ctd::Volume noisy = clean;
    for (i64 i = 0; i < noisy.size(); ++i) {
      if (clean.data()[i] < -1024) continue;
      // signal: the variance follows the attenuation (water at the level, air at a tenth of it),
      // as image-domain Poisson noise does; otherwise stationary.
      const double sd = t.kind == "signal"
                            ? t.level * std::sqrt(std::max(0.1, (clean.data()[i] + 1024.0) / 1024.0))
                            : t.level;
      noisy.data()[i] = float(clean.data()[i] + sd * noise.data()[i]);
    }
    return {clean, noisy};
  }
  ctd::LowDoseParams p;
  p.angles = t.views;
  p.window = t.window;
  p.seed = seed;
  auto reconstruct = [&](const ctd::Volume& v, double photons) {
    p.photons = photons;
    const ctd::Volume r = ctd::simulate_low_dose(v, p);
    return t.z_correlated ? smooth_z(r) : r;
  };
  // The dose that gives the wanted noise level: the noise's variance goes as 1 / I0, measured on
  // (up to) three middle slices at I0 = 1e6.
  const ctd::Dims d = clean.dims();
  const i64 nz = std::min<i64>(3, d.nz);
  const ctd::Volume pilot = crop(clean, 0, 0, (d.nz - nz) / 2, {d.nx, d.ny, nz});
  const ctd::Volume pilot_ref = reconstruct(pilot, std::numeric_limits<double>::infinity());
  const ctd::Volume pilot_noisy = reconstruct(pilot, 1e6);
  double sum2 = 0;
  i64 n = 0;
  for (i64 i = 0; i < pilot.size(); ++i) {
    if (pilot.data()[i] < -1024) continue;
    const double e = double(pilot_noisy.data()[i]) - pilot_ref.data()[i];
    sum2 += e * e;
    ++n;
  }
  const double pilot_sigma = std::sqrt(sum2 / double(std::max<i64>(n, 1)));
  const double photons = 1e6 * (pilot_sigma / t.level) * (pilot_sigma / t.level);
  return {reconstruct(clean, std::numeric_limits<double>::infinity()), reconstruct(clean, photons)};
}

}  // namespace validation
