// The FP8 GEMM's decode kernel (m <= kDecodeMaxM, B' rows contiguous: the
// LLM weight case), written once over a Decoder that turns FP8 codes into
// BF16 vectors. Included by gemm/gemm_fp8_avx512_bf16.cpp (Perm16Decoder: VPERMI2W
// tables, AVX512_BF16) and gemm/decode_gemm_fp8_avx512_bf16_vbmi.cpp (VbmiDecoder: VPERMI2B
// byte planes, + AVX512_VBMI), each inside its own target pragma, so each
// translation unit gets its own copy compiled for its own instructions:
// the contents are in an anonymous namespace on purpose (no instantiation
// may be shared between the two targets).
//
// B is read once, a chunk of codes at a time, decoded in registers, and
// dotted with the m activation rows (widened once to BF16, small); one FP32
// vector of 16 partial sums per (row, column), reduced at the end. Threads
// share N.
//
// decode_gemm_fp32_with is the same stream on FP32 FMAs (Fp8GemmEngine::
// Fp32Fma, gemm/fp8_gemm_engine.hpp): each decoded BF16 vector is split into the FP32
// values of its even and its odd halves of the 32-bit pairs (a shift and a
// mask, both exact), the activations likewise, so that every product again
// pairs the codes of the same k; one FMA does 16 multiply-adds, and where
// FMAs issue two a cycle (Intel) that is twice VDPBF16PS's rate.
//
// A Decoder has:
//   kChunk: 32 or 64 codes decoded at once (kChunk / 32 vectors);
//   Tab load(int32_t dtype): its tables;
//   chunk(p, count, tab, out): codes p[0..count) (count may be < kChunk or
//     <= 0: missing codes read as 0) -> out[0 .. kChunk / 32);
//   tail(p, count, tab): 32 codes -> one vector (the last 32 of a row whose
//     padded length is not a multiple of kChunk).
// The BF16 values a chunk yields may come in any fixed order of its codes,
// provided adjacent pairs stay adjacent (VDPBF16PS sums each 32-bit pair):
// both operands go through the same Decoder at the same offsets, so every
// product pairs the codes of the same k.
#pragma once

#include <omp.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include <immintrin.h>

#include "codecs/decode_fp8_tables.hpp"
#include "dispatch/parallel_policy.hpp"
#include "gemm/gemm_fp8.hpp"
#include "plugin/errors.hpp"

namespace octet_cpu {
namespace {

constexpr int64_t kKB = 1024;  // K per weight block (decode path with a buffer)
static_assert(kKB % 64 == 0, "weight blocks start on a chunk of every decoder");

// Stores one decoded vector of 32 BF16 values (16 pairs) at dst: as they
// are (Out = uint16_t), or (Out = float) as the FP32 values of the pairs'
// first halves, then of their second halves: 16 + 16 floats.
template <class Out>
inline void store_decoded(__m512i v, Out* dst) {
  if constexpr (std::is_same_v<Out, float>) {
    _mm512_storeu_ps(dst, _mm512_castsi512_ps(_mm512_slli_epi32(v, 16)));
    _mm512_storeu_ps(dst + 16, _mm512_castsi512_ps(_mm512_and_si512(v, _mm512_set1_epi32(int32_t(0xFFFF0000u)))));
  } else {
    _mm512_storeu_si512(dst, v);
  }
}

// dst[0..padded_len) = BF16 (or, Out = float, the split FP32: store_decoded)
// of codes src[0..len) (zeros past len), in the Decoder's order; padded_len
// is a multiple of 32. When `ahead` is given, the bytes ahead[0..padded_len)
// (what the caller decodes next) are prefetched into L2, one cache line per
// 64 codes.
template <class D, class Out>
void decode_row_in(const uint8_t* src, int64_t len, int64_t padded_len, const typename D::Tab& t, Out* dst,
                   const uint8_t* ahead = nullptr) {
  int64_t i = 0;
  for (; i + D::kChunk <= padded_len; i += D::kChunk) {
    if (ahead != nullptr && i % 64 == 0) _mm_prefetch(reinterpret_cast<const char*>(ahead + i), _MM_HINT_T1);
    __m512i v[D::kChunk / 32];
    D::chunk(src + i, len - i, t, v);
    for (int64_t h = 0; h < D::kChunk / 32; ++h) store_decoded(v[h], dst + i + 32 * h);
  }
  if (i < padded_len) store_decoded(D::tail(src + i, len - i, t), dst + i);
}

// c[r * ldc + g] = the sum of the 16 partial sums of activation row r and
// weight row g (r < m, g < gw) of a fused group: laid out [m][ng][16] when
// the group is whole (gw == ng), else [gw][m][16] (one weight row a call).
inline void store_group_sums(const float* part, int64_t m, int64_t ng, int64_t gw, float* c, int64_t ldc) {
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t g = 0; g < gw; ++g) {
      const float* p = gw == ng ? part + (r * ng + g) * 16 : part + (g * m + r) * 16;
      c[r * ldc + g] = _mm512_reduce_add_ps(_mm512_load_ps(p));
    }
  }
}

