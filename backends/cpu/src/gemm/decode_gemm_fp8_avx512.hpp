// The FP8 decode kernel on FP32 FMAs below level avx512_bf16: at level
// avx512 with VPERMI2W decoding (gemm/decode_gemm_fp8_avx512.cpp), at level
// avx512_vbmi with VPERMI2B decoding (gemm/decode_gemm_fp8_avx512_vbmi.cpp).
#pragma once

#include <cstdint>

#include "gemm/gemm_fp8.hpp"

namespace octet_cpu {

// acc = A' x B'^T like fp8_decode_gemm_bf16 on FP32 FMAs, for
// fp8_gemm_bf16_decodes(m, b.trans) shapes and operands without an FNUZ
// NaN (fp8_operand_has_fnuz_nan). Call only when cpu_isa() >= Isa::Avx512
// and fp8_decode_fma_built(). Throws OutOfMemory (plugin/errors.hpp) before any
// work when its buffers cannot be allocated.
void fp8_decode_gemm_fma(const Fp8Operand& a, const Fp8Operand& b, int64_t m, int64_t n, int64_t k, float* acc,
                         int64_t ldc);

// True when this build contains the kernel.
bool fp8_decode_fma_built();

// The same on the VPERMI2B decoder. Call only when cpu_isa() ==
// Isa::Avx512Vbmi and fp8_decode_fma_vbmi_built().
void fp8_decode_gemm_fma_vbmi(const Fp8Operand& a, const Fp8Operand& b, int64_t m, int64_t n, int64_t k, float* acc,
                              int64_t ldc);

// True when this build contains the VPERMI2B kernel.
bool fp8_decode_fma_vbmi_built();

}  // namespace octet_cpu
