// The activation rows as scalar loops over the reference's expressions,
// operation for operation, on octet_math.h's FP32 operations (so a NaN
// result is the one numerics.md section 13 names) and its tanhf and expf.
// Included by elementwise/activation_rows_portable.cpp (the baseline target) and by
// elementwise/activation_rows_avx2.cpp after a target pragma for AVX2 + FMA, where
// octet_math.h's fma() calls become instructions instead of libm calls;
// the contents are in an anonymous namespace on purpose (each translation
// unit compiles its own copy for its own target).
#pragma once

#include <octet/octet_math.h>

#include <cstdint>

namespace octet_cpu {
namespace {

constexpr auto& add = octet_math_add;
constexpr auto& sub = octet_math_sub;
constexpr auto& mul = octet_math_mul;
constexpr auto& div = octet_math_div;

// tanh(0.7978845608 * (x + 0.044715 * x * x * x))
float gelu_tanh(float x) {
  const float cube = mul(mul(mul(0.044715f, x), x), x);
  return octet_math_tanhf(mul(0.7978845608f, add(x, cube)));
}

// 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * 0.7978845608 * (1 + 3 * 0.044715 * x * x)
float gelu_derivative(float x) {
  const float t = gelu_tanh(x);
  const float poly = add(1.0f, mul(mul(3.0f * 0.044715f, x), x));  // 3 * 0.044715: one FP32 constant
  return add(mul(0.5f, add(1.0f, t)), mul(mul(mul(mul(0.5f, x), sub(1.0f, mul(t, t))), 0.7978845608f), poly));
}

float sigmoid(float a) { return div(1.0f, add(1.0f, octet_math_expf(-a))); }

void gelu_rows(const float* x, int64_t n, float* y) {
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    y[i] = mul(mul(0.5f, v), add(1.0f, gelu_tanh(v)));
  }
}

void gelu_backward_rows(const float* x, const float* dy, int64_t n, float* dx) {
  for (int64_t i = 0; i < n; ++i) dx[i] = mul(dy[i], gelu_derivative(x[i]));
}

void swiglu_rows(const float* a, const float* b, int64_t n, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = mul(mul(a[i], sigmoid(a[i])), b[i]);
}

void swiglu_backward_rows(const float* a, const float* b, const float* dy, int64_t n, float* da, float* db) {
  for (int64_t i = 0; i < n; ++i) {
    const float d = dy[i], av = a[i], s = sigmoid(av);
    da[i] = mul(mul(d, b[i]), mul(s, add(1.0f, mul(av, sub(1.0f, s)))));
    db[i] = mul(d, mul(av, s));
  }
}

}  // namespace
}  // namespace octet_cpu
