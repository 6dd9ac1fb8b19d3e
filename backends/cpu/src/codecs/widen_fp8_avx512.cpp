// FP8 -> FP32 and FP8 -> BF16 widening on the VPERMI2W decoder
// (codecs/decode_fp8_avx512.hpp):
// 32 codes become 32 BF16 values, and a BF16 value is the upper half of its
// FP32 value.
#include "codecs/widen_fp8_avx512.hpp"

#include <octet/octet_types.h>

#include "codecs/decode_fp8_tables.hpp"
#include "dispatch/isa.hpp"
#include "elementwise/row_kernels.hpp"
#include "plugin/checks.hpp"

#if defined(__GNUC__) && defined(__x86_64__)
#define OCTET_CPU_HAVE_FP8_WIDEN_AVX512 1
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx2")
// GCC 12 warns about the undefined vectors inside its own AVX-512 headers.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "codecs/decode_fp8_avx512.hpp"

namespace octet_cpu {

namespace {

// Writes the 32 BF16 values of `v` as FP32 to out[0 .. count), count <= 32.
inline void store_fp32(__m512i v, float* out, int64_t count) {
  const __m512i lo = _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_castsi512_si256(v)), 16);
  const __m512i hi = _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64(v, 1)), 16);
  if (count >= 32) {
    _mm512_storeu_si512(out, lo);
    _mm512_storeu_si512(out + 16, hi);
    return;
  }
  const auto mask = [](int64_t c) {
    return c <= 0 ? __mmask16{0} : c >= 16 ? __mmask16{0xFFFF} : static_cast<__mmask16>((1u << c) - 1);
  };
  _mm512_mask_storeu_epi32(out, mask(count), lo);
  _mm512_mask_storeu_epi32(out + 16, mask(count - 16), hi);
}

// Codes src[0 .. n) of `dtype`, 32 at a time as BF16 bits, to
// store(v, i, count): the vector of codes i .. i + 32, count = n - i of them
// valid. An FNUZ dtype's one NaN, 0x80, reads as -0 in the table: it is
// replaced by 0x7FC0.
template <class Store>
inline void widen_bf16(const uint8_t* src, int32_t dtype, int64_t n, Store&& store) {
  const Table t = load_table(fp8_bf16_codes(dtype));
  const bool fnuz = dtype == OCTET_DTYPE_E4M3FNUZ || dtype == OCTET_DTYPE_E5M2FNUZ;
  const __m256i nan_code = _mm256_set1_epi8(static_cast<char>(0x80));
  const __m512i qnan = _mm512_set1_epi16(0x7FC0);
  for (int64_t i = 0; i < n; i += 32) {
    const __m256i bytes = load_bytes(src + i, n - i);
    __m512i v = decode32(bytes, t);
    if (fnuz) v = _mm512_mask_blend_epi16(_mm256_cmpeq_epi8_mask(bytes, nan_code), v, qnan);
    store(v, i, n - i);
  }
}

}  // namespace

void fp8_widen_avx512(const uint8_t* src, int32_t dtype, int64_t n, float* out) {
  widen_bf16(src, dtype, n, [out](__m512i v, int64_t i, int64_t count) { store_fp32(v, out + i, count); });
}

void fp8_widen_bf16_avx512(const uint8_t* src, int32_t dtype, int64_t n, uint16_t* out) {
  widen_bf16(src, dtype, n, [out](__m512i v, int64_t i, int64_t count) {
    const __mmask32 keep = count >= 32 ? ~__mmask32{0} : static_cast<__mmask32>((uint64_t{1} << count) - 1);
    _mm512_mask_storeu_epi16(out + i, keep, v);
  });
}

}  // namespace octet_cpu

#pragma GCC pop_options
#endif

namespace octet_cpu {

bool fp8_widen_avx512_built() {
#if defined(OCTET_CPU_HAVE_FP8_WIDEN_AVX512)
  return true;
#else
  return false;
#endif
}

#if !defined(OCTET_CPU_HAVE_FP8_WIDEN_AVX512)
void fp8_widen_avx512(const uint8_t*, int32_t, int64_t, float*) {}
void fp8_widen_bf16_avx512(const uint8_t*, int32_t, int64_t, uint16_t*) {}
#endif

namespace {
void widen_fp8_avx512(const void* src, int32_t dtype, int64_t n, float* out) {
  fp8_widen_avx512(static_cast<const uint8_t*>(src), dtype, n, out);
}
}  // namespace

WidenRow widen_row_for(int32_t dtype) {
  if (is_fp8(dtype) && cpu_isa() >= Isa::Avx512 && fp8_widen_avx512_built()) return widen_fp8_avx512;
  return row_kernels().widen;
}

}  // namespace octet_cpu
