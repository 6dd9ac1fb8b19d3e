// AVX-512 (F/BW/VL/DQ) row kernels for the quantize family: the fused
// scale + encode (with and without amax), amax, and the block amax / NaN
// test. 16 lanes per vector, tails through masked loads and stores (no
// scalar loop). Everything this file includes is compiled for the baseline
// target; only the functions between the pragmas use AVX-512, and they run
// only when dispatch/isa.cpp (cpuid + xgetbv) says the CPU and OS have it and
// cpu_isa() is avx512 or higher. widen, narrow, scale and transpose_bytes
// are the AVX2 ones.
//
// The encoder is codecs/encode_fp8_avx512.hpp's. x * scale is one FP32 multiply; a NaN scale takes the scalar
// path (octet_math_mul), so that with x and scale both NaN, x's NaN is kept (numerics.md section 13) whatever operand
// order the compiler picks.
#include <cmath>
#include <cstring>

#include <immintrin.h>

#include <octet/octet_math.h>
#include <octet/octet_types.h>

#include "codecs/scalar_codecs.hpp"
#include "dispatch/isa.hpp"
#include "elementwise/row_kernels.hpp"

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define OCTET_CPU_HAVE_AVX512_PATH 1
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx2,f16c")
// GCC 12's AVX-512 headers start masked and narrowing intrinsics from
// _mm*_undefined_*(), which its flow analysis reports as uninitialized.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include "codecs/encode_fp8_avx512.hpp"
#include "elementwise/quantize_counts_loop.hpp"

namespace octet_cpu {
namespace {

void count_quantize_avx512(const float* in, int64_t n, float scale, QuantizeThresholds t, QuantizeCounts* counts) {
  count_quantize_loop(in, n, scale, t.saturate_from, t.flush_to, counts);
}

inline __m512 abs16(__m512 x) {
  return _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(0x7FFFFFFF)));
}

// _mm512_max_ps returns its second operand when either is NaN: a NaN in x
// leaves acc as it was.
inline __m512 max_ignoring_nan(__m512 x, __m512 acc) { return _mm512_max_ps(x, acc); }

inline __mmask16 tail_mask(int64_t left) {
  return left >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << left) - 1u);
}

template <bool kAmax>
void encode_fp8_avx512(const float* in, int64_t n, const Fp8Params& p, bool saturate, float scale,
                       uint8_t* out, float* amax) {
  if (std::isnan(scale)) {  // x's NaN first: the scalar way (see above)
    float acc = kAmax ? *amax : 0.0f;
    for (int64_t i = 0; i < n; ++i) {
      if (kAmax) acc = max_magnitude(acc, in[i]);
      out[i] = encode_fp8(octet_math_mul(in[i], scale), p, saturate);
    }
    if (kAmax) *amax = acc;
    return;
  }
  const __m512 s = _mm512_set1_ps(scale);
  __m512 m0 = _mm512_setzero_ps(), m1 = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    const __m512 x0 = _mm512_loadu_ps(in + i), x1 = _mm512_loadu_ps(in + i + 16);
    const __m512 x2 = _mm512_loadu_ps(in + i + 32), x3 = _mm512_loadu_ps(in + i + 48);
    if (kAmax) {
      m0 = max_ignoring_nan(abs16(x0), m0);
      m1 = max_ignoring_nan(abs16(x1), m1);
      m0 = max_ignoring_nan(abs16(x2), m0);
      m1 = max_ignoring_nan(abs16(x3), m1);
    }
    _mm512_storeu_si512(
        out + i,
        pack64(encode16_codes(_mm512_mul_ps(x0, s), p, saturate), encode16_codes(_mm512_mul_ps(x1, s), p, saturate),
               encode16_codes(_mm512_mul_ps(x2, s), p, saturate), encode16_codes(_mm512_mul_ps(x3, s), p, saturate)));
  }
  for (; i < n; i += 16) {
    const __mmask16 k = tail_mask(n - i);
    const __m512 x = _mm512_maskz_loadu_ps(k, in + i);  // masked-off lanes are +0
    if (kAmax) m0 = max_ignoring_nan(abs16(x), m0);
    _mm_mask_storeu_epi8(out + i, k, encode16(_mm512_mul_ps(x, s), p, saturate));
  }
  if (kAmax) {
    const float v = _mm512_reduce_max_ps(_mm512_max_ps(m0, m1));  // no NaN in m0, m1
    *amax = max_magnitude(*amax, v);
  }
}

const Fp8Params& params(int32_t dtype) { return fp8_params(dtype); }

void scale_encode_avx512(const float* in, int64_t n, float scale, int32_t fp8_dtype, bool saturate,
                         uint8_t* out, float* amax) {
  encode_fp8_avx512<true>(in, n, params(fp8_dtype), saturate, scale, out, amax);
}

void encode_avx512(const float* in, int64_t n, float scale, int32_t fp8_dtype, bool saturate,
                   uint8_t* out) {
  encode_fp8_avx512<false>(in, n, params(fp8_dtype), saturate, scale, out, nullptr);
}

void amax_avx512(const float* in, int64_t n, float* amax) {
  __m512 m0 = _mm512_setzero_ps(), m1 = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    m0 = max_ignoring_nan(abs16(_mm512_loadu_ps(in + i)), m0);
    m1 = max_ignoring_nan(abs16(_mm512_loadu_ps(in + i + 16)), m1);
  }
  for (; i < n; i += 16) {
    m0 = max_ignoring_nan(abs16(_mm512_maskz_loadu_ps(tail_mask(n - i), in + i)), m0);
  }
  *amax = max_magnitude(*amax, _mm512_reduce_max_ps(_mm512_max_ps(m0, m1)));
}

uint32_t abs_bits_max_avx512(const float* in, int64_t n) {
  const __m512i mask = _mm512_set1_epi32(0x7FFFFFFF);
  __m512i m0 = _mm512_setzero_si512(), m1 = _mm512_setzero_si512();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    m0 = _mm512_max_epu32(m0, _mm512_and_si512(_mm512_loadu_si512(in + i), mask));
    m1 = _mm512_max_epu32(m1, _mm512_and_si512(_mm512_loadu_si512(in + i + 16), mask));
  }
  for (; i < n; i += 16) {
    m0 = _mm512_max_epu32(
        m0, _mm512_and_si512(_mm512_maskz_loadu_epi32(tail_mask(n - i), in + i), mask));
  }
  return _mm512_reduce_max_epu32(_mm512_max_epu32(m0, m1));
}

}  // namespace
}  // namespace octet_cpu

#pragma GCC pop_options
#endif

namespace octet_cpu {

const RowKernels* avx512_row_kernels() {
#if defined(OCTET_CPU_HAVE_AVX512_PATH)
  static const RowKernels* table = []() -> const RowKernels* {
    const CpuFeatures& f = cpu_features();
    const RowKernels* avx2 = avx2_row_kernels();
    if (avx2 == nullptr || !(f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq)) return nullptr;
    static RowKernels k = *avx2;
    k.name = "avx512+avx2+f16c";  // quantize family in AVX-512, conversions AVX2
    k.scale_encode = scale_encode_avx512;
    k.amax = amax_avx512;
    k.encode = encode_avx512;
    k.abs_bits_max = abs_bits_max_avx512;
    k.count_quantize = count_quantize_avx512;
    return &k;
  }();
  return table;
#else
  return nullptr;
#endif
}

}  // namespace octet_cpu
