#include "report.hpp"

#include <ctdenoise/error.hpp>
#include <ctdenoise/noise.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace ctd::cli {

nlohmann::json noise_model_json(const NoiseModel& m) {
  nlohmann::json j = {{"sigma", m.sigma},
                      {"pseudo_residual_sigma", m.pseudo_residual_sigma},
                      {"correlation_lag1", {m.correlation(1, 0, 0), m.correlation(0, 1, 0), m.correlation(0, 0, 1)}},
                      {"correlation_lag2", {m.correlation(2, 0, 0), m.correlation(0, 2, 0)}},
                      {"flat_blocks", m.flat_blocks},
                      {"fell_back_to_white", m.fell_back_to_white},
                      {"read_from_first_lags", m.read_from_first_lags}};
  if (!std::isnan(m.clipped_value)) j["clipped_value"] = m.clipped_value;
  if (m.unconfirmed_smooth_sigma > 0) {
    j["unconfirmed_smooth_noise"] = {{"sigma", m.unconfirmed_smooth_sigma}, {"width", m.unconfirmed_smooth_width}};
  }
  return j;
}

std::string unconfirmed_smooth_noise_note(const nlohmann::json& model) {
  const auto& u = model["unconfirmed_smooth_noise"];
  return fmt::format("smooth structure of sigma {:.3g} (width {:.2g} voxels) was taken for anatomy; if it is "
                     "noise (e.g. iterative reconstruction), the automatic values are too weak: give the noise with "
                     "--noise-from",
                     u["sigma"].get<double>(), u["width"].get<double>());
}

nlohmann::json noise_json(const Volume& volume, const nlohmann::json& known_model) {
  nlohmann::json j = nlohmann::json::object();
  if (!known_model.is_null()) {
    j["model"] = known_model;  // measured already (the automatic parameters): a pass saved
  } else {
    try {
      j["model"] = noise_model_json(estimate_noise_model(volume.view()));
    } catch (const Error&) {
      // too small to model: leave it out
    }
  }
  for (auto method : {NoiseEstimator::PseudoResidual, NoiseEstimator::WaveletMad}) {
    try {
      const NoiseEstimate e = estimate_noise(volume.view(), method);
      j[std::string(to_string(method))] = {{"sigma", e.sigma}, {"samples", e.samples}};
      if (!std::isnan(e.excluded_value)) j["padding_value"] = e.excluded_value;
    } catch (const Error&) {
      // too small to estimate: leave it out
    }
  }
  return j;
}

nlohmann::json to_json(const Statistics& s) {
  return {{"min", s.min}, {"max", s.max}, {"mean", s.mean}, {"std", s.std}, {"non_finite_voxels", s.non_finite}};
}

nlohmann::json describe_image(const io::ImageInfo& info, const Volume& volume, const nlohmann::json& known_model) {
  const Dims d = volume.dims();
  const Geometry& g = volume.geometry;
  nlohmann::json j = {
      {"path", info.path.string()},
      {"format", std::string(io::to_string(info.format))},
      {"pixel_type", std::string(io::to_string(info.pixel_type))},
      {"files", info.file_count},
      {"dims", {d.nx, d.ny, d.nz}},
      {"spacing_mm", g.spacing},
      {"origin_mm", g.origin},
      {"direction", g.direction},
      {"statistics", to_json(statistics(volume.view()))},
      {"noise_sigma", noise_json(volume, known_model)},
  };
  if (!info.attributes.empty()) j["dicom"] = info.attributes;
  if (!info.notes.empty()) j["notes"] = info.notes;
  return j;
}

