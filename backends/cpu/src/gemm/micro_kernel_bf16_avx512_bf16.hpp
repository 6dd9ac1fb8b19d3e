// The 12 x 32 micro-kernel on VDPBF16PS and the blocked loop around it,
// shared by the blocked FP8 and FP4 GEMMs (gemm/gemm_fp8_avx512_bf16.cpp, fp4/gemm_fp4_avx512_bf16.cpp): C (+)= A B
// over kp K pairs, from packed panels of BF16 pairs (A: [kp][kMR], B: [kp][kNR], 64-byte aligned), in FP32. It carries
// its own target attribute, so the translation units that include it stay compiled for the baseline and call it only at
// an ISA level with AVX512_BF16 (dispatch/isa.hpp).
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace octet_cpu {
namespace {  // each kernel's translation unit has its own copy

constexpr int kMR = 12;  // rows per micro-kernel (12 x 2 accumulators)
constexpr int kNR = 32;  // columns per micro-kernel (2 zmm of 16 lanes)

#define OCTET_CPU_BF16_TARGET "avx512f,avx512bw,avx512vl,avx512dq,avx512bf16"

// acc[r][h] += the sums over pairs q in [q0, q1) of A's row r times B's
// columns 16h..16h+15: the k loop of every 12 x 32 micro-kernel.
__attribute__((always_inline, target(OCTET_CPU_BF16_TARGET))) inline void accumulate_12x32(__m512 (&acc)[kMR][2],
                                                                                           int64_t q0, int64_t q1,
                                                                                           const uint32_t* a,
                                                                                           const uint32_t* b) {
  for (int64_t q = q0; q < q1; ++q) {
    const __m512bh b0 = (__m512bh)_mm512_load_si512(b + q * kNR);
    const __m512bh b1 = (__m512bh)_mm512_load_si512(b + q * kNR + 16);
#pragma GCC unroll 12
    for (int r = 0; r < kMR; ++r) {
      const __m512bh av = (__m512bh)_mm512_set1_epi32(static_cast<int>(a[q * kMR + r]));
      acc[r][0] = _mm512_dpbf16_ps(acc[r][0], av, b0);
      acc[r][1] = _mm512_dpbf16_ps(acc[r][1], av, b1);
    }
  }
}

// c[r * ldc + j] (+)= the 12 x 32 sums over pairs q < kp (kLoadC: start
// from c's values, else from zero). The 12 x 32 tile at `next` (row
// stride ldc, the tile the caller does next; the tile itself where there
// is none) is prefetched before the k loop, so that its loads and stores
// hit L1 (C is read and written once per k panel).
template <bool kLoadC>
__attribute__((noinline, target(OCTET_CPU_BF16_TARGET))) void micro_12x32(int64_t kp, const uint32_t* a,
                                                                          const uint32_t* b, float* c, int64_t ldc,
                                                                          const float* next) {
#pragma GCC unroll 12
  for (int r = 0; r < kMR; ++r) {
    _mm_prefetch(reinterpret_cast<const char*>(next + r * ldc), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(next + r * ldc + 16), _MM_HINT_T0);
  }
  __m512 acc[kMR][2];
#pragma GCC unroll 12
  for (int r = 0; r < kMR; ++r) {
    acc[r][0] = kLoadC ? _mm512_loadu_ps(c + r * ldc) : _mm512_setzero_ps();
    acc[r][1] = kLoadC ? _mm512_loadu_ps(c + r * ldc + 16) : _mm512_setzero_ps();
  }
  accumulate_12x32(acc, 0, kp, a, b);
#pragma GCC unroll 12
  for (int r = 0; r < kMR; ++r) {
    _mm512_storeu_ps(c + r * ldc, acc[r][0]);
    _mm512_storeu_ps(c + r * ldc + 16, acc[r][1]);
  }
}

// The blocked loop of the FP8 and FP4 GEMMs over the m0..m1 x n0..n1 part
// of C (ld ldc), K in panels of kKC: for each kNC columns of B and each
// panel, pack_b(jc, nc, pc, kc) packs B's block into b_panel, then for
// each kMC rows pack_a(ic, mc, pc, kc) packs A's into a_panel, and the
// 12 x 32 micro-kernel sums each tile (the first panel stores, later ones
// add). An edge tile goes through `tile` (kMR x kNR FP32) in the same
// order of sums. The packing (what decodes the codes to BF16 pairs) is the
// caller's; the blocking depends on m, n, k only, never on the layout.
template <int64_t kMC, int64_t kNC, int64_t kKC, class PackA, class PackB>
__attribute__((always_inline)) inline void blocked_loop_12x32(int64_t k, int64_t m0, int64_t m1, int64_t n0, int64_t n1,
                                                              float* c, int64_t ldc, const uint32_t* a_panel,
                                                              const uint32_t* b_panel, float* tile, PackA&& pack_a,
                                                              PackB&& pack_b) {
  for (int64_t jc = n0; jc < n1; jc += kNC) {
    const int64_t nc = n1 - jc < kNC ? n1 - jc : kNC;
    for (int64_t pc = 0; pc < k; pc += kKC) {
      const int64_t kc = k - pc < kKC ? k - pc : kKC, kp = (kc + 1) / 2;
      pack_b(jc, nc, pc, kc);
      for (int64_t ic = m0; ic < m1; ic += kMC) {
        const int64_t mc = m1 - ic < kMC ? m1 - ic : kMC;
        pack_a(ic, mc, pc, kc);
        for (int64_t jr = 0; jr < nc; jr += kNR) {
          const uint32_t* bp = b_panel + (jr / kNR) * kp * kNR;
          const int64_t w = nc - jr < kNR ? nc - jr : kNR;
          for (int64_t ir = 0; ir < mc; ir += kMR) {
            const uint32_t* ap = a_panel + (ir / kMR) * kp * kMR;
            const int64_t h = mc - ir < kMR ? mc - ir : kMR;
            float* cp = c + (ic + ir) * ldc + (jc + jr);
            // The tile done next (a prefetch never faults, so the rows and
            // columns an edge tile lacks may be named too).
            const float* next = ir + kMR < mc ? cp + kMR * ldc : jr + kNR < nc ? c + ic * ldc + (jc + jr + kNR) : cp;
            if (h == kMR && w == kNR) {
              if (pc == 0) {
                micro_12x32<false>(kp, ap, bp, cp, ldc, next);
              } else {
                micro_12x32<true>(kp, ap, bp, cp, ldc, next);
              }
              continue;
            }
            if (pc == 0) {
              micro_12x32<false>(kp, ap, bp, tile, kNR, tile);
            } else {
              for (int64_t r = 0; r < h; ++r) std::memcpy(tile + r * kNR, cp + r * ldc, w * 4);
              micro_12x32<true>(kp, ap, bp, tile, kNR, tile);
            }
            for (int64_t r = 0; r < h; ++r) std::memcpy(cp + r * ldc, tile + r * kNR, w * 4);
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace octet_cpu
