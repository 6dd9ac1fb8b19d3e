// FP8 GEMM on AVX-512 BF16 dot products (VDPBF16PS).
//
// Every E4M3/E5M2 value (subnormals included) is exactly a BF16 value, and
// the product of two of them is exact in FP32, so widening to BF16 and
// accumulating with VDPBF16PS changes only the order of the FP32 additions.
// VDPBF16PS adds its two products to the FP32 lane one after the other,
// each rounded to nearest even, and treats denormal inputs and results as
// zero; no FP8 product or sum of FP8 products is ever below 2^-32 in
// magnitude unless it is 0, so that flush never fires (docs/numerics.md
// section 8).
//
// Two kernels:
// - blocked (any shape): Goto-style loops over N (per thread), K (KC) and M
//   (MC); B' is widened into [kc/2][32] BF16-pair panels (L2/L3 sized), A'
//   into [kc/2][12] panels, and a 12 x 32 register micro-kernel (24 zmm
//   accumulators) does one VDPBF16PS per 2 x 16 products with A broadcast.
// - decode (m <= 32, B' rows contiguous, the LLM weight case;
//   gemm/decode_gemm_fp8.hpp): B is read once and decoded to BF16 in registers,
//   here 32 FP8 codes at a time with two 64-entry VPERMI2W lookups, at level
//   avx512_bf16_vbmi 64 at a time with VPERMI2B (gemm/decode_gemm_fp8_avx512_bf16_vbmi.cpp).
// The blocking depends only on m, n, k, the thread count and the ISA level
// (the decoders put the codes of a chunk in different lanes), never on the
// operands' layout, so every layout gives the same bits.
#include "gemm/gemm_fp8.hpp"

#include <omp.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include <immintrin.h>

#include <octet/octet_types.h>

#include "codecs/decode_fp8_tables.hpp"
#include "dispatch/isa.hpp"
#include "dispatch/parallel_policy.hpp"
#include "elementwise/row_kernels.hpp"
#include "gemm/decode_gemm_fp8_avx512_bf16_vbmi.hpp"
#include "gemm/fp8_gemm_engine.hpp"
#include "gemm/micro_kernel_bf16_avx512_bf16.hpp"
#include "plugin/errors.hpp"

namespace octet_cpu {

namespace {

Bf16Codes make_codes(int32_t dtype) {
  Bf16Codes c{};
  const float* t = fp8_table(dtype);
  for (int i = 0; i < 128; ++i) {
    uint32_t u;
    std::memcpy(&u, &t[i], 4);
    // Exact: an FP8 value has at most 3 significant bits and an exponent
    // inside FP32's normal range, so its low 16 FP32 bits are zero.
    c.v[i] = std::isnan(t[i]) ? uint16_t{0x7FC0} : static_cast<uint16_t>(u >> 16);
  }
  return c;
}

}  // namespace

const Bf16Codes& fp8_bf16_codes(int32_t dtype) {
  static const Bf16Codes e4m3 = make_codes(OCTET_DTYPE_E4M3);
  static const Bf16Codes e5m2 = make_codes(OCTET_DTYPE_E5M2);
  static const Bf16Codes e4m3fnuz = make_codes(OCTET_DTYPE_E4M3FNUZ);
  static const Bf16Codes e5m2fnuz = make_codes(OCTET_DTYPE_E5M2FNUZ);
  switch (dtype) {
    case OCTET_DTYPE_E4M3:
      return e4m3;
    case OCTET_DTYPE_E4M3FNUZ:
      return e4m3fnuz;
    case OCTET_DTYPE_E5M2FNUZ:
      return e5m2fnuz;
    default:
      return e5m2;
  }
}

namespace {

const Bf16Codes& codes(int32_t dtype) { return fp8_bf16_codes(dtype); }

// Blocking of the blocked kernel (kMR x kNR: gemm/micro_kernel_bf16_avx512_bf16.hpp).
// K per panel (even). C is read and written once per panel, and each
// micro-kernel call starts a new A micro-panel stream, so long panels pay:
// at 2048^3, 1024 runs 1.16x faster than 256 (commit 8118976).
// The B micro-panel (kc x 32, 64 KiB) and the A block (kMC x kc, 192 KiB)
// stream from L2 at about 7 bytes per cycle, well within its bandwidth.
constexpr int64_t kKC = 1024;
constexpr int64_t kKCBlock = 256;  // K per panel of the block-scaled kernel
constexpr int64_t kMC = 96;        // rows per A block (192 KiB, L2)
constexpr int64_t kNC = 1024;      // columns per B block (2 MiB, L3)

}  // namespace
}  // namespace octet_cpu

