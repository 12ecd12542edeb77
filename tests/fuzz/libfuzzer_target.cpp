// libFuzzer entry point (CTD_FUZZ=ON with clang; scripts/fuzz.sh builds and runs it under
// AddressSanitizer and UndefinedBehaviorSanitizer).

#include "fuzz/fuzz_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  ctd::fuzz::run_one(data, size);
  return 0;
}
