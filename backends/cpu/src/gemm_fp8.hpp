// FP8 x FP8 -> FP32 accumulators on BF16 dot products (gemm_fp8_avx512.cpp).
#pragma once

#include <cstdint>

namespace octet_cpu {

// One FP8 operand as the GEMM reads it: X'[o, kk] is data[o * ld + kk], or
// data[kk * ld + o] when `trans` (stored [k, outer]).
struct Fp8Operand {
  const uint8_t* data;
  int64_t ld;
  bool trans;
  int32_t dtype;  // OCTET_DTYPE_E4M3 or OCTET_DTYPE_E5M2
};

// acc[i * ldc + j] = sum over kk of A'[i, kk] * B'[j, kk] (m, n, k > 0), on
// VDPBF16PS: every FP8 value is exactly a BF16 value, operands are widened
// to BF16 in cache-sized packed panels (never a whole-operand copy), and
// sums are FP32. Decode shapes (m <= 32, B' rows contiguous) stream B once
// and decode it in registers. Call only when cpu_isa() >= Isa::Avx512Bf16.
// Throws OutOfMemory (errors.hpp) before any work when its panels cannot be
// allocated; they are freed before it returns.
void fp8_gemm_bf16(const Fp8Operand& a, const Fp8Operand& b, int64_t m, int64_t n, int64_t k,
                   float* acc, int64_t ldc);

// True when this build contains the AVX-512 BF16 kernels.
bool fp8_gemm_bf16_built();

}  // namespace octet_cpu
