// An FP4 operand's folded FP32 values for the sgemm tiles: each E2M1
// element times its block's scale, one FP32 multiply of two exact values
// (fp4/gemm_fp4.hpp's fp4_widen_folded). The level picks the code: AVX-512 at
// avx512_bf16 and above (fp4/gemm_fp4_avx512_bf16.cpp), AVX2 at avx2 and avx512
// (this file), plain C++ at portable; every one gives the same bits.
#include <algorithm>
#include <cstdint>
#include <cstring>

#include <immintrin.h>

#include "dispatch/isa.hpp"
#include "fp4/fp4_codes.hpp"
#include "fp4/gemm_fp4.hpp"

namespace octet_cpu {
namespace {

// The 16 E2M1 values by code, sign included: a lookup without a branch.
struct SignedE2M1 {
  float v[16];
  constexpr SignedE2M1() : v() {
    for (int c = 0; c < 8; ++c) {
      v[c] = kE2M1Values[c];
      v[c + 8] = -kE2M1Values[c];
    }
  }
};
constexpr SignedE2M1 kSignedE2M1{};

// A byte (two codes) a step; k0 and the blocks start on even codes.
void widen_folded_portable(const uint8_t* row, int64_t k0, int64_t kc, const float* scales, int64_t bk, float* out) {
  const uint8_t* bytes = row + k0 / 2;
  for (int64_t c0 = 0; c0 < kc; c0 += bk) {
    const float scale = scales[c0 / bk];
    const int64_t c1 = c0 + bk < kc ? c0 + bk : kc;
    int64_t c = c0;
    for (; c + 2 <= c1; c += 2) {
      const uint8_t b = bytes[c / 2];
      out[c] = kSignedE2M1.v[b & 0xF] * scale;
      out[c + 1] = kSignedE2M1.v[b >> 4] * scale;
    }
    if (c < c1) out[c] = kSignedE2M1.v[bytes[c / 2] & 0xF] * scale;
  }
}

}  // namespace
}  // namespace octet_cpu

#if defined(__GNUC__) && defined(__x86_64__)
#define OCTET_CPU_HAVE_FP4_WIDEN_AVX2 1
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

namespace octet_cpu {
namespace {

// 8 codes a step: the 4 bytes' nibbles in element order (element 2i is
// byte i's low nibble), the magnitude looked up by its 3 bits, the sign
// bit moved to bit 31, times the block's scale (bk is 16 or 32 and steps
// start at multiples of 8, so one scale serves a step).
void widen_folded_avx2(const uint8_t* row, int64_t k0, int64_t kc, const float* scales, int64_t bk, float* out) {
  const __m256 magnitudes = _mm256_loadu_ps(kE2M1Values);
  const uint8_t* bytes = row + k0 / 2;
  int64_t c = 0;
  // Block by block (no division per step); the last partial step of the
  // row goes to the scalar loop below.
  for (int64_t q = 0; c + 8 <= kc; ++q) {
    const __m256 scale = _mm256_set1_ps(scales[q]);
    const int64_t end = std::min(kc, (q + 1) * bk);
    for (; c + 8 <= end; c += 8) {
      uint32_t four;
      std::memcpy(&four, bytes + c / 2, sizeof four);
      const __m128i b = _mm_cvtsi32_si128(static_cast<int>(four));
      const __m128i lo = _mm_and_si128(b, _mm_set1_epi8(0x0F));
      const __m128i hi = _mm_and_si128(_mm_srli_epi16(b, 4), _mm_set1_epi8(0x0F));
      const __m256i code = _mm256_cvtepu8_epi32(_mm_unpacklo_epi8(lo, hi));
      const __m256 magnitude = _mm256_permutevar8x32_ps(magnitudes, code);  // uses the low 3 bits
      const __m256i sign = _mm256_slli_epi32(_mm256_and_si256(code, _mm256_set1_epi32(0x8)), 28);
      const __m256 value = _mm256_or_ps(magnitude, _mm256_castsi256_ps(sign));
      _mm256_storeu_ps(out + c, _mm256_mul_ps(value, scale));
    }
  }
  for (; c < kc; ++c) out[c] = e2m1_decode(fp4_code_at(row, k0 + c)) * scales[c / bk];
}

}  // namespace
}  // namespace octet_cpu

#pragma GCC pop_options
#endif

namespace octet_cpu {

void fp4_widen_folded(const uint8_t* row, int64_t k0, int64_t kc, const float* scales, int64_t bk, float* out) {
  const Isa isa = cpu_isa();
  if (isa >= Isa::Avx512Bf16 && fp4_gemm_bf16_built()) {
    fp4_widen_folded_avx512(row, k0, kc, scales, bk, out);
    return;
  }
#if defined(OCTET_CPU_HAVE_FP4_WIDEN_AVX2)
  if (isa >= Isa::Avx2) {
    widen_folded_avx2(row, k0, kc, scales, bk, out);
    return;
  }
#endif
  widen_folded_portable(row, k0, kc, scales, bk, out);
}

}  // namespace octet_cpu
