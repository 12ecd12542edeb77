#pragma once
// 3D Slicer CLI module (Slicer Execution Model): `ctdenoise --xml` describes one module, "CT
// denoise", with both filters; Slicer then runs `ctdenoise --filter nlm|bilateral [flags] INPUT
// OUTPUT`, which is translated into the ordinary command line of that filter.

#include <optional>
#include <string>
#include <vector>

namespace ctd::cli {

// The module's XML description.
std::string slicer_xml();

// When `args` (argv without the program name) is a Slicer invocation (it has --filter), the
// equivalent ctdenoise command line (without the program name); otherwise nothing. Flags of the
// filter not chosen are dropped. Throws ctd::Error(InvalidArgument) for an unknown filter or flag.
std::optional<std::vector<std::string>> from_slicer(const std::vector<std::string>& args);

}  // namespace ctd::cli
