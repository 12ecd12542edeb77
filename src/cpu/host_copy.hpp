#pragma once
// Copies of large host buffers, for the pinned staging of transfers to and from the GPU.

#include <cstddef>

namespace ctd::cpu {

// As std::memcpy (the ranges must not overlap), with the destination written past the CPU caches
// (non-temporal stores on x86-64): it saves the read the caches would make of every destination
// line before writing it. Ends with a store fence, so the bytes are visible to other threads and
// devices once it returns.
void streaming_copy(void* to, const void* from, std::size_t bytes) noexcept;

// As std::memcpy of `count` floats; returns whether every one is finite (no NaN, no infinity).
bool copy_finite(float* to, const float* from, std::size_t count) noexcept;

}  // namespace ctd::cpu
