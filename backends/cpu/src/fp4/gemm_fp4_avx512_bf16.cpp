// FP4 GEMM on AVX-512 BF16 dot products (VDPBF16PS), numerics.md 15.4.
//
// An E2M1 value has at most 2 significant bits, an E4M3 scale at most 4 and
// an E8M0 scale 1, so an element times its block scale is exactly a BF16
// value (8 significant bits) as long as it stays in the normal range, and
// the product of two such values is exact in FP32 (fp4_fold_exact says
// when: always for NVFP4). Each operand is therefore decoded to BF16 with
// its block scale folded in, and the GEMM is one plain BF16 dot-product
// sum: the per-k-block partials and their scale products of 15.4 are all
// exact, so only the order of the FP32 additions differs from the
// reference (numerics.md section 8's bound). The decode is one VPERMW
// lookup per 32 codes in a 32-entry table holding the 16 E2M1 values times
// the scales of the two 16-code halves.
//
// Two kernels, as the FP8 GEMM (gemm/gemm_fp8_avx512_bf16.cpp):
// - blocked: Goto-style loops over N (per thread), K (kKC) and M (kMC); B'
//   decoded into [kc/2][32] BF16-pair panels, A' into [kc/2][12] panels,
//   a 12 x 32 register micro-kernel (24 zmm accumulators);
// - decode (m <= kFp4DecodeMaxM): A is decoded once (m rows of BF16), B is
//   read once and decoded in registers without its scales; each 32-code
//   chunk's 16 exact lane sums are multiplied by B's block scales (lanes
//   0-7 the first 16 codes, 8-15 the second) and added to 16 FP32 lanes.
#include "fp4/gemm_fp4.hpp"

#include <omp.h>

#include <cstdint>
#include <cstring>

#include "dispatch/parallel_policy.hpp"
#include "elementwise/row_kernels.hpp"
#include "fp4/fp4_codes.hpp"
#include "gemm/micro_kernel_bf16_avx512_bf16.hpp"
#include "plugin/errors.hpp"

namespace octet_cpu {

bool fp4_fold_exact(const Fp4Operand& op, int64_t rows, int64_t k) {
  if (op.nvfp4) return true;  // |E2M1 * E4M3| in {0} U [2^-10, 2688]
  const int64_t bk = 32, k_blocks = (k + bk - 1) / bk, row_bytes = fp4_row_bytes(k);
  // First the common case, without a branch per scale (a pass over the
  // grid that vectorizes): every scale in range or NaN.
  uint8_t outside = 0;
  for (int64_t i = 0; i < rows * k_blocks; ++i) {
    const uint8_t s = op.scales[i];
    outside |= static_cast<uint8_t>(static_cast<uint8_t>(s - (127 - 40)) > 80) & static_cast<uint8_t>(s != 0xFF);
  }
  if (outside == 0) return true;
  for (int64_t r = 0; r < rows; ++r) {  // MXFP4 blocks are 1 x 32
    for (int64_t kb = 0; kb < k_blocks; ++kb) {
      const uint8_t s = op.scales[r * k_blocks + kb];
      if ((s >= 127 - 40 && s <= 127 + 40) || s == 0xFF) continue;
      const uint8_t* row = op.codes + r * row_bytes;
      for (int64_t c = kb * bk; c < k && c < (kb + 1) * bk; ++c) {
        if ((fp4_code_at(row, c) & 0x7) != 0) return false;
      }
    }
  }
  return true;
}

namespace {

constexpr int64_t kKC = 256;  // a multiple of 32: panels hold whole k-blocks
constexpr int64_t kMC = 192;
constexpr int64_t kNC = 1024;

inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
constexpr int64_t round_up(int64_t a, int64_t b) { return (a + b - 1) / b * b; }

}  // namespace
}  // namespace octet_cpu

#if defined(__GNUC__) && defined(__x86_64__)
#define OCTET_CPU_HAVE_FP4_BF16_PATH 1
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,avx2,fma,f16c")
// GCC 12 warns about the undefined vectors inside its own AVX-512 headers.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include <immintrin.h>

