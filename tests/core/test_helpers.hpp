// Small RAII helpers for tests of the users' ABI, plus an independent
// double-precision GEMM to compare against.
#pragma once

#include <octet/octet.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <random>
#include <vector>

namespace octet_test {

struct ContextDeleter {
  void operator()(octet_context* c) const { octet_context_destroy(c); }
};
using ContextPtr = std::unique_ptr<octet_context, ContextDeleter>;
// An owned tensor: octet::Tensor (get() for the C calls, adopt() for a handle
// a C call created; assigning TensorPtr() destroys it).
using TensorPtr = octet::Tensor;

ContextPtr make_context(const char* backend, int32_t profile);
// A tensor through octet::Tensor::create: usages != 0 makes a quantized one,
// in scaling_mode (0: per-tensor); a failure to create it fails the test
// (octet::Error).
TensorPtr make_tensor(octet_context* ctx, int32_t dtype, std::vector<int64_t> shape, uint32_t usages = 0,
                      int32_t scaling_mode = 0);
TensorPtr make_fp32(octet_context* ctx, int64_t rows, int64_t cols, const std::vector<float>& values);
std::vector<float> random_values(size_t n, float scale, uint32_t seed);
// Quantizes `values` ([rows, cols]) with `scale` into a new per-tensor FP8 tensor.
TensorPtr quantized(octet_context* ctx, int64_t rows, int64_t cols, const std::vector<float>& values, int32_t dtype,
                    float scale, uint32_t usages);

template <typename T>
std::vector<T> read(const octet_tensor* t, int32_t component, size_t n) {
  std::vector<T> out(n);
  EXPECT_EQ(octet_tensor_copy_to_host(t, component, out.data(), n * sizeof(T)), OCTET_STATUS_SUCCESS)
      << octet_last_error_message();
  return out;
}

std::vector<uint32_t> float_bits(const std::vector<float>& v);

// Suites that must hold on every backend: parametrised over backend names,
// skipped (with the reason) where a backend is not registered or has no
// usable device. Instantiate with OCTET_INSTANTIATE_FOR_BACKENDS(Suite).
class BackendTest : public testing::TestWithParam<const char*> {
 protected:
  void SetUp() override;
  const char* backend() const { return GetParam(); }
};

#define OCTET_INSTANTIATE_FOR_BACKENDS(suite)                                              \
  INSTANTIATE_TEST_SUITE_P(Backends, suite, testing::Values("reference", "cpu", "cuda", "kokkos"), \
                           [](const testing::TestParamInfo<const char*>& info) { return std::string(info.param); })

}  // namespace octet_test
