// AVX2 block-quantize region kernels (block/block_rows.hpp): the blocks' largest
// magnitudes and the multiply fused with the FP8 encoder
// (codecs/encode_fp8_avx2.hpp) in registers. The byte transposes, copies and
// scales are the portable ones (whose transpose is the row kernels', AVX2
// at this level). Only the functions between the pragmas use AVX2; they run
// only when dispatch/isa.cpp says the CPU has it. Tails shorter than a vector take
// the scalar rules of codecs/scalar_codecs.hpp.
#include <algorithm>
#include <cstdint>

#include <immintrin.h>

#include "block/block_rows.hpp"
#include "codecs/scalar_codecs.hpp"
#include "dispatch/isa.hpp"

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define OCTET_CPU_HAVE_AVX2_BLOCK_ROWS 1
#pragma GCC push_options
#pragma GCC target("avx2")

#include "codecs/encode_fp8_avx2.hpp"

namespace octet_cpu {
namespace {

inline __m256i abs_bits(const float* p) {
  return _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)), _mm256_set1_epi32(0x7FFFFFFF));
}

inline uint32_t abs_bits(float x) { return bits_of(x) & 0x7FFFFFFFu; }

uint32_t reduce_max(__m256i v) {
  alignas(32) uint32_t lanes[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), v);
  uint32_t m = 0;
  for (uint32_t x : lanes) m = x > m ? x : m;
  return m;
}

// Blocks one column wide: the max down each column, 32 columns at a time.
void column_max(const float* in, int64_t ld, int64_t h, int64_t w, uint32_t* out) {
  int64_t j = 0;
  for (; j + 32 <= w; j += 32) {
    __m256i m0 = _mm256_setzero_si256(), m1 = m0, m2 = m0, m3 = m0;
    for (int64_t i = 0; i < h; ++i) {
      const float* p = in + i * ld + j;
      m0 = _mm256_max_epu32(m0, abs_bits(p));
      m1 = _mm256_max_epu32(m1, abs_bits(p + 8));
      m2 = _mm256_max_epu32(m2, abs_bits(p + 16));
      m3 = _mm256_max_epu32(m3, abs_bits(p + 24));
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + j), m0);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + j + 8), m1);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + j + 16), m2);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + j + 24), m3);
  }
  for (; j < w; ++j) {
    uint32_t m = 0;
    for (int64_t i = 0; i < h; ++i) m = std::max(m, abs_bits(in[i * ld + j]));
    out[j] = m;
  }
}

// Blocks a multiple of 8 wide: vertical maxima over the block, one
// reduction per block; the last block may be cut short by w.
void wide_block_max(const float* in, int64_t ld, int64_t h, int64_t w, int64_t bc, uint32_t* out) {
  for (int64_t j0 = 0, b = 0; j0 < w; j0 += bc, ++b) {
    const int64_t len = std::min(bc, w - j0), len8 = len / 8 * 8;
    __m256i m0 = _mm256_setzero_si256(), m1 = m0;
    uint32_t tail = 0;
    for (int64_t i = 0; i < h; ++i) {
      const float* p = in + i * ld + j0;
      int64_t j = 0;
      for (; j + 16 <= len8; j += 16) {
        m0 = _mm256_max_epu32(m0, abs_bits(p + j));
        m1 = _mm256_max_epu32(m1, abs_bits(p + j + 8));
      }
      if (j < len8) m0 = _mm256_max_epu32(m0, abs_bits(p + j));
      for (j = len8; j < len; ++j) tail = std::max(tail, abs_bits(p[j]));
    }
    out[b] = std::max(tail, reduce_max(_mm256_max_epu32(m0, m1)));
  }
}

void block_abs_bits_max_avx2(const float* in, int64_t ld, int64_t h, int64_t w, int64_t bc, uint32_t* out) {
  if (bc == 1) return column_max(in, ld, h, w, out);
  if (bc % 8 == 0) return wide_block_max(in, ld, h, w, bc, out);
  portable_block_row_kernels().block_abs_bits_max(in, ld, h, w, bc, out);
}

// 32 products y[0..3] (saturating) as 32 codes in element order.
inline void store32(const __m256 y[4], const Fp8Params& p, uint8_t* out) {
  const __m256i magnitude = pack_lanes(encode8_magnitude(y[0], p, true), encode8_magnitude(y[1], p, true),
                                       encode8_magnitude(y[2], p, true), encode8_magnitude(y[3], p, true));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), signed_codes(y, magnitude, p));
}

void multiply_encode_avx2(const float* in, const float* m, int64_t n, int64_t bc, int32_t fp8_dtype, uint8_t* out) {
  if (bc != 1 && bc % 8 != 0) return portable_block_row_kernels().multiply_encode(in, m, n, bc, fp8_dtype, out);
  const Fp8Params& p = fp8_params(fp8_dtype);
  int64_t j = 0;
  __m256 y[4];
  if (bc == 1) {  // one multiplier per element
    for (; j + 32 <= n; j += 32) {
      for (int q = 0; q < 4; ++q) y[q] = _mm256_mul_ps(_mm256_loadu_ps(in + j + 8 * q), _mm256_loadu_ps(m + j + 8 * q));
      store32(y, p, out + j);
    }
    for (; j < n; ++j) out[j] = encode_fp8(in[j] * m[j], p, true);
    return;
  }
  // Blocks a multiple of 8 wide: each group of 8 lies in one block, whose
  // multiplier is broadcast; the block of the next group is counted, not
  // divided out.
  const int64_t groups_per_block = bc / 8;
  int64_t b = 0, left = groups_per_block;  // groups of 8 left in block b
  for (; j + 32 <= n; j += 32) {
    for (int q = 0; q < 4; ++q) {
      y[q] = _mm256_mul_ps(_mm256_loadu_ps(in + j + 8 * q), _mm256_set1_ps(m[b]));
      if (--left == 0) {
        ++b;
        left = groups_per_block;
      }
    }
    store32(y, p, out + j);
  }
  for (; j < n; ++j) out[j] = encode_fp8(in[j] * m[j / bc], p, true);
}

}  // namespace
}  // namespace octet_cpu

#pragma GCC pop_options
#endif

namespace octet_cpu {

const BlockRowKernels* avx2_block_row_kernels() {
#if defined(OCTET_CPU_HAVE_AVX2_BLOCK_ROWS)
  static const BlockRowKernels kernels = [] {
    BlockRowKernels k = portable_block_row_kernels();
    k.name = "avx2";
    k.block_abs_bits_max = block_abs_bits_max_avx2;
    k.multiply_encode = multiply_encode_avx2;
    return k;
  }();
  if (cpu_features().avx2) return &kernels;
#endif
  return nullptr;
}

}  // namespace octet_cpu
