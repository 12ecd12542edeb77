#pragma once
// The validation matrix's cases (tools/validate_params.cpp): the scans of ../shared/data that it
// reads, the crops it takes of them, and the noise textures it adds, each seeded.

#include <ctdenoise/simulate.hpp>
#include <ctdenoise/volume.hpp>

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>

namespace validation {

struct Scan {
  std::string name;
  ctd::Volume volume;  // HU, below -1024 kept as padding
};

// The box of `size` at (x0, y0, z0), and the central box of `size` (clipped to the volume; its
// centre slice z_centre, or the middle one).
ctd::Volume crop(const ctd::Volume& v, std::int64_t x0, std::int64_t y0, std::int64_t z0, ctd::Dims size);
ctd::Volume centre_crop(const ctd::Volume& v, ctd::Dims size, std::int64_t z_centre = -1);

// CThead: 113 big-endian uint16 slices, 12-bit values (MANIFEST). VTK's headsq: 93 little-endian
// int16 slices of 64 x 64, 3.2 x 3.2 x 1.5 mm, like FullHead's values. The Bonsai CT of the volume
// library (256^3 uint8, gzip), its values v mapped to 8 v - 1024 so that its range is CT's (air
// -1024, the densest wood about +1000). All in HU.
ctd::Volume read_cthead(const std::filesystem::path& folder);
ctd::Volume read_headsq(const std::filesystem::path& folder);
ctd::Volume read_bonsai(const std::filesystem::path& file);

struct Texture {
  std::string name;  // e.g. "white", "FBP ramp 360 views", "FBP ramp 360 views, z-correlated"
  std::string kind;  // white | fbp | blurred | signal
  double level = 0;  // the added noise's standard deviation (HU); for FBP the dose is set to give it
  int views = 0;
  ctd::FbpWindow window = ctd::FbpWindow::Ramp;
  bool z_correlated = false;
  // blurred (and sharpened: white noise less that blur of it, a sharp kernel's texture): the
  // Gaussian's sigmas in voxels along x, along y (-1: as along x) and along z (0: none)
  double blur = 0;
  double blur_z = 0;
  double blur_y = -1;
  double band_outer = 0;   // bandpass: white noise blurred by `blur` less it blurred by this wider sigma
};

// (reference, noisy) for a clean scan and a texture; the seed varies with the dose.
std::pair<ctd::Volume, ctd::Volume> make_pair(const ctd::Volume& clean, const Texture& t, std::uint64_t seed);

}  // namespace validation
