#pragma once
// validate_params --truth-score: the automatic value scored against the truth where the
// reference r = t + e keeps noise e of its own (truth_score.cpp; docs/parameters.md, "What is
// not reached").

#include <ctdenoise/noise.hpp>
#include <ctdenoise/volume.hpp>

#include <functional>
#include <string>

namespace validation {

// Over value = auto * 2^(k/4), k = -8..8, prints the least value against the reference and
// corrected, the automatic value's gap to each (in dB of the error) and its SSIM under the SSIM
// at each least, and its margins over the noisy input's (corrected); returns whether it meets the
// goal against the truth at `gap_limit` dB (within it and 0.005 SSIM, never below the noisy input).
bool print_truth_score(const std::string& name, double automatic, const ctd::Volume& reference, const ctd::Volume& noisy,
                       const ctd::NoiseModel& own, const std::function<ctd::Volume(const ctd::Volume&, double)>& filter,
                       double data_range, double gap_limit);

}  // namespace validation
