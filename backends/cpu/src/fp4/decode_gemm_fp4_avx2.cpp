// fp4_decode_gemm_fma (fp4/decode_gemm_fp4_avx2.hpp): the FP4 decode shapes at levels
// avx2 and avx512, where the BF16 decode kernel (fp4/gemm_fp4_avx512_bf16.cpp)
// cannot run. Without it they took the sgemm tiles, which widen all of B
// to FP32 block by block for an m-row product (m = 1, N = K = 8192: eight
// times B's bytes written and read again).
#include "fp4/decode_gemm_fp4_avx2.hpp"

#include <omp.h>

#include <algorithm>
#include <cstring>

#include "dispatch/parallel_policy.hpp"
#include "elementwise/row_kernels.hpp"
#include "fp4/fp4_codes.hpp"
#include "plugin/errors.hpp"

namespace octet_cpu {
namespace {

constexpr int64_t kBlock = 512;  // codes of a B row widened at once: whole 16- and 32-blocks
constexpr int kCols = 4;         // B rows widened together

// The high and the low byte of each signed E2M1 value's BF16 bits (its FP32
// bits' upper half: every E2M1 value is exact in BF16), by code.
struct E2M1Bf16Bytes {
  uint8_t high[16], low[16];
  E2M1Bf16Bytes() {
    for (int c = 0; c < 16; ++c) {
      const float v = c < 8 ? kE2M1Values[c] : -kE2M1Values[c - 8];
      uint32_t bits;
      std::memcpy(&bits, &v, sizeof bits);
      high[c] = static_cast<uint8_t>(bits >> 24);
      low[c] = static_cast<uint8_t>(bits >> 16);
    }
  }
};
const E2M1Bf16Bytes& e2m1_bf16_bytes() {
  static const E2M1Bf16Bytes bytes;
  return bytes;
}

}  // namespace
}  // namespace octet_cpu

#if defined(__GNUC__) && defined(__x86_64__)
#define OCTET_CPU_HAVE_FP4_DECODE_FMA 1
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

#include <immintrin.h>

