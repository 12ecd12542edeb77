// The output's statistics that a filter run on CUDA from host memory measures on the GPU when
// asked (ExecContext::output_statistics), against sums in double over the downloaded output
// written here, for NLM and the bilateral variants (whole volumes and slabs), float32 and int16
// input, one voxel to volumes larger than the reduction's grid. Without a CUDA device every test
// here is skipped, never passed.

#include "common/test_util.hpp"

#include <ctdenoise/ctdenoise.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace {

#define CTD_REQUIRE_CUDA_DEVICE() \
  if (ctd::cuda_device_name().empty()) GTEST_SKIP() << "no CUDA device"

struct Expected {
  double min, max, mean, std;
};

// Naive: one pass in double, in index order.
Expected naive_statistics(const ctd::Volume& v) {
  double lo = v.data()[0], hi = v.data()[0], sum = 0;
  for (std::int64_t i = 0; i < v.size(); ++i) {
    lo = std::min(lo, double(v.data()[i]));
    hi = std::max(hi, double(v.data()[i]));
    sum += v.data()[i];
  }
  const double mean = sum / double(v.size());
  double squares = 0;
  for (std::int64_t i = 0; i < v.size(); ++i) squares += (v.data()[i] - mean) * (v.data()[i] - mean);
  return {lo, hi, mean, std::sqrt(squares / double(v.size()))};
}

void expect_matches(const ctd::FilterRun& run, const ctd::Volume& out, const std::string& what) {
  ASSERT_TRUE(run.output_statistics.has_value()) << what;
  const ctd::Statistics& s = *run.output_statistics;
  const Expected e = naive_statistics(out);
  EXPECT_EQ(s.min, e.min) << what;
  EXPECT_EQ(s.max, e.max) << what;
  const double scale = std::max(std::fabs(e.mean), e.std) + 1;
  EXPECT_NEAR(s.mean, e.mean, 1e-9 * scale) << what;
  // sum2 / n - mean^2 loses digits where the mean is large beside the spread.
  EXPECT_NEAR(s.std, e.std, 1e-6 * scale) << what;
}

using Run = std::function<ctd::FilterRun(const ctd::Volume& in, const std::vector<std::int16_t>& in16, bool int16,
                                         ctd::Volume& out, const ctd::ExecContext& context)>;

void check_filter(const std::string& name, const Run& run, const std::vector<ctd::Dims>& sizes) {
  for (const ctd::Dims& dims : sizes) {
    // Integers from about -1100 to +300, as CT in HU (the mean far from 0 beside the spread).
    ctd::Volume in = testing_util::structured_volume(dims, 31);
    std::vector<std::int16_t> in16(std::size_t(in.size()));
    for (std::size_t i = 0; i < in16.size(); ++i) {
      in16[i] = std::int16_t(std::lround(in.data()[i] * 7 - 600));
      in.data()[i] = float(in16[i]);
    }
    for (bool int16 : {false, true}) {
      const std::string what = name + " " + std::to_string(dims.nx) + "x" + std::to_string(dims.ny) + "x" +
                               std::to_string(dims.nz) + (int16 ? " int16" : " float32");
      ctd::ExecContext cuda;
      cuda.device = ctd::Device::Cuda;
      ctd::Volume plain(dims);
      EXPECT_FALSE(run(in, in16, int16, plain, cuda).output_statistics.has_value()) << what << ": not asked for";
      cuda.output_statistics = true;
      ctd::Volume out(dims);
      const ctd::FilterRun first = run(in, in16, int16, out, cuda);
      expect_matches(first, out, what);
      EXPECT_TRUE(testing_util::bit_identical(out, plain)) << what << ": the output does not change";
      const ctd::FilterRun again = run(in, in16, int16, out, cuda);
      ASSERT_TRUE(again.output_statistics && first.output_statistics);
      EXPECT_EQ(again.output_statistics->mean, first.output_statistics->mean) << what << ": the same figures every run";
      EXPECT_EQ(again.output_statistics->std, first.output_statistics->std) << what;
    }
  }
}

// One voxel, tiny, odd, larger than the reduction's grid (1024 x 256 voxels), and a fused
// bilateral volume large enough to go up and down in slabs (over 16 MiB, 70 slices).
const std::vector<ctd::Dims> kSizes = {{1, 1, 1}, {3, 2, 1}, {37, 29, 5}, {611, 503, 1}};

TEST(OutputStatisticsCuda, NlmMeasuresItsOutputOnTheGpu) {
  CTD_REQUIRE_CUDA_DEVICE();
  ctd::NlmParams p;
  p.search_radius = 2;
  p.patch_radius = 1;
  p.h = 40;
  check_filter("NLM", [&](const ctd::Volume& in, const std::vector<std::int16_t>& in16, bool int16, ctd::Volume& out,
                          const ctd::ExecContext& context) {
    return int16 ? ctd::nlm(ctd::ConstVolumeView<std::int16_t>{in16.data(), in.dims()}, out.view(), p, context)
                 : ctd::nlm(in.view(), out.view(), p, context);
  }, kSizes);
}

TEST(OutputStatisticsCuda, BilateralMeasuresItsOutputOnTheGpuWholeOrInSlabs) {
  CTD_REQUIRE_CUDA_DEVICE();
  for (const ctd::BilateralAlgorithm algorithm :
       {ctd::BilateralAlgorithm::Fused, ctd::BilateralAlgorithm::Tiled, ctd::BilateralAlgorithm::Compressive}) {
    ctd::BilateralParams p;
    p.sigma_spatial = 1.0f;
    p.sigma_range = 60;
    p.algorithm = algorithm;
    std::vector<ctd::Dims> sizes = kSizes;
    if (algorithm == ctd::BilateralAlgorithm::Fused) sizes.push_back({301, 257, 70});
    check_filter(std::string(ctd::to_string(algorithm)),
                 [&](const ctd::Volume& in, const std::vector<std::int16_t>& in16, bool int16, ctd::Volume& out,
                     const ctd::ExecContext& context) {
                   const ctd::FilterRun run =
                       int16 ? ctd::bilateral(ctd::ConstVolumeView<std::int16_t>{in16.data(), in.dims()}, out.view(), p,
                                              context)
                             : ctd::bilateral(in.view(), out.view(), p, context);
                   if (in.dims().nz == 70) {
                     EXPECT_EQ(run.details.count("overlapped"), 1u) << "went in slabs";
                   }
                   return run;
                 },
                 sizes);
  }
}

TEST(OutputStatisticsCuda, NotMeasuredOnTheCpu) {
  // Runs without a device too: the CPU leaves the figures to the caller.
  ctd::ExecContext cpu;
  cpu.device = ctd::Device::Cpu;
  cpu.output_statistics = true;
  const ctd::Volume in = testing_util::structured_volume({19, 17, 3}, 5);
  ctd::Volume out(in.dims());
  ctd::NlmParams p;
  p.h = 30;
  EXPECT_FALSE(ctd::nlm(in.view(), out.view(), p, cpu).output_statistics.has_value());
}

}  // namespace
