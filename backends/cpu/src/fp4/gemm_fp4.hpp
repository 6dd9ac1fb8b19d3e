// FP4 x FP4 -> FP32 accumulators on BF16 dot products (fp4/gemm_fp4_avx512_bf16.cpp).
#pragma once

#include <cstdint>

namespace octet_cpu {

// One FP4 GEMM operand: `rows` x k packed E2M1 codes, K-contiguous
// (row r at codes + r * ((k + 1) / 2)), and its scale grid, one code a
// block_rows x bk block (bk 32 for MXFP4, 16 for NVFP4).
struct Fp4Operand {
  const uint8_t* codes;
  const uint8_t* scales;
  int64_t block_rows;  // 1, or 16 (NVFP4_16X16)
  bool nvfp4;          // E4M3 scale codes, else E8M0
};

// True when every element of the operand's blocks times its block scale
// (the E8M0 or E4M3 value) is exactly a normal BF16 value or zero, with
// room for any product and sum of two such values: always for NVFP4; for
// MXFP4 when every block scale is within 2^-40..2^40 or NaN, or belongs
// to a block of zeros.
bool fp4_fold_exact(const Fp4Operand& op, int64_t rows, int64_t k);

// acc[i * ldc + j] = sum over kk of (A[i, kk] * sa[i, kk / bk]) *
// (B[j, kk] * sb[j, kk / bk]) (m, n, k > 0): each operand's elements are
// decoded to BF16 with their block scale folded in (exact, when
// fp4_fold_exact holds for both), in packed panels in cache (never a
// whole-operand copy), and summed in FP32 with VDPBF16PS. Every product
// is exact, so the sum differs from numerics.md 15.4's order only in the
// order of its FP32 additions (section 8's bound). Decode shapes (m <=
// kFp4DecodeMaxM) stream B once, decoding it in registers. Call only when
// cpu_isa() >= Isa::Avx512Bf16. Throws OutOfMemory before any work when
// its panels cannot be allocated.
void fp4_gemm_bf16(const Fp4Operand& a, const Fp4Operand& b, int64_t m, int64_t n, int64_t k, float* acc, int64_t ldc);

constexpr int64_t kFp4DecodeMaxM = 8;

// out[c] = the E2M1 value of code k0 + c of a packed row times scales[c /
// bk], for c < kc (k0 a multiple of bk, bk 16 or 32): an operand's folded
// FP32 values for the sgemm tiles, at every level (fp4/widen_folded_fp4.cpp;
// the same bits on each).
void fp4_widen_folded(const uint8_t* row, int64_t k0, int64_t kc, const float* scales, int64_t bk, float* out);

// fp4_widen_folded in AVX-512, 16 a vector. Call only where fp4_gemm_bf16
// may be called.
void fp4_widen_folded_avx512(const uint8_t* row, int64_t k0, int64_t kc, const float* scales, int64_t bk, float* out);

// True when this build contains the AVX-512 BF16 kernels.
bool fp4_gemm_bf16_built();

}  // namespace octet_cpu
