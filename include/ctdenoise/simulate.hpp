#pragma once
// Low-dose CT simulation from a clean image (ctdenoise simulate): each axial slice is forward
// projected (parallel beam), Poisson noise for the incident photon count is put on the
// transmitted intensities (plus optional electronic noise), and the slice is reconstructed by
// filtered back-projection. Or, the simple alternative, Gaussian noise in the image.

#include <ctdenoise/volume.hpp>

#include <cstdint>
#include <string_view>

namespace ctd {

enum class FbpWindow {
  Ramp,        // the bare ramp (Ram-Lak)
  SheppLogan,  // ramp x sinc
  Hann,        // ramp x raised cosine: smoother, less noise, less resolution
};
std::string_view to_string(FbpWindow window) noexcept;
FbpWindow fbp_window_from_string(std::string_view name);  // throws InvalidArgument

struct LowDoseParams {
  int angles = 90;               // projections over 180 degrees (Mueller et al. use 90), >= 1
  double photons = 1e5;          // incident photons per detector bin, I0 > 0; infinity: no noise
                                 // (the same reconstruction of the clean image: a reference)
  double electronic_sigma = 0;   // Gaussian noise on the detected counts, >= 0
  FbpWindow window = FbpWindow::Ramp;
  double mu_water = 0.0193;      // linear attenuation of water, 1/mm (about 70 keV), > 0
  std::uint64_t seed = 1;        // same seed, same noise
};

// Input in HU with its geometry (in-plane spacing from the volume); returns HU. Voxels holding
// the input's padding value (see estimate_noise) keep it when it lies below air (-1024 HU),
// i.e. outside the scanner's field of view. Deterministic for a given seed.
Volume simulate_low_dose(const Volume& clean, const LowDoseParams& params);

// clean + N(0, sigma^2) per voxel (padding kept); sigma > 0.
Volume add_gaussian_noise(const Volume& clean, double sigma, std::uint64_t seed);

}  // namespace ctd
