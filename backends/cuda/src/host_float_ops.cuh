// FP32 operations that give the reference's bits on the device too, NaN
// results included. Shared by every kernel that must match the reference bit
// for bit (element-wise quantize/dequantize, block math, layer math).
//
// Rounding: each operation is IEEE round-to-nearest on its own (__fadd_rn
// and friends on the device: no multiply-add contraction, no fast math).
//
// NaN results: host_add/sub/mul/div/sqrt are octet_math_add/sub/mul/div/sqrtf
// (<octet/octet_math.h>), the operations the reference backend computes with,
// so there is one definition of the rule: when the IEEE result is NaN, the
// first NaN operand in argument order, quieted (sign and payload kept), else
// the default NaN 0xFFC00000 (negative). A GPU's own canonical NaN would lose
// the sign that the FP8/BF16/FP16 encoders keep (0x7F vs 0xFF). Which operand
// is "first" is fixed by the reference's source (reference/src/*.cpp, which
// writes each expression as octet_backend.h and numerics.md do), not by any
// compiler: callers name the operands in that order, and the host math tests
// (tests/cuda_backend/*_math_host_test.cpp) check them against the reference
// with two different NaNs meeting at each operation.
#pragma once

#include <cstdint>

#if !defined(__CUDA_ARCH__)
#include <cmath>
#endif

#include <octet/octet_math.h>

#include "codecs.cuh"

namespace octet_cuda {

// IEEE round-to-nearest without the NaN rule, for operations that cannot
// give NaN where they are used.
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

OCTET_CUDA_HD bool is_nan(float x) { return (bits_of(x) & 0x7FFFFFFFu) > 0x7F800000u; }
OCTET_CUDA_HD bool is_finite(float x) { return (bits_of(x) & 0x7F800000u) != 0x7F800000u; }
OCTET_CUDA_HD float abs_value(float x) { return float_of(bits_of(x) & 0x7FFFFFFFu); }
OCTET_CUDA_HD float negated(float x) { return float_of(bits_of(x) ^ 0x80000000u); }

// IEEE result, or octet_math.h's NaN rule when that is NaN.
OCTET_CUDA_HD float host_add(float a, float b) { return octet_math_add(a, b); }
OCTET_CUDA_HD float host_sub(float a, float b) { return octet_math_sub(a, b); }
OCTET_CUDA_HD float host_mul(float a, float b) { return octet_math_mul(a, b); }
OCTET_CUDA_HD float host_div(float a, float b) { return octet_math_div(a, b); }
OCTET_CUDA_HD float host_sqrt(float a) { return octet_math_sqrtf(a); }

}  // namespace octet_cuda
