// exp over rows in SIMD registers, compiled for every x86 (or other) target Highway knows and
// chosen at run time for this CPU (vector_exp.hpp). Scalar expf was a third of the CPU NLM's time
// (and its slow path for underflow another 6 %): bench/NOTES.md, 2026-11-26.

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/vector_exp.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include <hwy/contrib/math/math-inl.h>
#include <hwy/highway.h>

#include "cpu/vector_exp.hpp"

HWY_BEFORE_NAMESPACE();
namespace ctd::cpu::HWY_NAMESPACE {

namespace hn = hwy::HWY_NAMESPACE;

void ExpOfNegativeProducts(const float* a, float b, float* out, std::int64_t n) {
  const hn::ScalableTag<float> d;
  const auto scale = hn::Set(d, b);
  const std::int64_t lanes = std::int64_t(hn::Lanes(d));
  std::int64_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    hn::StoreU(hn::Exp(d, hn::Neg(hn::Mul(hn::LoadU(d, a + i), scale))), d, out + i);
  }
  if (i < n) {  // the tail through a full vector, so that every element takes the same path
    HWY_ALIGN float in_tail[hn::MaxLanes(d)] = {};
    HWY_ALIGN float out_tail[hn::MaxLanes(d)];
    for (std::int64_t k = i; k < n; ++k) in_tail[k - i] = a[k];
    hn::Store(hn::Exp(d, hn::Neg(hn::Mul(hn::Load(d, in_tail), scale))), d, out_tail);
    for (std::int64_t k = i; k < n; ++k) out[k] = out_tail[k - i];
  }
}

}  // namespace ctd::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace ctd::cpu {

HWY_EXPORT(ExpOfNegativeProducts);

void exp_of_negative_products(const float* a, float b, float* out, std::int64_t n) {
  HWY_DYNAMIC_DISPATCH(ExpOfNegativeProducts)(a, b, out, n);
}

}  // namespace ctd::cpu
#endif
