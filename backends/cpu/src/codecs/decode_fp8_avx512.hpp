// FP8 codes -> BF16 vectors with two 64-entry VPERMI2W table lookups
// (AVX-512 F/BW/VL): the decoder of the blocked FP8 kernel's packing and of
// the decode kernel below level avx512_bf16_vbmi (gemm/decode_gemm_fp8.hpp's
// Decoder interface). Included, after gemm/decode_gemm_fp8.hpp, inside the
// target pragma of each file that uses it (gemm/gemm_fp8_avx512_bf16.cpp,
// gemm/decode_gemm_fp8_avx512.cpp): the contents are in an anonymous namespace so
// that each translation unit compiles its own copy for its own target.
#pragma once

#include <cstdint>

#include <immintrin.h>

#include "codecs/decode_fp8_tables.hpp"

namespace octet_cpu {
namespace {

// A dtype's 128 BF16 values of the non-negative codes (Bf16Codes), in
// four vectors of 32.
struct Table {
  __m512i t0, t1, t2, t3;
};

inline Table load_table(const Bf16Codes& c) {
  return Table{_mm512_load_si512(c.v), _mm512_load_si512(c.v + 32), _mm512_load_si512(c.v + 64),
               _mm512_load_si512(c.v + 96)};
}

// 32 FP8 codes -> 32 BF16 values (exact; NaN stays NaN, inf stays inf).
inline __m512i decode32(__m256i bytes, const Table& t) {
  const __m512i x = _mm512_cvtepu8_epi16(bytes);
  const __m512i lo = _mm512_permutex2var_epi16(t.t0, x, t.t1);  // codes 0..63 (index bits 5:0)
  const __m512i hi = _mm512_permutex2var_epi16(t.t2, x, t.t3);  // codes 64..127
  const __mmask32 upper = _mm512_test_epi16_mask(x, _mm512_set1_epi16(0x40));
  const __m512i v = _mm512_mask_blend_epi16(upper, lo, hi);
  const __m512i sign = _mm512_slli_epi16(_mm512_and_si512(x, _mm512_set1_epi16(0x80)), 8);
  return _mm512_or_si512(v, sign);
}

// p[0 .. min(count, 32)), zeros past count (count may be <= 0).
inline __m256i load_bytes(const uint8_t* p, int64_t count) {
  if (count >= 32) return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  const __mmask32 mask = count <= 0 ? 0u : static_cast<__mmask32>((uint64_t{1} << count) - 1);
  return _mm256_maskz_loadu_epi8(mask, p);
}

// The decode kernel's Decoder on these tables: 32 codes a chunk, in order.
struct Perm16Decoder {
  static constexpr int64_t kChunk = 32;
  using Tab = Table;
  static Tab load(int32_t dtype) { return load_table(fp8_bf16_codes(dtype)); }
  static void chunk(const uint8_t* p, int64_t count, const Tab& t, __m512i* out) {
    out[0] = decode32(load_bytes(p, count), t);
  }
  static __m512i tail(const uint8_t* p, int64_t count, const Tab& t) { return decode32(load_bytes(p, count), t); }
};

}  // namespace
}  // namespace octet_cpu
