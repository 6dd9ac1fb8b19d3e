// gemm_sums (plugin/kernels.hpp): acc = A' B'^T in FP32, from the first
// candidate of the per-tensor GEMM's implementation list
// (dispatch/implementation_list.hpp) that runs at the level in use and
// serves the problem:
// - FP8 shapes on TDPBF16PS tiles at level amx, engine amx
//   (gemm/gemm_fp8_amx.hpp), but decode shapes of fewer than
//   kAmxMinDecodeRows rows;
// - the FP8 decode kernels (m <= 32 rows, B' rows contiguous: the weights
//   stream once, decoded in registers), one per level;
// - the blocked VDPBF16PS kernel where the FP8 GEMM engine is Bf16Dot;
// - oneDNN's BF16 matmul on BF16 blocks widened in cache where the engine
//   is OnednnBf16, or Amx for the FP8 operands the AMX kernel leaves (FNUZ
//   NaN codes): bf16_matmul_tiles, AMX tiles where the CPU has them;
// - everything else (high precision operands, FNUZ operands that hold
//   their NaN code, the Fp32Fma engine's compute-bound shapes): oneDNN's
//   sgemm on FP32 blocks widened in cache (sgemm_tiles): acc is cut into
//   tiles of 512 x 512 and K into slices of 256; for each tile and slice a
//   thread widens one block of each operand into FP32 in its cache (an
//   FP32 operand is used in place) and oneDNN's sgemm adds the blocks'
//   product into the tile. The workspace is at most 2 MiB a thread,
//   whatever m, n and k are.
// Every kernel's blocking depends on m, n, k (and, in the BF16 kernels,
// the thread count) only, never on the stored layout, so every layout (and
// every capability profile) gives the same bits. Every workspace lives for
// one call.
#include <algorithm>
#include <cstdint>

#include "codecs/widen_fp8_avx512.hpp"
#include "dispatch/implementation_list.hpp"
#include "dispatch/isa.hpp"
#include "gemm/bf16_matmul_tiles.hpp"
#include "gemm/decode_gemm_fp8_avx2.hpp"
#include "gemm/decode_gemm_fp8_avx512.hpp"
#include "gemm/decode_gemm_fp8_avx512_bf16_vbmi.hpp"
#include "gemm/fp8_gemm_engine.hpp"
#include "gemm/gemm_fp8.hpp"
#include "gemm/gemm_fp8_amx.hpp"
#include "gemm/sgemm_tiles.hpp"
#include "plugin/checks.hpp"
#include "plugin/kernels.hpp"

