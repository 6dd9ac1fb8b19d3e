// AVX-512 (F/DQ) activation rows (elementwise/activation_rows.hpp), 16 elements at a
// time, tails through masked loads and stores.
//
// Bit for bit the portable rows: octet_math.h's tanhf and expf are fixed
// sequences of binary64 operations (multiplies, fmas, one division, rint,
// scaling by 2^k), each correctly rounded, so the same sequence on 8 binary64
// lanes gives the same bits; their branches become masks, every branch is
// computed and the lane takes its own. The FP32 parts are the formulas'
// operations in their order, one instruction each (nothing is fused). A
// NaN result is the first NaN operand, quieted, or the default NaN
// 0xFFC00000, the hardware's rule and numerics.md's, except where two
// operands hold different NaNs: only inputs carry a NaN of their own, so a
// run of 16 with a NaN input goes to the portable rows, which order the
// operands as the formula does.
#include "elementwise/activation_rows.hpp"

#include <immintrin.h>

#include "dispatch/isa.hpp"

#if defined(__GNUC__) && defined(__x86_64__)
#define OCTET_CPU_HAVE_AVX512_ACTIVATIONS 1
#pragma GCC push_options
#pragma GCC target("avx512f,avx512dq,avx512vl,avx512bw")
// GCC 12's AVX-512 headers start masked intrinsics from _mm*_undefined_*().
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace octet_cpu {
namespace {

// octet_math_expm1_reduced_: e^r - 1 for |r| <= 0.35, Horner, one fma a step.
inline __m512d expm1_reduced(__m512d r) {
  __m512d q = _mm512_set1_pd(1.0 / 6227020800.0);
  q = _mm512_fmadd_pd(q, r, _mm512_set1_pd(1.0 / 479001600.0));
  q = _mm512_fmadd_pd(q, r, _mm512_set1_pd(1.0 / 39916800.0));
  q = _mm512_fmadd_pd(q, r, _mm512_set1_pd(1.0 / 3628800.0));
  q = _mm512_fmadd_pd(q, r, _mm512_set1_pd(1.0 / 362880.0));
  q = _mm512_fmadd_pd(q, r, _mm512_set1_pd(1.0 / 40320.0));
  q = _mm512_fmadd_pd(q, r, _mm512_set1_pd(1.0 / 5040.0));
  q = _mm512_fmadd_pd(q, r, _mm512_set1_pd(1.0 / 720.0));
  q = _mm512_fmadd_pd(q, r, _mm512_set1_pd(1.0 / 120.0));
  q = _mm512_fmadd_pd(q, r, _mm512_set1_pd(1.0 / 24.0));
  q = _mm512_fmadd_pd(q, r, _mm512_set1_pd(1.0 / 6.0));
  q = _mm512_fmadd_pd(q, r, _mm512_set1_pd(0.5));
  q = _mm512_fmadd_pd(q, r, _mm512_set1_pd(1.0));
  return _mm512_fmadd_pd(q, r, _mm512_setzero_pd());
}

// octet_math_reduce_: y = k ln2 + r (Cody-Waite); k as 64-bit integers.
inline __m512d reduce(__m512d y, __m512i* k) {
  const __m512d kd = _mm512_roundscale_pd(_mm512_mul_pd(y, _mm512_set1_pd(1.44269504088896338700e+00)),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  *k = _mm512_cvtpd_epi64(kd);  // kd is an integer: exact
  const __m512d minus_kd = _mm512_xor_pd(kd, _mm512_set1_pd(-0.0));
  const __m512d hi = _mm512_fmadd_pd(minus_kd, _mm512_set1_pd(6.93147180369123816490e-01), y);
  return _mm512_fmadd_pd(minus_kd, _mm512_set1_pd(1.90821492927058770002e-10), hi);
}

// octet_math_pow2_: 2^k for -1022 <= k <= 1023 (other lanes: any value).
inline __m512d pow2(__m512i k) {
  return _mm512_castsi512_pd(_mm512_slli_epi64(_mm512_add_epi64(k, _mm512_set1_epi64(1023)), 52));
}

// octet_math_expm1_: e^y - 1 for 0 <= y <= 20.
inline __m512d expm1(__m512d y) {
  __m512i k;
  const __m512d p = expm1_reduced(reduce(y, &k));
  const __m512d scale = pow2(k);
  const __m512d scaled = _mm512_fmadd_pd(p, scale, _mm512_sub_pd(scale, _mm512_set1_pd(1.0)));
  return _mm512_mask_blend_pd(_mm512_cmpeq_epi64_mask(k, _mm512_setzero_si512()), scaled, p);
}

// The 16 FP32 lanes of v as two vectors of 8 binary64 values, and back.
inline __m512d low_half(__m512 v) { return _mm512_cvtps_pd(_mm512_castps512_ps256(v)); }
inline __m512d high_half(__m512 v) { return _mm512_cvtps_pd(_mm512_extractf32x8_ps(v, 1)); }
inline __m512 join(__m512d lo, __m512d hi) {  // each lane rounded to FP32, to nearest even
  return _mm512_insertf32x8(_mm512_castps256_ps512(_mm512_cvtpd_ps(lo)), _mm512_cvtpd_ps(hi), 1);
}

// tanh a for 2^-12 <= a < 9.5: (e^2a - 1) / (e^2a - 1 + 2), in binary64.
inline __m512d tanh_middle(__m512d a) {
  const __m512d e = expm1(_mm512_mul_pd(_mm512_set1_pd(2.0), a));
  return _mm512_div_pd(e, _mm512_add_pd(e, _mm512_set1_pd(2.0)));
}

// tanh a for a < 2^-12: a - a^3 / 3 as fma(a * a * (-1/3), a, a).
inline __m512d tanh_small(__m512d a) {
  const __m512d a2 = _mm512_mul_pd(a, a);
  return _mm512_fmadd_pd(_mm512_mul_pd(a2, _mm512_set1_pd(-1.0 / 3.0)), a, a);
}

// e^x for -104 <= x <= 100: 2^k (1 + p), rounded once to binary64.
inline __m512d exp_in_range(__m512d x) {
  __m512i k;
  const __m512d p = expm1_reduced(reduce(x, &k));
  const __m512d scale = pow2(k);
  return _mm512_fmadd_pd(p, scale, scale);
}

// octet_math_tanhf on 16 lanes.
inline __m512 tanhf16(__m512 x) {
  const __m512i bits = _mm512_castps_si512(x);
  const __m512i abs_bits = _mm512_and_si512(bits, _mm512_set1_epi32(0x7FFFFFFF));
  const __m512 a = _mm512_castsi512_ps(abs_bits);
  const __m512d a_lo = low_half(a), a_hi = high_half(a);
  __m512 z = join(tanh_middle(a_lo), tanh_middle(a_hi));
  z = _mm512_mask_mov_ps(z, _mm512_cmplt_epu32_mask(abs_bits, _mm512_set1_epi32(0x39800000)),
                         join(tanh_small(a_lo), tanh_small(a_hi)));
  z = _mm512_mask_mov_ps(z, _mm512_cmpge_epu32_mask(abs_bits, _mm512_set1_epi32(0x41180000)), _mm512_set1_ps(1.0f));
  __m512i out = _mm512_or_si512(_mm512_castps_si512(z), _mm512_and_si512(bits, _mm512_set1_epi32(int(0x80000000u))));
  // NaN: the input quieted.
  const __mmask16 nan = _mm512_cmpgt_epu32_mask(abs_bits, _mm512_set1_epi32(0x7F800000));
  out = _mm512_mask_mov_epi32(out, nan, _mm512_or_si512(bits, _mm512_set1_epi32(0x00400000)));
  return _mm512_castsi512_ps(out);
}

// octet_math_expf on 16 lanes.
inline __m512 expf16(__m512 x) {
  __m512 out = join(exp_in_range(low_half(x)), exp_in_range(high_half(x)));
  out = _mm512_mask_mov_ps(out, _mm512_cmp_ps_mask(x, _mm512_set1_ps(100.0f), _CMP_GT_OQ),
                           _mm512_castsi512_ps(_mm512_set1_epi32(0x7F800000)));
  out = _mm512_mask_mov_ps(out, _mm512_cmp_ps_mask(x, _mm512_set1_ps(-104.0f), _CMP_LT_OQ), _mm512_setzero_ps());
  const __m512i bits = _mm512_castps_si512(x);
  const __mmask16 nan =
      _mm512_cmpgt_epu32_mask(_mm512_and_si512(bits, _mm512_set1_epi32(0x7FFFFFFF)), _mm512_set1_epi32(0x7F800000));
  return _mm512_mask_mov_ps(out, nan, _mm512_castsi512_ps(_mm512_or_si512(bits, _mm512_set1_epi32(0x00400000))));
}

inline __m512 mul(__m512 a, __m512 b) { return _mm512_mul_ps(a, b); }
inline __m512 add(__m512 a, __m512 b) { return _mm512_add_ps(a, b); }
inline __m512 sub(__m512 a, __m512 b) { return _mm512_sub_ps(a, b); }
inline __m512 c(float v) { return _mm512_set1_ps(v); }

inline __m512 gelu_tanh16(__m512 x) {
  const __m512 cube = mul(mul(mul(c(0.044715f), x), x), x);
  return tanhf16(mul(c(0.7978845608f), add(x, cube)));
}

inline __m512 gelu16(__m512 x) { return mul(mul(c(0.5f), x), add(c(1.0f), gelu_tanh16(x))); }

inline __m512 gelu_derivative16(__m512 x) {
  const __m512 t = gelu_tanh16(x);
  const __m512 poly = add(c(1.0f), mul(mul(c(3.0f * 0.044715f), x), x));
  return add(mul(c(0.5f), add(c(1.0f), t)),
             mul(mul(mul(mul(c(0.5f), x), sub(c(1.0f), mul(t, t))), c(0.7978845608f)), poly));
}

inline __m512 sigmoid16(__m512 a) { return _mm512_div_ps(c(1.0f), add(c(1.0f), expf16(_mm512_xor_ps(a, c(-0.0f))))); }

inline __mmask16 tail_mask(int64_t left) { return left >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << left) - 1u); }

inline bool any_nan(__m512 v) { return _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q) != 0; }

