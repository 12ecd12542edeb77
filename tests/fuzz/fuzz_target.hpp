#pragma once
// One fuzz input through the readers: its first byte picks the format (and the file layout), the
// rest is the file. A mutant that reads is described (statistics, noise) and filtered, as
// `ctdenoise info` and a small `bilateral` would. Errors of ctd::Error are the expected outcome
// of bad input; anything else (another exception, a crash, a sanitizer report) is a finding.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace ctd::fuzz {

// Runs one input; returns true when it was read as an image. Aborts on a finding.
bool run_one(const std::uint8_t* data, std::size_t size);

// Valid seed inputs, one a format (selector byte + file), written into `folder`.
void write_seeds(const std::filesystem::path& folder);

// How many formats the selector byte picks from, and each one's name.
int format_count();
std::string format_name(std::uint8_t selector);

}  // namespace ctd::fuzz
