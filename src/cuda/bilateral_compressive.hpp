#pragma once
// The CUDA compressive bilateral filter (Yano et al.), bilateral_compressive.cu: what bilateral.cu
// routes to.

#include "cuda/backend.hpp"
#include "cuda/host_call.hpp"

#include <cuda_runtime.h>

#include <array>
#include <cstddef>
#include <functional>

namespace ctd::cuda {

// Radius up to 127 per axis for the exact kernels' per-axis tables; the compressive passes' 1D
// Gaussian holds up to 2 kMaxAxisTaps + 1 taps (sigma_s up to 85 voxels).
constexpr int kMaxAxisTaps = 255;

// Device memory the filter needs beyond its input and output, in floats (float4 aligned): two
// float4 images, the numerator and the denominator, and the recursive passes' tails.
std::size_t compressive_work_floats(const Dims& dims, const BilateralParams& params);
// Shared memory of a block of the direct passes at this radius (over the device's limit: refused).
std::size_t compressive_pass_bytes(int radius);
// Queues the filter on `stream` over device memory, with the series `settings` for the input's
// least value `lo`; `workspace` holds compressive_work_floats() floats.
void compressive_device(const float* d_in, float* d_out, const Dims& dims, const BilateralParams& params,
                        const std::array<int, 3>& radius, const CompressiveSettings& settings, float lo,
                        float* workspace, cudaStream_t stream);
// The filter with direct passes on a 3D volume in host memory, in steps beside the copies
// (`chunks` slabs up); the same bits as in one piece.
template <class T>
HostTimes compressive_from_host_in_steps(ConstVolumeView<T> in, VolumeView<float> out, const BilateralParams& params,
                                         const std::array<int, 3>& radius, int chunks, CompressiveSettings* compressive,
                                         const std::function<void()>& uploaded, bool output_statistics);

}  // namespace ctd::cuda
