/* Octet's own tanhf and expf, and FP32 + - * / sqrt with defined NaN results
 * (below). tanhf and expf are the transcendental functions of the GELU and
 * SwiGLU kernels (octet_backend.h's activation entries, and the GEMM's GELU
 * epilogue). Every backend that must reproduce the reference's bits calls
 * these instead of its platform's libm, whose last bits differ between
 * libraries, versions and devices (glibc's tanhf changed in 2.41; a GPU's
 * tanhf is another function again).
 *
 * Header-only C99 (also C++ and CUDA: __host__ __device__ under nvcc). The
 * functions are fixed sequences of IEEE binary64 operations: every multiply
 * that meets an add is written as fma(), and no bare product feeds an add,
 * so floating-point contraction (-ffp-contract=fast, nvcc --fmad=true) has
 * nothing to fuse and every compiler gives the same bits. Accuracy: the
 * binary64 value is within a few units of 2^-52 relative of the true
 * function, so the FP32 result is the correctly rounded one except, rarely,
 * next to a rounding midpoint (tests/reference/octet_math_test.cpp sweeps
 * the FP32 line against long double).
 *
 * NaN inputs return the input quieted (sign and payload kept), as x86 does.
 *
 * FP32 arithmetic with defined NaN results: octet_math_add, octet_math_sub,
 * octet_math_mul, octet_math_div, octet_math_sqrtf. Each is one IEEE
 * operation rounded to nearest even (on the device __fadd_rn and friends, so
 * nothing is contracted into a multiply-add; on the host each result is also
 * read by the NaN check, which keeps a compiler from fusing it). When the
 * IEEE result is NaN, the result is:
 *   - the first NaN operand in argument order, quieted (sign and payload
 *     kept, quiet bit 0x00400000 set): octet_math_add(a, b) with both a and b
 *     NaN returns a quieted, whatever b is (signalling or not);
 *   - otherwise (an invalid operation on non-NaN operands: inf - inf,
 *     0 * inf, 0 / 0, inf / inf, sqrt of a negative number) the default NaN
 *     0xFFC00000, which is negative.
 * That is x86 SSE's rule, with "first" fixed by the call instead of by the
 * compiler (which may swap the operands of a + or *), and it holds on any
 * host (AArch64's default NaN is 0x7FC00000) and on the device (a GPU returns
 * one canonical NaN). The FP8/BF16/FP16 encoders keep a NaN's sign, so every
 * FP32 operation whose NaN can reach an encoded result goes through these. */
#ifndef OCTET_OCTET_MATH_H
#define OCTET_OCTET_MATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#if defined(__CUDACC__)
#define OCTET_MATH_FN static inline __host__ __device__
#else
#define OCTET_MATH_FN static inline
#endif

OCTET_MATH_FN uint32_t octet_math_bits_(float v) {
  uint32_t b;
  memcpy(&b, &v, sizeof b);
  return b;
}

OCTET_MATH_FN float octet_math_float_(uint32_t b) {
  float v;
  memcpy(&v, &b, sizeof v);
  return v;
}

/* 2^k for -1022 <= k <= 1023, exactly. */
OCTET_MATH_FN double octet_math_pow2_(int k) {
  const uint64_t b = (uint64_t)(k + 1023) << 52;
  double v;
  memcpy(&v, &b, sizeof v);
  return v;
}

/* e^r - 1 for |r| <= 0.35: Taylor series to r^13 (truncation below 2^-53
 * relative there) by Horner's rule, one fma per step. */
OCTET_MATH_FN double octet_math_expm1_reduced_(double r) {
  double q = 1.0 / 6227020800.0; /* 1/13! */
  q = fma(q, r, 1.0 / 479001600.0);
  q = fma(q, r, 1.0 / 39916800.0);
  q = fma(q, r, 1.0 / 3628800.0);
  q = fma(q, r, 1.0 / 362880.0);
  q = fma(q, r, 1.0 / 40320.0);
  q = fma(q, r, 1.0 / 5040.0);
  q = fma(q, r, 1.0 / 720.0);
  q = fma(q, r, 1.0 / 120.0);
  q = fma(q, r, 1.0 / 24.0);
  q = fma(q, r, 1.0 / 6.0);
  q = fma(q, r, 0.5);
  q = fma(q, r, 1.0);
  return fma(q, r, 0.0); /* q * r, written so that no caller's add can fuse it */
}

/* y = k ln2 + r with |r| <= ln2/2 (Cody-Waite: ln2_hi has 21 trailing zero
 * bits, so k * ln2_hi is exact for the |k| < 2^21 used here). */
OCTET_MATH_FN double octet_math_reduce_(double y, int* k) {
  const double ln2_hi = 6.93147180369123816490e-01; /* 0x3FE62E42FEE00000 */
  const double ln2_lo = 1.90821492927058770002e-10; /* 0x3DEA39EF35793C76 */
  const double inv_ln2 = 1.44269504088896338700e+00;
  const double kd = rint(y * inv_ln2);
  *k = (int)kd;
  return fma(-kd, ln2_lo, fma(-kd, ln2_hi, y));
}

