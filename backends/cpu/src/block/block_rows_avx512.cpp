// AVX-512 (F/BW/VL/DQ) block-quantize region kernels (block/block_rows.hpp). Only
// the functions between the pragmas use AVX-512; they run only when dispatch/isa.cpp
// says the CPU and OS have it. Tails go through masked loads and stores.
#include <algorithm>
#include <cfloat>
#include <cstdint>

#include <immintrin.h>

#include "block/block_rows.hpp"
#include "block/block_scales.hpp"
#include "codecs/scalar_codecs.hpp"
#include "dispatch/isa.hpp"
#include "elementwise/row_kernels.hpp"

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define OCTET_CPU_HAVE_AVX512_BLOCK_ROWS 1
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx2")
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include "codecs/encode_fp8_avx512.hpp"

namespace octet_cpu {
namespace {

inline __mmask16 tail_mask(int64_t left) {
  return left >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << left) - 1u);
}

inline __m512i abs_bits(__mmask16 k, const float* p) {
  return _mm512_and_si512(_mm512_maskz_loadu_epi32(k, p), _mm512_set1_epi32(0x7FFFFFFF));
}

inline __m512i abs_bits(const float* p) {
  return _mm512_and_si512(_mm512_loadu_si512(p), _mm512_set1_epi32(0x7FFFFFFF));
}

// Blocks one column wide: the max down each column, 64 columns at a time.
void column_max(const float* in, int64_t ld, int64_t h, int64_t w, uint32_t* out) {
  int64_t j = 0;
  for (; j + 64 <= w; j += 64) {
    __m512i m0 = _mm512_setzero_si512(), m1 = m0, m2 = m0, m3 = m0;
    for (int64_t i = 0; i < h; ++i) {
      const float* p = in + i * ld + j;
      m0 = _mm512_max_epu32(m0, abs_bits(p));
      m1 = _mm512_max_epu32(m1, abs_bits(p + 16));
      m2 = _mm512_max_epu32(m2, abs_bits(p + 32));
      m3 = _mm512_max_epu32(m3, abs_bits(p + 48));
    }
    _mm512_storeu_si512(out + j, m0);
    _mm512_storeu_si512(out + j + 16, m1);
    _mm512_storeu_si512(out + j + 32, m2);
    _mm512_storeu_si512(out + j + 48, m3);
  }
  for (; j < w; j += 16) {
    const __mmask16 k = tail_mask(w - j);
    __m512i m = _mm512_setzero_si512();
    for (int64_t i = 0; i < h; ++i) m = _mm512_max_epu32(m, abs_bits(k, in + i * ld + j));
    _mm512_mask_storeu_epi32(out + j, k, m);
  }
}

// Blocks a multiple of 16 wide: vertical maxima over the block, one
// reduction per block.
void wide_block_max(const float* in, int64_t ld, int64_t h, int64_t w, int64_t bc, uint32_t* out) {
  for (int64_t j0 = 0, b = 0; j0 < w; j0 += bc, ++b) {
    const int64_t len = std::min(bc, w - j0);
    __m512i m0 = _mm512_setzero_si512(), m1 = m0;
    for (int64_t i = 0; i < h; ++i) {
      const float* p = in + i * ld + j0;
      int64_t j = 0;
      for (; j + 32 <= len; j += 32) {
        m0 = _mm512_max_epu32(m0, abs_bits(p + j));
        m1 = _mm512_max_epu32(m1, abs_bits(p + j + 16));
      }
      for (; j < len; j += 16) m0 = _mm512_max_epu32(m0, abs_bits(tail_mask(len - j), p + j));
    }
    out[b] = _mm512_reduce_max_epu32(_mm512_max_epu32(m0, m1));
  }
}

void block_abs_bits_max_avx512(const float* in, int64_t ld, int64_t h, int64_t w, int64_t bc, uint32_t* out) {
  if (bc == 1) return column_max(in, ld, h, w, out);
  if (bc % 16 == 0) return wide_block_max(in, ld, h, w, bc, out);
  portable_block_row_kernels().block_abs_bits_max(in, ld, h, w, bc, out);
}

