// AVX2 + F16C row kernels. What this file includes before the pragma is
// compiled for the baseline target; what follows it uses AVX2, and runs
// only after __builtin_cpu_supports says the CPU has AVX2 and F16C.
#include <cmath>
#include <cstring>

#include <immintrin.h>

#include <octet/octet_math.h>
#include <octet/octet_types.h>

#include "codecs/scalar_codecs.hpp"
#include "elementwise/row_kernels.hpp"

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define OCTET_CPU_HAVE_AVX2_PATH 1
#pragma GCC push_options
#pragma GCC target("avx2,f16c")

#include "codecs/encode_fp8_avx2.hpp"
#include "elementwise/quantize_counts_loop.hpp"

namespace octet_cpu {
namespace {

void count_quantize_avx2(const float* in, int64_t n, float scale, QuantizeThresholds t, QuantizeCounts* counts) {
  count_quantize_loop(in, n, scale, t.saturate_from, t.flush_to, counts);
}

inline __m256 abs8(__m256 x) {
  return _mm256_and_ps(x, _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF)));
}

// max that ignores a NaN in x: _mm256_max_ps returns its second operand when
// either is NaN.
inline __m256 max_ignoring_nan(__m256 x, __m256 acc) { return _mm256_max_ps(x, acc); }

float horizontal_max(__m256 v) {
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, v);
  float m = lanes[0];
  for (int i = 1; i < 8; ++i) m = lanes[i] > m ? lanes[i] : m;
  return m;
}

void encode_fp8_avx2(const float* in, int64_t n, const Fp8Params& p, bool saturate, float scale,
                     bool with_amax, uint8_t* out, float* amax) {
  const __m256 s = _mm256_set1_ps(scale);
  __m256 m = _mm256_setzero_ps();
  int64_t i = 0;
  // With x and scale both NaN the contract keeps x's NaN (numerics.md
  // section 13), but the compiler may swap the operands of a product and
  // x86 returns the first one's: a NaN scale takes the scalar loop below.
  const bool vector = !std::isnan(scale);
  for (; vector && i + 32 <= n; i += 32) {
    __m256 y[4];
    __m256i c[4];
    for (int j = 0; j < 4; ++j) {
      const __m256 x = _mm256_loadu_ps(in + i + 8 * j);
      if (with_amax) m = max_ignoring_nan(abs8(x), m);
      y[j] = _mm256_mul_ps(x, s);
      c[j] = encode8_magnitude(y[j], p, saturate);
    }
    const __m256i codes = signed_codes(y, pack_lanes(c[0], c[1], c[2], c[3]), p);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), codes);
  }
  float acc = *amax;
  if (with_amax) acc = max_magnitude(acc, horizontal_max(m));
  for (; i < n; ++i) {
    if (with_amax) acc = max_magnitude(acc, in[i]);
    out[i] = encode_fp8(octet_math_mul(in[i], scale), p, saturate);  // x's NaN first
  }
  if (with_amax) *amax = acc;
}

void scale_encode_avx2(const float* in, int64_t n, float scale, int32_t fp8_dtype, bool saturate,
                       uint8_t* out, float* amax) {
  encode_fp8_avx2(in, n, fp8_params(fp8_dtype), saturate, scale, true, out, amax);
}

void amax_avx2(const float* in, int64_t n, float* amax) {
  __m256 m0 = _mm256_setzero_ps(), m1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    m0 = max_ignoring_nan(abs8(_mm256_loadu_ps(in + i)), m0);
    m1 = max_ignoring_nan(abs8(_mm256_loadu_ps(in + i + 8)), m1);
  }
  float acc = max_magnitude(*amax, horizontal_max(_mm256_max_ps(m0, m1)));
  for (; i < n; ++i) acc = max_magnitude(acc, in[i]);
  *amax = acc;
}

void scale_avx2(float* in, int64_t n, float s) {
  const __m256 v = _mm256_set1_ps(s);
  int64_t i = 0;
  const bool vector = !std::isnan(s);  // as in encode_fp8_avx2: a NaN factor goes the scalar way
  for (; vector && i + 8 <= n; i += 8) _mm256_storeu_ps(in + i, _mm256_mul_ps(_mm256_loadu_ps(in + i), v));
  for (; i < n; ++i) in[i] = octet_math_mul(in[i], s);
}