// Partial sums of MB activation rows x NG weight rows over k in [0, len)
// (len a multiple of 32): acc[r][g] += A[r][kk..] . W[g][kk..], 16 lanes.
// Weights come as FP8 codes (decoded here, in registers) or as BF16 from a
// buffer decoded by decode_row_in<D>.
template <class D, int MB, int NG, bool kFromCodes>
void decode_micro(const uint16_t* arows, int64_t lda, const void* const* w, int64_t len, int64_t valid,
                  const typename D::Tab& t, float* part /*[MB][NG][16]*/, bool first) {
  __m512 acc[MB][NG];
#pragma GCC unroll 12
  for (int r = 0; r < MB; ++r) {
#pragma GCC unroll 4
    for (int g = 0; g < NG; ++g) {
      acc[r][g] = first ? _mm512_setzero_ps() : _mm512_load_ps(part + (r * NG + g) * 16);
    }
  }
  int64_t kk = 0;
  if (kFromCodes) {
    constexpr int V = static_cast<int>(D::kChunk / 32);
    for (; kk + D::kChunk <= len; kk += D::kChunk) {
      __m512i wv[NG][V];
#pragma GCC unroll 4
      for (int g = 0; g < NG; ++g) D::chunk(static_cast<const uint8_t*>(w[g]) + kk, valid - kk, t, wv[g]);
#pragma GCC unroll 2
      for (int h = 0; h < V; ++h) {
#pragma GCC unroll 12
        for (int r = 0; r < MB; ++r) {
          const __m512bh av = (__m512bh)_mm512_loadu_si512(arows + r * lda + kk + 32 * h);
#pragma GCC unroll 4
          for (int g = 0; g < NG; ++g) acc[r][g] = _mm512_dpbf16_ps(acc[r][g], av, (__m512bh)wv[g][h]);
        }
      }
    }
    if (kk < len) {  // the last 32 codes when len is not a multiple of kChunk
      __m512i wv[NG];
#pragma GCC unroll 4
      for (int g = 0; g < NG; ++g) wv[g] = D::tail(static_cast<const uint8_t*>(w[g]) + kk, valid - kk, t);
#pragma GCC unroll 12
      for (int r = 0; r < MB; ++r) {
        const __m512bh av = (__m512bh)_mm512_loadu_si512(arows + r * lda + kk);
#pragma GCC unroll 4
        for (int g = 0; g < NG; ++g) acc[r][g] = _mm512_dpbf16_ps(acc[r][g], av, (__m512bh)wv[g]);
      }
    }
  } else {
    for (; kk < len; kk += 32) {
      __m512bh wv[NG];
#pragma GCC unroll 4
      for (int g = 0; g < NG; ++g) {
        wv[g] = (__m512bh)_mm512_loadu_si512(static_cast<const uint16_t*>(w[g]) + kk);
      }
#pragma GCC unroll 12
      for (int r = 0; r < MB; ++r) {
        const __m512bh av = (__m512bh)_mm512_loadu_si512(arows + r * lda + kk);
#pragma GCC unroll 4
        for (int g = 0; g < NG; ++g) acc[r][g] = _mm512_dpbf16_ps(acc[r][g], av, wv[g]);
      }
    }
  }
#pragma GCC unroll 12
  for (int r = 0; r < MB; ++r) {
#pragma GCC unroll 4
    for (int g = 0; g < NG; ++g) _mm512_store_ps(part + (r * NG + g) * 16, acc[r][g]);
  }
}

template <class D>
using DecodeMicro = void (*)(const uint16_t*, int64_t, const void* const*, int64_t, int64_t, const typename D::Tab&,
                             float*, bool);

