// Helpers of the layer tests: contexts, host<->tensor copies, double-precision
// references and the quantizing reference of numerics.md.
#pragma once

#include <octet/octet.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace layers_test {

using Vec = std::vector<double>;

#define OK(call) ASSERT_EQ((call), OCTET_STATUS_SUCCESS) << octet_last_error_message()
#define EXPECT_OK(call) EXPECT_EQ((call), OCTET_STATUS_SUCCESS) << octet_last_error_message()

octet_context* make_context(const char* backend, int32_t profile);
// A rows x cols tensor through octet::Tensor::create (get() for the C calls);
// a failure to create it fails the test (octet::Error).
octet::Tensor make_tensor(octet_context* ctx, int32_t dtype, int64_t rows, int64_t cols);
void upload(octet_tensor* t, const Vec& values);   // rounds to the tensor's dtype
Vec download(const octet_tensor* t);
Vec random_vec(size_t n, uint32_t seed, double scale = 1.0);
// Values rounded to a dtype (what an upload stores).
Vec rounded(const Vec& v, int32_t dtype);
// FP8 round trip: decode(encode(x * scale)) / scale.
Vec fp8_round_trip(const Vec& v, int32_t dtype, double scale);

// Row-major GEMMs in double: y[m,n] = sum_k a[m,k] b[n,k].
Vec matmul_nt(const Vec& a, const Vec& b, int64_t m, int64_t n, int64_t k);
Vec transpose(const Vec& a, int64_t rows, int64_t cols);
// Per-element bound of numerics.md section 8 for y = a b^T (FP32 accumulation).
Vec gemm_bound(const Vec& a, const Vec& b, int64_t m, int64_t n, int64_t k);

void expect_close(const Vec& got, const Vec& want, double rel, double abs, const std::string& what);
void expect_within(const Vec& got, const Vec& want, const Vec& bound, const std::string& what);
void expect_identical(const Vec& a, const Vec& b, const std::string& what);

octet_tensor* param(octet_layer* layer, const char* name);
octet_tensor* grad(octet_layer* layer, const char* name);
uint64_t current_total(const octet_context* ctx);
uint64_t peak_total(const octet_context* ctx);
uint64_t current_of(const octet_context* ctx, int32_t category);

}  // namespace layers_test
