#pragma once
// Checks and routing shared by every filter's front end (nlm.cpp, bilateral.cpp).

#include <ctdenoise/exec.hpp>
#include <ctdenoise/volume.hpp>

#include <cmath>
#include <vector>

namespace ctd::detail {

int resolve_threads(int requested);       // 0 -> hardware threads
void check_same_dims(const Dims& in, const Dims& out);
void check_finite(ConstVolumeView<float> in);  // InvalidArgument naming count and first voxel
// The filters read the input while writing the output; when the two overlap, this returns a
// private copy of the input to read from (empty when they do not overlap).
std::vector<float> copy_if_aliased(ConstVolumeView<float> in, VolumeView<float> out);

}  // namespace ctd::detail