void multiply_encode_avx512(const float* in, const float* m, int64_t n, int64_t bc, int32_t fp8_dtype, uint8_t* out) {
  if (bc != 1 && bc % 16 != 0) return portable_block_row_kernels().multiply_encode(in, m, n, bc, fp8_dtype, out);
  const Fp8Params& p = fp8_params(fp8_dtype);
  if (bc == 1) {  // one multiplier per element
    int64_t j = 0;
    for (; j + 64 <= n; j += 64) {
      _mm512_storeu_si512(
          out + j,
          pack64(encode16_codes(_mm512_mul_ps(_mm512_loadu_ps(in + j), _mm512_loadu_ps(m + j)), p, true),
                 encode16_codes(_mm512_mul_ps(_mm512_loadu_ps(in + j + 16), _mm512_loadu_ps(m + j + 16)), p, true),
                 encode16_codes(_mm512_mul_ps(_mm512_loadu_ps(in + j + 32), _mm512_loadu_ps(m + j + 32)), p, true),
                 encode16_codes(_mm512_mul_ps(_mm512_loadu_ps(in + j + 48), _mm512_loadu_ps(m + j + 48)), p, true)));
    }
    for (; j < n; j += 16) {
      const __mmask16 k = tail_mask(n - j);
      _mm_mask_storeu_epi8(
          out + j, k,
          encode16(_mm512_mul_ps(_mm512_maskz_loadu_ps(k, in + j), _mm512_maskz_loadu_ps(k, m + j)), p, true));
    }
    return;
  }
  // Blocks a multiple of 16 wide: one broadcast multiplier per block, so
  // each group of 16 lies in one block; 64 elements at a time, then 16.
  // The block of the next group is counted, not divided out.
  const int64_t groups_per_block = bc / 16;
  int64_t b = 0, left = groups_per_block;  // groups of 16 left in block b
  auto next_multiplier = [&]() {
    const float s = m[b];
    if (--left == 0) {
      ++b;
      left = groups_per_block;
    }
    return s;
  };
  int64_t j = 0;
  for (; j + 64 <= n; j += 64) {
    const float s0 = next_multiplier(), s1 = next_multiplier(), s2 = next_multiplier(), s3 = next_multiplier();
    _mm512_storeu_si512(
        out + j, pack64(encode16_codes(_mm512_mul_ps(_mm512_loadu_ps(in + j), _mm512_set1_ps(s0)), p, true),
                        encode16_codes(_mm512_mul_ps(_mm512_loadu_ps(in + j + 16), _mm512_set1_ps(s1)), p, true),
                        encode16_codes(_mm512_mul_ps(_mm512_loadu_ps(in + j + 32), _mm512_set1_ps(s2)), p, true),
                        encode16_codes(_mm512_mul_ps(_mm512_loadu_ps(in + j + 48), _mm512_set1_ps(s3)), p, true)));
  }
  for (; j < n; j += 16) {
    const __mmask16 k = tail_mask(n - j);
    const float s = next_multiplier();
    _mm_mask_storeu_epi8(out + j, k,
                         encode16(_mm512_mul_ps(_mm512_maskz_loadu_ps(k, in + j), _mm512_set1_ps(s)), p, true));
  }
}

// 64 rows x 16 columns: lane L of r[i] holds row 16 L + i; the 16 x 16
// unpack network (elementwise/row_kernels_avx2.cpp's, here on four lanes at once)
// leaves column c's 64 bytes, rows 0 .. 63 in order, in one register.
template <bool kStream>
inline void transpose64x16(const uint8_t* src, int64_t sld, uint8_t* dst, int64_t dld) {
  __m512i r[16], s1[8][2], s2[4][4], s3[2][8];
  for (int i = 0; i < 16; ++i) {
    const uint8_t* p = src + i * sld;
    __m512i v = _mm512_castsi128_si512(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    v = _mm512_inserti32x4(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * sld)), 1);
    v = _mm512_inserti32x4(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 32 * sld)), 2);
    r[i] = _mm512_inserti32x4(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 48 * sld)), 3);
  }
  for (int p = 0; p < 8; ++p) {
    s1[p][0] = _mm512_unpacklo_epi8(r[2 * p], r[2 * p + 1]);
    s1[p][1] = _mm512_unpackhi_epi8(r[2 * p], r[2 * p + 1]);
  }
  for (int q = 0; q < 4; ++q) {
    for (int h = 0; h < 2; ++h) {
      s2[q][2 * h] = _mm512_unpacklo_epi16(s1[2 * q][h], s1[2 * q + 1][h]);
      s2[q][2 * h + 1] = _mm512_unpackhi_epi16(s1[2 * q][h], s1[2 * q + 1][h]);
    }
  }
  for (int o = 0; o < 2; ++o) {
    for (int g = 0; g < 4; ++g) {
      s3[o][2 * g] = _mm512_unpacklo_epi32(s2[2 * o][g], s2[2 * o + 1][g]);
      s3[o][2 * g + 1] = _mm512_unpackhi_epi32(s2[2 * o][g], s2[2 * o + 1][g]);
    }
  }
  for (int t = 0; t < 8; ++t) {
    const __m512i lo = _mm512_unpacklo_epi64(s3[0][t], s3[1][t]);
    const __m512i hi = _mm512_unpackhi_epi64(s3[0][t], s3[1][t]);
    if (kStream) {
      _mm512_stream_si512(reinterpret_cast<__m512i*>(dst + (2 * t) * dld), lo);
      _mm512_stream_si512(reinterpret_cast<__m512i*>(dst + (2 * t + 1) * dld), hi);
    } else {
      _mm512_storeu_si512(dst + (2 * t) * dld, lo);
      _mm512_storeu_si512(dst + (2 * t + 1) * dld, hi);
    }
  }
}