template <class D, int NG, bool kFromCodes, int... MB>
struct MicroTable {
  static constexpr DecodeMicro<D> entries[sizeof...(MB)] = {&decode_micro<D, MB, NG, kFromCodes>...};
};

// mb in 1..12 for NG 1 and 2, 1..6 for NG 4.
template <class D, int NG, bool kFromCodes>
DecodeMicro<D> pick_micro(int64_t mb) {
  if constexpr (NG == 4) {
    return MicroTable<D, 4, kFromCodes, 1, 2, 3, 4, 5, 6>::entries[mb - 1];
  } else {
    return MicroTable<D, NG, kFromCodes, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12>::entries[mb - 1];
  }
}

template <class D>
void decode_gemm_with(const Fp8Operand& a, const Fp8Operand& b, int64_t m, int64_t n, int64_t k, float* c,
                      int64_t ldc) {
  const int64_t kpad = round_up(k, 32);
  // The weights are streamed once: the threads share their bytes.
  const int threads = threads_for(double(n) * double(k), kStreamBytesPerThread);
  // Activations widened once: m rows of kpad BF16 (at most 32 x kpad), in
  // the Decoder's order, like the weights.
  Buffer<uint16_t> arows(static_cast<std::size_t>(m) * static_cast<std::size_t>(kpad));
  // Per thread: a weight block of 4 x kKB BF16 and the partial sums.
  const std::size_t per_thread = 4 * kKB * 2 + kDecodeMaxM * 4 * 64 + 64;
  Buffer<unsigned char> scratch(per_thread * static_cast<std::size_t>(threads));
  {
    const typename D::Tab ta = D::load(a.dtype);
    for_each_row(a, m, k,
                 [&](int64_t i, const uint8_t* src) { decode_row_in<D>(src, k, kpad, ta, arows.get() + i * kpad); });
  }
  // Fused (decode in registers): m <= 12, 4 weight rows at a time when
  // m <= 6, else 2. Otherwise weights are decoded once per block of kKB
  // into a buffer and reused for chunks of 6 activation rows x 4 weights.
  const bool fused = m <= 12;
  const int64_t ng = fused ? (m <= 6 ? 4 : 2) : 4;
  const int64_t mb_max = fused ? m : 6;
#pragma omp parallel num_threads(threads)
  {
    const octet::DefaultFloatMode float_mode;  // this thread, for the region (dispatch/parallel_policy.hpp)
    const int t = omp_get_thread_num(), nt = omp_get_num_threads();
    unsigned char* base = scratch.get() + per_thread * static_cast<std::size_t>(t);
    float* part = reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(base) + 63) / 64 * 64);
    uint16_t* wbuf = reinterpret_cast<uint16_t*>(part + kDecodeMaxM * 4 * 16);
    const typename D::Tab tb = D::load(b.dtype);
    // Column groups of ng rows of B shared evenly.
    const int64_t groups = (n + ng - 1) / ng;
    const int64_t g0 = groups * t / nt, g1 = groups * (t + 1) / nt;
    for (int64_t grp = g0; grp < g1; ++grp) {
      const int64_t j = grp * ng, gw = min64(ng, n - j);
      if (fused) {
        const void* w[4];
        for (int64_t g = 0; g < gw; ++g) w[g] = b.data + (j + g) * b.ld;
        if (gw == ng) {
          DecodeMicro<D> f = ng == 4 ? pick_micro<D, 4, true>(m) : pick_micro<D, 2, true>(m);
          f(arows.get(), kpad, w, kpad, k, tb, part, true);
        } else {
          DecodeMicro<D> f = pick_micro<D, 1, true>(m);
          for (int64_t g = 0; g < gw; ++g) {
            f(arows.get(), kpad, w + g, kpad, k, tb, part + g * m * 16, true);
          }
        }
        store_group_sums(part, m, ng, gw, c + j, ldc);
        continue;
      }
      // Buffered: weights [4][kKB] BF16; partials [m][4][16] by chunk.
      for (int64_t kb = 0; kb < kpad; kb += kKB) {
        const int64_t len = min64(kKB, kpad - kb);
        const void* w[4];
        for (int64_t g = 0; g < 4; ++g) {
          uint16_t* dst = wbuf + g * kKB;
          if (g < gw) {
            // The weights are read once, from memory: the codes decoded
            // next (this row's next block, else the next group's row) are
            // prefetched a whole block of compute ahead (without it, ~80%
            // of the decode's time waits on these loads at m = 16).
            const uint8_t* ahead = kb + kKB < kpad ? b.data + (j + g) * b.ld + kb + kKB
                                   : j + g + 4 < n ? b.data + (j + g + 4) * b.ld
                                                   : nullptr;
            decode_row_in<D>(b.data + (j + g) * b.ld + kb, k - kb, len, tb, dst, ahead);
          } else {
            std::memset(dst, 0, static_cast<std::size_t>(len) * 2);
          }
          w[g] = dst;
        }
        for (int64_t r0 = 0; r0 < m; r0 += mb_max) {
          const int64_t mb = min64(mb_max, m - r0);
          pick_micro<D, 4, false>(mb)(arows.get() + r0 * kpad + kb, kpad, w, len, len, tb, part + r0 * 4 * 16, kb == 0);
        }
      }
      for (int64_t r = 0; r < m; ++r) {
        for (int64_t g = 0; g < gw; ++g) {
          c[r * ldc + j + g] = _mm512_reduce_add_ps(_mm512_load_ps(part + (r * 4 + g) * 16));
        }
      }
    }
  }
}

