// FP8 x FP8 -> FP32 sums on AMX tiles (TDPBF16PS), level amx
// (gemm/gemm_fp8_amx.cpp).
#pragma once

#include <cstdint>

#include "gemm/gemm_fp8.hpp"

namespace octet_cpu {

// acc[i * ldc + j] = sum over kk of A'[i, kk] * B'[j, kk] (m, n, k > 0) on
// TDPBF16PS: both operands' codes are decoded to BF16 (exact) in pieces a
// few tiles large, never a whole operand: a thread decodes B' in blocks of
// 256 columns x 2048 k into TDPBF16PS's pair-interleaved layout, and A' in
// blocks of 32 rows of the same k into rows, and sums 32 x 32 blocks of acc
// on four tile accumulators (16 x 16 FP32 each; one row of tiles where
// m <= 16) over the block's k. acc is added to across 2048-k panels, so the
// order of the FP32 additions is the tiles' (numerics.md section 8: the
// FP8 products are exact, only their summation order differs from the
// reference's). Either operand may be stored transposed: a transposed A'
// is byte-transposed into rows once per 2048-k panel (each thread's rows'
// codes, at most m x 2048 bytes), a transposed B' 16 columns at a time. Neither may hold
// an FNUZ NaN code (fp8_operand_has_fnuz_nan). Call only when cpu_isa() is
// Isa::Amx. Throws OutOfMemory (plugin/errors.hpp) before any work when its
// buffers cannot be allocated.
void fp8_gemm_amx(const Fp8Operand& a, const Fp8Operand& b, int64_t m, int64_t n, int64_t k, float* acc, int64_t ldc);

// The block-scaled GEMM of fp8_block_gemm_bf16 (gemm/gemm_fp8.hpp: the
// same arguments, rows contiguous, bk one fp8_block_gemm_amx_takes) on
// the tiles: each k-block's partial sums P_kb of a 32 x 32 output block
// come from TDPBF16PS from zero, then acc = acc + P_kb * (sa * sb) element
// by element in ascending kb (numerics.md section 12). Call only when
// cpu_isa() is Isa::Amx.
void fp8_block_gemm_amx(const Fp8Operand& a, const Fp8Operand& b, int64_t m, int64_t n, int64_t k, int64_t bk,
                        const BlockScaleTable& sa, const BlockScaleTable& sb, float* acc, int64_t ldc);

// The k-blocks fp8_block_gemm_amx takes: 32 (MXFP8, decoded in order by
// VPERMI2W, so that each 32-k tile step holds one k-block), 64, 128 and
// 256 (1x128, 128x128; VPERMI2B's 64-code chunks stay inside a block).
inline bool fp8_block_gemm_amx_takes(int64_t bk) { return bk == 32 || bk == 64 || bk == 128 || bk == 256; }

// Decode shapes (gemm/gemm_fp8.hpp's fp8_gemm_bf16_decodes) of at most
// this many rows take the VPERMI2B decode kernel instead: for so few rows
// the 16 x 16 transposes that pair B' cost more than the FMAs they save
// (octet_bench_cpu BM_Fp8GemmDecode, AMX Xeon, 2 threads: m = 1 2.75 ms on
// the decode kernel against 6.1-7.0 on the tiles, m = 8 6.9 against
// 7.4-8.0, m = 12 9.3 against 6.4-7.9).
constexpr int64_t kAmxMinDecodeRows = 9;

// True when this build contains the AMX kernel.
bool fp8_gemm_amx_built();

}  // namespace octet_cpu
