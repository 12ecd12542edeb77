#pragma once
// The CPU backend: exact filters on host memory. Parameters arrive validated (core/*.cpp).

#include "cpu/thread_pool.hpp"

#include <ctdenoise/bilateral.hpp>
#include <ctdenoise/nlm.hpp>

#include <array>
#include <functional>

namespace ctd::cpu {

using Progress = std::function<void(double)>;

// Exact NLM, one pass per displacement over half the search window (w(p,q) = w(q,p)).
void nlm_displacement(ConstVolumeView<float> in, VolumeView<float> out, const NlmParams& params,
                      ThreadPool& pool, const Progress& progress);

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
