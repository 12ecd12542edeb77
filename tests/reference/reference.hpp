#pragma once
// Naive double-precision NLM and bilateral filters, written straight from the definitions in
// docs/filters.md. They share no code with src/ on purpose: a bug there cannot hide here.

#include <array>
#include <vector>

namespace ref {

struct Image {
  int nx = 1, ny = 1, nz = 1;
  std::vector<float> values;  // x fastest
};

struct NlmSettings {
  int search_radius = 1, patch_radius = 1;
  double h = 1, noise_sigma = 0;
  bool gaussian_patch = false;
  double patch_sigma = 1;
  bool l1 = false;
  bool centre_max = false;
};

struct BilateralSettings {
  double sigma_spatial = 1, sigma_range = 1;
  std::array<double, 3> step{1, 1, 1};  // s_i: 1 for sigma in voxels, the spacing for sigma in mm
  std::array<int, 3> radius{-1, -1, -1};  // -1: ceil(3 sigma / s_i)
};

std::vector<double> nlm(const Image& in, const NlmSettings& s);
// Mean SSIM, straight from Wang et al. 2004 with an 11-tap (radius 5) Gaussian window of sigma 1.5
// per axis (normalised, mirror border), averaged over every voxel.
double ssim(const Image& a, const Image& b, double data_range);
std::vector<double> bilateral(const Image& in, const BilateralSettings& s);

// Reflection without repeating the edge, applied until the index is inside [0, n).
int reflect(int i, int n);

}  // namespace ref
