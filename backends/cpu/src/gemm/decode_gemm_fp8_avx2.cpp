// The FP8 decode kernel for CPUs with AVX2, F16C and FMA but no AVX-512
// (level avx2, dispatch/isa.hpp): decode-shaped FP8 GEMMs stream their weights once
// instead of widening them to FP32 block by block for oneDNN's sgemm.
//
// Decoding: every E4M3, E5M2 and E4M3FNUZ value is exactly an FP16 value
// times a power of two, so 16 codes become FP32 in a few instructions:
// the code's magnitude bits shifted into an FP16 (E5M2: the code is the
// FP16's high byte; E4M3 and E4M3FNUZ: exponent and mantissa shifted left
// by 7 and the sign to bit 15), VCVTPH2PS (exact, subnormals included,
// whatever MXCSR's DAZ says), and one multiply by 2^8 (E4M3) or 2^7
// (E4M3FNUZ), exact too. E4M3's NaN codes (0x7F, 0xFF) are set to NaN
// afterwards; E5M2's inf and NaN codes are FP16's own.
#include "gemm/decode_gemm_fp8_avx2.hpp"

#include <octet/octet_types.h>

#include "codecs/decode_fp8_tables.hpp"

#if defined(__GNUC__) && defined(__x86_64__)
#define OCTET_CPU_HAVE_AVX2_DECODE 1
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

#include <omp.h>

#include <cstring>

#include <immintrin.h>

#include "dispatch/parallel_policy.hpp"
#include "plugin/errors.hpp"

namespace octet_cpu {
namespace {

constexpr int64_t kRows = 4;    // weight rows per group
constexpr int64_t kKB = 512;    // K per weight block: 4 x 512 FP32 = 8 KiB (L1)
constexpr int64_t kAlign = 16;  // k is padded to a multiple of 16 (one decode)

struct Decoder {
  __m256i mag_mask;  // bits of the code kept in place before the shift
  int shift;         // 8 (E5M2) or 7 (E4M3, E4M3FNUZ)
  __m256 factor;     // 1, 2^8 or 2^7
  bool e4m3_nan;     // codes 0x7F / 0xFF are NaN

  static Decoder of(int32_t dtype) {
    Decoder d;
    if (dtype == OCTET_DTYPE_E5M2) {
      d.mag_mask = _mm256_set1_epi16(0xFF);
      d.shift = 8;
      d.factor = _mm256_set1_ps(1.0f);
      d.e4m3_nan = false;
    } else {
      d.mag_mask = _mm256_set1_epi16(0x7F);
      d.shift = 7;
      d.factor = _mm256_set1_ps(dtype == OCTET_DTYPE_E4M3 ? 256.0f : 128.0f);
      d.e4m3_nan = dtype == OCTET_DTYPE_E4M3;
    }
    return d;
  }

  // 16 codes (zeros past count, count may be <= 0) -> out[0..16) FP32.
  void decode16(const uint8_t* p, int64_t count, float* out) const {
    __m256 lo, hi;
    decode16(p, count, lo, hi);
    _mm256_storeu_ps(out, lo);
    _mm256_storeu_ps(out + 8, hi);
  }

  // The same into registers: lo = codes 0..7, hi = codes 8..15.
  void decode16(const uint8_t* p, int64_t count, __m256& lo, __m256& hi) const {
    __m128i bytes;
    if (count >= 16) {
      bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    } else {
      alignas(16) uint8_t tmp[16] = {};
      if (count > 0) std::memcpy(tmp, p, static_cast<std::size_t>(count));
      bytes = _mm_load_si128(reinterpret_cast<const __m128i*>(tmp));
    }
    const __m256i c = _mm256_cvtepu8_epi16(bytes);
    __m256i h = _mm256_slli_epi16(_mm256_and_si256(c, mag_mask), shift);
    if (shift == 7) h = _mm256_or_si256(h, _mm256_slli_epi16(_mm256_and_si256(c, _mm256_set1_epi16(0x80)), 8));
    lo = _mm256_mul_ps(_mm256_cvtph_ps(_mm256_castsi256_si128(h)), factor);
    hi = _mm256_mul_ps(_mm256_cvtph_ps(_mm256_extracti128_si256(h, 1)), factor);
    if (e4m3_nan) {
      const __m256i nan_code =
          _mm256_cmpeq_epi16(_mm256_and_si256(c, _mm256_set1_epi16(0x7F)), _mm256_set1_epi16(0x7F));
      if (!_mm256_testz_si256(nan_code, nan_code)) {
        const __m256 nan = _mm256_set1_ps(__builtin_nanf(""));
        lo = _mm256_blendv_ps(lo, nan, _mm256_castsi256_ps(_mm256_cvtepi16_epi32(_mm256_castsi256_si128(nan_code))));
        hi = _mm256_blendv_ps(hi, nan,
                              _mm256_castsi256_ps(_mm256_cvtepi16_epi32(_mm256_extracti128_si256(nan_code, 1))));
      }
    }
  }

