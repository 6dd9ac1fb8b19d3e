// The FP4 rules of numerics.md section 15 on single values and groups, shared
// by the reference's FP4 quantize, dequantize and GEMM: stochastic E2M1
// rounding, the random Hadamard transform of a 16-element group, and the
// block scales of MXFP4 and NVFP4. Plain FP32 through octet_math.h.
#pragma once

#include <cstdint>

namespace octet::ref {

// E2M1 code of a finite or infinite, non-NaN y, saturating, rounded
// stochastically with 32 random bits r (numerics.md 15.1): with lo <= |y| <
// hi the E2M1 magnitudes around |y| and D = floor((|y| - lo) / (hi - lo) *
// 2^32), the magnitude is hi iff r < D, else lo; |y| >= 6 gives 6. The
// sign is kept (-0 is 0x8).
uint8_t e2m1_encode_stochastic(float y, uint32_t r);

// The random Hadamard transform of 16 values in place (numerics.md 15.2):
// y_i = (sum over j ascending of (-1)^(popcount(i & j) + bit j of mask) *
// x_j) * 0.25, the sum in FP32 from +0.
void hadamard16(float* values, uint32_t sign_mask);

// NVFP4 tensor scale g from the finite amax (numerics.md 15.3).
float nvfp4_tensor_scale(float finite_amax);
// NVFP4 E4M3 block scale code: e4m3_sat((block_amax / 6) / g).
uint8_t nvfp4_block_scale_code(float block_amax, float g);
// MXFP4 E8M0 block scale code, rounding 0 RCEIL, 1 FLOOR (numerics.md 15.3).
uint8_t mxfp4_block_scale_code(float block_amax, int32_t rounding);

}  // namespace octet::ref
