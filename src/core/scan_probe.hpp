// Noise made as a CT scanner makes it, for the risk estimate of the automatic parameters
// (src/core/scan_map.cpp: the map; src/core/scan_probe.cpp: the probe; docs/parameters.md,
// "Scan-like noise").
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
// source at a chosen distance (a full turn, each view's noise weighted as fan-beam FBP weighs
// it). The rays' geometry and the back-projection are in src/core/scan_rays.hpp.
#pragma once

#include "core/auto_sample.hpp"

#include <limits>
#include <optional>
#include <string>
#include <vector>

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
  // The fans' sources tried (pixels from the centre, increasing).
  std::vector<double> fan_sources;
  // A fan's orbit: how often each line is measured, and so how each ray is weighted in the
  // reconstruction (scan::redundancy_gain). A full turn measures every line twice, each
  // weighted 1/2. A detector offset to one side (a CBCT's half-fan for a wide field of view)
  // measures the lines through the centre twice and the rest once, weighted 1 (Wang's
  // weights, a smooth step across the overlap). A short scan (half a turn plus the fan's
  // angle) measures a few lines twice (Parker's weights). Its noise is stronger where a line's
  // weight is 1: towards the field's edge, or on the side of the arc's ends.
  struct Orbit {
    enum class Kind { Full, OffsetDetector, ShortScan };
    Kind kind = Kind::Full;
    double side = 1;     // offset detector: the side it reaches to (+1: detector coordinates u > 0)
    double overlap = 0;  // offset detector: the half-width of the overlap about the centre, pixels
    double start = 0;    // short scan: the first view's angle (radians)
    double fan = 0;      // short scan: the fan's half-angle (the arc is pi + 2 fan)
  };
  Orbit orbit;
  // Per projected slice: its noise level relative to the map's (1 for all where one slice is
  // projected). A volume's slices need not share one dose: a helical scan's tube current follows
  // the body along z.
  std::vector<double> slice_gains;
  double fit = 0;          // the share of the variance of the tiles' log levels (within their slices), less their chance scatter, that the map explains
  double fit_beyond_intensity = 0;  // the share of what the intensities leave that the map explains
};

// A slice's air, from its usable values: the mode of those near the lowest (within a quarter of
// the way from the 5th to the 90th percentile), so that neither strong noise in the air nor lung
// and fat beside it move it.
double air_value(std::vector<double> values);

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
// cancel when both sides are read alike).
void refine_attenuation(ScanMap& map, const Sample& s, const NoiseModel& noise, std::uint64_t seed);

// The FBP window (one of kFbpWindows) and, for a fan, the source (one of map.fan_sources) whose noise's
// texture is nearest the image's, tile by tile: each tile's flat part read as the log of its
// pseudo-residual sigma over its second-difference sigma (read_flat_part), on the sample's middle
// slice. Finer noise reads higher: a nearer source makes the noise finer towards the image's
// edge, a sharper window everywhere. The window at the fitted source, then the source with that
// window, then the window again. The fit to the tiles' levels put a fan's source too near (the
// finer texture there raises the pseudo-residual sigma beyond the variance: 1.4 half-diagonals
// for a true 1.9-2.2), and the image's model's correlations took Hamming's window for Hann's
// (docs/parameters.md, "Scan-like noise"). Sets map.source; map.attenuation is left as it was.
std::string choose_beam(ScanMap& map, const Sample& s, const NoiseModel& noise, std::uint64_t seed);

// Noise over the sample made by the map with `window`'s FBP filter (0 off the sample's mask; of
// arbitrary scale), and how far that filter's texture is from the image's model.
struct ScanProbe {
  Volume noise;
  std::string window;
  // The squared distance of the correlations at six lags of a whole slice of the nearest
  // window's noise from the image's model's (over 0.05: no FBP filter's texture). With
  // `image_places` (a volume's flattest blocks, flat_places, where the image's model was read)
  // the slice's correlations are read there, brought to the slice, else in its own flattest
  // blocks. A scan's noise is finer and weaker in the air than in the body, and pure noise's
  // flattest blocks are its quietest: the air's texture was compared with the body's (the
  // TotalSegmentator volume with ramp noise: 0.065-0.10, its added noise itself read 0.07
  // apart in the two places). A slice has few flat blocks (29 of a 128 x 128 one), too few
  // to read a texture in: it keeps the slice's own.
  double texture_distance = 0;
};
ScanProbe scan_probe(const Sample& s, const NoiseModel& noise, const ScanMap& map, std::string_view window,
                     const std::vector<LagArea>& image_places, std::uint64_t seed);

}  // namespace ctd::detail
