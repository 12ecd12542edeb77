#include "cpu/host_copy.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__) || defined(_M_X64)
#include <emmintrin.h>  // SSE2: part of every x86-64 processor
#endif

namespace ctd::cpu {

void streaming_copy(void* to, const void* from, std::size_t bytes) noexcept {
#if defined(__x86_64__) || defined(_M_X64)
  auto* out = static_cast<char*>(to);
  const auto* in = static_cast<const char*>(from);
  // Up to the first 16-byte boundary of the destination as usual, then 64 bytes a step.
  const std::size_t head = std::min<std::size_t>(bytes, (16 - (reinterpret_cast<std::uintptr_t>(out) & 15)) & 15);
  std::memcpy(out, in, head);
  std::size_t i = head;
  for (; i + 64 <= bytes; i += 64) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i + 32));
    const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(out + i), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(out + i + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(out + i + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(out + i + 48), d);
  }
  std::memcpy(out + i, in + i, bytes - i);
  _mm_sfence();
#else
  std::memcpy(to, from, bytes);
#endif
}

}  // namespace ctd::cpu

namespace ctd::cpu {

bool copy_finite(float* to, const float* from, std::size_t count) noexcept {
  std::memcpy(to, from, count * sizeof(float));
  // Read back from the destination, still in cache: a float is NaN or infinite exactly when its
  // exponent bits are all ones.
  constexpr std::uint32_t kExponent = 0x7f800000u;
  std::uint32_t non_finite = 0;
  for (std::size_t i = 0; i < count; ++i) {
    std::uint32_t bits;
    std::memcpy(&bits, to + i, sizeof bits);
    non_finite |= (bits & kExponent) == kExponent;
  }
  return non_finite == 0;
}

}  // namespace ctd::cpu
