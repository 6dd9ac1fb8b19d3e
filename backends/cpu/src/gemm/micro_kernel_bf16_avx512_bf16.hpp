// The 12 x 32 micro-kernel on VDPBF16PS shared by the blocked FP8 and FP4
// GEMMs (gemm/gemm_fp8_avx512_bf16.cpp, fp4/gemm_fp4_avx512_bf16.cpp): C (+)= A B over kp
// K pairs, from packed panels of BF16 pairs (A: [kp][kMR], B: [kp][kNR],
// 64-byte aligned), in FP32. It carries its own target attribute, so the
// translation units that include it stay compiled for the baseline and
// call it only at an ISA level with AVX512_BF16 (dispatch/isa.hpp).
#pragma once

#include <immintrin.h>

#include <cstdint>

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

}  // namespace
}  // namespace octet_cpu
