#pragma once
// Automatic filter strength (docs/parameters.md): NLM's h and the bilateral filter's sigma_range
// chosen for the image at hand, with the user's radii, kernel, distance and device.
//
// The choice minimises Stein's unbiased risk estimate (SURE) of the mean squared error against
// the noise-free image, for noise of covariance C (the image's NoiseModel):
//   SURE(v) = |f_v(y) - y|^2 - tr C + 2 tr(C J_v),  J_v = df_v/dy at the noisy image y,
// with tr(C J) estimated by Monte Carlo (Ramani, Blu & Unser 2008), b ~ N(0, C):
//   tr(C J) ~ b . (f_v(y + eps b) - f_v(y)) / eps.
// SURE for NLM is due to Van De Ville & Kocher (IEEE SPL 2009); the Monte Carlo form needs no
// derivative of the filter, so every variant, distance and kernel gets the same treatment, and
// correlated CT noise is handled by drawing b with the measured covariance rather than white.
// The filter runs on a sample of the image (blocks of every kind of content in the image's
// proportions: kAutoSampleVoxels voxels and 16 blocks at least, 64 where these are at most an
// eighth of the image, as in large volumes; 2D slices up to kAutoWholeSliceVoxels whole), twice
// per candidate value, on the device the context names.

#include <ctdenoise/bilateral.hpp>
#include <ctdenoise/exec.hpp>
#include <ctdenoise/nlm.hpp>
#include <ctdenoise/noise.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ctd {

// The sample the risk estimate filters (voxels; at least 16 blocks of 32-64 voxels in-plane and
// 6-16 slices in 3D, 64 in large volumes); images up to this size are used whole.
constexpr std::int64_t kAutoSampleVoxels = std::int64_t(1) << 17;
// 2D images up to this size are used whole too (a 512 x 512 slice, up to 724 x 724): blocks side
// by side have seams, and a slice is cheap to filter whole.
constexpr std::int64_t kAutoWholeSliceVoxels = std::int64_t(1) << 19;

struct RiskPoint {
  double value = 0;  // h or sigma_range tried
  double mse = 0;    // SURE's estimate of the mean squared error per voxel, image units squared
};

struct AutoChoice {
  double value = 0;     // what to use: optimum x strength
  double optimum = 0;   // the value of least estimated risk
  double strength = 1;  // the multiplier asked for
  double noisy_mse = 0; // the risk of not filtering: the noise variance (after noise_share)
  double noise_share = 1;  // the share of the model's noise variance the image was found to hold
                           // (< 1 when the model read anatomy as noise; docs/parameters.md)
  NoiseModel noise;
  // How the risk saw the noise over the image (docs/parameters.md, "The level" and "The
  // texture"): "one level" (the tiles' median), "tile levels (mild)" (where the level varies a
  // little: each tile's leans toward its own), "tile levels" (where the level varies), "tile
  // levels and textures" (where the texture changes too), "intensity levels" (where the level
  // follows the image's values, voxel by voxel), or "scan-like (...)" (below).
  std::string noise_over_image;
  // How the image's noise compares with a scanner's (docs/parameters.md, "Scan-like noise"):
  // scan_fit, the share of the variance of the tiles' log noise levels that the map of the image's
  // own rays explains; scan_fit_beyond_intensity, the share of what each tile's own intensity
  // leaves that the map explains (both 0..1; NaN where the image is not a whole body in air, in
  // HU or units of attenuation, e.g. a crop, or where its tiles' noise levels hardly vary);
  // scan_texture_distance, how far the nearest FBP filter's noise texture is
  // from the model's (NaN where not looked at). Where the map explains enough, beyond the
  // intensities, and an FBP filter's texture is near the model's, the risk's noise is made as a
  // scanner makes it: noise_over_image "scan-like (<FBP window> filter)", or "scan-like (<FBP
  // window> filter, fan beam)" where a fan's rays explain the levels clearly better than a
  // parallel beam's: scan_source, the fan's source's distance from the centre in pixels (0: a
  // parallel beam; NaN without a map).
  double scan_fit = 0, scan_fit_beyond_intensity = 0, scan_texture_distance = 0, scan_source = 0;
  std::vector<RiskPoint> curve;  // every value tried, in increasing order
  Dims sample;                   // the sample the filter ran on
  double seconds = 0;            // all of it, of which:
  double sample_seconds = 0;     //   the sample and its noise probe
  double filter_seconds = 0;     //   the filter runs, two per value tried
};

