#pragma once
// The filters' int16 overloads against their float ones on the same values: the output must be
// the same bits, on the CPU and on CUDA, with the input beside the output or inside it.

#include "common/test_util.hpp"

#include <ctdenoise/bilateral.hpp>
#include <ctdenoise/nlm.hpp>

#include <cstring>
#include <functional>
#include <random>
#include <vector>

namespace testing_util {

// Random int16 voxels over CT's range, fixed seed.
inline std::vector<std::int16_t> random_int16(std::int64_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> value(-1024, 3071);
  std::vector<std::int16_t> v(static_cast<std::size_t>(n));
  for (auto& x : v) x = static_cast<std::int16_t>(value(rng));
  return v;
}

using Int16Filter = std::function<ctd::FilterRun(ctd::ConstVolumeView<std::int16_t>, ctd::VolumeView<float>)>;
using FloatFilter = std::function<ctd::FilterRun(ctd::ConstVolumeView<float>, ctd::VolumeView<float>)>;

// Runs both overloads over `dims` and expects the same bits; returns the int16 run.
inline ctd::FilterRun expect_int16_as_float(ctd::Dims dims, std::uint32_t seed, const Int16Filter& from_int16,
                                            const FloatFilter& from_float) {
  const std::int64_t n = dims.count();
  const std::vector<std::int16_t> raw = random_int16(n, seed);
  ctd::Volume as_float(dims), expected(dims), got(dims);
  for (std::int64_t i = 0; i < n; ++i) as_float.data()[i] = raw[std::size_t(i)];
  from_float(as_float.view(), expected.view());
  const ctd::FilterRun run = from_int16({raw.data(), dims}, got.view());
  for (std::int64_t i = 0; i < n; ++i) {
    EXPECT_EQ(std::memcmp(&got.data()[i], &expected.data()[i], sizeof(float)), 0)
        << "voxel " << i << ": " << got.data()[i] << " vs " << expected.data()[i];
    if (::testing::Test::HasFailure()) break;
  }
  // The int16 voxels inside the output's own memory (its first half): read before written.
  std::vector<float> shared(static_cast<std::size_t>(n));
  std::memcpy(shared.data(), raw.data(), raw.size() * sizeof(std::int16_t));
  const ctd::ConstVolumeView<std::int16_t> inside{reinterpret_cast<const std::int16_t*>(shared.data()), dims};
  from_int16(inside, {shared.data(), dims});
  EXPECT_EQ(std::memcmp(shared.data(), expected.data(), std::size_t(n) * sizeof(float)), 0) << "input inside the output";
  return run;
}

inline void expect_int16_overloads_match(ctd::Device device) {
  ctd::ExecContext context;
  context.device = device;
  for (const ctd::Dims dims : {ctd::Dims{23, 17, 9}, ctd::Dims{31, 29, 1}, ctd::Dims{1, 1, 1}, ctd::Dims{2, 3, 2}}) {
    SCOPED_TRACE(::testing::Message() << dims.nx << "x" << dims.ny << "x" << dims.nz);
    ctd::NlmParams nlm;
    nlm.search_radius = 3;
    nlm.patch_radius = 1;
    nlm.h = 150;
    nlm.noise_sigma = 40;
    const ctd::FilterRun run = expect_int16_as_float(
        dims, 7, [&](auto in, auto out) { return ctd::nlm(in, out, nlm, context); },
        [&](auto in, auto out) { return ctd::nlm(in, out, nlm, context); });
    EXPECT_EQ(run.device, device);
    if (device == ctd::Device::Cuda) {
      EXPECT_EQ(run.details.at("upload_bytes"), double(dims.count() * 2)) << "int16 on the bus";
    }
    for (const ctd::BilateralAlgorithm algorithm : {ctd::BilateralAlgorithm::Auto, ctd::BilateralAlgorithm::Compressive}) {
      ctd::BilateralParams bf;
      bf.sigma_spatial = 1.5f;
      bf.sigma_range = 200;
      bf.algorithm = algorithm;
      expect_int16_as_float(
          dims, 11, [&](auto in, auto out) { return ctd::bilateral(in, out, bf, context); },
          [&](auto in, auto out) { return ctd::bilateral(in, out, bf, context); });
    }
  }
}

}  // namespace testing_util