void gelu_rows(const float* x, int64_t n, float* y) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = tail_mask(n - i);
    const __m512 v = _mm512_maskz_loadu_ps(m, x + i);
    if (any_nan(v)) {
      portable_activation_rows().gelu(x + i, n - i < 16 ? n - i : 16, y + i);
      continue;
    }
    _mm512_mask_storeu_ps(y + i, m, gelu16(v));
  }
}

void gelu_backward_rows(const float* x, const float* dy, int64_t n, float* dx) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = tail_mask(n - i);
    const __m512 v = _mm512_maskz_loadu_ps(m, x + i), g = _mm512_maskz_loadu_ps(m, dy + i);
    if (any_nan(v) || any_nan(g)) {
      portable_activation_rows().gelu_backward(x + i, dy + i, n - i < 16 ? n - i : 16, dx + i);
      continue;
    }
    _mm512_mask_storeu_ps(dx + i, m, mul(g, gelu_derivative16(v)));
  }
}

void swiglu_rows(const float* a, const float* b, int64_t n, float* y) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = tail_mask(n - i);
    const __m512 av = _mm512_maskz_loadu_ps(m, a + i), bv = _mm512_maskz_loadu_ps(m, b + i);
    if (any_nan(av) || any_nan(bv)) {
      portable_activation_rows().swiglu(a + i, b + i, n - i < 16 ? n - i : 16, y + i);
      continue;
    }
    _mm512_mask_storeu_ps(y + i, m, mul(mul(av, sigmoid16(av)), bv));
  }
}

