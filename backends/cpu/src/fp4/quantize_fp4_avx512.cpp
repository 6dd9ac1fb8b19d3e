// The FP4 quantize's inner loops on AVX-512 F/BW/VL/DQ (fp4/quantize_fp4_loops.hpp),
// 16 FP32 lanes with masked tails, compiled for the baseline target under a
// per-function target pragma and taken only at level avx512 and above. The
// same operations as the portable loops, lane by lane: the transform's sums
// in ascending j from +0 (a NaN or an infinity gives a NaN or an infinity as
// there; NaN payloads do not matter, a NaN only marks its block), one
// VDIVPS for y / X, the nearest-even E2M1 magnitude as the count of the
// tie-point comparisons passed.
#include <cstdint>

#include "fp4/quantize_fp4_loops.hpp"

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")
// GCC 12 warns about the undefined vectors inside its own AVX-512 headers.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace octet_cpu {
namespace {

void hadamard_avx512(float* values, int64_t n, uint32_t sign_mask) {
  // Column j of (H D): lane i holds (-1)^(popcount(i & j) + bit j of mask),
  // as a sign bit to XOR into a broadcast x_j.
  alignas(64) uint32_t signs[16][16];
  for (int j = 0; j < 16; ++j) {
    for (int i = 0; i < 16; ++i) {
      const unsigned odd =
          (static_cast<unsigned>(__builtin_popcount(static_cast<unsigned>(i & j))) + ((sign_mask >> j) & 1u)) & 1u;
      signs[j][i] = odd != 0 ? 0x80000000u : 0u;
    }
  }
  __m512i column[16];
  for (int j = 0; j < 16; ++j) column[j] = _mm512_load_si512(signs[j]);
  const __m512 quarter = _mm512_set1_ps(0.25f);
  for (int64_t g = 0; g < n; g += 16) {
    float* x = values + g;
    __m512 sum = _mm512_setzero_ps();
    for (int j = 0; j < 16; ++j) {
      const __m512i xj = _mm512_castps_si512(_mm512_set1_ps(x[j]));
      sum = _mm512_add_ps(sum, _mm512_castsi512_ps(_mm512_xor_si512(xj, column[j])));
    }
    _mm512_storeu_ps(x, _mm512_mul_ps(sum, quarter));
  }
}

inline __mmask16 tail_mask(int64_t left) {
  return left >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << left) - 1u);
}

void scan_avx512(const float* y, int64_t n, float* finite_amax, bool* has_nan) {
  const __m512 inf = _mm512_set1_ps(__builtin_inff());
  __m512 m = _mm512_setzero_ps();
  __mmask16 nan = 0;
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 live = tail_mask(n - i);
    const __m512 v = _mm512_maskz_loadu_ps(live, y + i);
    const __m512 a = _mm512_abs_ps(v);
    nan |= _mm512_mask_cmp_ps_mask(live, v, v, _CMP_UNORD_Q);
    const __mmask16 finite = _mm512_mask_cmp_ps_mask(live, a, inf, _CMP_LT_OQ);
    m = _mm512_mask_max_ps(m, finite, m, a);
  }
  const float block = _mm512_reduce_max_ps(m);
  if (block > *finite_amax) *finite_amax = block;
  if (nan != 0) *has_nan = true;
}

void encode_rne_avx512(const float* y, int64_t n, float divisor, uint8_t* codes, uint64_t* saturated,
                       uint64_t* flushed) {
  const __m512 x = _mm512_set1_ps(divisor);
  const __m512 inf = _mm512_set1_ps(__builtin_inff());
  const __m512i one = _mm512_set1_epi32(1);
  uint64_t sat = 0, flush = 0;
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 live = tail_mask(n - i);
    const __m512 v = _mm512_maskz_loadu_ps(live, y + i);
    const __m512 scaled = _mm512_div_ps(v, x);
    const __m512 a = _mm512_abs_ps(scaled);
    __m512i mag = _mm512_setzero_si512();
    mag = _mm512_mask_add_epi32(mag, _mm512_cmp_ps_mask(a, _mm512_set1_ps(0.25f), _CMP_GT_OQ), mag, one);
    mag = _mm512_mask_add_epi32(mag, _mm512_cmp_ps_mask(a, _mm512_set1_ps(0.75f), _CMP_GE_OQ), mag, one);
    mag = _mm512_mask_add_epi32(mag, _mm512_cmp_ps_mask(a, _mm512_set1_ps(1.25f), _CMP_GT_OQ), mag, one);
    mag = _mm512_mask_add_epi32(mag, _mm512_cmp_ps_mask(a, _mm512_set1_ps(1.75f), _CMP_GE_OQ), mag, one);
    mag = _mm512_mask_add_epi32(mag, _mm512_cmp_ps_mask(a, _mm512_set1_ps(2.5f), _CMP_GT_OQ), mag, one);
    mag = _mm512_mask_add_epi32(mag, _mm512_cmp_ps_mask(a, _mm512_set1_ps(3.5f), _CMP_GE_OQ), mag, one);
    mag = _mm512_mask_add_epi32(mag, _mm512_cmp_ps_mask(a, _mm512_set1_ps(5.0f), _CMP_GT_OQ), mag, one);
    const __m512i sign =
        _mm512_srli_epi32(_mm512_and_si512(_mm512_castps_si512(scaled), _mm512_set1_epi32(INT32_MIN)), 28);
    const __m512i code = _mm512_or_si512(mag, sign);
    _mm_mask_storeu_epi8(codes + i, live, _mm512_cvtepi32_epi8(code));
    sat +=
        static_cast<uint64_t>(__builtin_popcount(_mm512_mask_cmp_ps_mask(live, a, _mm512_set1_ps(7.0f), _CMP_GE_OQ)));
    const __m512 av = _mm512_abs_ps(v);
    const __mmask16 finite_nonzero =
        _mm512_mask_cmp_ps_mask(live, av, inf, _CMP_LT_OQ) & _mm512_cmp_ps_mask(av, _mm512_setzero_ps(), _CMP_GT_OQ);
    flush += static_cast<uint64_t>(
        __builtin_popcount(finite_nonzero & _mm512_cmp_epi32_mask(mag, _mm512_setzero_si512(), _MM_CMPINT_EQ)));
  }
  *saturated += sat;
  *flushed += flush;
}

}  // namespace

const Fp4QuantizeLoops* fp4_avx512_loops() {
  static const Fp4QuantizeLoops loops{"avx512", hadamard_avx512, scan_avx512, encode_rne_avx512};
  return &loops;
}

}  // namespace octet_cpu

#pragma GCC pop_options

#else

namespace octet_cpu {
const Fp4QuantizeLoops* fp4_avx512_loops() { return nullptr; }
}  // namespace octet_cpu

#endif