namespace octet_cpu {
namespace {

// The 16 E2M1 values by code, FP32.
inline __m512 e2m1_values() {
  return _mm512_setr_ps(0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f, -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f,
                        -6.0f);
}

// BF16 bits of the 16 values times s (exact when folding is): 16 x 16-bit.
inline __m256i table16(__m512 values, float s) {
  const __m512 v = _mm512_mul_ps(values, _mm512_set1_ps(s));
  return _mm512_cvtepi32_epi16(_mm512_srli_epi32(_mm512_castps_si512(v), 16));
}

// 16 packed bytes -> 32 16-bit lanes holding the codes, element order (low
// nibble first).
inline __m512i nibble_codes(__m128i bytes) {
  const __m512i x = _mm512_cvtepu8_epi32(bytes);
  return _mm512_or_si512(_mm512_and_si512(x, _mm512_set1_epi32(0xF)),
                         _mm512_slli_epi32(_mm512_and_si512(x, _mm512_set1_epi32(0xF0)), 12));
}

// 16 packed bytes -> 32 16-bit lanes whose bits 3:0 are the codes, element
// order, and whose bit 4 is the next code's bit 0 or 0: indices into a
// 32-entry table whose two halves are the same 16 values. (Two
// instructions fewer than nibble_codes.)
inline __m512i nibble_codes_dup(__m128i bytes) {
  const __m512i x = _mm512_cvtepu8_epi32(bytes);
  return _mm512_or_si512(x, _mm512_slli_epi32(x, 12));
}

// The same with the second 16 codes offset by 16 (a table's upper half).
inline __m512i nibble_indices(__m128i bytes) {
  const __m512i pair = nibble_codes(bytes);
  return _mm512_mask_add_epi16(pair, 0xFFFF0000u, pair, _mm512_set1_epi16(16));
}

inline __m128i load16(const uint8_t* p, int64_t count) {
  if (count >= 16) return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  const __mmask16 mask = count <= 0 ? 0 : static_cast<__mmask16>((1u << count) - 1);
  return _mm_maskz_loadu_epi8(mask, p);
}

// Lanes of codes [k0 + 0, k0 + 32) that are below k.
inline __mmask32 live_lanes(int64_t k0, int64_t k) {
  const int64_t live = k - k0;
  return live >= 32 ? 0xFFFFFFFFu : live <= 0 ? 0u : static_cast<__mmask32>((uint64_t{1} << live) - 1);
}

// dst[0 .. round_up(kc, 32)) = BF16 of row `row`'s codes [k0, k0 + kc)
// times their block scales, 0 past k. k0 is a multiple of 32.
void decode_row_folded(const Fp4Operand& op, int64_t row, int64_t k0, int64_t kc, int64_t k, uint16_t* dst) {
  const int64_t row_bytes = fp4_row_bytes(k), bk = op.nvfp4 ? 16 : 32, k_blocks = (k + bk - 1) / bk;
  const uint8_t* codes = op.codes + row * row_bytes;
  const uint8_t* grid = op.scales + (row / op.block_rows) * k_blocks;
  const __m512 values = e2m1_values();
  const float* scale_table = op.nvfp4 ? fp8_table(OCTET_DTYPE_E4M3) : e8m0_table();
  const int shift = op.nvfp4 ? 4 : 5;  // log2(bk): no division per chunk
  for (int64_t c = 0; c < kc; c += 32) {
    const int64_t kk = k0 + c;
    const int64_t kb0 = kk >> shift, kb1 = (kk + 16) >> shift;
    const float s0 = scale_table[grid[kb0]];
    const float s1 = kk + 16 < k ? scale_table[grid[kb1]] : 0.0f;
    const __m512i table = _mm512_inserti64x4(_mm512_castsi256_si512(table16(values, s0)), table16(values, s1), 1);
    const __m512i idx = nibble_indices(load16(codes + kk / 2, row_bytes - kk / 2));
    _mm512_storeu_si512(dst + c, _mm512_maskz_permutexvar_epi16(live_lanes(kk, k), idx, table));
  }
}

// ---------------------------------------------------------------- blocked

// A rows [i0, i0 + mc), k [k0, k0 + kc) -> kMR-row panels [kp][kMR] pairs.
void pack_a(const Fp4Operand& a, int64_t i0, int64_t mc, int64_t k0, int64_t kc, int64_t k, uint32_t* out,
            uint16_t* row_buf) {
  const int64_t kp = (kc + 1) / 2;
  const int64_t panels = (mc + kMR - 1) / kMR;
  for (int64_t p = 0; p < panels; ++p) {
    uint32_t* panel = out + p * kp * kMR;
    for (int r = 0; r < kMR; ++r) {
      const int64_t i = p * kMR + r;
      if (i >= mc) {
        for (int64_t q = 0; q < kp; ++q) panel[q * kMR + r] = 0;
        continue;
      }
      decode_row_folded(a, i0 + i, k0, kc, k, row_buf);
      const uint32_t* pairs = reinterpret_cast<const uint32_t*>(row_buf);
      for (int64_t q = 0; q < kp; ++q) panel[q * kMR + r] = pairs[q];
    }
  }
}

// B rows (output columns) [j0, j0 + nc), k [k0, k0 + kc) -> kNR-column
// panels [kp][kNR] pairs; columns past nc are zero.
void pack_b(const Fp4Operand& b, int64_t j0, int64_t nc, int64_t k0, int64_t kc, int64_t k, uint32_t* out,
            uint16_t* row_buf) {
  const int64_t kp = (kc + 1) / 2;
  const int64_t panels = (nc + kNR - 1) / kNR;
  for (int64_t p = 0; p < panels; ++p) {
    uint32_t* panel = out + p * kp * kNR;
    for (int jj = 0; jj < kNR; ++jj) {
      const int64_t j = p * kNR + jj;
      if (j >= nc) {
        for (int64_t q = 0; q < kp; ++q) panel[q * kNR + jj] = 0;
        continue;
      }
      decode_row_folded(b, j0 + j, k0, kc, k, row_buf);
      const uint32_t* pairs = reinterpret_cast<const uint32_t*>(row_buf);
      for (int64_t q = 0; q < kp; ++q) panel[q * kNR + jj] = pairs[q];
    }
  }
}

constexpr int64_t kAPairs = round_up(kMC, kMR) * (kKC / 2);
constexpr int64_t kBPairs = kNC * (kKC / 2);
constexpr int64_t kRowHalves = kKC;
constexpr int64_t kTileFloats = kMR * kNR;
constexpr int64_t kPerThreadBytes = kAPairs * 4 + kBPairs * 4 + kRowHalves * 2 + kTileFloats * 4 + 4 * 64;

struct Buffers {
  uint32_t* a;
  uint32_t* b;
  uint16_t* row;
  float* tile;
};

void blocked_range(const Fp4Operand& a, const Fp4Operand& b, int64_t k, int64_t m0, int64_t m1, int64_t n0, int64_t n1,
                   float* c, int64_t ldc, const Buffers& buf) {
  blocked_loop_12x32<kMC, kNC, kKC>(
      k, m0, m1, n0, n1, c, ldc, buf.a, buf.b, buf.tile,
      [&](int64_t ic, int64_t mc, int64_t pc, int64_t kc) { pack_a(a, ic, mc, pc, kc, k, buf.a, buf.row); },
      [&](int64_t jc, int64_t nc, int64_t pc, int64_t kc) { pack_b(b, jc, nc, pc, kc, k, buf.b, buf.row); });
}

// Each OpenMP thread takes a share of the output: N in kNR-column panels
// when there are enough of them (each thread decodes only its own columns
// of B), else M in kMR-row panels.
void blocked(const Fp4Operand& a, const Fp4Operand& b, int64_t m, int64_t n, int64_t k, float* c, int64_t ldc) {
  const int threads = threads_for(2.0 * double(m) * double(n) * double(k), kGemmFlopsPerThread);
  const std::size_t per_thread = static_cast<std::size_t>(kPerThreadBytes);
  Buffer<unsigned char> memory(per_thread * static_cast<std::size_t>(threads));
  const int64_t n_panels = (n + kNR - 1) / kNR, m_panels = (m + kMR - 1) / kMR;
  const bool split_n = n_panels >= 2 * threads || n_panels >= m_panels;
#pragma omp parallel num_threads(threads)
  {
    const octet::DefaultFloatMode float_mode;  // this thread, for the region (dispatch/parallel_policy.hpp)
    const int t = omp_get_thread_num(), nt = omp_get_num_threads();
    unsigned char* base = memory.get() + per_thread * static_cast<std::size_t>(t);
    Buffers buf;
    buf.a = reinterpret_cast<uint32_t*>(base);
    buf.b = reinterpret_cast<uint32_t*>(base + kAPairs * 4);
    buf.row = reinterpret_cast<uint16_t*>(base + kAPairs * 4 + kBPairs * 4);
    buf.tile = reinterpret_cast<float*>(base + kAPairs * 4 + kBPairs * 4 + kRowHalves * 2 + 64);
    const int64_t units = split_n ? n_panels : m_panels;
    const int64_t u0 = units * t / nt, u1 = units * (t + 1) / nt;
    if (u1 > u0) {
      if (split_n) {
        blocked_range(a, b, k, 0, m, u0 * kNR, min64(n, u1 * kNR), c, ldc, buf);
      } else {
        blocked_range(a, b, k, u0 * kMR, min64(m, u1 * kMR), 0, n, c, ldc, buf);
      }
    }
  }
}

// ---------------------------------------------------------------- decode

constexpr int kDecodeRows = 4;  // A rows per pass over B
constexpr int kDecodeCols = 4;  // B rows decoded together (independent sums)

// c[r * ldc + j] for the R rows of a_rows and B rows [j0, j0 + J): per
// 32-code chunk, B's codes decoded to BF16 without scale, the exact lane
// sums of VDPBF16PS times B's block scales (lanes 0-7: codes 0-15, 8-15:
// codes 16-31) added to FP32 lanes; one horizontal sum at the end.
template <int R, int J>
void decode_tile(const uint16_t* a_rows, int64_t a_stride, const Fp4Operand& b, int64_t j0, int64_t k,
                 const float* scale_table, float* c, int64_t ldc) {
  const int64_t row_bytes = fp4_row_bytes(k), bk = b.nvfp4 ? 16 : 32, k_blocks = (k + bk - 1) / bk;
  const int64_t chunks = (k + 31) / 32;
  const __m256i half = table16(e2m1_values(), 1.0f);
  const __m512i table = _mm512_inserti64x4(_mm512_castsi256_si512(half), half, 1);  // nibble_codes_dup's
  const uint8_t* codes[J];
  const uint8_t* grid[J];
  for (int jj = 0; jj < J; ++jj) {
    codes[jj] = b.codes + (j0 + jj) * row_bytes;
    grid[jj] = b.scales + ((j0 + jj) / b.block_rows) * k_blocks;
  }
  __m512 acc[R][J];
  for (int r = 0; r < R; ++r) {
    for (int jj = 0; jj < J; ++jj) acc[r][jj] = _mm512_setzero_ps();
  }
  // Block index by shift (bk is 16 or 32); whole chunks first, without
  // masks, then the last partial chunk.
  const int shift = b.nvfp4 ? 4 : 5;
  const auto step = [&](int64_t kk, bool whole) {
    const __mmask32 live = whole ? ~__mmask32{0} : live_lanes(kk, k);
    const int64_t kb0 = kk >> shift, kb1 = (kk + 16) >> shift;
    const bool second = kk + 16 < k;
    __m512bh bv[J];
    __m512 sv[J];
#pragma GCC unroll 4
    for (int jj = 0; jj < J; ++jj) {
      const __m128i bytes = whole ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(codes[jj] + kk / 2))
                                  : load16(codes[jj] + kk / 2, row_bytes - kk / 2);
      const __m512i idx = nibble_codes_dup(bytes);
      bv[jj] = (__m512bh)_mm512_maskz_permutexvar_epi16(live, idx, table);
      const float s0 = scale_table[grid[jj][kb0]];
      if (kb1 == kb0 && second) {  // MXFP4: one block
        sv[jj] = _mm512_set1_ps(s0);
      } else {
        const float s1 = second ? scale_table[grid[jj][kb1]] : 0.0f;
        sv[jj] = _mm512_mask_blend_ps(0xFF00, _mm512_set1_ps(s0), _mm512_set1_ps(s1));
      }
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const __m512bh av = (__m512bh)_mm512_loadu_si512(a_rows + r * a_stride + kk);
#pragma GCC unroll 4
      for (int jj = 0; jj < J; ++jj) {
        // p: exact lane sums; p * sv is exact too (numerics.md 15.4), so
        // the FMA rounds once, as the add after a multiply would.
        const __m512 p = _mm512_dpbf16_ps(_mm512_setzero_ps(), av, bv[jj]);
        acc[r][jj] = _mm512_fmadd_ps(p, sv[jj], acc[r][jj]);
      }
    }
  };
  const int64_t whole_chunks = k / 32;
  for (int64_t ch = 0; ch < whole_chunks; ++ch) step(ch * 32, true);
  if (whole_chunks < chunks) step(whole_chunks * 32, false);
  for (int r = 0; r < R; ++r) {
    for (int jj = 0; jj < J; ++jj) c[r * ldc + j0 + jj] = _mm512_reduce_add_ps(acc[r][jj]);
  }
}

template <int R>
void decode_rows(const uint16_t* a_rows, int64_t a_stride, const Fp4Operand& b, int64_t j0, int64_t j1, int64_t k,
                 float* c, int64_t ldc) {
  const float* scale_table = b.nvfp4 ? fp8_table(OCTET_DTYPE_E4M3) : e8m0_table();
  int64_t j = j0;
  for (; j + kDecodeCols <= j1; j += kDecodeCols) {
    decode_tile<R, kDecodeCols>(a_rows, a_stride, b, j, k, scale_table, c, ldc);
  }
  for (; j < j1; ++j) decode_tile<R, 1>(a_rows, a_stride, b, j, k, scale_table, c, ldc);
}

void decode_gemm(const Fp4Operand& a, const Fp4Operand& b, int64_t m, int64_t n, int64_t k, float* c, int64_t ldc) {
  const int64_t stride = round_up(k, 32);
  Buffer<uint16_t> a_rows(static_cast<std::size_t>(m * stride));
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t k0 = 0; k0 < k; k0 += kKC) {
      decode_row_folded(a, i, k0, min64(kKC, k - k0), k, a_rows.get() + i * stride + k0);
    }
  }
  // The weights are streamed once (two codes a byte): the threads share their bytes.
  const int threads = threads_for(double(n) * double(k) / 2.0, kStreamBytesPerThread);
