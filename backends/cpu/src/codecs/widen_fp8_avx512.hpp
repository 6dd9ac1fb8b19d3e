// FP8 codes -> FP32 (or BF16) values with AVX-512 F/BW
// (codecs/widen_fp8_avx512.cpp):
// the widening of the sgemm tiles' blocks (gemm/gemm_kernel.cpp, and the block-scaled
// GEMM's FP32 path in block/block_kernels.cpp), where an FP8 operand is
// re-widened once per tile it feeds.
#pragma once

#include <cstdint>

namespace octet_cpu {

// out[i] = the FP32 value of FP8 code src[i] of `dtype` (E4M3, E5M2,
// E4M3FNUZ or E5M2FNUZ), for i < n. Exact; a NaN code gives a NaN (an FNUZ
// 0x80 gives +qNaN 0x7FC00000). Call only when cpu_isa() >= Isa::Avx512
// and fp8_widen_avx512_built().
void fp8_widen_avx512(const uint8_t* src, int32_t dtype, int64_t n, float* out);

// out[i] = the BF16 bits of FP8 code src[i] of `dtype`, for i < n: exact,
// like fp8_widen_avx512 (an FNUZ 0x80 gives 0x7FC0). The widening of the
// oneDNN BF16 matmul tiles (gemm/bf16_matmul_tiles.hpp). Same conditions.
void fp8_widen_bf16_avx512(const uint8_t* src, int32_t dtype, int64_t n, uint16_t* out);

// True when this build contains fp8_widen_avx512 and fp8_widen_bf16_avx512.
bool fp8_widen_avx512_built();

// A row widening: out[i] = element i of src (n elements of dtype) as FP32.
using WidenRow = void (*)(const void* src, int32_t dtype, int64_t n, float* out);

// The fastest widening of `dtype` on this CPU: fp8_widen_avx512 for FP8
// codes at level avx512 and above, else the row kernels' widen.
WidenRow widen_row_for(int32_t dtype);

}  // namespace octet_cpu
