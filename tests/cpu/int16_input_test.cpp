// The filters' int16 overloads on the CPU: the same output as their float overloads.

#include "common/int16_input.hpp"

TEST(Int16Input, SameOutputAsFloatOnTheCpu) { testing_util::expect_int16_overloads_match(ctd::Device::Cpu); }
