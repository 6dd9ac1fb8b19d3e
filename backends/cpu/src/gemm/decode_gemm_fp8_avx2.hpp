// The FP8 decode kernel at level avx2 (AVX2 + F16C + FMA, no AVX-512):
// gemm/decode_gemm_fp8_avx2.cpp.
#pragma once

#include <cstdint>

#include "gemm/gemm_fp8.hpp"

namespace octet_cpu {

// True when the AVX2 decode kernel takes operands of this dtype: E4M3,
// E5M2 and E4M3FNUZ (F16C decodes them exactly; E5M2FNUZ's largest
// binade has no FP16 twin, so its GEMMs keep oneDNN's sgemm path).
bool fp8_decode_avx2_takes(int32_t dtype);

// acc = A' x B'^T for fp8_gemm_bf16_decodes(m, b.trans) shapes (m <= 32,
// B' rows contiguous), both dtypes fp8_decode_avx2_takes and no FNUZ NaN
// (fp8_operand_has_fnuz_nan): B is read once, 16 codes at a time decoded
// to FP32 with F16C into an L1 block of 4 rows x 512 k, and dotted with the
// m activation rows (decoded once) on 8-lane FMAs; 8 partial sums per
// output, added as a tree at the end. Threads share N. Call only when
// cpu_isa() >= Isa::Avx2 and fp8_decode_avx2_built(). Throws OutOfMemory
// (plugin/errors.hpp) before any work when its buffers cannot be allocated.
void fp8_decode_gemm_avx2(const Fp8Operand& a, const Fp8Operand& b, int64_t m, int64_t n, int64_t k, float* acc,
                          int64_t ldc);

// True when this build contains the kernel.
bool fp8_decode_avx2_built();

}  // namespace octet_cpu
