// fused NLM, sliding sums: the fast exact kernel for the L2 distance (uniform or Gaussian patch).
//
// A block loads its tile plus the search and patch aprons into shared memory once (mirror border).
// Then, per displacement d of the search window, the patch distance of every tile voxel is a
// separable sum of e = (u(p) - u(p + d))^2, done in passes that each keep a run of values in
// registers and slide along it (a running sum for the uniform patch, so O(1) per output):
//   2D (nlm_fused_2d.cu), tile 64 x 32: pass A: one thread per (row, 16 columns) forms e and the row sums Hx;
//       pass B: one thread per (column, 8 rows) sums Hx down the column, turns the distance into
//       a weight and accumulates in registers. Hx is double-buffered: one barrier per d.
//   3D (nlm_fused_3d.cu), tile 32 x 8 x 8: pass A per (y, z) row of 32, pass B per (x, z) column along y (Hxy),
//       pass C per (x, y) column along z, weights in registers. Two barriers per d.
// The symmetric kernels (in both files) walk half the window and compute each unordered pair once.
// Nothing goes to global memory but the output, and every voxel sums its terms in a fixed order:
// deterministic. The patch row of p (independent of d) stays in registers across displacements.
// This file routes by dimension; the shared parts are in nlm_slide.cuh.

#include "cuda/nlm_kernels.hpp"
#include "cuda/nlm_slide.cuh"

namespace ctd::cuda {

using nlm_detail::KernelParams;

namespace {
// 2D: no search across slices (the 2D kernels' tiles are one slice thick).
bool flat(const KernelParams& k) { return k.rsz == 0; }
}  // namespace

std::size_t nlm_slide_workspace_floats(const KernelParams& k) {
  return flat(k) ? slide::slide2d_workspace_floats(k) : slide::slide3d_workspace_floats(k);
}

std::size_t nlm_slide_shared_bytes(const KernelParams& k, bool /*uniform_patch*/) {
  if (k.l1 || k.rp < 1) return 0;
  if (k.rp > (flat(k) ? slide::kMaxRp2 : slide::kMaxRp3)) return 0;
  return flat(k) ? slide::slide2d_shared_bytes(k) : slide::slide3d_shared_bytes(k);
}

void nlm_slide_launch(const float* in, float* out, float* workspace, const KernelParams& k, bool uniform_patch,
                      cudaStream_t stream) {
  if (flat(k)) {
    slide::slide2d_launch(in, out, workspace, k, uniform_patch, stream);
  } else {
    slide::slide3d_launch(in, out, workspace, k, uniform_patch, stream);
  }
}

std::vector<HostStep> nlm_slide_steps(const KernelParams& k, int chunks) {
  if (k.l1 || k.rp < 1 || k.rp > slide::kMaxRp3 || flat(k)) return {};
  return slide::slide3d_steps(k, chunks);
}

void nlm_slide_queue_step(const float* in, float* out, float* workspace, const KernelParams& k, bool uniform_patch,
                          int chunks, int step, cudaStream_t stream) {
  slide::slide3d_queue_step(in, out, workspace, k, uniform_patch, chunks, step, stream);
}

}  // namespace ctd::cuda
