// AVX-512 (F/BW/VL/DQ) block-quantize region kernels (block_rows.hpp). Only
// the functions between the pragmas use AVX-512; they run only when isa.cpp
// says the CPU and OS have it. Tails go through masked loads and stores.
#include <algorithm>

#include <immintrin.h>

#include "block_rows.hpp"
#include "isa.hpp"

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define OCTET_CPU_HAVE_AVX512_BLOCK_ROWS 1
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx2")
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

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

void block_abs_bits_max_avx512(const float* in, int64_t ld, int64_t h, int64_t w, int64_t bc,
                               uint32_t* out) {
  if (bc == 1) return column_max(in, ld, h, w, out);
  if (bc % 16 == 0) return wide_block_max(in, ld, h, w, bc, out);
  portable_block_row_kernels().block_abs_bits_max(in, ld, h, w, bc, out);
}

void multiply_avx512(const float* in, const float* m, int64_t n, float* out) {
  int64_t j = 0;
  for (; j + 32 <= n; j += 32) {
    _mm512_storeu_ps(out + j, _mm512_mul_ps(_mm512_loadu_ps(in + j), _mm512_loadu_ps(m + j)));
    _mm512_storeu_ps(out + j + 16,
                     _mm512_mul_ps(_mm512_loadu_ps(in + j + 16), _mm512_loadu_ps(m + j + 16)));
  }
  for (; j < n; j += 16) {
    const __mmask16 k = tail_mask(n - j);
    _mm512_mask_storeu_ps(out + j, k,
                          _mm512_mul_ps(_mm512_maskz_loadu_ps(k, in + j), _mm512_maskz_loadu_ps(k, m + j)));
  }
}

const BlockRowKernels kAvx512{"avx512", block_abs_bits_max_avx512, multiply_avx512};

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
