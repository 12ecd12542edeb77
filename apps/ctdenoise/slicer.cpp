// The Slicer module's parameters, in one table that makes both the XML and the translation.

#include "slicer.hpp"

#include <ctdenoise/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <string_view>

namespace ctd::cli {
namespace {

struct Parameter {
  std::string_view group;    // "nlm", "bilateral" or "run" (both filters)
  std::string_view tag;      // Slicer's element: float, integer, string, string-enumeration
  std::string_view name;     // Slicer's name, also the module's flag (--name)
  std::string_view cli_flag; // ctdenoise's flag
  std::string_view label, description, fallback;
  std::vector<std::string_view> choices = {};
};

const std::vector<Parameter>& parameters() {
  static const std::vector<Parameter> all = {
      {"run", "string-enumeration", "filter", "", "Filter", "Non-local means (nlm) or the bilateral filter", "nlm",
       {"nlm", "bilateral"}},
      {"run", "string-enumeration", "device", "--device", "Device", "Where to run: auto (CUDA when there is a GPU), cpu or cuda",
       "auto", {"auto", "cpu", "cuda"}},
      {"nlm", "string", "h", "--h", "h (HU)",
       "Filtering strength in image units, or auto: the value of least estimated error for this image's noise", "auto"},
      {"nlm", "float", "nlmStrength", "--strength", "Strength", "Multiplies the automatic h: > 1 smooths more, < 1 less", "1"},
      {"nlm", "integer", "searchRadius", "--search-radius", "Search radius", "Search window half-width in voxels", "5"},
      {"nlm", "integer", "patchRadius", "--patch-radius", "Patch radius", "Patch half-width in voxels", "1"},
      {"nlm", "string", "noiseSigma", "--noise-sigma", "Noise sigma (HU)",
       "Subtracts 2 sigma^2 from patch distances: a value, 0 (none) or auto", "0"},
      {"nlm", "string-enumeration", "patchKernel", "--patch-kernel", "Patch kernel", "Patch weighting", "uniform",
       {"uniform", "gaussian"}},
      {"nlm", "string-enumeration", "distance", "--distance", "Patch distance",
       "l2, or l1 (Zhang et al.'s weighted L1)", "l2", {"l2", "l1"}},
      {"bilateral", "float", "sigmaSpatialMm", "--sigma-spatial-mm", "Spatial sigma (mm)",
       "Spatial Gaussian sigma in mm (the voxel spacing is used)", "1"},
      {"bilateral", "string", "sigmaRange", "--sigma-range", "Range sigma (HU)",
       "Range Gaussian sigma in image units, or auto: the value of least estimated error for this image's noise", "auto"},
      {"bilateral", "float", "bilateralStrength", "--strength", "Strength",
       "Multiplies the automatic range sigma: > 1 smooths more, < 1 less", "1"},
      {"bilateral", "string-enumeration", "bilateralAlgorithm", "--algorithm", "Algorithm",
       "auto (exact), or compressive (Sugimoto and Kamata's fast approximation)", "auto", {"auto", "compressive"}},
      // An optional input volume: Slicer passes its flag only when one is chosen.
      {"run", "image", "noiseVolume", "--noise-from", "Noise volume (optional)",
       "Noise alone (two scans at the same dose, subtracted, / sqrt 2) or a uniform phantom scanned alike, on "
       "the input's voxel size: the automatic values' noise is measured on it instead of the input", ""},
  };
  return all;
}

std::string escape(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '&') out += "&amp;";
    else out += c;
  }
  return out;
}

std::string group_xml(std::string_view group, std::string_view label, std::string_view description) {
  std::string xml = fmt::format("  <parameters>\n    <label>{}</label>\n    <description>{}</description>\n", label,
                                escape(description));
  for (const Parameter& p : parameters()) {
    if (p.group != group) continue;
    xml += fmt::format("    <{}>\n      <name>{}</name>\n      <longflag>--{}</longflag>\n      <label>{}</label>\n"
                       "      <description>{}</description>\n",
                       p.tag, p.name, p.name, escape(p.label), escape(p.description));
    xml += p.tag == "image" ? "      <channel>input</channel>\n" : fmt::format("      <default>{}</default>\n", p.fallback);
    for (std::string_view choice : p.choices) xml += fmt::format("      <element>{}</element>\n", choice);
    xml += fmt::format("    </{}>\n", p.tag);
  }
  return xml + "  </parameters>\n";
}

}  // namespace

std::string slicer_xml() {
  std::string xml =
      "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<executable>\n"
      "  <category>Filtering.Denoising</category>\n  <title>CT denoise (ctdenoise)</title>\n"
      "  <description>Edge-preserving denoising of CT images and volumes: non-local means or the bilateral filter, "
      "on a CUDA GPU when there is one. With h or the range sigma left at auto, the strength is chosen for the "
      "image's own noise.</description>\n"
      "  <version>" CTD_VERSION "</version>\n  <documentation-url></documentation-url>\n"
      "  <license></license>\n  <contributor>ctdenoise</contributor>\n";
  xml += group_xml("run", "Filter", "Which filter, and where it runs");
  xml += group_xml("nlm", "Non-local means", "Used when Filter is nlm");
  xml += group_xml("bilateral", "Bilateral filter", "Used when Filter is bilateral");
  xml += "  <parameters>\n    <label>Volumes</label>\n    <description>Input and output</description>\n"
         "    <image>\n      <name>inputVolume</name>\n      <label>Input volume</label>\n      <channel>input</channel>\n"
         "      <index>0</index>\n      <description>The noisy CT volume</description>\n    </image>\n"
         "    <image>\n      <name>outputVolume</name>\n      <label>Output volume</label>\n      <channel>output</channel>\n"
         "      <index>1</index>\n      <description>The denoised volume</description>\n    </image>\n"
         "  </parameters>\n</executable>\n";
  return xml;
}

std::optional<std::vector<std::string>> from_slicer(const std::vector<std::string>& args) {
  if (std::find(args.begin(), args.end(), "--filter") == args.end()) return std::nullopt;
  std::string filter;
  std::vector<std::pair<const Parameter*, std::string>> given;
  std::vector<std::string> positional;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg.rfind("--", 0) != 0) {
      positional.push_back(arg);
      continue;
    }
    const auto& all = parameters();
    const auto found = std::find_if(all.begin(), all.end(), [&](const Parameter& p) { return arg.substr(2) == p.name; });
    if (found == all.end() || i + 1 == args.size()) {
      throw Error(ErrorKind::InvalidArgument, fmt::format("the Slicer module has no flag {} with a value", arg));
    }
    const std::string& value = args[++i];
    if (found->name == "filter") filter = value;
    else given.emplace_back(&*found, value);
  }
  if (filter != "nlm" && filter != "bilateral") {
    throw Error(ErrorKind::InvalidArgument, fmt::format("--filter must be nlm or bilateral, got '{}'", filter));
  }
  if (positional.size() != 2) {
    throw Error(ErrorKind::InvalidArgument, "the Slicer module takes an input and an output volume");
  }
  // Slicer names a fresh temporary output file; --overwrite in case it already made it.
  std::vector<std::string> command{filter, "--overwrite", "--quiet"};
  for (const auto& [p, value] : given) {
    if (p->group != filter && p->group != "run") continue;
    command.push_back(std::string(p->cli_flag));
    command.push_back(value);
  }
  command.push_back(positional[0]);
  command.push_back(positional[1]);
  return command;
}

}  // namespace ctd::cli
