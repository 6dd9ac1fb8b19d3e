// The block-scaled FP8 GEMM with its scales folded into the operands
// (gemm/block_gemm_folded.cpp): each element is widened to FP32 and multiplied
// by its block's scale, and oneDNN's sgemm sums the products on the sgemm
// tiles (gemm/sgemm_tiles.hpp), in K slices of 256 instead of one call per
// k-block. It serves the CPUs whose FP8 GEMM engine is FP32 FMAs
// (gemm/fp8_gemm_engine.hpp), MXFP8's 32-wide k-blocks above all.
#pragma once

#include <octet/octet_backend.h>

#include <cstdint>

namespace octet_cpu {

// True when folding is exact and changes nothing but the order of the
// additions (numerics.md section 12): every scale of both grids is a power
// of two (an E8M0 code other than 0xFF, or a positive normal FP32 with a
// zero mantissa), and with ea, eb the scale exponents and qa, Ma (qb, Mb)
// the exponents of the smallest nonzero and above the largest finite
// magnitude of A's (B's) FP8 format:
//   qa + qb + min ea + min eb >= -149   every scaled product is a multiple
//                                       of 2^-149: no addition underflows
//   Ma + max ea <= 127, Mb + max eb <= 127, and
//   Ma + Mb + max ea + max eb + ceil(log2 k) <= 127
//                                       no scaled operand, product or sum
//                                       overflows (nor sa * sb in the
//                                       reference's order).
// args must have passed the block GEMM's argument checks, with k > 0.
bool block_scales_fold(const octet_block_gemm_args* args);

// acc[m, n] (row stride ldc) = sum over k of (A[i,k] * sa) * (B[j,k] * sb),
// the scales folded into each operand as its blocks are widened in cache
// (no FP32 copy of a whole operand); the bits depend on m, n and k only,
// never on the thread count. Call only where block_scales_fold(args)
// holds. Returns a status (sgemm_tiles' failures); throws OutOfMemory
// before any work when the tiles' blocks cannot be allocated.
int32_t block_gemm_folded_sums(const octet_block_gemm_args* args, float* acc, int64_t ldc);

}  // namespace octet_cpu
