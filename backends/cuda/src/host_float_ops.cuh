// FP32 operations that give the reference host's bits on the device too,
// NaN results included. Shared by every kernel that must match the reference
// bit for bit (element-wise quantize/dequantize, block math, layer math).
//
// Rounding: each operation is IEEE round-to-nearest on its own (__fadd_rn
// and friends on the device: no multiply-add contraction, no fast math).
//
// NaN results: the reference runs on x86 (SSE scalar arithmetic), where an
// operation with a NaN operand returns that NaN quieted (the first operand's
// when both are NaN) and an invalid operation (0 * inf, inf - inf, 0 / 0,
// sqrt(-1)) returns the "default NaN" 0xFFC00000, which is negative. A GPU
// returns one canonical NaN instead, losing the sign that the FP8/BF16/FP16
// encoders keep (0x7F vs 0xFF). The host_* operations give the x86 answer on
// both sides. Which operand is "first" for + and * is the reference build's
// choice (a compiler may swap commutative operands): callers name the
// operands in the order that build uses, and the host math tests
// (tests/cuda_backend/*_math_host_test.cpp) pin that order.
#pragma once

#include <cstdint>

#if !defined(__CUDA_ARCH__)
#include <cmath>
#endif

#include "codecs.cuh"

namespace octet_cuda {

OCTET_CUDA_HD float rn_add(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
OCTET_CUDA_HD float rn_sub(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}
OCTET_CUDA_HD float rn_mul(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
OCTET_CUDA_HD float rn_div(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}
OCTET_CUDA_HD float rn_sqrt(float a) {
#if defined(__CUDA_ARCH__)
  return __fsqrt_rn(a);
#else
  return std::sqrt(a);
#endif
}

OCTET_CUDA_HD bool is_nan(float x) { return (bits_of(x) & 0x7FFFFFFFu) > 0x7F800000u; }
OCTET_CUDA_HD bool is_finite(float x) { return (bits_of(x) & 0x7F800000u) != 0x7F800000u; }
OCTET_CUDA_HD float abs_value(float x) { return float_of(bits_of(x) & 0x7FFFFFFFu); }
OCTET_CUDA_HD float negated(float x) { return float_of(bits_of(x) ^ 0x80000000u); }
OCTET_CUDA_HD float quieted(float nan) { return float_of(bits_of(nan) | 0x00400000u); }

constexpr uint32_t kHostDefaultNan = 0xFFC00000u;  // x86's result of an invalid operation

// What an x86 SSE operation returns when its IEEE result is NaN.
OCTET_CUDA_HD float x86_nan(float first, float second) {
  if (is_nan(first)) return quieted(first);
  if (is_nan(second)) return quieted(second);
  return float_of(kHostDefaultNan);
}

OCTET_CUDA_HD float host_add(float a, float b) {
  const float r = rn_add(a, b);
  return is_nan(r) ? x86_nan(a, b) : r;
}
OCTET_CUDA_HD float host_sub(float a, float b) {
  const float r = rn_sub(a, b);
  return is_nan(r) ? x86_nan(a, b) : r;
}
OCTET_CUDA_HD float host_mul(float a, float b) {
  const float r = rn_mul(a, b);
  return is_nan(r) ? x86_nan(a, b) : r;
}
OCTET_CUDA_HD float host_div(float a, float b) {
  const float r = rn_div(a, b);
  return is_nan(r) ? x86_nan(a, b) : r;
}
OCTET_CUDA_HD float host_sqrt(float a) {
  const float r = rn_sqrt(a);
  return is_nan(r) ? x86_nan(a, a) : r;
}

}  // namespace octet_cuda