namespace octet_cpu {
namespace {

// A matrix operand for sgemm_tiles: an FP32 operand's block is its own
// memory; any other dtype's block is widened into the buffer (widen_row_for:
// the VPERMI2W decoder for FP8 at level avx512 and above) as [outer, k],
// k contiguous, whichever way it is stored. So oneDNN sees one layout of a
// widened operand, and a GEMM gives the same bits for a transposed operand
// as for its columnwise copy (oneDNN's AVX2 sgemm sums a 'T' A in another
// order than an 'N' one: CapabilityProfiles.GemmIsBitIdenticalAcrossProfiles).
TileOperand tile_operand(const octet_matrix_view& v, bool transposed) {
  const WidenRow widen = widen_row_for(v.dtype);
  TileOperand op;
  op.buffered = v.dtype != OCTET_DTYPE_FP32;
  op.block = [v, transposed, widen](int64_t first_outer, int64_t outer, int64_t first_k, int64_t k, float* buffer) {
    const int64_t row0 = transposed ? first_k : first_outer, col0 = transposed ? first_outer : first_k;
    if (v.dtype == OCTET_DTYPE_FP32) {
      return Fp32Block{reinterpret_cast<const float*>(element_ptr(v, row0, col0)), v.ld, transposed};
    }
    if (!transposed) {
      for (int64_t r = 0; r < outer; ++r) widen(element_ptr(v, row0 + r, col0), v.dtype, k, buffer + r * k);
      return Fp32Block{buffer, k, false};
    }
    float stored_row[kSgemmTileM > kSgemmTileN ? kSgemmTileM : kSgemmTileN];  // outer <= either tile
    for (int64_t kk = 0; kk < k; ++kk) {
      widen(element_ptr(v, row0 + kk, col0), v.dtype, outer, stored_row);
      for (int64_t o = 0; o < outer; ++o) buffer[o * k + kk] = stored_row[o];
    }
    return Fp32Block{buffer, k, false};
  };
  return op;
}

// An FP8 operand for bf16_matmul_tiles: each block widened to BF16 (exact)
// in its stored orientation.
Bf16TileOperand bf16_tile_operand(const octet_matrix_view& v, bool transposed) {
  return [v, transposed](int64_t first_outer, int64_t outer, int64_t first_k, int64_t k, uint16_t* buffer) {
    const int64_t row0 = transposed ? first_k : first_outer, col0 = transposed ? first_outer : first_k;
    const int64_t rows = transposed ? k : outer, cols = transposed ? outer : k;
    for (int64_t r = 0; r < rows; ++r) {
      fp8_widen_bf16_avx512(static_cast<const uint8_t*>(element_ptr(v, row0 + r, col0)), v.dtype, cols,
                            buffer + r * cols);
    }
    return Bf16Block{buffer, cols, transposed};
  };
}

Fp8Operand operand(const octet_matrix_view& v, int32_t trans) {
  return Fp8Operand{static_cast<const uint8_t*>(v.data), v.ld, trans != 0, v.dtype};
}

// One per-tensor GEMM's sums: the operands as stored, their orientation
// and the shape. The FNUZ NaN scans (one memchr per stored row) run at most
// once, and only for a candidate that asks.
struct GemmProblem {
  const char* kernel;
  octet_matrix_view av, bv;
  bool trans_a, trans_b;
  int64_t m, n, k;
  Fp8Operand a, b;
  bool fp8;

  bool decode_shape() const { return fp8 && fp8_gemm_bf16_decodes(m, trans_b); }
  // Neither operand holds an FNUZ NaN code (the BF16-decoding kernels read
  // 0x80 as -0: gemm/gemm_fp8.hpp).
  bool nan_free() const {
    if (nan_free_ < 0) nan_free_ = !fp8_operand_has_fnuz_nan(a, m, k) && !fp8_operand_has_fnuz_nan(b, n, k);
    return nan_free_ != 0;
  }

