#pragma once
// Pieces of the --json report and of `ctdenoise info`.

#include <ctdenoise/io.hpp>
#include <ctdenoise/metrics.hpp>
#include <ctdenoise/noise.hpp>
#include <ctdenoise/volume.hpp>

#include <nlohmann/json.hpp>

#include <string>

namespace ctd::cli {

nlohmann::json to_json(const Statistics& s);
// The noise model behind the automatic parameters, for reports.
nlohmann::json noise_model_json(const NoiseModel& m);
// The sentence saying that the model (noise_model_json) holds unconfirmed smooth noise, what it
// may mean and what to do (the model must hold it).
std::string unconfirmed_smooth_noise_note(const nlohmann::json& model);
// The noise model and both noise estimates (include/ctdenoise/noise.hpp); empty for images too
// small to estimate. A model already measured (noise_model_json) is used as it is.
nlohmann::json noise_json(const Volume& volume, const nlohmann::json& known_model = nullptr);
// Path, format, pixel type, dims, geometry, noise, DICOM attributes and reader notes of an image.
nlohmann::json describe_image(const io::ImageInfo& info, const Volume& volume, const nlohmann::json& known_model = nullptr);
// The same for people (`ctdenoise info`), from describe_image's description.
std::string format_image(const io::ImageInfo& info, const Volume& volume, const nlohmann::json& description);

}  // namespace ctd::cli
