// Rays of a scan, and noise made along them, for the scan-like probe (src/core/scan_rays.cpp):
// the map's coarse parallel projection, a fan beam's geometry (Kak & Slaney's fan-beam FBP on a
// virtual detector through the centre), rows of FBP-filtered unit noise, and their
// back-projection at a sample's voxels. Used by src/core/scan_map.cpp and src/core/scan_probe.cpp.
#pragma once

#include "core/auto_sample.hpp"
#include "core/scan_probe.hpp"

#include <cstdint>
#include <string_view>
#include <vector>

namespace ctd::detail::scan {

constexpr int kMapViews = 180;                // views the map is projected at: p changes slowly with the angle
constexpr std::int64_t kMapWidth = 192;       // slices are projected at most about this many voxels wide (block means)
constexpr std::int64_t kKernelReach = 64;     // the FBP kernel's taps used, +-64 bins: the ramp's tail falls as 1 / n^2
constexpr std::int64_t kPoolRows = 512;       // rows of filtered unit noise the rays' noise is cut from
constexpr std::int64_t kPoolSlack = 1024;     // a row's start is chosen among this many bins

std::uint64_t mix(std::uint64_t x);  // splitmix64's finaliser

// Detector bins of one pixel for a slice of nx x ny: its diagonal and a margin, odd.
std::int64_t full_bins(std::int64_t nx, std::int64_t ny);

// Detector bins of the map's beam, one pixel apart through the centre: the slice's diagonal
// (parallel beam), or its widest shadow there from the fan's source (which lies outside it).
std::int64_t detector_bins(const ScanMap& map);

// The map's geometry of an image of nx x ny: coarse bins of `factor` pixels.
struct Coarse {
  std::int64_t factor, nx, ny, bins;
  double cx, cy;  // the image's centre in coarse pixels
};
Coarse coarse_of(std::int64_t nx, std::int64_t ny);

// The slice's line integrals at kMapViews views (p[view * bins + t]), from its block means.
std::vector<double> project(const std::vector<double>& a, std::int64_t nx, std::int64_t ny, const Coarse& c);

// p (relative) at a point of the image, `along` pixels across the centre at view `view` of the map.
double relative_integral(const std::vector<double>& p, const Coarse& c, std::int64_t view, double along);

// The map's view and offset of the line through the points a and b (pixels from the centre).
struct Line {
  std::int64_t view;
  double offset;
};
Line line_through(double ax, double ay, double bx, double by);

// A fan beam's view at angle beta, its source at distance D from the centre: a point's distance
// from the source along the central ray relative to D (U), its detector coordinate u and the
// ray's angle gamma from the central ray. Fan-beam FBP weights the view's filtered data by
// 1 / U^2 there, and the data by cos(gamma) before the filter: the view's noise variance at the
// point goes as cos^2(gamma) / U^4, times exp(p) of its ray.
struct FanPoint {
  double U, u, cos_gamma;
};
FanPoint fan_point(double x, double y, double c, double s, double D);

// A fan's ray's weight for the lines measured more than once, relative to a full turn's 1/2
// (so 1 on a full turn, 0 off the detector or the arc): the ray from the source at angle beta
// through detector coordinate u (pixels at the centre), the source at distance D.
double redundancy_gain(const ScanMap::Orbit& orbit, double beta, double u, double D);

// The half-angle of a fan from a source at distance D (pixels) that covers the map's slice (the
// circle through its corners).
double fan_half_angle(const ScanMap& map, double D);

// `orbit`, fitted on the map's fan from a source at distance `from`, for one from `to`: the same
// share of the fan's half-width, the same first view.
ScanMap::Orbit orbit_at_source(ScanMap::Orbit orbit, const ScanMap& map, double from, double to);

// A box of voxels of `out` (first voxel (x0, y0, z0), size n) whose voxel (x0, y0, z0) is the
// image's (ix, iy, iz), taking the rays of the map's slice `slice`.
struct Box {
  std::int64_t x0, y0, z0;
  Dims n;
  std::int64_t ix, iy, iz;
  std::size_t slice;
};

// The sample's blocks, each with the rays of its slice of the map.
std::vector<Box> sample_boxes(const Sample& s, const ScanMap& map);

// Per projected slice, the mean of the finite values of v whose tiles take its rays (slice_of),
// 0 where none.
std::vector<double> slice_means(const std::vector<double>& v, const std::vector<std::size_t>& slice_of, std::size_t slices);

// v less its slice's mean where several slices are projected: each may have a dose of its own
// (a helical scan's tube current follows the body along z).
std::vector<double> within_slices(std::vector<double> v, const std::vector<std::size_t>& slice_of, std::size_t slices);

// The z taps that correlate the rays' noise across slices as the model's noise is (the root of
// its spectrum along z; {1} without lags along z).
std::vector<double> z_taps(const NoiseModel& noise);

// Rows of unit white noise filtered by the window's FBP kernel (kKernelReach taps each side).
std::vector<float> filtered_rows(std::string_view window, std::int64_t rows, std::int64_t length, std::uint64_t seed);

// Noise made as the map says at the boxes' voxels of `out`: at each of `views` views (parallel
// beam: over a half turn; fan beam: twice as many over a full turn), each slice's rays get the
// pool's filtered unit noise (a row and start chosen by the view and slice, mixed over
// neighbouring slices by z_taps) times exp(P p / 2), back-projected with linear interpolation
// (fan beam: the rays' data weighted by cos(gamma), the view's by 1 / U^2 at each voxel).
void back_project(const ScanMap& map, const Coarse& coarse, const std::vector<float>& pool, std::int64_t pool_length,
                  const std::vector<double>& taps, int views, std::uint64_t seed, const std::vector<Box>& boxes, Volume& out);
// The same for several channels at once, each as back_project would make it alone with its pool
// (all of one length) and the attenuation P in place of the map's: the rays' geometry is worked
// out once for all of them.
struct Channel {
  const std::vector<float>* pool;
  double attenuation;
  Volume* out;
};
void back_project(const ScanMap& map, const Coarse& coarse, const std::vector<Channel>& channels, std::int64_t pool_length,
                  const std::vector<double>& taps, int views, std::uint64_t seed, const std::vector<Box>& boxes);

}  // namespace ctd::detail::scan
