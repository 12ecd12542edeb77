#pragma once
// The CPU backend: exact filters on host memory. Parameters arrive validated (core/*.cpp).

#include "cpu/thread_pool.hpp"

#include <ctdenoise/bilateral.hpp>
#include <ctdenoise/nlm.hpp>

#include <array>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace ctd::cpu {

using Progress = std::function<void(double)>;

// A box of voxels [x0, x1) x [y0, y1) x [z0, z1).
struct OutputBox {
  std::int64_t x0, y0, z0, x1, y1, z1;
};
// Boxes of `size` voxels (the last along each axis shorter) that cover the volume, x fastest.
std::vector<OutputBox> cache_boxes(const Dims& dims, const std::array<std::int64_t, 3>& size);
// The boxes nlm_displacement computes the output in by default: near a core's cache.
std::array<std::int64_t, 3> nlm_box_size(const Dims& dims);

// Exact NLM, one pass per displacement over half the search window (w(p,q) = w(q,p)), box by box.
// With `only`, the output is computed in those boxes alone (the rest of `out` is left as it is),
// bit for bit as in a run over the whole volume.
void nlm_displacement(ConstVolumeView<float> in, VolumeView<float> out, const NlmParams& params,
                      ThreadPool& pool, const Progress& progress, std::span<const OutputBox> only = {});
// The same at several strengths in one pass: outs[k] at h_values[k] (params.h unused), each bit
// for bit as alone; the patch distances are computed once for all of them.
void nlm_displacement(ConstVolumeView<float> in, std::span<const VolumeView<float>> outs, std::span<const float> h_values,
                      const NlmParams& params, ThreadPool& pool, const Progress& progress,
                      std::span<const OutputBox> only = {});

// Blockwise NLM with voxel preselection (Coupe et al. 2008): approximate.
void nlm_blockwise(ConstVolumeView<float> in, VolumeView<float> out, const NlmParams& params, ThreadPool& pool,
                   const Progress& progress);

// Exact bilateral filter, direct sum over the window with a tabulated spatial kernel.
void bilateral_direct(ConstVolumeView<float> in, VolumeView<float> out, const BilateralParams& params,
                      const std::array<int, 3>& radius, ThreadPool& pool, const Progress& progress);

// Compressive (approximate) bilateral filter: 4M + 1 separable Gaussian filters. Returns the
// cosine series it used.
CompressiveSettings bilateral_compressive(ConstVolumeView<float> in, VolumeView<float> out, const BilateralParams& params,
                                          const std::array<int, 3>& radius, ThreadPool& pool, const Progress& progress);

}  // namespace ctd::cpu