// acc[r][g] += A[r][kk..] . W[g][kk..] over k in [0, len) (len a multiple
// of 16), 16 FP32 lanes, for MB activation rows x kFmaGroup weight rows,
// both as split FP32 (store_decoded); W rows ldw apart. Each activation
// vector (from L2: all m rows are re-read for every group) serves
// kFmaGroup FMAs; the weights' block is in L1.
constexpr int kFmaGroup = 8;     // weight rows per group
constexpr int64_t kFmaKB = 512;  // K per weight block: 8 x 512 FP32 = 16 KiB
template <int MB>
__attribute__((noinline)) void fma_micro(const float* arows, int64_t lda, const float* w, int64_t ldw, int64_t len,
                                         float* part /*[MB][G][16]*/, bool first) {
  constexpr int G = kFmaGroup;
  __m512 acc[MB][G];
#pragma GCC unroll 2
  for (int r = 0; r < MB; ++r) {
#pragma GCC unroll 8
    for (int g = 0; g < G; ++g) acc[r][g] = first ? _mm512_setzero_ps() : _mm512_load_ps(part + (r * G + g) * 16);
  }
  for (int64_t kk = 0; kk < len; kk += 16) {
    __m512 wv[G];
#pragma GCC unroll 8
    for (int g = 0; g < G; ++g) {
      wv[g] = _mm512_load_ps(w + g * ldw + kk);
      // Keeps wv[g] in a register: folded into each FMA as a memory
      // operand, every weight vector would be loaded MB times.
      __asm__("" : "+v"(wv[g]));
    }
#pragma GCC unroll 2
    for (int r = 0; r < MB; ++r) {
      // The activations come from L2: asked for 4 lines ahead.
      _mm_prefetch(reinterpret_cast<const char*>(arows + r * lda + kk + 64), _MM_HINT_T0);
      const __m512 av = _mm512_loadu_ps(arows + r * lda + kk);
#pragma GCC unroll 8
      for (int g = 0; g < G; ++g) acc[r][g] = _mm512_fmadd_ps(av, wv[g], acc[r][g]);
    }
  }
#pragma GCC unroll 2
  for (int r = 0; r < MB; ++r) {
#pragma GCC unroll 8
    for (int g = 0; g < G; ++g) _mm512_store_ps(part + (r * G + g) * 16, acc[r][g]);
  }
}

// Split FP32 (store_decoded's order) of one decoded vector: the pairs'
// first halves, then their second halves.
inline __m512 split_first(__m512i v) { return _mm512_castsi512_ps(_mm512_slli_epi32(v, 16)); }
inline __m512 split_second(__m512i v) {
  return _mm512_castsi512_ps(_mm512_and_si512(v, _mm512_set1_epi32(int32_t(0xFFFF0000u))));
}