namespace octet_cpu {
namespace {

// Codes [k0, k0 + kc) of row r (k0 a multiple of kBlock), each times its
// block's scale (exact: fp4_fold_exact held), into out[0 .. round_up(kc, 8))
// with zeros past kc, in this kernel's k order: natural except inside each
// whole group of 64 codes, which comes out as the 8-float vectors below.
// A's rows and B's go through this one function with the same k0 and kc,
// so every dot product pairs the same k indices; only the order of the sum
// differs from the natural one, within numerics.md's bound.
//
// A group is 32 bytes: a PSHUFB per nibble plane and byte of the BF16 bits
// (16-entry tables), the bytes paired into BF16 words by unpacking, and each
// 32-bit lane of words split into two FP32 values by a shift and a mask.
// Lane l of the unpacked words holds the codes 32 l + [0, 16) (low unpack)
// or 32 l + [16, 32) (high unpack), so each vector's two 128-bit lanes take
// the scales of those two 16-code stretches (bk is 16 or 32).
void widen_segment(const Fp4Operand& op, int64_t r, int64_t k0, int64_t kc, int64_t k, int64_t bk, float* out) {
  const int64_t k_blocks = (k + bk - 1) / bk;
  const uint8_t* scale_codes = op.scales + (r / op.block_rows) * k_blocks + k0 / bk;
  const float* decode = op.nvfp4 ? fp8_table(OCTET_DTYPE_E4M3) : e8m0_table();
  // Each block's scale, and each 16-code stretch's (bk is 16 or 32).
  float scales[kBlock / 16], stretch32[kBlock / 16];
  const int64_t blocks = (kc + bk - 1) / bk;
  for (int64_t q = 0; q < blocks; ++q) scales[q] = decode[scale_codes[q]];
  const float* stretch = scales;
  if (bk == 32) {
    for (int64_t q = 0; q < blocks; ++q) stretch32[2 * q] = stretch32[2 * q + 1] = scales[q];
    stretch = stretch32;
  }
  const uint8_t* bytes = op.codes + r * fp4_row_bytes(k) + k0 / 2;
  const E2M1Bf16Bytes& table = e2m1_bf16_bytes();
  const __m256i high_bytes = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(table.high)));
  const __m256i low_bytes = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(table.low)));
  const __m256i nibble = _mm256_set1_epi8(0x0F);
  const __m256i upper_half = _mm256_set1_epi32(static_cast<int>(0xFFFF0000u));
  int64_t c = 0;
  for (; c + 64 <= kc; c += 64) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bytes + c / 2));
    // The 16-code stretches' scales: [0, 16) with [32, 48), [16, 32) with [48, 64).
    const float* s16 = stretch + c / 16;
    const __m256 scale_lo = _mm256_set_m128(_mm_set1_ps(s16[2]), _mm_set1_ps(s16[0]));
    const __m256 scale_hi = _mm256_set_m128(_mm_set1_ps(s16[3]), _mm_set1_ps(s16[1]));
    const __m256i planes[2] = {_mm256_and_si256(v, nibble), _mm256_and_si256(_mm256_srli_epi16(v, 4), nibble)};
    float* dst = out + c;
    for (const __m256i& codes : planes) {
      const __m256i hb = _mm256_shuffle_epi8(high_bytes, codes), lb = _mm256_shuffle_epi8(low_bytes, codes);
      const __m256i words[2] = {_mm256_unpacklo_epi8(lb, hb), _mm256_unpackhi_epi8(lb, hb)};
      for (int h = 0; h < 2; ++h) {
        const __m256 scale = h == 0 ? scale_lo : scale_hi;
        const __m256 even = _mm256_castsi256_ps(_mm256_slli_epi32(words[h], 16));
        const __m256 odd = _mm256_castsi256_ps(_mm256_and_si256(words[h], upper_half));
        _mm256_storeu_ps(dst, _mm256_mul_ps(even, scale));
        _mm256_storeu_ps(dst + 8, _mm256_mul_ps(odd, scale));
        dst += 16;
      }
    }
  }
  // The rest in natural order (the same for A and B).
  if (c < kc) fp4_widen_folded(op.codes + r * fp4_row_bytes(k), k0 + c, kc - c, scales + c / bk, bk, out + c);
  std::fill(out + kc, out + (kc + 7) / 8 * 8, 0.0f);
}

// part[r][jj] (8 lanes each) += A[r][0 .. len) . W[jj][0 .. len) for R rows
// of A (lda apart) and the kCols rows of w (kBlock apart); len a multiple
// of 8.
template <int R>
void dot_block(const float* arows, int64_t lda, const float* w, int64_t len, __m256* part /*[R][kCols]*/) {
  __m256 acc[R][kCols];
  for (int r = 0; r < R; ++r) {
    for (int jj = 0; jj < kCols; ++jj)
      acc[r][jj] = _mm256_load_ps(reinterpret_cast<const float*>(part + r * kCols + jj));
  }
  for (int64_t kk = 0; kk < len; kk += 8) {
    __m256 wv[kCols];
    for (int jj = 0; jj < kCols; ++jj) wv[jj] = _mm256_load_ps(w + jj * kBlock + kk);
    for (int r = 0; r < R; ++r) {
      const __m256 av = _mm256_loadu_ps(arows + r * lda + kk);
      for (int jj = 0; jj < kCols; ++jj) acc[r][jj] = _mm256_fmadd_ps(av, wv[jj], acc[r][jj]);
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int jj = 0; jj < kCols; ++jj) _mm256_store_ps(reinterpret_cast<float*>(part + r * kCols + jj), acc[r][jj]);
  }
}