std::string format_image(const io::ImageInfo& info, const Volume& volume, const nlohmann::json& description) {
  const Dims d = volume.dims();
  const Geometry& g = volume.geometry;
  const nlohmann::json& s = description["statistics"];
  std::string out;
  out += fmt::format("path:       {}\n", info.path.string());
  out += fmt::format("format:     {}{}\n", io::to_string(info.format),
                     info.file_count > 1 ? fmt::format(" ({} files)", info.file_count) : "");
  out += fmt::format("size:       {} x {} x {} voxels ({})\n", d.nx, d.ny, d.nz, d.is_2d() ? "2D" : "3D");
  out += fmt::format("pixel type: {}\n", io::to_string(info.pixel_type));
  out += fmt::format("spacing:    {:.6g} x {:.6g} x {:.6g} mm\n", g.spacing[0], g.spacing[1], g.spacing[2]);
  out += fmt::format("origin:     ({:.6g}, {:.6g}, {:.6g}) mm\n", g.origin[0], g.origin[1], g.origin[2]);
  out += fmt::format("direction:  [{:.4g} {:.4g} {:.4g}; {:.4g} {:.4g} {:.4g}; {:.4g} {:.4g} {:.4g}]\n", g.direction[0],
                     g.direction[1], g.direction[2], g.direction[3], g.direction[4], g.direction[5], g.direction[6],
                     g.direction[7], g.direction[8]);
  const std::int64_t non_finite = s["non_finite_voxels"].get<std::int64_t>();
  out += fmt::format("values:     min {:.6g}, max {:.6g}, mean {:.6g}, std {:.6g}{}\n", s["min"].get<double>(),
                     s["max"].get<double>(), s["mean"].get<double>(), s["std"].get<double>(),
                     non_finite == 0 ? ""
                                     : fmt::format(" over the finite voxels; {} NaN or infinite voxel(s), which the filters refuse",
                                                   non_finite));
  const nlohmann::json& noise = description["noise_sigma"];
  if (noise.contains("pseudo-residual")) {
    out += fmt::format("noise:      sigma {:.4g} (pseudo-residuals), {:.4g} (wavelet MAD){}\n",
                       noise["pseudo-residual"]["sigma"].get<double>(), noise["wavelet-mad"]["sigma"].get<double>(),
                       noise.contains("padding_value")
                           ? fmt::format("; padding {:.6g} left out", noise["padding_value"].get<double>())
                           : "");
  }
  if (noise.contains("model")) {
    const auto& m = noise["model"];
    out += fmt::format("noise model: sigma {:.4g} per voxel; correlation with the next voxel {:.2f} (x), {:.2f} (y){}, two "
                       "voxels away {:.2f} (x), {:.2f} (y){}\n",
                       m["sigma"].get<double>(), m["correlation_lag1"][0].get<double>(),
                       m["correlation_lag1"][1].get<double>(),
                       volume.dims().is_2d() ? "" : fmt::format(", {:.2f} (z)", m["correlation_lag1"][2].get<double>()),
                       m["correlation_lag2"][0].get<double>(), m["correlation_lag2"][1].get<double>(),
                       m["sigma"].get<double>() == 0 ? " (the image shows no noise)"
                       : m["fell_back_to_white"].get<bool>()
                           ? " (white: the flattest blocks hold anatomy, their correlation is not believed)"
                       : m["read_from_first_lags"].get<bool>()
                           ? " (read from the first lags: no block is flat; on coarse scans fine anatomy can count as noise)"
                       : std::fabs(m["correlation_lag1"][0].get<double>()) < 0.1 && std::fabs(m["correlation_lag1"][1].get<double>()) < 0.1
                           ? " (nearly white)"
                           : "");
  }
  if (noise.contains("model") && noise["model"].contains("unconfirmed_smooth_noise")) {
    out += "note:       " + unconfirmed_smooth_noise_note(noise["model"]) + "\n";
  }
  if (noise.contains("model") && noise["model"].contains("clipped_value")) {
    out += fmt::format("clipped:    values clipped at {:.6g} among the noise (air stored at its lowest value): read as "
                       "values; no noise level is read where they lie\n",
                       noise["model"]["clipped_value"].get<double>());
  }
  for (const auto& [key, value] : info.attributes) out += fmt::format("{:<24}{}\n", key + ":", value);
  for (const auto& note : info.notes) out += fmt::format("note:       {}\n", note);
  return out;
}

}  // namespace ctd::cli
