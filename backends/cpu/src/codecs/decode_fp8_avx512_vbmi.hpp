// FP8 codes -> BF16 vectors with AVX512_VBMI, 64 codes in five
// instructions: two VPERMI2B look the low and the high byte of each value
// up in 128-entry byte tables (the code's bits 6:0 index them; bit 7 is
// ignored), a VPTERNLOGD moves the sign (code bit 7) into the high byte,
// and VPUNPCKLBW/VPUNPCKHBW interleave the two bytes into 16-bit values.
// The unpacks work within 128-bit lanes, so the two vectors hold codes
// {0-7, 16-23, 32-39, 48-55} and {8-15, 24-31, 40-47, 56-63} of the chunk:
// adjacent codes stay in one 32-bit pair, and both operands are decoded in
// this same order (gemm/decode_gemm_fp8.hpp), so each product pairs the codes
// of the same k. The decode kernel's Decoder at levels avx512_vbmi (FP32
// FMAs, gemm/decode_gemm_fp8_avx512_vbmi.cpp) and avx512_bf16_vbmi
// (gemm/decode_gemm_fp8_avx512_bf16_vbmi.cpp). Included, after gemm/decode_gemm_fp8.hpp, inside
// the target pragma of each file that uses it: the contents are in an
// anonymous namespace so that each translation unit compiles its own copy
// for its own target.
#pragma once

#include <cstdint>

#include <immintrin.h>

#include "codecs/decode_fp8_tables.hpp"

namespace octet_cpu {
namespace {

struct VbmiDecoder {
  static constexpr int64_t kChunk = 64;
  struct Tab {
    __m512i lo0, lo1;  // low byte of the BF16 value of codes 0..63, 64..127
    __m512i hi0, hi1;  // high byte (sign clear)
  };
  static Tab load(int32_t dtype) {
    const Bf16Codes& c = fp8_bf16_codes(dtype);
    alignas(64) uint8_t lo[128], hi[128];
    for (int i = 0; i < 128; ++i) {
      lo[i] = static_cast<uint8_t>(c.v[i] & 0xFF);
      hi[i] = static_cast<uint8_t>(c.v[i] >> 8);
    }
    return Tab{_mm512_load_si512(lo), _mm512_load_si512(lo + 64), _mm512_load_si512(hi), _mm512_load_si512(hi + 64)};
  }
  static void chunk(const uint8_t* p, int64_t count, const Tab& t, __m512i* out) {
    __m512i x;
    if (count >= 64) {
      x = _mm512_loadu_si512(p);
    } else {
      const __mmask64 mask = count <= 0 ? 0u : static_cast<__mmask64>((uint64_t{1} << count) - 1);
      x = _mm512_maskz_loadu_epi8(mask, p);
    }
    const __m512i lo = _mm512_permutex2var_epi8(t.lo0, x, t.lo1);
    // hi | (x & 0x80): imm 0xF8 is A | (B & C) for A = hi, B = x, C = 0x80.
    const __m512i hi = _mm512_ternarylogic_epi32(_mm512_permutex2var_epi8(t.hi0, x, t.hi1), x,
                                                 _mm512_set1_epi8(static_cast<char>(0x80)), 0xF8);
    out[0] = _mm512_unpacklo_epi8(lo, hi);
    out[1] = _mm512_unpackhi_epi8(lo, hi);
  }
  // 32 codes: the first half of each unpacked vector (codes 0-7, 16-23 and
  // 8-15, 24-31), side by side.
  static __m512i tail(const uint8_t* p, int64_t count, const Tab& t) {
    __m512i v[2];
    chunk(p, count < 32 ? count : 32, t, v);
    return _mm512_inserti64x4(v[0], _mm512_castsi512_si256(v[1]), 1);
  }
};

}  // namespace
}  // namespace octet_cpu
