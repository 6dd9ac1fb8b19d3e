/* Octet's own tanhf and expf: the transcendental functions of the GELU and
 * SwiGLU kernels (octet_backend.h, plugin ABI 1.2, and the GEMM's GELU
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
 * NaN inputs return the input quieted (sign and payload kept), as x86 does. */
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

#endif /* OCTET_OCTET_MATH_H */
