// The FP8 encoder on 8 FP32 lanes (AVX2), shared by the row kernels
// (elementwise/row_kernels_avx2.cpp) and the block-quantize region kernels
// (block/block_rows_avx2.cpp). Include it only between a TU's
// `#pragma GCC target("avx2,...")` push and pop, after codecs/scalar_codecs.hpp;
// its functions have internal linkage, one copy per TU, compiled for that
// TU's target.
//
// Exact: the same bits as encode_fp8 (codecs/scalar_codecs.hpp) on every FP32
// input, by the rules stated at encode8_magnitude, which leaves the codes
// of |y| in 32-bit lanes. pack_lanes narrows four such registers into 32
// bytes, and signed_codes adds the 32 signs with two packs of the inputs
// before one permutation puts the bytes in element order.
#pragma once

#include <immintrin.h>

#include "codecs/scalar_codecs.hpp"

namespace octet_cpu {
namespace {

// |y|'s code (0 .. 255 in each 32-bit lane), without the sign: round half
// to even on the bits in the normal range (the rebias folded into the
// rounding constant), one FP32 addition of a magic constant in the
// subnormal range, overflow to the saturating or non-saturating code, NaN
// to the format's NaN code. signed_codes adds the signs.
inline __m256i encode8_magnitude(__m256 y, const Fp8Params& p, bool saturate) {
  const __m256i a = _mm256_and_si256(_mm256_castps_si256(y), _mm256_set1_epi32(0x7FFFFFFF));
  const int shift = 23 - p.mantissa_bits;
  // (a + 2^(shift-1) - 1 + lsb - (rebias << shift)) >> shift is the rounded,
  // rebiased code. Below the smallest normal the sum wraps; those lanes take
  // the subnormal code.
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(a, shift), _mm256_set1_epi32(1));
  const __m256i rounded = _mm256_add_epi32(
      _mm256_add_epi32(a, _mm256_set1_epi32(static_cast<int>((1u << (shift - 1)) - 1u - (p.rebias << shift)))), lsb);
  const __m256i normal = _mm256_srli_epi32(rounded, shift);
  const __m256 magic = _mm256_set1_ps(p.subnormal_magic);
  const __m256i sub =
      _mm256_sub_epi32(_mm256_castps_si256(_mm256_add_ps(_mm256_castsi256_ps(a), magic)), _mm256_castps_si256(magic));
  const __m256i is_sub = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(p.min_normal_bits)), a);
  __m256i code = _mm256_blendv_epi8(normal, sub, is_sub);
  const __m256i max_code = _mm256_set1_epi32(static_cast<int>(p.max_code));
  if (saturate) {
    code = _mm256_min_epu32(code, max_code);
  } else {  // every lane is below 2^(32 - shift), non-negative as a signed word
    code = _mm256_blendv_epi8(code, _mm256_set1_epi32(static_cast<int>(p.overflow_nosat)),
                              _mm256_cmpgt_epi32(code, max_code));
  }
  const __m256i nan = _mm256_cmpgt_epi32(a, _mm256_set1_epi32(0x7F800000));
  return _mm256_blendv_epi8(code, _mm256_set1_epi32(static_cast<int>(p.nan_code)), nan);
}

// Four vectors of 8 codes (one per 32-bit lane, 0 .. 255) -> 32 bytes, in
// the order of the packs (4-lane groups interleaved across the 128-bit
// halves); in_order puts them in element order.
inline __m256i pack_lanes(__m256i c0, __m256i c1, __m256i c2, __m256i c3) {
  return _mm256_packus_epi16(_mm256_packs_epi32(c0, c1), _mm256_packs_epi32(c2, c3));
}

inline __m256i in_order(__m256i bytes) {
  return _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

// The codes of 32 values y0 .. y3 with their signs, in element order. The
// signs come from the inputs packed with signed saturation twice: a
// negative word (-0 included) becomes a negative byte, a positive one a
// byte below 0x80. An FNUZ zero code drops its sign.
inline __m256i signed_codes(const __m256 y[4], const __m256i magnitude, const Fp8Params& p) {
  const __m256i u0 = _mm256_castps_si256(y[0]), u1 = _mm256_castps_si256(y[1]);
  const __m256i u2 = _mm256_castps_si256(y[2]), u3 = _mm256_castps_si256(y[3]);
  __m256i sign = _mm256_and_si256(_mm256_packs_epi16(_mm256_packs_epi32(u0, u1), _mm256_packs_epi32(u2, u3)),
                                  _mm256_set1_epi8(-128));
  if (!p.signed_zero) sign = _mm256_andnot_si256(_mm256_cmpeq_epi8(magnitude, _mm256_setzero_si256()), sign);
  return in_order(_mm256_or_si256(magnitude, sign));
}

}  // namespace
}  // namespace octet_cpu
