// Helpers for the recipe tests: RAII handles over the C ABI and small
// independent re-implementations of the spec (numerics.md sections 7, 11 and 14) used to
// compute expectations. They use double arithmetic or explicit FP32 steps,
// never the library's code.
#pragma once

#include <octet/octet.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace recipes_test {

struct Del {
  void operator()(octet_context* c) const { octet_context_destroy(c); }
  void operator()(octet_recipe* r) const { octet_recipe_destroy(r); }
  void operator()(octet_quantizer* q) const { octet_quantizer_destroy(q); }
};
using Context = std::unique_ptr<octet_context, Del>;
// An owned tensor: get() for the C calls, adopt() for a handle a C call
// created.
using Tensor = octet::Tensor;
using Recipe = std::unique_ptr<octet_recipe, Del>;
using Quantizer = std::unique_ptr<octet_quantizer, Del>;

Context make_context(const char* backend = "reference");
// A rows x cols tensor through octet::Tensor::create (scaling_mode 0:
// per-tensor); a failure to create it fails the test (octet::Error).
Tensor make_tensor(octet_context* ctx, int32_t dtype, int64_t rows, int64_t cols, uint32_t usages = 0,
                   int32_t scaling_mode = 0);
Tensor make_fp32(octet_context* ctx, int64_t rows, int64_t cols, const std::vector<float>& values);
Quantizer make_quantizer(const octet_recipe* recipe, int32_t role);
std::vector<uint8_t> read_bytes(const octet_tensor* t, int32_t component, size_t n);
std::vector<float> read_floats(const octet_tensor* t, int32_t component, size_t n);
std::vector<float> random_values(size_t n, float sigma, uint32_t seed);

// The value of an FP8 code, from its bit fields (double, exact).
double fp8_value(uint8_t code, int32_t dtype);
// Independent FP8 saturating encoder: the nearest code by exhaustive search
// over the finite codes (ties to the even code), clamped to +-max; NaN gives
// the NaN code with the sign.
uint8_t fp8_encode_sat(float x, int32_t dtype);
float fp8_max(int32_t dtype);

// octet_quantizer_save into a vector of the size it asks for.
std::vector<uint8_t> save(const octet_quantizer* q);
// Whether a backend of that name is registered and available.
bool backend_registered(const char* name);
// Registered and available, loading the plugin at `path` (may be NULL) if
// it is not yet.
bool load_backend(const char* name, const char* path);

}  // namespace recipes_test