void transpose_bytes_out_avx512(const uint8_t* src, int64_t sld, int64_t h, int64_t w, uint8_t* dst, int64_t dld) {
  const int64_t h64 = h / 64 * 64, w16 = w / 16 * 16;
  const bool stream = ((reinterpret_cast<std::uintptr_t>(dst) | static_cast<std::uintptr_t>(dld)) & 63u) == 0;
  for (int64_t i = 0; i < h64; i += 64) {
    for (int64_t j = 0; j < w16; j += 16) {
      if (stream) {
        transpose64x16<true>(src + i * sld + j, sld, dst + j * dld + i, dld);
      } else {
        transpose64x16<false>(src + i * sld + j, sld, dst + j * dld + i, dld);
      }
    }
  }
  if (stream) _mm_sfence();
  // The rest (rows past the last 64, columns past the last 16): the row
  // kernels' transpose.
  const RowKernels& k = row_kernels();
  if (w16 < w && h64 > 0) k.transpose_bytes(src + w16, sld, h64, w - w16, dst + w16 * dld, dld);
  if (h64 < h) k.transpose_bytes(src + h64 * sld, sld, h - h64, w, dst + h64, dld);
}

void copy_bytes_out_avx512(const uint8_t* src, int64_t sld, int64_t h, int64_t w, uint8_t* dst, int64_t dld) {
  bool streamed = false;
  for (int64_t i = 0; i < h; ++i) {
    const uint8_t* from = src + i * sld;
    uint8_t* to = dst + i * dld;
    // Up to the first 64-byte boundary of dst, whole lines, then the rest.
    const int64_t head =
        std::min<int64_t>(w, static_cast<int64_t>((64u - (reinterpret_cast<std::uintptr_t>(to) & 63u)) & 63u));
    int64_t j = 0;
    if (head > 0) {
      const __mmask64 k = (~0ULL) >> (64 - head);
      _mm512_mask_storeu_epi8(to, k, _mm512_maskz_loadu_epi8(k, from));
      j = head;
    }
    for (; j + 64 <= w; j += 64) {
      _mm512_stream_si512(reinterpret_cast<__m512i*>(to + j), _mm512_loadu_si512(from + j));
      streamed = true;
    }
    if (j < w) {
      const __mmask64 k = (~0ULL) >> (64 - (w - j));
      _mm512_mask_storeu_epi8(to + j, k, _mm512_maskz_loadu_epi8(k, from + j));
    }
  }
  if (streamed) _mm_sfence();
}