#if defined(__GNUC__) && defined(__x86_64__)
#define OCTET_CPU_HAVE_BF16_PATH 1
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,avx2,fma,f16c")
// GCC 12 warns about the undefined vectors inside its own AVX-512 headers.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "codecs/decode_fp8_avx512.hpp"
#include "gemm/decode_gemm_fp8.hpp"

namespace octet_cpu {
namespace {

// dst[0..len) = BF16 of the contiguous codes src[0..len), then zeros up to
// padded_len (a multiple of 32).
void decode_row(const uint8_t* src, int64_t len, int64_t padded_len, const Table& t, uint16_t* dst) {
  for (int64_t i = 0; i < padded_len; i += 32) {
    _mm512_storeu_si512(dst + i, decode32(load_bytes(src + i, len - i), t));
  }
}

// ---------------------------------------------------------------- blocked

// Interleave of two vectors of 32 BF16 values: (x0, y0, x1, y1, ...) for
// lanes 0..15 (lo) and 16..31 (hi).
inline __m512i pair_lo_idx() {
  return _mm512_set_epi16(47, 15, 46, 14, 45, 13, 44, 12, 43, 11, 42, 10, 41, 9, 40, 8, 39, 7, 38, 6, 37, 5, 36, 4, 35,
                          3, 34, 2, 33, 1, 32, 0);
}

// A' rows [i0, i0 + mc), k [k0, k0 + kc) -> micro-panels of kMR rows, each
// [kp][kMR] 32-bit pairs (kp = ceil(kc / 2)); rows past mc and the odd k
// are zero. row_buf: round_up(kKC, 32) uint16.
__attribute__((noinline)) void pack_a(const Fp8Operand& a, const Table& t, int64_t i0, int64_t mc, int64_t k0,
                                      int64_t kc, uint32_t* out, uint16_t* row_buf) {
  const int64_t kp = (kc + 1) / 2;
  const int64_t panels = (mc + kMR - 1) / kMR;
  const __m512i lo_idx = pair_lo_idx();
  for (int64_t p = 0; p < panels; ++p) {
    uint32_t* panel = out + p * kp * kMR;
    const int64_t rows = min64(kMR, mc - p * kMR);
    if (a.trans) {
      // Stored [k, m]: rows k and k+1 hold the panel's codes side by side;
      // decode both (missing codes read as 0, i.e. +0) and interleave.
      const uint8_t* col = a.data + k0 * a.ld + (i0 + p * kMR);
      for (int64_t q = 0; q < kp; ++q) {
        const __m512i x = decode32(load_bytes(col + (2 * q) * a.ld, rows), t);
        const __m512i y =
            2 * q + 1 < kc ? decode32(load_bytes(col + (2 * q + 1) * a.ld, rows), t) : _mm512_setzero_si512();
        _mm512_mask_storeu_epi32(panel + q * kMR, static_cast<__mmask16>((1u << kMR) - 1),
                                 _mm512_permutex2var_epi16(x, lo_idx, y));
      }
      continue;
    }
    for (int r = 0; r < kMR; ++r) {
      const int64_t i = p * kMR + r;
      if (i >= mc) {
        for (int64_t q = 0; q < kp; ++q) panel[q * kMR + r] = 0;
        continue;
      }
      decode_row(a.data + (i0 + i) * a.ld + k0, kc, round_up(kc, 32), t, row_buf);
      const uint32_t* pairs = reinterpret_cast<const uint32_t*>(row_buf);
      for (int64_t q = 0; q < kp; ++q) panel[q * kMR + r] = pairs[q];
    }
  }
}

// B' columns [j0, j0 + nc), k [k0, k0 + kc) -> panels of kNR columns, each
// [kp][kNR] 32-bit pairs; columns past nc and the odd k are zero.
__attribute__((noinline)) void pack_b(const Fp8Operand& b, const Table& t, int64_t j0, int64_t nc, int64_t k0,
                                      int64_t kc, uint32_t* out, uint16_t* row_buf) {
  const int64_t kp = (kc + 1) / 2;
  const int64_t panels = (nc + kNR - 1) / kNR;
  // Interleave of two rows of 32 BF16 values: (x0, y0, x1, y1, ...).
  const __m512i lo_idx = pair_lo_idx();
  const __m512i hi_idx = _mm512_add_epi16(lo_idx, _mm512_set1_epi16(16));
  for (int64_t p = 0; p < panels; ++p) {
    uint32_t* panel = out + p * kp * kNR;
    const int64_t jp = j0 + p * kNR, width = min64(kNR, nc - p * kNR);
    if (b.trans) {
      // Stored [k, n]: rows k and k+1 hold 32 consecutive columns each.
      for (int64_t q = 0; q < kp; ++q) {
        const int64_t kk = k0 + 2 * q;
        const __m512i x = decode32(load_bytes(b.data + kk * b.ld + jp, width), t);
        const __m512i y =
            2 * q + 1 < kc ? decode32(load_bytes(b.data + (kk + 1) * b.ld + jp, width), t) : _mm512_setzero_si512();
        _mm512_storeu_si512(panel + q * kNR, _mm512_permutex2var_epi16(x, lo_idx, y));
        _mm512_storeu_si512(panel + q * kNR + 16, _mm512_permutex2var_epi16(x, hi_idx, y));
      }
      continue;
    }
    // Stored [n, k]: decode 16 rows at a time, then transpose 32-bit pairs
    // 16 x 16 through registers.
    for (int64_t g = 0; g < kNR; g += 16) {
      const int64_t rows = min64(16, width - g);
      uint16_t* rb = row_buf;  // 16 rows of round_up(kc, 32) BF16 values
      const int64_t stride = round_up(kc, 32);
      for (int64_t r = 0; r < 16; ++r) {
        if (r < rows) {
          decode_row(b.data + (jp + g + r) * b.ld + k0, kc, stride, t, rb + r * stride);
        } else {
          std::memset(rb + r * stride, 0, static_cast<std::size_t>(stride) * 2);
        }
      }
      const uint32_t* src = reinterpret_cast<const uint32_t*>(rb);
      const int64_t sp = stride / 2;  // pairs per decoded row
      for (int64_t q = 0; q < kp; ++q) {
        const __m512i idx = _mm512_add_epi32(
            _mm512_set1_epi32(static_cast<int>(q)),
            _mm512_mullo_epi32(_mm512_set1_epi32(static_cast<int>(sp)),
                               _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)));
        _mm512_storeu_si512(panel + q * kNR + g, _mm512_i32gather_epi32(idx, src, 4));
      }
    }
  }
}

struct BlockedBuffers {
  uint32_t* a;     // kMC x kKC BF16
  uint32_t* b;     // kNC x kKC BF16
  uint16_t* rows;  // 16 x round_up(kKC, 32) BF16
  float* tile;     // kMR x kNR FP32
};

constexpr int64_t kAPairs = round_up(kMC, kMR) * (kKC / 2);
constexpr int64_t kBPairs = kNC * (kKC / 2);
constexpr int64_t kRowHalves = 16 * ((kKC + 31) / 32 * 32);
constexpr int64_t kTileFloats = kMR * kNR;
constexpr int64_t kPerThreadBytes = kAPairs * 4 + kBPairs * 4 + kRowHalves * 2 + kTileFloats * 4 + 4 * 64;

void blocked_range(const Fp8Operand& a, const Fp8Operand& b, int64_t k, int64_t m0, int64_t m1, int64_t n0, int64_t n1,
                   float* c, int64_t ldc, const BlockedBuffers& buf) {
  const Table ta = load_table(codes(a.dtype)), tb = load_table(codes(b.dtype));
  blocked_loop_12x32<kMC, kNC, kKC>(
      k, m0, m1, n0, n1, c, ldc, buf.a, buf.b, buf.tile,
      [&](int64_t ic, int64_t mc, int64_t pc, int64_t kc) { pack_a(a, ta, ic, mc, pc, kc, buf.a, buf.rows); },
      [&](int64_t jc, int64_t nc, int64_t pc, int64_t kc) { pack_b(b, tb, jc, nc, pc, kc, buf.b, buf.rows); });
}

// Runs body(buf, extra, m0, m1, n0, n1) on every OpenMP thread for its
// share of the m x n output: N in kNR-column panels when there are enough
// of them (each thread then widens only its own columns of B), else M in
// kMR-row panels. Each thread has its own BlockedBuffers and extra_bytes
// of scratch at `extra`.
template <typename Body>
void share_output(int64_t m, int64_t n, int64_t k, std::size_t extra_bytes, Body&& body) {
  const int threads = threads_for(2.0 * double(m) * double(n) * double(k), kGemmFlopsPerThread);
  const std::size_t per_thread = static_cast<std::size_t>(kPerThreadBytes) + extra_bytes;
  Buffer<unsigned char> memory(per_thread * static_cast<std::size_t>(threads));
  const int64_t n_panels = (n + kNR - 1) / kNR, m_panels = (m + kMR - 1) / kMR;
  const bool split_n = n_panels >= 2 * threads || n_panels >= m_panels;
#pragma omp parallel num_threads(threads)
  {
    const octet::DefaultFloatMode float_mode;  // this thread, for the region (dispatch/parallel_policy.hpp)
    const int t = omp_get_thread_num(), nt = omp_get_num_threads();
    unsigned char* base = memory.get() + per_thread * static_cast<std::size_t>(t);
    BlockedBuffers buf;
    buf.a = reinterpret_cast<uint32_t*>(base);
    buf.b = reinterpret_cast<uint32_t*>(base + kAPairs * 4);
    buf.rows = reinterpret_cast<uint16_t*>(base + kAPairs * 4 + kBPairs * 4);
    buf.tile = reinterpret_cast<float*>(base + kAPairs * 4 + kBPairs * 4 + kRowHalves * 2 + 64);
    unsigned char* extra = base + kPerThreadBytes;
    const int64_t units = split_n ? n_panels : m_panels;
    const int64_t u0 = units * t / nt, u1 = units * (t + 1) / nt;
    if (u1 > u0) {
      if (split_n) {
        body(buf, extra, int64_t{0}, m, u0 * kNR, min64(n, u1 * kNR));
      } else {
        body(buf, extra, u0 * kMR, min64(m, u1 * kMR), int64_t{0}, n);
      }
    }
  }
}

void blocked(const Fp8Operand& a, const Fp8Operand& b, int64_t m, int64_t n, int64_t k, float* c, int64_t ldc) {
  share_output(m, n, k, 0,
               [&](const BlockedBuffers& buf, unsigned char*, int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
                 blocked_range(a, b, k, m0, m1, n0, n1, c, ldc, buf);
               });
}

// ---------------------------------------------------------------- block scaled

// c[r * ldc + j] = c[r * ldc + j] + P[r][j] * (sa[r] * sb[j]) for the 12 x 32
// tile, P the sum over pairs q in [q0, q1) (one k-block), in registers;
// multiplications and the addition are separate FP32 operations (the plugin
// is built with -ffp-contract=off), in numerics.md section 12's order.
__attribute__((noinline)) void micro_block_12x32(int64_t q0, int64_t q1, const uint32_t* a, const uint32_t* b,
                                                 const float* sa, const float* sb, float* c, int64_t ldc) {
  __m512 acc[kMR][2];
#pragma GCC unroll 12
  for (int r = 0; r < kMR; ++r) {
    acc[r][0] = _mm512_setzero_ps();
    acc[r][1] = _mm512_setzero_ps();
  }
  accumulate_12x32(acc, q0, q1, a, b);
  const __m512 sb0 = _mm512_loadu_ps(sb), sb1 = _mm512_loadu_ps(sb + 16);
#pragma GCC unroll 12
  for (int r = 0; r < kMR; ++r) {
    const __m512 s = _mm512_set1_ps(sa[r]);
    const __m512 c0 = _mm512_loadu_ps(c + r * ldc), c1 = _mm512_loadu_ps(c + r * ldc + 16);
    _mm512_storeu_ps(c + r * ldc, _mm512_add_ps(c0, _mm512_mul_ps(acc[r][0], _mm512_mul_ps(s, sb0))));
    _mm512_storeu_ps(c + r * ldc + 16, _mm512_add_ps(c1, _mm512_mul_ps(acc[r][1], _mm512_mul_ps(s, sb1))));
  }
}

constexpr int64_t kMaxBlocksPerPanel = kKCBlock / 32;  // the smallest k-block is 32 (MXFP8)
static_assert(kKCBlock == 256 && kKCBlock <= kKC, "fp8_block_gemm_bf16_takes (gemm/gemm_fp8.hpp) assumes 256-k panels");

void block_range(const Fp8Operand& a, const Fp8Operand& b, int64_t k, int64_t bk, const BlockScaleTable& sa,
                 const BlockScaleTable& sb, int64_t m0, int64_t m1, int64_t n0, int64_t n1, float* c, int64_t ldc,
                 const BlockedBuffers& buf, float* sa_panel /*[kMC][kMaxBlocksPerPanel]*/,
                 float* sb_panel /*[kMaxBlocksPerPanel][kNC]*/) {
  const Table ta = load_table(codes(a.dtype)), tb = load_table(codes(b.dtype));
  for (int64_t jc = n0; jc < n1; jc += kNC) {
    const int64_t nc = min64(kNC, n1 - jc);
    for (int64_t pc = 0; pc < k; pc += kKCBlock) {
      const int64_t kc = min64(kKCBlock, k - pc), kp = (kc + 1) / 2;
      const int64_t kb0 = pc / bk, nkb = (kc + bk - 1) / bk;  // k-blocks of this panel
      pack_b(b, tb, jc, nc, pc, kc, buf.b, buf.rows);
      for (int64_t t = 0; t < nkb; ++t) {
        for (int64_t jj = 0; jj < round_up(nc, kNR); ++jj) {
          sb_panel[t * kNC + jj] = jj < nc ? sb.at(jc + jj, kb0 + t) : 0.0f;
        }
      }
      for (int64_t ic = m0; ic < m1; ic += kMC) {
        const int64_t mc = min64(kMC, m1 - ic);
        pack_a(a, ta, ic, mc, pc, kc, buf.a, buf.rows);
        for (int64_t ii = 0; ii < round_up(mc, kMR); ++ii) {
          for (int64_t t = 0; t < nkb; ++t) {
            sa_panel[t * kMC + ii] = ii < mc ? sa.at(ic + ii, kb0 + t) : 0.0f;
          }
        }
        for (int64_t jr = 0; jr < nc; jr += kNR) {
          const uint32_t* bp = buf.b + (jr / kNR) * kp * kNR;
          const int64_t w = min64(kNR, nc - jr);
          for (int64_t ir = 0; ir < mc; ir += kMR) {
            const uint32_t* ap = buf.a + (ir / kMR) * kp * kMR;
            const int64_t h = min64(kMR, mc - ir);
            float* cp = c + (ic + ir) * ldc + (jc + jr);
            const bool full = h == kMR && w == kNR;
            float* tile = full ? cp : buf.tile;
            const int64_t ldt = full ? ldc : kNR;
            if (!full) {  // edge tile: through a 12 x 32 buffer, same order of sums
              std::memset(tile, 0, sizeof(float) * kMR * kNR);
              for (int64_t r = 0; r < h; ++r) std::memcpy(tile + r * kNR, cp + r * ldc, w * 4);
            }
            for (int64_t t = 0; t < nkb; ++t) {
              const int64_t q0 = t * bk / 2, q1 = min64(kp, (t + 1) * bk / 2);
              micro_block_12x32(q0, q1, ap, bp, sa_panel + t * kMC + ir, sb_panel + t * kNC + jr, tile, ldt);
            }
            if (!full) {
              for (int64_t r = 0; r < h; ++r) std::memcpy(cp + r * ldc, tile + r * kNR, w * 4);
            }
          }
        }
      }
    }
  }
}

void block_scaled(const Fp8Operand& a, const Fp8Operand& b, int64_t m, int64_t n, int64_t k, int64_t bk,
                  const BlockScaleTable& sa, const BlockScaleTable& sb, float* c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i) std::memset(c + i * ldc, 0, static_cast<std::size_t>(n) * 4);
  const std::size_t panels = static_cast<std::size_t>(kMaxBlocksPerPanel * (kMC + kNC)) * 4;
  share_output(m, n, k, panels,
               [&](const BlockedBuffers& buf, unsigned char* extra, int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
                 float* sa_panel = reinterpret_cast<float*>(extra);
                 float* sb_panel = sa_panel + kMaxBlocksPerPanel * kMC;
                 block_range(a, b, k, bk, sa, sb, m0, m1, n0, n1, c, ldc, buf, sa_panel, sb_panel);
               });
}