void swiglu_backward_rows(const float* a, const float* b, const float* dy, int64_t n, float* da, float* db) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = tail_mask(n - i);
    const __m512 av = _mm512_maskz_loadu_ps(m, a + i), bv = _mm512_maskz_loadu_ps(m, b + i);
    const __m512 d = _mm512_maskz_loadu_ps(m, dy + i);
    if (any_nan(av) || any_nan(bv) || any_nan(d)) {
      portable_activation_rows().swiglu_backward(a + i, b + i, dy + i, n - i < 16 ? n - i : 16, da + i, db + i);
      continue;
    }
    const __m512 s = sigmoid16(av);
    _mm512_mask_storeu_ps(da + i, m, mul(mul(d, bv), mul(s, add(c(1.0f), mul(av, sub(c(1.0f), s))))));
    _mm512_mask_storeu_ps(db + i, m, mul(d, mul(av, s)));
  }
}

}  // namespace
}  // namespace octet_cpu

#pragma GCC pop_options
#endif

namespace octet_cpu {

const ActivationRows* avx512_activation_rows() {
#if defined(OCTET_CPU_HAVE_AVX512_ACTIVATIONS)
  static const ActivationRows* table = []() -> const ActivationRows* {
    const CpuFeatures& f = cpu_features();
    if (!(f.avx512f && f.avx512dq && f.avx512vl && f.avx512bw)) return nullptr;
    static const ActivationRows k = {"avx512", gelu_rows, gelu_backward_rows, swiglu_rows, swiglu_backward_rows};
    return &k;
  }();
  return table;
#else
  return nullptr;
#endif
}

}  // namespace octet_cpu