/* e^y - 1 in binary64 for 0 <= y <= 20, rounded once after the reduction. */
OCTET_MATH_FN double octet_math_expm1_(double y) {
  int k;
  const double r = octet_math_reduce_(y, &k);
  const double p = octet_math_expm1_reduced_(r);
  if (k == 0) return p;
  {
    const double scale = octet_math_pow2_(k);
    return fma(p, scale, scale - 1.0); /* 2^k (1 + p) - 1; 2^k - 1 is exact for k <= 53 */
  }
}

/* tanh(x) for FP32 x. */
OCTET_MATH_FN float octet_math_tanhf(float x) {
  const uint32_t bits = octet_math_bits_(x);
  const uint32_t abs_bits = bits & 0x7FFFFFFFu;
  float z;
  if (abs_bits > 0x7F800000u) return octet_math_float_(bits | 0x00400000u);
  if (abs_bits >= 0x41180000u) {
    /* |x| >= 9.5: 1 - tanh|x| < 2^-26, so the FP32 result is 1. */
    z = 1.0f;
  } else if (abs_bits < 0x39800000u) {
    /* |x| < 2^-12: tanh a = a - a^3/3 + O(a^5), the last term below 2^-48 a. */
    const double a = (double)octet_math_float_(abs_bits);
    const double a2 = a * a; /* exact: 24-bit significands */
    z = (float)fma(a2 * (-1.0 / 3.0), a, a);
  } else {
    /* tanh a = (e^2a - 1) / (e^2a - 1 + 2), no cancellation for a > 0. */
    const double e = octet_math_expm1_(2.0 * (double)octet_math_float_(abs_bits));
    z = (float)(e / (e + 2.0));
  }
  return octet_math_float_(octet_math_bits_(z) | (bits & 0x80000000u));
}

/* e^x for FP32 x. */
OCTET_MATH_FN float octet_math_expf(float x) {
  const uint32_t bits = octet_math_bits_(x);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return octet_math_float_(bits | 0x00400000u);
  /* e^x > FLT_MAX beyond 88.73, below half the smallest subnormal before -103.98. */
  if (x > 100.0f) return octet_math_float_(0x7F800000u);
  if (x < -104.0f) return 0.0f;
  {
    int k;
    const double r = octet_math_reduce_((double)x, &k);
    const double p = octet_math_expm1_reduced_(r);
    const double scale = octet_math_pow2_(k);
    return (float)fma(p, scale, scale); /* 2^k (1 + p), rounded once to binary64, then to FP32 */
  }
}

/* ---- FP32 arithmetic with defined NaN results (rule at the top) ---- */

OCTET_MATH_FN int octet_math_is_nan_(uint32_t bits) { return (bits & 0x7FFFFFFFu) > 0x7F800000u; }

/* The NaN result of an operation on a and b whose IEEE result is NaN (for
 * sqrt, a and a): the first NaN operand quieted, else the default NaN. */
OCTET_MATH_FN float octet_math_nan_result(float a, float b) {
  const uint32_t a_bits = octet_math_bits_(a);
  const uint32_t b_bits = octet_math_bits_(b);
  if (octet_math_is_nan_(a_bits)) return octet_math_float_(a_bits | 0x00400000u);
  if (octet_math_is_nan_(b_bits)) return octet_math_float_(b_bits | 0x00400000u);
  return octet_math_float_(0xFFC00000u);
}

/* r, or the rule's NaN when r is NaN. */
OCTET_MATH_FN float octet_math_defined_nan_(float r, float a, float b) {
  return octet_math_is_nan_(octet_math_bits_(r)) ? octet_math_nan_result(a, b) : r;
}

/* a + b */
OCTET_MATH_FN float octet_math_add(float a, float b) {
#if defined(__CUDA_ARCH__)
  return octet_math_defined_nan_(__fadd_rn(a, b), a, b);
#else
  return octet_math_defined_nan_(a + b, a, b);
#endif
}

/* a - b */
OCTET_MATH_FN float octet_math_sub(float a, float b) {
#if defined(__CUDA_ARCH__)
  return octet_math_defined_nan_(__fsub_rn(a, b), a, b);
#else
  return octet_math_defined_nan_(a - b, a, b);
#endif
}

/* a * b */
OCTET_MATH_FN float octet_math_mul(float a, float b) {
#if defined(__CUDA_ARCH__)
  return octet_math_defined_nan_(__fmul_rn(a, b), a, b);
#else
  return octet_math_defined_nan_(a * b, a, b);
#endif
}

/* a / b */
OCTET_MATH_FN float octet_math_div(float a, float b) {
#if defined(__CUDA_ARCH__)
  return octet_math_defined_nan_(__fdiv_rn(a, b), a, b);
#else
  return octet_math_defined_nan_(a / b, a, b);
#endif
}

/* sqrt(a), correctly rounded (IEEE requires it; so do sqrtf and __fsqrt_rn). */
OCTET_MATH_FN float octet_math_sqrtf(float a) {
#if defined(__CUDA_ARCH__)
  return octet_math_defined_nan_(__fsqrt_rn(a), a, a);
#else
  return octet_math_defined_nan_(sqrtf(a), a, a);
#endif
}

#endif /* OCTET_OCTET_MATH_H */
