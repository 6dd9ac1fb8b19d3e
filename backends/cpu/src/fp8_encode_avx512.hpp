// The FP8 encoder on 16 FP32 lanes (AVX-512 F/BW/VL/DQ), shared by the
// row kernels (row_kernels_avx512.cpp) and the block-quantize region
// kernels (block_rows_avx512.cpp). Include it only between a TU's
// `#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,...")` push and
// pop, after scalar_codecs.hpp; its function has internal linkage, one copy
// per TU, compiled for that TU's target.
//
// It is the AVX2 encoder (row_kernels_avx2.cpp) on 16 lanes, with mask
// registers for the blends: round half to even on the bits in the normal
// range, one FP32 addition of a magic constant in the subnormal range,
// overflow to the saturating or non-saturating code, NaN to the format's
// NaN code, then the sign (dropped from an FNUZ zero). Exact: the same
// bits as encode_fp8 (scalar_codecs.hpp) on every FP32 input.
#pragma once

#include <immintrin.h>

#include "scalar_codecs.hpp"

namespace octet_cpu {
namespace {

inline __m128i encode16(__m512 y, const Fp8Params& p, bool saturate) {
  const __m512i u = _mm512_castps_si512(y);
  __m512i sign = _mm512_and_si512(_mm512_srli_epi32(u, 24), _mm512_set1_epi32(0x80));
  const __m512i a = _mm512_and_si512(u, _mm512_set1_epi32(0x7FFFFFFF));
  const unsigned shift = static_cast<unsigned>(23 - p.mantissa_bits);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(a, shift), _mm512_set1_epi32(1));
  const __m512i rounded = _mm512_add_epi32(_mm512_add_epi32(a, _mm512_set1_epi32((1 << (shift - 1)) - 1)), lsb);
  const __m512i normal =
      _mm512_sub_epi32(_mm512_srli_epi32(rounded, shift), _mm512_set1_epi32(static_cast<int>(p.rebias)));
  const __m512 magic = _mm512_set1_ps(p.subnormal_magic);
  const __m512i sub =
      _mm512_sub_epi32(_mm512_castps_si512(_mm512_add_ps(_mm512_castsi512_ps(a), magic)), _mm512_castps_si512(magic));
  const __mmask16 is_sub = _mm512_cmpgt_epi32_mask(_mm512_set1_epi32(static_cast<int>(p.min_normal_bits)), a);
  __m512i code = _mm512_mask_blend_epi32(is_sub, normal, sub);
  const __mmask16 over = _mm512_cmpgt_epi32_mask(code, _mm512_set1_epi32(static_cast<int>(p.max_code)));
  code = _mm512_mask_mov_epi32(code, over,
                               _mm512_set1_epi32(static_cast<int>(saturate ? p.overflow_sat : p.overflow_nosat)));
  const __mmask16 nan = _mm512_cmpgt_epi32_mask(a, _mm512_set1_epi32(0x7F800000));
  code = _mm512_mask_mov_epi32(code, nan, _mm512_set1_epi32(static_cast<int>(p.nan_code)));
  if (!p.signed_zero) {  // FNUZ: no -0 (the sign of a zero code is dropped)
    sign = _mm512_maskz_mov_epi32(_mm512_test_epi32_mask(code, code), sign);
  }
  return _mm512_cvtepi32_epi8(_mm512_or_si512(code, sign));
}

}  // namespace
}  // namespace octet_cpu
