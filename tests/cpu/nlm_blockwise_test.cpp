// Blockwise NLM (approximate): it must denoise about as well as the exact filter, deterministically.

#include "common/test_util.hpp"

#include <ctdenoise/ctdenoise.hpp>

#include <random>

namespace {

ctd::Volume clean_phantom(ctd::Dims dims) {
  ctd::Volume v(dims);
  for (std::int64_t z = 0; z < dims.nz; ++z)
    for (std::int64_t y = 0; y < dims.ny; ++y)
      for (std::int64_t x = 0; x < dims.nx; ++x) {
        const double fx = (x - dims.nx / 2.0) / dims.nx, fy = (y - dims.ny / 2.0) / dims.ny;
        v.view()(x, y, z) = fx * fx + fy * fy < 0.1 ? (fx > 0 ? 200.0f : 60.0f) : -100.0f;
      }
  return v;
}

TEST(NlmBlockwise, DenoisesNearlyAsWellAsTheExactFilter) {
  for (ctd::Dims dims : {ctd::Dims{96, 80, 1}, ctd::Dims{40, 36, 20}}) {
    const ctd::Volume clean = clean_phantom(dims);
    ctd::Volume noisy = clean;
    std::mt19937 rng(9);
    std::normal_distribution<float> noise(0, 30);
    for (std::int64_t i = 0; i < noisy.size(); ++i) noisy.data()[i] += noise(rng);
    ctd::NlmParams p;
    p.h = 2.8f * 30;
    p.search_radius = 4;
    ctd::Volume exact(dims), blockwise(dims);
    ctd::nlm(noisy.view(), exact.view(), p);
    p.algorithm = ctd::NlmAlgorithm::Blockwise;
    const auto run = ctd::nlm(noisy.view(), blockwise.view(), p);
    EXPECT_EQ(run.algorithm, "blockwise");
    const double range = 300;
    const double noisy_db = ctd::psnr(clean.view(), noisy.view(), range);
    const double exact_db = ctd::psnr(clean.view(), exact.view(), range);
    const double block_db = ctd::psnr(clean.view(), blockwise.view(), range);
    EXPECT_GT(block_db, noisy_db + 5) << "nz=" << dims.nz;
    EXPECT_GT(block_db, exact_db - 1.5) << "nz=" << dims.nz << " exact " << exact_db;
    EXPECT_FALSE(testing_util::bit_identical(exact, blockwise)) << "an approximation, not the exact filter";
    RecordProperty("psnr_nz" + std::to_string(dims.nz),
                   std::to_string(noisy_db) + " noisy, " + std::to_string(exact_db) + " exact, " + std::to_string(block_db) + " blockwise");
  }
}

TEST(NlmBlockwise, DeterministicTinyImagesAndRefusals) {
  const ctd::Volume in = testing_util::structured_volume({23, 17, 7}, 2);
  ctd::NlmParams p;
  p.h = 40;
  p.search_radius = 3;
  p.algorithm = ctd::NlmAlgorithm::Blockwise;
  ctd::Volume a(in.dims()), b(in.dims());
  ctd::ExecContext one, many;
  one.threads = 1;
  many.threads = 3;
  ctd::nlm(in.view(), a.view(), p, one);
  ctd::nlm(in.view(), b.view(), p, many);
  EXPECT_TRUE(testing_util::bit_identical(a, b));
  for (ctd::Dims dims : {ctd::Dims{1, 1, 1}, ctd::Dims{3, 2, 1}, ctd::Dims{2, 3, 2}}) {
    const ctd::Volume tiny = testing_util::random_volume(dims, 1);
    ctd::Volume out(dims);
    ctd::nlm(tiny.view(), out.view(), p);
    for (std::int64_t i = 0; i < out.size(); ++i) EXPECT_TRUE(std::isfinite(out.data()[i]));
  }
  ctd::Volume out(in.dims());
  p.distance = ctd::PatchDistance::L1;
  EXPECT_TRUE(testing_util::throws_kind([&] { ctd::nlm(in.view(), out.view(), p); }, ctd::ErrorKind::Unsupported));
  p.distance = ctd::PatchDistance::L2;
  ctd::ExecContext cuda;
  cuda.device = ctd::Device::Cuda;
  if (!ctd::cuda_device_name().empty()) {
    EXPECT_TRUE(testing_util::throws_kind([&] { ctd::nlm(in.view(), out.view(), p, cuda); }, ctd::ErrorKind::Unsupported));
  }
}

}  // namespace
