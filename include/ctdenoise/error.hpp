#pragma once
// The one error type of ctdenoise. Every failure the library reports is a ctd::Error whose kind
// says what went wrong; the CLI maps kinds to exit codes (see README, "Exit codes").

#include <stdexcept>
#include <string>
#include <string_view>

namespace ctd {

enum class ErrorKind {
  InvalidArgument,  // a parameter or input value the definition does not allow
  Unsupported,      // valid request this build or format cannot do (yet)
  Io,               // file missing, unreadable, corrupt, or not writable
  Cuda,             // CUDA driver or runtime failure, or no device
  OutOfMemory,      // host or device allocation failed
  Cancelled,        // the caller asked to stop (e.g. Ctrl-C in the CLI)
};

std::string_view to_string(ErrorKind kind) noexcept;

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const noexcept { return kind_; }

 private:
  ErrorKind kind_;
};

}  // namespace ctd