#pragma omp parallel num_threads(threads)
  {
    const octet::DefaultFloatMode float_mode;  // this thread, for the region (dispatch/parallel_policy.hpp)
    const int t = omp_get_thread_num(), nt = omp_get_num_threads();
    const int64_t j0 = n * t / nt, j1 = n * (t + 1) / nt;
    for (int64_t i0 = 0; i0 < m; i0 += kDecodeRows) {
      const uint16_t* ar = a_rows.get() + i0 * stride;
      float* cr = c + i0 * ldc;
      switch (min64(kDecodeRows, m - i0)) {
        case 1:
          decode_rows<1>(ar, stride, b, j0, j1, k, cr, ldc);
          break;
        case 2:
          decode_rows<2>(ar, stride, b, j0, j1, k, cr, ldc);
          break;
        case 3:
          decode_rows<3>(ar, stride, b, j0, j1, k, cr, ldc);
          break;
        default:
          decode_rows<4>(ar, stride, b, j0, j1, k, cr, ldc);
          break;
      }
    }
  }
}

}  // namespace

void fp4_widen_folded_impl(const uint8_t* row, int64_t k0, int64_t kc, const float* scales, int64_t bk, float* out) {
  const __m512 values = e2m1_values();
  const uint8_t* bytes = row + k0 / 2;
  const int shift = bk == 16 ? 4 : 5;  // bk is 16 or 32: no division per step
  for (int64_t c = 0; c < kc; c += 16) {
    const int64_t count = min64(16, kc - c);
    const __mmask8 byte_mask = static_cast<__mmask8>((1u << ((count + 1) / 2)) - 1);
    const __m128i b = _mm_maskz_loadu_epi8(byte_mask, bytes + c / 2);
    // Element 2i is byte i's low nibble, 2i + 1 its high nibble.
    const __m128i lo = _mm_and_si128(b, _mm_set1_epi8(0x0F));
    const __m128i hi = _mm_and_si128(_mm_srli_epi16(b, 4), _mm_set1_epi8(0x0F));
    const __m512i index = _mm512_cvtepu8_epi32(_mm_unpacklo_epi8(lo, hi));
    const __m512 v = _mm512_mul_ps(_mm512_permutexvar_ps(index, values), _mm512_set1_ps(scales[c >> shift]));
    _mm512_mask_storeu_ps(out + c, static_cast<__mmask16>((1u << count) - 1), v);
  }
}