  // dst[0..padded_len) = src[0..len) decoded, zeros past len (padded_len a
  // multiple of 16).
  void row(const uint8_t* src, int64_t len, int64_t padded_len, float* dst) const {
    for (int64_t i = 0; i < padded_len; i += 16) decode16(src + i, len - i, dst + i);
  }
};

// acc[r][g] += A[r][kk..] . W[g][kk..] over k in [0, len) (len a multiple
// of 8), 8 FP32 lanes, for MB activation rows x kRows weight rows.
template <int MB>
__attribute__((noinline)) void fma_micro(const float* arows, int64_t lda, const float* w, int64_t len,
                                         float* part /*[MB][kRows][8]*/, bool first) {
  __m256 acc[MB][kRows];
  for (int r = 0; r < MB; ++r) {
    for (int g = 0; g < kRows; ++g)
      acc[r][g] = first ? _mm256_setzero_ps() : _mm256_load_ps(part + (r * kRows + g) * 8);
  }
  for (int64_t kk = 0; kk < len; kk += 8) {
    __m256 wv[kRows];
    for (int g = 0; g < kRows; ++g) wv[g] = _mm256_load_ps(w + g * kKB + kk);
    for (int r = 0; r < MB; ++r) {
      const __m256 av = _mm256_loadu_ps(arows + r * lda + kk);
      for (int g = 0; g < kRows; ++g) acc[r][g] = _mm256_fmadd_ps(av, wv[g], acc[r][g]);
    }
  }
  for (int r = 0; r < MB; ++r) {
    for (int g = 0; g < kRows; ++g) _mm256_store_ps(part + (r * kRows + g) * 8, acc[r][g]);
  }
}

// The same partial sums for m <= kFusedMaxM with the weights decoded in
// registers straight into the FMAs (no buffer): MB activation rows x
// kRows weight rows given as codes, valid of each row (the rest read as
// 0), over k in [0, len) (len a multiple of 16). Every output gets the
// same FMAs in the same order as through fma_micro, so a row's bits do
// not depend on m.
constexpr int64_t kFusedMaxM = 2;
constexpr int64_t kFusedAhead = 1024;  // codes asked for this far ahead
template <int MB, int NG>
__attribute__((noinline)) void decode_fma_micro(const Decoder& d, const float* arows, int64_t lda,
                                                const uint8_t* const* w, int64_t len, int64_t valid,
                                                float* part /*[MB][NG][8]*/) {
  __m256 acc[MB][NG];
  for (int r = 0; r < MB; ++r) {
    for (int g = 0; g < NG; ++g) acc[r][g] = _mm256_setzero_ps();
  }
  for (int64_t kk = 0; kk < len; kk += 16) {
    for (int g = 0; g < NG; ++g) {
      if (kk % 64 == 0) _mm_prefetch(reinterpret_cast<const char*>(w[g] + kk + kFusedAhead), _MM_HINT_T0);
      __m256 lo, hi;
      d.decode16(w[g] + kk, valid - kk, lo, hi);
      for (int r = 0; r < MB; ++r) {
        const float* ar = arows + r * lda + kk;
        acc[r][g] = _mm256_fmadd_ps(_mm256_loadu_ps(ar), lo, acc[r][g]);
        acc[r][g] = _mm256_fmadd_ps(_mm256_loadu_ps(ar + 8), hi, acc[r][g]);
      }
    }
  }
  for (int r = 0; r < MB; ++r) {
    for (int g = 0; g < NG; ++g) _mm256_store_ps(part + (r * NG + g) * 8, acc[r][g]);
  }
}

// The 8 lanes of v added as a tree.
inline float reduce8(__m256 v) {
  const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  return _mm_cvtss_f32(_mm_add_ss(s2, _mm_movehdup_ps(s2)));
}

}  // namespace

void fp8_decode_gemm_avx2(const Fp8Operand& a, const Fp8Operand& b, int64_t m, int64_t n, int64_t k, float* c,
                          int64_t ldc) {
  const int64_t kpad = round_up(k, kAlign);
  const int threads = threads_for(double(n) * double(k), kStreamBytesPerThread);
  Buffer<float> arows(static_cast<std::size_t>(m) * static_cast<std::size_t>(kpad));
  // Per thread: a weight block of kRows x kKB FP32 and the partial sums.
  const std::size_t per_thread = (kRows * kKB + kDecodeMaxM * kRows * 8) * sizeof(float) + 64;
  Buffer<unsigned char> scratch(per_thread * static_cast<std::size_t>(threads));
  {
    const Decoder da = Decoder::of(a.dtype);
    for_each_row(a, m, k, [&](int64_t i, const uint8_t* src) { da.row(src, k, kpad, arows.get() + i * kpad); });
  }
#pragma omp parallel num_threads(threads)
  {
    const octet::DefaultFloatMode float_mode;  // this thread, for the region (dispatch/parallel_policy.hpp)
    const int t = omp_get_thread_num(), nt = omp_get_num_threads();
    unsigned char* base = scratch.get() + per_thread * static_cast<std::size_t>(t);
    float* wbuf = reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(base) + 63) / 64 * 64);
    float* part = wbuf + kRows * kKB;
    const Decoder db = Decoder::of(b.dtype);
    const int64_t groups = (n + kRows - 1) / kRows;
    const int64_t g0 = groups * t / nt, g1 = groups * (t + 1) / nt;
    for (int64_t grp = g0; grp < g1; ++grp) {
      const int64_t j = grp * kRows, gw = min64(kRows, n - j);
      if (m <= kFusedMaxM) {
        const uint8_t* w[kRows];
        for (int64_t g = 0; g < gw; ++g) w[g] = b.data + (j + g) * b.ld;
        if (gw == kRows) {
          (m == 1 ? decode_fma_micro<1, kRows> : decode_fma_micro<2, kRows>)(db, arows.get(), kpad, w, kpad, k, part);
        } else {
          for (int64_t g = 0; g < gw; ++g) {
            float* pg = part + g * m * 8;
            (m == 1 ? decode_fma_micro<1, 1> : decode_fma_micro<2, 1>)(db, arows.get(), kpad, w + g, kpad, k, pg);
          }
        }
        for (int64_t r = 0; r < m; ++r) {
          for (int64_t g = 0; g < gw; ++g) {
            const float* p = gw == kRows ? part + (r * kRows + g) * 8 : part + (g * m + r) * 8;
            c[r * ldc + j + g] = reduce8(_mm256_load_ps(p));
          }
        }
        continue;
      }
      for (int64_t kb = 0; kb < kpad; kb += kKB) {
        const int64_t len = min64(kKB, kpad - kb);
        for (int64_t g = 0; g < kRows; ++g) {
          float* dst = wbuf + g * kKB;
          if (g < gw) {
            const uint8_t* row = b.data + (j + g) * b.ld;
            // The codes decoded next (this row's next block, else the next
            // group's row) are prefetched into L2 a block ahead.
            const uint8_t* ahead = kb + kKB < kpad ? row + kb + kKB : j + g + kRows < n ? row + kRows * b.ld : nullptr;
            if (ahead != nullptr) {
              for (int64_t i = 0; i < len; i += 64) _mm_prefetch(reinterpret_cast<const char*>(ahead + i), _MM_HINT_T1);
            }
            db.row(row + kb, k - kb, len, dst);
          } else {
            std::memset(dst, 0, static_cast<std::size_t>(len) * sizeof(float));
          }
        }
        int64_t r = 0;
        for (; r + 2 <= m; r += 2) {
          fma_micro<2>(arows.get() + r * kpad + kb, kpad, wbuf, len, part + r * kRows * 8, kb == 0);
        }
        if (r < m) fma_micro<1>(arows.get() + r * kpad + kb, kpad, wbuf, len, part + r * kRows * 8, kb == 0);
      }
      for (int64_t r = 0; r < m; ++r) {
        for (int64_t g = 0; g < gw; ++g) c[r * ldc + j + g] = reduce8(_mm256_load_ps(part + (r * kRows + g) * 8));
      }
    }
  }
}

}  // namespace octet_cpu

#pragma GCC pop_options
#endif

namespace octet_cpu {

bool fp8_decode_avx2_takes(int32_t dtype) {
  return dtype == OCTET_DTYPE_E4M3 || dtype == OCTET_DTYPE_E5M2 || dtype == OCTET_DTYPE_E4M3FNUZ;
}

bool fp8_decode_avx2_built() {
#if defined(OCTET_CPU_HAVE_AVX2_DECODE)
  return true;
#else
  return false;
#endif
}

#if !defined(OCTET_CPU_HAVE_AVX2_DECODE)
void fp8_decode_gemm_avx2(const Fp8Operand&, const Fp8Operand&, int64_t, int64_t, int64_t, float*, int64_t) {}
#endif

}  // namespace octet_cpu
