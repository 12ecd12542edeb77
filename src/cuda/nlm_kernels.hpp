#pragma once
// Launchers of the CUDA NLM kernels that live in their own files (nlm.cu routes to them).

#include "cuda/host_call.hpp"
#include "cuda/nlm_common.cuh"

#include <cuda_runtime.h>

#include <cstddef>
#include <vector>

namespace ctd::cuda {

// fused, sliding sums (nlm_fused.cu): the L2 distance with a patch radius the kernel was compiled
// for. Returns the shared memory it needs, or 0 when it does not take these parameters. Small 2D
// images split the search window over blocks and need a workspace of partial sums.
std::size_t nlm_slide_shared_bytes(const nlm_detail::KernelParams& k, bool uniform_patch);
std::size_t nlm_slide_workspace_floats(const nlm_detail::KernelParams& k);
void nlm_slide_launch(const float* in, float* out, float* workspace, const nlm_detail::KernelParams& k,
                      bool uniform_patch, cudaStream_t stream);
// The same filter as steps for the host API (run_from_host_in_steps), where it runs the symmetric
// 3D kernel, with its first and last colour cut into `chunks` launches along z (the same output
// bits); empty otherwise. nlm_slide_queue_step queues step `step` of them.
std::vector<HostStep> nlm_slide_steps(const nlm_detail::KernelParams& k, int chunks);
void nlm_slide_queue_step(const float* in, float* out, float* workspace, const nlm_detail::KernelParams& k,
                          bool uniform_patch, int chunks, int step, cudaStream_t stream);

// displacement (Marques et al.) and rowwise (Zhang et al.), nlm_displacement.cu: one group of kernels per
// displacement of half the search window, intermediates in a device workspace of
// nlm_workspace_floats() floats.
std::size_t nlm_workspace_floats(const nlm_detail::KernelParams& k, bool rowwise);
void nlm_displacement_launch(const float* in, float* out, float* workspace, const nlm_detail::KernelParams& k,
                             cudaStream_t stream);
void nlm_rowwise_launch(const float* in, float* out, float* workspace, const nlm_detail::KernelParams& k,
                        cudaStream_t stream);

}  // namespace ctd::cuda