// ---------------------------------------------------------------- decode

}  // namespace

void fp8_block_gemm_bf16_impl(const Fp8Operand& a, const Fp8Operand& b, int64_t m, int64_t n, int64_t k, int64_t bk,
                              const BlockScaleTable& sa, const BlockScaleTable& sb, float* acc, int64_t ldc) {
  block_scaled(a, b, m, n, k, bk, sa, sb, acc, ldc);
}

void fp8_decode_gemm_bf16_impl(const Fp8Operand& a, const Fp8Operand& b, int64_t m, int64_t n, int64_t k, float* acc,
                               int64_t ldc) {
  if (fp8_decode_on_fp32()) {
    decode_gemm_fp32_with<Perm16Decoder>(a, b, m, n, k, acc, ldc);
  } else {
    decode_gemm_with<Perm16Decoder>(a, b, m, n, k, acc, ldc);
  }
}

void fp8_blocked_gemm_bf16_impl(const Fp8Operand& a, const Fp8Operand& b, int64_t m, int64_t n, int64_t k, float* acc,
                                int64_t ldc) {
  blocked(a, b, m, n, k, acc, ldc);
}

}  // namespace octet_cpu

#pragma GCC pop_options
#endif

namespace octet_cpu {

bool fp8_gemm_bf16_decodes(int64_t m, bool b_trans) { return m <= kDecodeMaxM && !b_trans; }

bool fp8_decode_on_fp32() { return fp8_gemm_engine() != Fp8GemmEngine::Bf16Dot; }

bool fp8_gemm_bf16_built() {
#if defined(OCTET_CPU_HAVE_BF16_PATH)
  return true;
#else
  return false;
#endif
}

void fp8_block_gemm_bf16(const Fp8Operand& a, const Fp8Operand& b, int64_t m, int64_t n, int64_t k, int64_t bk,
                         const BlockScaleTable& sa, const BlockScaleTable& sb, float* acc, int64_t ldc) {
#if defined(OCTET_CPU_HAVE_BF16_PATH)
  (void)fp8_bf16_codes(OCTET_DTYPE_E4M3);
  fp8_block_gemm_bf16_impl(a, b, m, n, k, bk, sa, sb, acc, ldc);
#else
  (void)a, (void)b, (void)m, (void)n, (void)k, (void)bk, (void)sa, (void)sb, (void)acc, (void)ldc;
#endif
}

void fp8_decode_gemm_bf16(const Fp8Operand& a, const Fp8Operand& b, int64_t m, int64_t n, int64_t k, float* acc,
                          int64_t ldc) {
#if defined(OCTET_CPU_HAVE_BF16_PATH)
  // Build both code tables before any thread needs them.
  (void)fp8_bf16_codes(OCTET_DTYPE_E4M3);
  fp8_decode_gemm_bf16_impl(a, b, m, n, k, acc, ldc);
#else
  (void)a, (void)b, (void)m, (void)n, (void)k, (void)acc, (void)ldc;
#endif
}

void fp8_blocked_gemm_bf16(const Fp8Operand& a, const Fp8Operand& b, int64_t m, int64_t n, int64_t k, float* acc,
                           int64_t ldc) {
#if defined(OCTET_CPU_HAVE_BF16_PATH)
  (void)fp8_bf16_codes(OCTET_DTYPE_E4M3);
  fp8_blocked_gemm_bf16_impl(a, b, m, n, k, acc, ldc);
#else
  (void)a, (void)b, (void)m, (void)n, (void)k, (void)acc, (void)ldc;
#endif
}

}  // namespace octet_cpu
