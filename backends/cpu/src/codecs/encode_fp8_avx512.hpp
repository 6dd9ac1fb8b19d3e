// The FP8 encoder on 16 FP32 lanes (AVX-512 F/BW/VL/DQ), shared by the
// row kernels (elementwise/row_kernels_avx512.cpp) and the block-quantize region
// kernels (block/block_rows_avx512.cpp). Include it only between a TU's
// `#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,...")` push and
// pop, after codecs/scalar_codecs.hpp; its functions have internal linkage, one
// copy per TU, compiled for that TU's target.
//
// The rules are the AVX2 encoder's (codecs/encode_fp8_avx2.hpp), on 16 lanes
// with mask registers: round half to even on the bits in the normal range
// (the rebias folded into the rounding constant), one FP32 addition of a
// magic constant in the subnormal range, overflow to the saturating or
// non-saturating code, NaN to the format's NaN code, then the sign (dropped
// from an FNUZ zero). Exact: the same bits as encode_fp8
// (codecs/scalar_codecs.hpp) on every FP32 input. encode16_codes leaves the codes
// in 32-bit lanes; pack64 narrows four such registers into 64 bytes in
// order with four shuffles (four VPMOVDBs take eight).
#pragma once

#include <immintrin.h>

#include "codecs/scalar_codecs.hpp"

namespace octet_cpu {
namespace {

inline __m512i encode16_codes(__m512 y, const Fp8Params& p, bool saturate) {
  const __m512i u = _mm512_castps_si512(y);
  const __m512i a = _mm512_and_si512(u, _mm512_set1_epi32(0x7FFFFFFF));
  const unsigned shift = static_cast<unsigned>(23 - p.mantissa_bits);
  // Normal range: (a + 2^(shift-1) - 1 + lsb - (rebias << shift)) >> shift
  // is the rounded, rebiased code. Below the smallest normal the sum wraps;
  // those lanes take the subnormal code.
  __m512i r = _mm512_add_epi32(a, _mm512_set1_epi32(static_cast<int>((1u << (shift - 1)) - 1u - (p.rebias << shift))));
  r = _mm512_mask_add_epi32(r, _mm512_test_epi32_mask(a, _mm512_set1_epi32(1 << shift)), r, _mm512_set1_epi32(1));
  const __m512i normal = _mm512_srli_epi32(r, shift);
  const __m512 magic = _mm512_set1_ps(p.subnormal_magic);
  const __m512i sub =
      _mm512_sub_epi32(_mm512_castps_si512(_mm512_add_ps(_mm512_castsi512_ps(a), magic)), _mm512_castps_si512(magic));
  const __mmask16 is_sub = _mm512_cmpgt_epi32_mask(_mm512_set1_epi32(static_cast<int>(p.min_normal_bits)), a);
  __m512i code = _mm512_mask_blend_epi32(is_sub, normal, sub);
  const __m512i max_code = _mm512_set1_epi32(static_cast<int>(p.max_code));
  if (saturate) {
    code = _mm512_min_epu32(code, max_code);
  } else {
    code = _mm512_mask_mov_epi32(code, _mm512_cmpgt_epu32_mask(code, max_code),
                                 _mm512_set1_epi32(static_cast<int>(p.overflow_nosat)));
  }
  const __mmask16 nan = _mm512_cmpgt_epi32_mask(a, _mm512_set1_epi32(0x7F800000));
  code = _mm512_mask_mov_epi32(code, nan, _mm512_set1_epi32(static_cast<int>(p.nan_code)));
  __m512i sign = _mm512_srli_epi32(u, 24);  // the sign at bit 7, exponent bits below it
  if (!p.signed_zero) {                     // FNUZ: no -0 (the sign of a zero code is dropped)
    sign = _mm512_maskz_mov_epi32(_mm512_test_epi32_mask(code, code), sign);
  }
  // code | (sign & 0x80)
  return _mm512_ternarylogic_epi32(code, sign, _mm512_set1_epi32(0x80), 0xF8);
}

inline __m128i encode16(__m512 y, const Fp8Params& p, bool saturate) {
  return _mm512_cvtepi32_epi8(encode16_codes(y, p, saturate));
}

// Four registers of codes (values 0 .. 255 in 32-bit lanes), c0's first,
// as 64 bytes in order. The packs interleave 4-lane groups across the
// 128-bit lanes; the permutation puts group q of register v at 4 v + q.
inline __m512i pack64(__m512i c0, __m512i c1, __m512i c2, __m512i c3) {
  const __m512i bytes = _mm512_packus_epi16(_mm512_packus_epi32(c0, c1), _mm512_packus_epi32(c2, c3));
  return _mm512_permutexvar_epi32(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), bytes);
}

}  // namespace
}  // namespace octet_cpu
