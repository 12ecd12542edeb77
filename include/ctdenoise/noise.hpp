#pragma once
// Noise level of an image: the standard deviation sigma of additive, independent noise, in image
// units (HU for CT), estimated robustly so that edges, air and padding do not bias it.

#include <ctdenoise/exec.hpp>
#include <ctdenoise/volume.hpp>

#include <cstdint>
#include <limits>
#include <string_view>
#include <vector>

namespace ctd {

enum class NoiseEstimator {
  PseudoResidual,  // Gasser/Coupe: sqrt(6/7) (u - mean of the 6 neighbours) in 3D, sqrt(4/5) and 4 in 2D
  WaveletMad,      // Donoho: the finest diagonal Haar detail band (HH in 2D, HHH in 3D)
};

std::string_view to_string(NoiseEstimator estimator) noexcept;

struct NoiseEstimate {
  double sigma = 0;           // image units
  std::int64_t samples = 0;   // residuals (or detail coefficients) the estimate rests on
  double excluded_value = 0;  // the (largest) padding value left out (see below), or NaN when none
};

// sigma = 1.4826 x the median absolute deviation of the residuals (or detail coefficients) from
// their median, refined as their standard deviation within 3 sigma (corrected for the cut), which
// edges bias less. Padding, any value that fills at least 1% of the voxels and 10 times as many as
// its nearest values (a spike in the histogram) in regions of its own (-3024 HU outside a CT's
// field of view), is left out with every residual that touches it. A spike scattered among
// other values (air clipped at the lowest stored value) is not padding: it is read as values;
// one that does both (-1024 outside the field of view and in the clipped air) is left out only
// where its in-plane neighbours all hold it.
// Throws InvalidArgument when fewer than 16 residuals remain (e.g. a 1-voxel image).
NoiseEstimate estimate_noise(ConstVolumeView<float> image, NoiseEstimator estimator = NoiseEstimator::PseudoResidual);

// The image's padding value as defined above (the largest spike), or NaN when it has none.
double padding_value(ConstVolumeView<float> image);

// What the filters respond to. CT noise is not white: filtered back-projection shapes it (a ramp
// kernel lifts fine grain, a smooth kernel or resampling coarsens it, overlapping slices
// correlate it across z), so a neighbour-difference sigma alone misjudges it. The model holds
// the noise covariance C(d) = E[n(p) n(p+d)] for lags |dx|, |dy| <= radius_xy, |dz| <= radius_z,
// measured by second differences u(p+d) - 2u(p) + u(p-d) (blind to linear trends) in the image's
// flattest 8 x 8 blocks (docs/parameters.md); C = 0 beyond. Across slices it is separable, as
// noise made slice by slice is: C(dx, dy, dz) = C(dx, dy, 0) C(0, 0, dz) / C(0), with C(0, 0, dz)
// read clear of anatomy that changes from slice to slice. Correlation longer than radius_xy
// counts as signal: it is the low-frequency part of the noise, which neither filter removes.
struct NoiseModel {
  double sigma = 0;                  // standard deviation of one voxel's noise, image units
  double pseudo_residual_sigma = 0;  // estimate_noise's sigma (equal for white noise); sigma <= 3 x this
  int radius_xy = 0, radius_z = 0;   // lags measured (radius_z = 0 for 2D images and under 3 slices)
  std::vector<double> covariance;    // C at (dx, dy, dz), x fastest, each from -radius to +radius
  std::int64_t samples = 0;          // second differences per lag the model rests on
  std::int64_t flat_blocks = 0;      // 8 x 8 blocks it was read in
  // The measured image's padding and clip floor, for information: the automatic choices read
  // the filtered image's own, so a model measured on another image (a water phantom) serves.
  double excluded_value = 0;         // padding left out, or NaN
  // A value the image is clipped at, scattered among the noise (air stored at its lowest value,
  // -1024 HU): read as a value, but the noise around it is censored, so no level is read there;
  // NaN when none.
  double clipped_value = std::numeric_limits<double>::quiet_NaN();
  bool fell_back_to_white = false;   // the measured level was not believed (over 3 x the pseudo-residual
                                     // sigma, or still rising at the outer lags: anatomy read as noise);
                                     // white noise of the pseudo-residual sigma instead (false when
                                     // smooth noise fitted to the first two lags replaces it:
                                     // docs/parameters.md)
  bool read_from_first_lags = false;  // no block was believed flat: the level is smooth noise fitted to the
                                      // first lags, where anatomy adds least (in 3D only where it changes
                                      // from slice to slice as noise does; on coarse scans, 3 mm and more,
                                      // fine anatomy can still count as noise: docs/parameters.md)
  // Smooth noise that the fit of the first lags saw and could not confirm (its far lags held
  // anatomy too, or in 3D it did not change from slice to slice), where it is over twice `sigma`: its sigma and its width in voxels (a Gaussian's),
  // else 0. Coarse anatomy reads the same, so the model does not take it; if the image's noise is
  // known to be smooth (iterative reconstruction), the automatic values are likely too weak, and
  // the noise given from elsewhere (--noise-from) sets them.
  double unconfirmed_smooth_sigma = 0, unconfirmed_smooth_width = 0;

  // C(dx, dy, dz); 0 outside the measured lags.
  double covariance_at(int dx, int dy, int dz) const noexcept;
  // C / sigma^2 (0 when sigma is 0).
  double correlation(int dx, int dy, int dz) const noexcept;
  // E[(n(p) - n(p+d))^2] / 2 = sigma^2 - C(d): half the mean squared noise difference at lag d.
  double semivariance(int dx, int dy, int dz) const noexcept { return covariance_at(0, 0, 0) - covariance_at(dx, dy, dz); }
};

// Measures the model from the image. Images too small (or too padded) for an 8 x 8 block to be
// judged get white noise of the pseudo-residual sigma (fell_back_to_white). Throws
// InvalidArgument when even that cannot be estimated (fewer than 16 usable residuals).
NoiseModel estimate_noise_model(ConstVolumeView<float> image);
// The same, read where filters run in `context`: on CUDA the image is uploaded (int16 voxels as
// they are, half the bytes) and read on the GPU, and only what the model is made of comes back
// (a million residuals, the blocks' sums). The same model either way, to the last bit.
NoiseModel estimate_noise_model(ConstVolumeView<float> image, const ExecContext& context);
NoiseModel estimate_noise_model(ConstVolumeView<std::int16_t> image, const ExecContext& context);
// The same of an image in device memory (CUDA builds): dims.count() floats on the current
// device, read on `stream` (each read waits for it), never copied whole. Throws Unsupported
// without CUDA.
NoiseModel estimate_noise_model_device(const float* device_image, const Dims& dims, CudaStream stream = nullptr);

// Gaussian noise of the model's covariance (as nearly as a non-negative spectrum allows) on a
// volume of `dims`; voxels whose `mask` entry is 0 (when a mask is given) are 0. For tests and
// for the automatic parameters' risk estimate; deterministic for a seed.
Volume synthesize_noise(const NoiseModel& model, const Dims& dims, std::uint64_t seed,
                        const std::vector<unsigned char>* mask = nullptr);

}  // namespace ctd