// block/block_scales.hpp's rules on 16 blocks a register. Lanes past nb are
// zero blocks and are not stored.
uint32_t mx_scales_avx512(const uint32_t* tops, int64_t nb, float fp8_max, int32_t rounding, uint8_t* codes,
                          float* multipliers) {
  const __m512i zero = _mm512_setzero_si512(), one = _mm512_set1_epi32(1);
  const __m512 divisor = _mm512_set1_ps(fp8_max);
  const __m512i emax = _mm512_set1_epi32(fp8_max_exponent(fp8_max));
  __m512i top_max = zero;
  for (int64_t q = 0; q < nb; q += 16) {
    const __mmask16 k = tail_mask(nb - q);
    const __m512i t = _mm512_maskz_loadu_epi32(k, tops + q);
    top_max = _mm512_max_epu32(top_max, t);
    __m512i code;
    if (rounding == 0) {
      // RCEIL: encode_e8m0(quotient, ceil) of the IEEE quotient: a normal
      // quotient's biased exponent, plus one when its mantissa is not zero;
      // a subnormal one 1 above 2^-127, else 0 (zero blocks and quotients
      // that underflow to zero included). fp8_max >= 240 keeps the
      // quotient below 2^121, so no code reaches 0xFF.
      const __m512i u = _mm512_castps_si512(_mm512_div_ps(_mm512_castsi512_ps(t), divisor));
      const __m512i exp = _mm512_srli_epi32(u, 23);
      const __m512i man = _mm512_and_si512(u, _mm512_set1_epi32(0x7FFFFF));
      const __m512i normal = _mm512_mask_add_epi32(exp, _mm512_test_epi32_mask(man, man), exp, one);
      const __m512i subnormal = _mm512_maskz_mov_epi32(_mm512_cmpgt_epu32_mask(man, _mm512_set1_epi32(0x400000)), one);
      code = _mm512_mask_blend_epi32(_mm512_cmpeq_epi32_mask(exp, zero), normal, subnormal);
    } else {
      // FLOOR: floor(log2 amax) + 127 is a normal amax's biased exponent.
      // A subnormal amax (biased exponent 0) is below 2^-126, so its code,
      // at most -126 - emax + 127 with emax >= 7, clamps to 0, as does a
      // zero block's.
      code = _mm512_max_epi32(_mm512_sub_epi32(_mm512_srli_epi32(t, 23), emax), zero);
    }
    // mx_multiplier: 2^(127 - code). Codes stay at or below 0xF8 (the
    // largest RCEIL quotient, FLT_MAX / 240, is below 2^121; FLOOR's
    // largest code is 254 - emax), so 0xFE's subnormal 2^-127 never occurs.
    const __m512i m = _mm512_slli_epi32(_mm512_sub_epi32(_mm512_set1_epi32(254), code), 23);
    _mm512_mask_cvtepi32_storeu_epi8(codes + q, k, code);
    _mm512_mask_storeu_ps(multipliers + q, k, _mm512_castsi512_ps(m));
  }
  return _mm512_reduce_max_epu32(top_max);
}

uint32_t fp32_scales_avx512(const uint32_t* tops, int64_t nb, float fp8_max, float epsilon, bool pow2, float* scale_inv,
                            float* multipliers) {
  const __m512 dividend = _mm512_set1_ps(fp8_max), eps = _mm512_set1_ps(epsilon), unit = _mm512_set1_ps(1.0f);
  const __m512i exponent_bits = _mm512_set1_epi32(0x7F800000);
  const __m512i keep = _mm512_set1_epi32(pow2 ? static_cast<int>(0xFF800000u) : -1);
  __m512i top_max = _mm512_setzero_si512();
  for (int64_t q = 0; q < nb; q += 16) {
    const __mmask16 k = tail_mask(nb - q);
    const __m512i t = _mm512_maskz_loadu_epi32(k, tops + q);
    top_max = _mm512_max_epu32(top_max, t);
    // max_ps(a, b) is a > b ? a : b, the scalar rule's order.
    const __m512 amax = _mm512_max_ps(eps, _mm512_castsi512_ps(t));
    const __mmask16 unit_scale =
        _mm512_cmpeq_epi32_mask(_mm512_and_si512(_mm512_castps_si512(amax), exponent_bits), exponent_bits) |
        _mm512_cmp_ps_mask(amax, _mm512_setzero_ps(), _CMP_EQ_OQ);
    __m512 scale = _mm512_div_ps(dividend, amax);
    const __mmask16 overflow =
        _mm512_cmpeq_epi32_mask(_mm512_and_si512(_mm512_castps_si512(scale), exponent_bits), exponent_bits);
    scale = _mm512_mask_blend_ps(overflow, scale, _mm512_set1_ps(FLT_MAX));
    scale = _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(scale), keep));
    scale = _mm512_mask_blend_ps(unit_scale, scale, unit);
    _mm512_mask_storeu_ps(multipliers + q, k, scale);
    _mm512_mask_storeu_ps(scale_inv + q, k, _mm512_div_ps(unit, scale));
  }
  return _mm512_reduce_max_epu32(top_max);
}

const BlockRowKernels kAvx512{"avx512",
                              block_abs_bits_max_avx512,
                              multiply_encode_avx512,
                              transpose_bytes_out_avx512,
                              copy_bytes_out_avx512,
                              mx_scales_avx512,
                              fp32_scales_avx512};

}  // namespace
}  // namespace octet_cpu

#pragma GCC pop_options
#endif

namespace octet_cpu {

const BlockRowKernels* avx512_block_row_kernels() {
#if defined(OCTET_CPU_HAVE_AVX512_BLOCK_ROWS)
  const CpuFeatures& f = cpu_features();
  if (f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq) return &kAvx512;
#endif
  return nullptr;
}

}  // namespace octet_cpu
