// FP8 codes -> FP32 values with AVX-512 F/BW (gemm_fp8_widen_avx512.cpp):
// the widening of the sgemm path's blocks (gemm.cpp), where an FP8
// operand is re-widened once per tile it feeds.
#pragma once

#include <cstdint>

namespace octet_cpu {

// out[i] = the FP32 value of FP8 code src[i] of `dtype` (E4M3, E5M2,
// E4M3FNUZ or E5M2FNUZ), for i < n. Exact; a NaN code gives a NaN (an FNUZ
// 0x80 gives +qNaN 0x7FC00000). Call only when cpu_isa() >= Isa::Avx512
// and fp8_widen_avx512_built().
void fp8_widen_avx512(const uint8_t* src, int32_t dtype, int64_t n, float* out);

// True when this build contains fp8_widen_avx512.
bool fp8_widen_avx512_built();

}  // namespace octet_cpu
