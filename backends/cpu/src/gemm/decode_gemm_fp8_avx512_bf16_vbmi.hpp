// The decode kernel on AVX512_VBMI byte-plane decoding
// (gemm/decode_gemm_fp8_avx512_bf16_vbmi.cpp).
#pragma once

#include <cstdint>

#include "gemm/gemm_fp8.hpp"

namespace octet_cpu {

// acc = A' x B'^T like fp8_decode_gemm_bf16, for m <= kDecodeMaxM and !b.trans,
// decoding 64 codes with two VPERMI2B; on VDPBF16PS, or on FP32 FMAs when
// `fp32` (fp8_decode_on_fp32, gemm/gemm_fp8.hpp). Call only when cpu_isa() >=
// Isa::Avx512Bf16Vbmi and fp8_decode_vbmi_built().
void fp8_decode_gemm_vbmi(const Fp8Operand& a, const Fp8Operand& b, int64_t m, int64_t n, int64_t k, float* acc,
                          int64_t ldc, bool fp32);

// True when this build contains the kernel.
bool fp8_decode_vbmi_built();

}  // namespace octet_cpu
