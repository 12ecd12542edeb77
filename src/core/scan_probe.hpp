// Noise made as a CT scanner makes it, for the risk estimate of the automatic parameters
// (src/core/scan_probe.cpp; docs/parameters.md, "Scan-like noise").
//
// A reconstruction's noise comes from its rays: each ray's measured attenuation p carries noise of
// variance about exp(p) / dose (Poisson counts after the log), and filtered back-projection
// spreads it along the ray. So the noise is strongest where the rays cross much of the body and
// streaks along them, over distances no model of a tile's neighbourhood holds. Where the image is
// a whole body (or object) in air and its tiles' noise levels follow the map its own attenuation
// makes, the probe is made the same way: the image read as attenuation (its air 0), projected,
// unit noise on each ray scaled by exp(P p / 2) (P fitted to the tiles' levels, p relative to the
// image's longest ray), filtered with the FBP filter whose texture is nearest the image's, and
// back-projected at the sample's voxels. The rays are those of a parallel beam or of a fan from a
// source at a fitted distance (a full turn, each view's noise weighted as fan-beam FBP weighs it).
#pragma once

#include "core/auto_sample.hpp"

#include <array>
#include <limits>
#include <optional>
#include <string>

namespace ctd::detail {

// The image's rays and how well its tiles' noise levels follow them.
struct ScanMap {
  std::vector<std::int64_t> slices;            // the slices projected (z)
  std::vector<std::vector<double>> integrals;  // per slice: p at each view and bin, relative to the largest
  std::vector<std::size_t> slice_of_block;     // per block of the sample: the slice whose rays it takes
  std::int64_t nx = 0, ny = 0;                 // the image's slice
  double attenuation = 0;  // P: the longest ray's attenuation, fitted
  // The fan's source's distance from the centre of rotation in pixels, fitted; infinite: a
  // parallel beam.
  double source = std::numeric_limits<double>::infinity();
  // The fans tried and the attenuation fitted with each: (source, P).
  std::vector<std::array<double, 2>> fans;
  double fit = 0;          // the share of the variance of the tiles' log levels that the map explains
  double fit_beyond_intensity = 0;  // the share of what the intensities leave that the map explains
};

// The map where the image is a whole body in air (each projected slice's border ring at least 90 %
// air or padding; in HU, its air under -500 and its body 500 or more above it, or in units of
// attenuation, the ring's air within 10 % of the body's attenuation from 0), the
// sample has enough tiles to fit it, and their levels spread (a standard deviation of their logs
// of 0.05 or more); else nullopt.
std::optional<ScanMap> scan_map(const ImageReads& image, const Sample& s, const NoiseModel& noise);

// The map's slices for the blocks of another sample of the same image: each block takes the
// projected slice nearest its middle.
void assign_slices(ScanMap& map, const Sample& s);

// The map's attenuation P refitted so that the tiles' levels, read in the image and in probes
// made with the map alike (flat parts' pseudo-residual sigma), differ least (beyond one factor):
// the fit to the map's own variance under-read P by 18 % on a real abdomen's simulated scan (8.5
// for a physical 10.4; the estimator's reading of the streaks' texture and the flat parts' lean
// cancel when both sides are read alike). A fan's source is refitted so too, walking outwards
// over the fans tried while the difference falls: the variance's fit puts it too near (the finer
// texture at the fan's near edge raises the pseudo-residual sigma there beyond the variance;
// 1.4 half-diagonals for a true 2.2 with Hann's filter).
void refine_attenuation(ScanMap& map, const Sample& s, const NoiseModel& noise, std::uint64_t seed);

// Noise over the sample made by the map (0 off the sample's mask; of arbitrary scale) and the FBP
// window whose texture was nearest the image's model (one of kFbpWindows).
struct ScanProbe {
  Volume noise;
  std::string window;
  double texture_distance = 0;  // the squared distance of its correlations at six lags from the model's
};
ScanProbe scan_probe(const Sample& s, const NoiseModel& noise, const ScanMap& map, std::uint64_t seed);

}  // namespace ctd::detail
