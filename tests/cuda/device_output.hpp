#pragma once
// The device API's output for a host volume, for comparing it with the host API's.

#include <ctdenoise/volume.hpp>

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstddef>

namespace testing_util {

// `filter(d_in, d_out)` over a device copy of `in`, synchronised and copied back (the device
// memory is freed after).
template <class Filter>
ctd::Volume device_output(const ctd::Volume& in, Filter&& filter) {
  const std::size_t bytes = std::size_t(in.size()) * sizeof(float);
  ctd::Volume out(in.dims());
  float *d_in = nullptr, *d_out = nullptr;
  EXPECT_EQ(cudaMalloc(&d_in, bytes), cudaSuccess);
  EXPECT_EQ(cudaMalloc(&d_out, bytes), cudaSuccess);
  if (d_in && d_out) {
    EXPECT_EQ(cudaMemcpy(d_in, in.data(), bytes, cudaMemcpyHostToDevice), cudaSuccess);
    filter(static_cast<const float*>(d_in), d_out);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(out.data(), d_out, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  }
  cudaFree(d_in);
  cudaFree(d_out);
  return out;
}

}  // namespace testing_util