void widen_avx2(const void* src, int32_t dtype, int64_t n, float* out) {
  int64_t i = 0;
  switch (dtype) {
    case OCTET_DTYPE_FP32:
      std::memcpy(out, src, static_cast<size_t>(n) * 4);
      return;
    case OCTET_DTYPE_BF16: {
      const auto* s = static_cast<const uint16_t*>(src);
      const __m256i inf = _mm256_set1_epi32(0x7F800000);
      for (; i + 8 <= n; i += 8) {
        const __m256i u = _mm256_slli_epi32(
            _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i))), 16);
        const __m256i nan =
            _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7FFFFFFF)), inf);
        const __m256i q = _mm256_or_si256(u, _mm256_and_si256(nan, _mm256_set1_epi32(0x00400000)));
        _mm256_storeu_ps(out + i, _mm256_castsi256_ps(q));
      }
      for (; i < n; ++i) out[i] = decode_bf16(s[i]);
      return;
    }
    case OCTET_DTYPE_FP16: {
      const auto* s = static_cast<const uint16_t*>(src);
      for (; i + 8 <= n; i += 8) {
        _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(
                                      reinterpret_cast<const __m128i*>(s + i))));
      }
      for (; i < n; ++i) out[i] = decode_fp16(s[i]);
      return;
    }
    default: {
      const float* table = dtype == OCTET_DTYPE_E8M0 ? e8m0_table() : fp8_table(dtype);
      const auto* s = static_cast<const uint8_t*>(src);
      for (; i + 8 <= n; i += 8) {
        const __m256i idx =
            _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(s + i)));
        _mm256_storeu_ps(out + i, _mm256_i32gather_ps(table, idx, 4));
      }
      for (; i < n; ++i) out[i] = table[s[i]];
      return;
    }
  }
}

void narrow_avx2(const float* in, int64_t n, int32_t dtype, bool saturate, void* dst) {
  int64_t i = 0;
  switch (dtype) {
    case OCTET_DTYPE_FP32:
      std::memcpy(dst, in, static_cast<size_t>(n) * 4);
      return;
    case OCTET_DTYPE_BF16: {
      auto* d = static_cast<uint16_t*>(dst);
      const __m256i one = _mm256_set1_epi32(1);
      const __m256i inf = _mm256_set1_epi32(0x7F800000);
      for (; i + 16 <= n; i += 16) {
        __m256i h[2];
        for (int j = 0; j < 2; ++j) {
          const __m256i u = _mm256_castps_si256(_mm256_loadu_ps(in + i + 8 * j));
          const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), one);
          const __m256i r =
              _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7FFF)), lsb), 16);
          const __m256i q = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40));
          const __m256i nan =
              _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7FFFFFFF)), inf);
          h[j] = _mm256_blendv_epi8(r, q, nan);
        }
        const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(h[0], h[1]), 0xD8);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i), packed);
      }
      for (; i < n; ++i) d[i] = encode_bf16(in[i]);
      return;
    }
    case OCTET_DTYPE_FP16: {
      auto* d = static_cast<uint16_t*>(dst);
      for (; i + 8 <= n; i += 8) {
        _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(in + i),
                                         _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
      }
      for (; i < n; ++i) d[i] = encode_fp16(in[i]);
      return;
    }
    case OCTET_DTYPE_E8M0: {
      auto* d = static_cast<uint8_t*>(dst);
      for (; i < n; ++i) d[i] = encode_e8m0(in[i], true);
      return;
    }
    default: {
      float unused = 0.0f;
      encode_fp8_avx2(in, n, fp8_params(dtype), saturate, 1.0f, false, static_cast<uint8_t*>(dst), &unused);
      return;
    }
  }
}

