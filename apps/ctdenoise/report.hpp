#pragma once
// Pieces of the --json report and of `ctdenoise info`.

#include <ctdenoise/io.hpp>
#include <ctdenoise/noise.hpp>
#include <ctdenoise/volume.hpp>

#include <nlohmann/json.hpp>

#include <string>

namespace ctd::cli {

struct Statistics {
  double min = 0, max = 0, mean = 0, std = 0;
};

Statistics statistics(const Volume& volume);

nlohmann::json to_json(const Statistics& s);
// Both noise estimates (include/ctdenoise/noise.hpp); empty for images too small to estimate.
// The noise model behind the automatic parameters, for reports.
nlohmann::json noise_model_json(const NoiseModel& m);
nlohmann::json noise_json(const Volume& volume);
// Path, format, pixel type, dims, geometry, DICOM attributes and reader notes of an image.
nlohmann::json describe_image(const io::ImageInfo& info, const Volume& volume);
// The same for people: `ctdenoise info`.
std::string format_image(const io::ImageInfo& info, const Volume& volume);

}  // namespace ctd::cli
