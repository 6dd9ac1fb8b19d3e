// The cpu backend's FP4 kernels (plugin ABI 1.4; numerics.md section 15):
// argument checks, then the work. Each returns a status and has reported
// any failure through the host.
#pragma once

#include <octet/octet_backend.h>

#include <cstdint>

namespace octet_cpu {

// fp4/quantize_fp4.cpp: bit for bit the reference's codes, scales, tensor
// scale, amax and statistics, for every option.
int32_t fp4_quantize_kernel(const octet_fp4_quantize_args* args);
int32_t fp4_dequantize_kernel(const octet_fp4_dequantize_args* args);
// fp4/gemm_fp4_kernel.cpp: within numerics.md section 8's bound (15.4's order with the
// block scales inside the sum).
int32_t fp4_gemm_kernel(const octet_fp4_gemm_args* args);

}  // namespace octet_cpu