// sigma for NLM's bias term (noise_sigma = auto): the root mean noise semivariance over the search
// window, so that 2 sigma^2 is the expected patch distance between two noise-only patches.
double auto_nlm_noise_sigma(const NoiseModel& noise, const NlmParams& params, const Dims& dims);

// h for `params` (its h is ignored; noise_sigma, radii, kernel, distance and algorithm are used
// as given). strength > 0 multiplies the optimum: > 1 smooths more, < 1 less. Throws
// InvalidArgument for images too small to model or without noise; progress and cancellation go
// through the context.
AutoChoice auto_nlm_h(ConstVolumeView<float> image, const NlmParams& params, const ExecContext& context = {},
                      double strength = 1.0);

// sigma_range for `params` (its sigma_range is ignored; spacing must be the image's when
// sigma_spatial is in mm).
AutoChoice auto_bilateral_sigma_range(ConstVolumeView<float> image, const BilateralParams& params,
                                      const ExecContext& context = {}, double strength = 1.0);

// The same with a noise model the caller already has (e.g. measured on a scan of a water
// phantom, or on the difference of two scans), instead of the one estimated from the image.
AutoChoice auto_nlm_h(ConstVolumeView<float> image, const NlmParams& params, const NoiseModel& noise,
                      const ExecContext& context = {}, double strength = 1.0);
AutoChoice auto_bilateral_sigma_range(ConstVolumeView<float> image, const BilateralParams& params,
                                      const NoiseModel& noise, const ExecContext& context = {}, double strength = 1.0);

namespace detail {
class ImageReads;
}

// An image as the automatic parameters read it, for several of them (the noise model, then h or
// sigma_range): where filters run on CUDA in `context`, the image is uploaded once (int16 voxels
// as stored, half the bytes) and the noise model's and the risk sample's reads run on the GPU;
// only their results come back. The same model and values as from host memory, to the last bit.
// The image must outlive it.
class AutoInput {
 public:
  AutoInput(ConstVolumeView<float> image, const ExecContext& context);
  AutoInput(ConstVolumeView<std::int16_t> image, const ExecContext& context);
  ~AutoInput();
  AutoInput(AutoInput&&) noexcept;
  AutoInput& operator=(AutoInput&&) noexcept;

  const Dims& dims() const;
  bool on_device() const noexcept;  // read on the GPU
  NoiseModel noise_model() const;
  AutoChoice nlm_h(const NlmParams& params, const NoiseModel& noise, const ExecContext& context = {},
                   double strength = 1.0) const;
  AutoChoice bilateral_sigma_range(const BilateralParams& params, const NoiseModel& noise,
                                   const ExecContext& context = {}, double strength = 1.0) const;

 private:
  std::unique_ptr<detail::ImageReads> reads_;
};

// The same of an image in device memory (CUDA builds): dims.count() floats on the current
// device, read on `stream` (never copied whole; estimate_noise_model_device gives the model).
// The sample is gathered on the GPU and the filter runs on it on the device `context` names:
// the same choice as from host memory. Throws Unsupported without CUDA.
AutoChoice auto_nlm_h_device(const float* device_image, const Dims& dims, const NlmParams& params,
                             const NoiseModel& noise, const ExecContext& context = {}, double strength = 1.0,
                             CudaStream stream = nullptr);
AutoChoice auto_bilateral_sigma_range_device(const float* device_image, const Dims& dims, const BilateralParams& params,
                                             const NoiseModel& noise, const ExecContext& context = {},
                                             double strength = 1.0, CudaStream stream = nullptr);

}  // namespace ctd
