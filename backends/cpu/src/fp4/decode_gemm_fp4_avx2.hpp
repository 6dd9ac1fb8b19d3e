// The FP4 GEMM's decode kernel below level avx512_bf16 (fp4/decode_gemm_fp4_avx2.cpp).
#pragma once

#include <cstdint>

#include "fp4/gemm_fp4.hpp"

namespace octet_cpu {

// acc[i * ldc + j] = sum over kk of A's and B's folded values (each element
// times its block scale: fp4_widen_folded's values, in an order permuted
// inside each 64 codes, the same for A and B) for m <= kFp4DecodeMaxM: B is
// read once, 512 codes of four rows at a time widened into a buffer in L1
// and dotted with A's folded rows (widened once) on 8-lane FMAs; threads
// share N. Every product is exact where fp4_fold_exact holds
// for both operands (call only then), so only the order of the FP32
// additions differs from numerics.md 15.4's (section 8's bound). bk is 16
// or 32. Call only when cpu_isa() >= Isa::Avx2 and fp4_decode_fma_built().
// Throws OutOfMemory before any work when its buffers cannot be allocated.
void fp4_decode_gemm_fma(const Fp4Operand& a, const Fp4Operand& b, int64_t m, int64_t n, int64_t k, int64_t bk,
                         float* acc, int64_t ldc);

// True when this build contains the kernel.
bool fp4_decode_fma_built();

}  // namespace octet_cpu