void fp4_gemm_bf16_impl(const Fp4Operand& a, const Fp4Operand& b, int64_t m, int64_t n, int64_t k, float* acc,
                        int64_t ldc) {
  if (m <= kFp4DecodeMaxM) {
    decode_gemm(a, b, m, n, k, acc, ldc);
  } else {
    blocked(a, b, m, n, k, acc, ldc);
  }
}

}  // namespace octet_cpu

#pragma GCC pop_options
#endif

namespace octet_cpu {

bool fp4_gemm_bf16_built() {
#if defined(OCTET_CPU_HAVE_FP4_BF16_PATH)
  return true;
#else
  return false;
#endif
}

void fp4_widen_folded_avx512(const uint8_t* row, int64_t k0, int64_t kc, const float* scales, int64_t bk, float* out) {
#if defined(OCTET_CPU_HAVE_FP4_BF16_PATH)
  fp4_widen_folded_impl(row, k0, kc, scales, bk, out);
#else
  (void)row, (void)k0, (void)kc, (void)scales, (void)bk, (void)out;
#endif
}

void fp4_gemm_bf16(const Fp4Operand& a, const Fp4Operand& b, int64_t m, int64_t n, int64_t k, float* acc, int64_t ldc) {
#if defined(OCTET_CPU_HAVE_FP4_BF16_PATH)
  (void)fp8_table(OCTET_DTYPE_E4M3);  // build the shared tables before any thread needs them
  (void)e8m0_table();
  fp4_gemm_bf16_impl(a, b, m, n, k, acc, ldc);
#else
  (void)a, (void)b, (void)m, (void)n, (void)k, (void)acc, (void)ldc;
#endif
}

}  // namespace octet_cpu