float sum8(__m256 v) {
  const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(t, _mm_shuffle_ps(t, t, 1)));
}

void decode_gemm(const Fp4Operand& a, const Fp4Operand& b, int64_t m, int64_t n, int64_t k, int64_t bk, float* c,
                 int64_t ldc) {
  const int64_t kpad = (k + 7) / 8 * 8;
  Buffer<float> arows(static_cast<std::size_t>(m) * static_cast<std::size_t>(kpad));
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t k0 = 0; k0 < k; k0 += kBlock) {
      widen_segment(a, i, k0, std::min(kBlock, k - k0), k, bk, arows.get() + i * kpad + k0);
    }
  }
  // The weights are streamed once (two codes a byte): the threads share them.
  const int threads = threads_for(double(n) * double(k) / 2.0, kStreamBytesPerThread);
  // Per thread: kCols widened rows of kBlock and the partial sums.
  const std::size_t per_thread = static_cast<std::size_t>(kCols * kBlock + kFp4DecodeMaxM * kCols * 8);
  Buffer<float> scratch(per_thread * static_cast<std::size_t>(threads));
#pragma omp parallel num_threads(threads)
  {
    const octet::DefaultFloatMode float_mode;  // this thread, for the region (dispatch/parallel_policy.hpp)
    const int t = omp_get_thread_num(), nt = omp_get_num_threads();
    float* w = scratch.get() + per_thread * static_cast<std::size_t>(t);
    __m256* part = reinterpret_cast<__m256*>(w + kCols * kBlock);
    const int64_t groups = (n + kCols - 1) / kCols;
    for (int64_t g = groups * t / nt; g < groups * (t + 1) / nt; ++g) {
      const int64_t j = g * kCols, cols = std::min<int64_t>(kCols, n - j);
      for (int64_t q = 0; q < m * kCols; ++q) part[q] = _mm256_setzero_ps();
      for (int64_t k0 = 0; k0 < k; k0 += kBlock) {
        const int64_t kc = std::min(kBlock, k - k0), len = (kc + 7) / 8 * 8;
        for (int jj = 0; jj < kCols; ++jj) {
          if (jj < cols) {
            widen_segment(b, j + jj, k0, kc, k, bk, w + jj * kBlock);
          } else {
            std::fill(w + jj * kBlock, w + jj * kBlock + len, 0.0f);
          }
        }
        int64_t r = 0;
        for (; r + 2 <= m; r += 2) dot_block<2>(arows.get() + r * kpad + k0, kpad, w, len, part + r * kCols);
        if (r < m) dot_block<1>(arows.get() + r * kpad + k0, kpad, w, len, part + r * kCols);
      }
      for (int64_t r = 0; r < m; ++r) {
        for (int64_t jj = 0; jj < cols; ++jj) c[r * ldc + j + jj] = sum8(part[r * kCols + jj]);
      }
    }
  }
}

}  // namespace

void fp4_decode_gemm_fma(const Fp4Operand& a, const Fp4Operand& b, int64_t m, int64_t n, int64_t k, int64_t bk,
                         float* acc, int64_t ldc) {
  (void)fp8_table(OCTET_DTYPE_E4M3);  // build the shared tables before any thread needs them
  (void)e8m0_table();
  (void)e2m1_bf16_bytes();
  decode_gemm(a, b, m, n, k, bk, acc, ldc);
}

}  // namespace octet_cpu

#pragma GCC pop_options
#endif

namespace octet_cpu {

bool fp4_decode_fma_built() {
#if defined(OCTET_CPU_HAVE_FP4_DECODE_FMA)
  return true;
#else
  return false;
#endif
}

#if !defined(OCTET_CPU_HAVE_FP4_DECODE_FMA)
void fp4_decode_gemm_fma(const Fp4Operand&, const Fp4Operand&, int64_t, int64_t, int64_t, int64_t, float*, int64_t) {}
#endif

}  // namespace octet_cpu
