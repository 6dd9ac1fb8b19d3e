// The FP8 decode kernel at level avx512 (AVX-512 F/BW/VL/DQ, no
// AVX512_BF16): VPERMI2W decoding, FP32 FMAs (gemm_fp8_decode_fma.cpp).
#pragma once

#include <cstdint>

#include "gemm_fp8.hpp"

namespace octet_cpu {

// acc = A' x B'^T like fp8_gemm_bf16's decode kernel on FP32 FMAs, for
// fp8_gemm_bf16_decodes(m, b.trans) shapes and operands without an FNUZ
// NaN (fp8_operand_has_fnuz_nan). Call only when cpu_isa() >= Isa::Avx512
// and fp8_decode_fma_built(). Throws OutOfMemory (errors.hpp) before any
// work when its buffers cannot be allocated.
void fp8_decode_gemm_fma(const Fp8Operand& a, const Fp8Operand& b, int64_t m, int64_t n, int64_t k, float* acc,
                         int64_t ldc);

// True when this build contains the kernel.
bool fp8_decode_fma_built();

}  // namespace octet_cpu