// The same partial sums for small m with the weights decoded in registers
// (no buffer): acc[r][g] += A[r][kk..] . W[g][kk..] over k in [0, len)
// (len a multiple of 32) for MB activation rows (split FP32, widened once)
// x NG weight rows given as FP8 codes (valid of them; the rest read as 0).
// Per 64 codes of a weight row: the Decoder's instructions, two shifts and
// two masks, and MB x 4 FMAs whose activation operand comes from L1. The
// codes ahead are asked for kFusedAhead bytes before they are decoded.
constexpr int64_t kFusedAhead = 1024;
template <class D, int MB, int NG>
__attribute__((noinline)) void decode_fma_micro(const float* arows, int64_t lda, const uint8_t* const* w, int64_t len,
                                                int64_t valid, const typename D::Tab& t, float* part /*[MB][NG][16]*/) {
  __m512 acc[MB][NG];
#pragma GCC unroll 4
  for (int r = 0; r < MB; ++r) {
#pragma GCC unroll 8
    for (int g = 0; g < NG; ++g) acc[r][g] = _mm512_setzero_ps();
  }
  constexpr int V = static_cast<int>(D::kChunk / 32);
  int64_t kk = 0;
  for (; kk + D::kChunk <= len; kk += D::kChunk) {
#pragma GCC unroll 8
    for (int g = 0; g < NG; ++g) {
      if (kk % 64 == 0) _mm_prefetch(reinterpret_cast<const char*>(w[g] + kk + kFusedAhead), _MM_HINT_T0);
      __m512i wv[V];
      D::chunk(w[g] + kk, valid - kk, t, wv);
#pragma GCC unroll 2
      for (int h = 0; h < V; ++h) {
        const __m512 w0 = split_first(wv[h]), w1 = split_second(wv[h]);
#pragma GCC unroll 4
        for (int r = 0; r < MB; ++r) {
          const float* ar = arows + r * lda + kk + 32 * h;
          acc[r][g] = _mm512_fmadd_ps(_mm512_loadu_ps(ar), w0, acc[r][g]);
          acc[r][g] = _mm512_fmadd_ps(_mm512_loadu_ps(ar + 16), w1, acc[r][g]);
        }
      }
    }
  }
  if (kk < len) {  // the last 32 codes when len is not a multiple of kChunk
#pragma GCC unroll 8
    for (int g = 0; g < NG; ++g) {
      const __m512i wv = D::tail(w[g] + kk, valid - kk, t);
      const __m512 w0 = split_first(wv), w1 = split_second(wv);
#pragma GCC unroll 4
      for (int r = 0; r < MB; ++r) {
        const float* ar = arows + r * lda + kk;
        acc[r][g] = _mm512_fmadd_ps(_mm512_loadu_ps(ar), w0, acc[r][g]);
        acc[r][g] = _mm512_fmadd_ps(_mm512_loadu_ps(ar + 16), w1, acc[r][g]);
      }
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < MB; ++r) {
#pragma GCC unroll 8
    for (int g = 0; g < NG; ++g) _mm512_store_ps(part + (r * NG + g) * 16, acc[r][g]);
  }
}

// decode_fma_micro<D, m, ng> for m in 1..kFusedFmaMaxM and ng in {1, 4, 8}.
constexpr int64_t kFusedFmaMaxM = 4;
template <class D>
using FusedFmaMicro = void (*)(const float*, int64_t, const uint8_t* const*, int64_t, int64_t, const typename D::Tab&,
                               float*);
template <class D, int NG>
struct FusedFmaTable {
  static constexpr FusedFmaMicro<D> entries[kFusedFmaMaxM] = {&decode_fma_micro<D, 1, NG>, &decode_fma_micro<D, 2, NG>,
                                                              &decode_fma_micro<D, 3, NG>, &decode_fma_micro<D, 4, NG>};
};
template <class D>
FusedFmaMicro<D> fused_fma_micro(int64_t m, int64_t ng) {
  if (ng == 8) return FusedFmaTable<D, 8>::entries[m - 1];
  return ng == 4 ? FusedFmaTable<D, 4>::entries[m - 1] : FusedFmaTable<D, 1>::entries[m - 1];
}

// The decode kernel on FP32 FMAs (see the top of this file), B streamed
// once against the m activation rows, split FP32 (widened once). For
// m <= kFusedFmaMaxM the weights are decoded in registers
// (decode_fma_micro: 8 rows at a time for m = 1, else 4); otherwise
// kFmaGroup rows at a time, each block of kFmaKB codes decoded and split
// into an FP32 buffer (16 KiB, in L1) and dotted with the activation rows
// two at a time (fma_micro). Both give every output the same FMAs in the
// same order, so a row's bits do not depend on m. Threads share N.
template <class D>
void decode_gemm_fp32_with(const Fp8Operand& a, const Fp8Operand& b, int64_t m, int64_t n, int64_t k, float* c,
                           int64_t ldc) {
  constexpr int G = kFmaGroup;
  const int64_t kpad = round_up(k, 32);
  const int threads = threads_for(double(n) * double(k), kStreamBytesPerThread);
  Buffer<float> arows(static_cast<std::size_t>(m) * static_cast<std::size_t>(kpad));
  // Per thread: a weight block of G x kFmaKB FP32 and the partial sums.
  const std::size_t per_thread = (G * kFmaKB + kDecodeMaxM * G * 16) * sizeof(float) + 64;
  Buffer<unsigned char> scratch(per_thread * static_cast<std::size_t>(threads));
  {
    const typename D::Tab ta = D::load(a.dtype);
    for_each_row(a, m, k,
                 [&](int64_t i, const uint8_t* src) { decode_row_in<D>(src, k, kpad, ta, arows.get() + i * kpad); });
  }
#pragma omp parallel num_threads(threads)
  {
    const octet::DefaultFloatMode float_mode;  // this thread, for the region (dispatch/parallel_policy.hpp)
    const int t = omp_get_thread_num(), nt = omp_get_num_threads();
    unsigned char* base = scratch.get() + per_thread * static_cast<std::size_t>(t);
    float* wbuf = reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(base) + 63) / 64 * 64);
    float* part = wbuf + G * kFmaKB;
    const typename D::Tab tb = D::load(b.dtype);
    if (m <= kFusedFmaMaxM) {
      // Decoded in registers, 8 weight rows at a time for one activation
      // row, else 4.
      const int64_t ng = m == 1 ? 8 : 4;
      const int64_t groups = (n + ng - 1) / ng;
      const int64_t g0 = groups * t / nt, g1 = groups * (t + 1) / nt;
      for (int64_t grp = g0; grp < g1; ++grp) {
        const int64_t j = grp * ng, gw = min64(ng, n - j);
        const uint8_t* w[8];
        for (int64_t g = 0; g < gw; ++g) w[g] = b.data + (j + g) * b.ld;
        if (gw == ng) {
          fused_fma_micro<D>(m, ng)(arows.get(), kpad, w, kpad, k, tb, part);
        } else {
          for (int64_t g = 0; g < gw; ++g)
            fused_fma_micro<D>(m, 1)(arows.get(), kpad, w + g, kpad, k, tb, part + g * m * 16);
        }
        store_group_sums(part, m, ng, gw, c + j, ldc);
      }
    } else {
      const int64_t groups = (n + G - 1) / G;
      const int64_t g0 = groups * t / nt, g1 = groups * (t + 1) / nt;
      for (int64_t grp = g0; grp < g1; ++grp) {
        const int64_t j = grp * G, gw = min64(G, n - j);
        for (int64_t kb = 0; kb < kpad; kb += kFmaKB) {
          const int64_t len = min64(kFmaKB, kpad - kb);
          for (int64_t g = 0; g < G; ++g) {
            float* dst = wbuf + g * kFmaKB;
            if (g < gw) {
              // The codes decoded next (this row's next block, else the next
              // group's row) are prefetched a block ahead.
              const uint8_t* ahead = kb + kFmaKB < kpad ? b.data + (j + g) * b.ld + kb + kFmaKB
                                     : j + g + G < n    ? b.data + (j + g + G) * b.ld
                                                        : nullptr;
              decode_row_in<D>(b.data + (j + g) * b.ld + kb, k - kb, len, tb, dst, ahead);
            } else {
              std::memset(dst, 0, static_cast<std::size_t>(len) * sizeof(float));
            }
          }
          int64_t r = 0;
          for (; r + 2 <= m; r += 2)
            fma_micro<2>(arows.get() + r * kpad + kb, kpad, wbuf, kFmaKB, len, part + r * G * 16, kb == 0);
          if (r < m) fma_micro<1>(arows.get() + r * kpad + kb, kpad, wbuf, kFmaKB, len, part + r * G * 16, kb == 0);
        }
        for (int64_t r = 0; r < m; ++r) {
          for (int64_t g = 0; g < gw; ++g) {
            c[r * ldc + j + g] = _mm512_reduce_add_ps(_mm512_load_ps(part + (r * G + g) * 16));
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace octet_cpu