// 16x16 bytes: rows of src (stride sld) become rows of dst (stride dld),
// in four rounds of unpacks (8-, 16-, 32-, 64-bit units).
inline void transpose16x16(const uint8_t* src, int64_t sld, uint8_t* dst, int64_t dld) {
  __m128i r[16], s1[8][2], s2[4][4], s3[2][8];
  for (int i = 0; i < 16; ++i) r[i] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i * sld));
  for (int p = 0; p < 8; ++p) {  // s1[p][h]: (row 2p, 2p+1) of columns 8h .. 8h+7
    s1[p][0] = _mm_unpacklo_epi8(r[2 * p], r[2 * p + 1]);
    s1[p][1] = _mm_unpackhi_epi8(r[2 * p], r[2 * p + 1]);
  }
  for (int q = 0; q < 4; ++q) {  // s2[q][g]: rows 4q .. 4q+3 of columns 4g .. 4g+3
    for (int h = 0; h < 2; ++h) {
      s2[q][2 * h] = _mm_unpacklo_epi16(s1[2 * q][h], s1[2 * q + 1][h]);
      s2[q][2 * h + 1] = _mm_unpackhi_epi16(s1[2 * q][h], s1[2 * q + 1][h]);
    }
  }
  for (int o = 0; o < 2; ++o) {  // s3[o][t]: rows 8o .. 8o+7 of columns 2t, 2t+1
    for (int g = 0; g < 4; ++g) {
      s3[o][2 * g] = _mm_unpacklo_epi32(s2[2 * o][g], s2[2 * o + 1][g]);
      s3[o][2 * g + 1] = _mm_unpackhi_epi32(s2[2 * o][g], s2[2 * o + 1][g]);
    }
  }
  for (int t = 0; t < 8; ++t) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + (2 * t) * dld),
                     _mm_unpacklo_epi64(s3[0][t], s3[1][t]));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + (2 * t + 1) * dld),
                     _mm_unpackhi_epi64(s3[0][t], s3[1][t]));
  }
}

void transpose_bytes_avx2(const uint8_t* src, int64_t sld, int64_t h, int64_t w, uint8_t* dst,
                          int64_t dld) {
  const int64_t h16 = h / 16 * 16, w16 = w / 16 * 16;
  for (int64_t j = 0; j < w16; j += 16) {
    for (int64_t i = 0; i < h16; i += 16) transpose16x16(src + i * sld + j, sld, dst + j * dld + i, dld);
    for (int64_t jj = j; jj < j + 16; ++jj) {
      for (int64_t i = h16; i < h; ++i) dst[jj * dld + i] = src[i * sld + jj];
    }
  }
  for (int64_t j = w16; j < w; ++j) {
    for (int64_t i = 0; i < h; ++i) dst[j * dld + i] = src[i * sld + j];
  }
}

void encode_only_avx2(const float* in, int64_t n, float scale, int32_t fp8_dtype, bool saturate,
                      uint8_t* out) {
  float unused = 0.0f;
  encode_fp8_avx2(in, n, fp8_params(fp8_dtype), saturate, scale, false, out, &unused);
}

uint32_t abs_bits_max_avx2(const float* in, int64_t n) {
  const __m256i mask = _mm256_set1_epi32(0x7FFFFFFF);
  __m256i m0 = _mm256_setzero_si256(), m1 = _mm256_setzero_si256();
  int64_t i = 0;
  // Masked to 31 bits the words are non-negative: a signed max is the unsigned one.
  for (; i + 16 <= n; i += 16) {
    m0 = _mm256_max_epi32(m0, _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i)), mask));
    m1 = _mm256_max_epi32(m1, _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i + 8)), mask));
  }
  alignas(32) uint32_t lanes[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), _mm256_max_epi32(m0, m1));
  uint32_t m = 0;
  for (int j = 0; j < 8; ++j) m = lanes[j] > m ? lanes[j] : m;
  for (; i < n; ++i) {
    const uint32_t a = bits_of(in[i]) & 0x7FFFFFFFu;
    m = a > m ? a : m;
  }
  return m;
}

const RowKernels kAvx2{"avx2+f16c", widen_avx2,           narrow_avx2,      scale_encode_avx2, amax_avx2,
                       scale_avx2,  transpose_bytes_avx2, encode_only_avx2, abs_bits_max_avx2, count_quantize_avx2};

}  // namespace
}  // namespace octet_cpu

#pragma GCC pop_options
#endif

namespace octet_cpu {

const RowKernels* avx2_row_kernels() {
#if defined(OCTET_CPU_HAVE_AVX2_PATH)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c")) return &kAvx2;
#endif
  return nullptr;
}

}  // namespace octet_cpu
