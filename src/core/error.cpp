#include <ctdenoise/error.hpp>

namespace ctd {

std::string_view to_string(ErrorKind kind) noexcept {
  switch (kind) {
    case ErrorKind::InvalidArgument: return "invalid argument";
    case ErrorKind::Unsupported: return "unsupported";
    case ErrorKind::Io: return "I/O error";
    case ErrorKind::Cuda: return "CUDA error";
    case ErrorKind::OutOfMemory: return "out of memory";
    case ErrorKind::Cancelled: return "cancelled";
  }
  return "error";
}

}  // namespace ctd