  // Cached: -1 until first asked.
  mutable int nan_free_ = -1;
};

using GemmSums = int32_t (*)(const GemmProblem& p, float* acc, int64_t ldc);
using GemmCandidate = Candidate<GemmProblem, GemmSums>;

bool decodes_nan_free(const GemmProblem& p) { return p.decode_shape() && p.nan_free(); }
bool engine_is(Fp8GemmEngine e) { return fp8_gemm_engine() == e; }

constexpr GemmCandidate kGemmSumsList[] = {
    {"gemm_fp8_amx (TDPBF16PS tiles)", Isa::Amx, [] { return fp8_gemm_amx_built() && engine_is(Fp8GemmEngine::Amx); },
     [](const GemmProblem& p) { return p.fp8 && !(p.decode_shape() && p.m < kAmxMinDecodeRows) && p.nan_free(); },
     [](const GemmProblem& p, float* acc, int64_t ldc) {
       fp8_gemm_amx(p.a, p.b, p.m, p.n, p.k, acc, ldc);
       return int32_t{OCTET_STATUS_SUCCESS};
     }},
    {"decode_gemm_fp8_avx512_bf16_vbmi (VPERMI2B decoding)", Isa::Avx512Bf16Vbmi, fp8_decode_vbmi_built,
     decodes_nan_free,
     [](const GemmProblem& p, float* acc, int64_t ldc) {
       fp8_decode_gemm_vbmi(p.a, p.b, p.m, p.n, p.k, acc, ldc, fp8_decode_on_fp32());
       return int32_t{OCTET_STATUS_SUCCESS};
     }},
    {"decode_gemm_fp8_avx512_bf16 (VPERMI2W decoding)", Isa::Avx512Bf16, fp8_gemm_bf16_built, decodes_nan_free,
     [](const GemmProblem& p, float* acc, int64_t ldc) {
       fp8_decode_gemm_bf16(p.a, p.b, p.m, p.n, p.k, acc, ldc);
       return int32_t{OCTET_STATUS_SUCCESS};
     }},
    {"gemm_fp8_avx512_bf16 (blocked, VDPBF16PS)", Isa::Avx512Bf16,
     [] { return fp8_gemm_bf16_built() && engine_is(Fp8GemmEngine::Bf16Dot); },
     [](const GemmProblem& p) { return p.fp8 && p.nan_free(); },
     [](const GemmProblem& p, float* acc, int64_t ldc) {
       fp8_blocked_gemm_bf16(p.a, p.b, p.m, p.n, p.k, acc, ldc);
       return int32_t{OCTET_STATUS_SUCCESS};
     }},
    {"decode_gemm_fp8_avx512_vbmi (FP32 FMAs, VPERMI2B decoding)", Isa::Avx512Vbmi, fp8_decode_fma_vbmi_built,
     decodes_nan_free,
     [](const GemmProblem& p, float* acc, int64_t ldc) {
       fp8_decode_gemm_fma_vbmi(p.a, p.b, p.m, p.n, p.k, acc, ldc);
       return int32_t{OCTET_STATUS_SUCCESS};
     }},
    {"decode_gemm_fp8_avx512 (FP32 FMAs, VPERMI2W decoding)", Isa::Avx512, fp8_decode_fma_built, decodes_nan_free,
     [](const GemmProblem& p, float* acc, int64_t ldc) {
       fp8_decode_gemm_fma(p.a, p.b, p.m, p.n, p.k, acc, ldc);
       return int32_t{OCTET_STATUS_SUCCESS};
     }},
    {"decode_gemm_fp8_avx2 (FP32 FMAs, F16C decoding)", Isa::Avx2, fp8_decode_avx2_built,
     [](const GemmProblem& p) {
       return p.decode_shape() && fp8_decode_avx2_takes(p.av.dtype) && fp8_decode_avx2_takes(p.bv.dtype) &&
              p.nan_free();
     },
     [](const GemmProblem& p, float* acc, int64_t ldc) {
       fp8_decode_gemm_avx2(p.a, p.b, p.m, p.n, p.k, acc, ldc);
       return int32_t{OCTET_STATUS_SUCCESS};
     }},
    {"bf16_matmul_tiles (oneDNN BF16 matmul)", Isa::Avx512Bf16,
     [] { return fp8_widen_avx512_built() && (engine_is(Fp8GemmEngine::OnednnBf16) || engine_is(Fp8GemmEngine::Amx)); },
     [](const GemmProblem& p) { return p.fp8; },
     [](const GemmProblem& p, float* acc, int64_t ldc) {
       return bf16_matmul_tiles(p.kernel, bf16_tile_operand(p.av, p.trans_a), bf16_tile_operand(p.bv, p.trans_b), p.m,
                                p.n, p.k, acc, ldc);
     }},
    {"sgemm_tiles (oneDNN sgemm)", Isa::Portable, nullptr, nullptr,
     [](const GemmProblem& p, float* acc, int64_t ldc) {
       return sgemm_tiles(p.kernel, tile_operand(p.av, p.trans_a), tile_operand(p.bv, p.trans_b), p.m, p.n, p.k, acc,
                          ldc);
     }},
};
static_assert(ends_with_fallback(kGemmSumsList), "the last candidate takes every problem");

}  // namespace

int32_t gemm_sums(const char* kernel, const octet_matrix_view& av, bool trans_a, const octet_matrix_view& bv,
                  bool trans_b, int64_t m, int64_t n, int64_t k, float* acc, int64_t ldc) {
  if (k == 0) {
    for (int64_t i = 0; i < m; ++i) std::fill(acc + i * ldc, acc + i * ldc + n, 0.0f);
    return OCTET_STATUS_SUCCESS;
  }
  const GemmProblem problem{kernel,
                            av,
                            bv,
                            trans_a,
                            trans_b,
                            m,
                            n,
                            k,
                            operand(av, trans_a),
                            operand(bv, trans_b),
                            is_fp8(av.dtype) && is_fp8(bv.dtype)};
  return choose(kGemmSumsList, cpu_isa(), problem)->impl(problem, acc, ldc);
}

}  // namespace octet_cpu
