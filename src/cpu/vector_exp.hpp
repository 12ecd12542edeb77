#pragma once
// exp over a row of floats in SIMD registers (Highway's Exp, at most 1 ULP from the exact value,
// on the widest vectors this CPU has): the CPU filters' weights. The same input gives the same
// output on the same CPU; 0 where the argument is below -104 (exp's float range ends there).

#include <cstdint>

namespace ctd::cpu {

// out[i] = exp(-(a[i] * b)) for i < n (out may be a).
void exp_of_negative_products(const float* a, float b, float* out, std::int64_t n);

}  // namespace ctd::cpu
