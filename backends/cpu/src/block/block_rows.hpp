// Region kernels of block quantize (block/block_kernels.cpp): the blocks' largest
// magnitudes, their scales, the per-element multiply by each block's
// multiplier fused with the encoding, and the streaming byte copy and byte
// transpose of the codes into the outputs (also used by the per-tensor
// cast + transpose, elementwise/elementwise_kernels.cpp), in three implementations chosen at
// run time: AVX-512 F/BW/VL/DQ, AVX2 (its own block maxima and
// multiply-encode, the portable rest), or portable C++.
// All are exact: a max of integers, the scale rules of block/block_scales.hpp,
// one FP32 multiply per element and the FP8 encoder of elementwise/row_kernels.hpp.
#pragma once

#include <cstdint>

namespace octet_cpu {

struct BlockRowKernels {
  const char* name;
  // out[b] = max over i < h and j in [b * bc, min(w, (b + 1) * bc)) of
  // bits(in[i * ld + j]) & 0x7FFFFFFF, for b < ceil(w / bc): each block's
  // largest magnitude bits, or above 0x7F800000 when it holds a NaN.
  void (*block_abs_bits_max)(const float* in, int64_t ld, int64_t h, int64_t w, int64_t bc, uint32_t* out);
  // out[j] = encode_fp8(in[j] * m[j / bc], fp8_dtype, saturating) for j <
  // n: each element by its block's multiplier (one FP32 multiply; the
  // multipliers are finite and > 0, so a NaN x keeps its NaN), then the
  // row kernels' encoder's bits. The AVX-512 and AVX2 paths encode the
  // products in registers (codecs/encode_fp8_avx512.hpp, codecs/encode_fp8_avx2.hpp) for
  // blocks one element wide or a multiple of the vector wide; the portable
  // one multiplies into a stack buffer and runs row_kernels().encode with
  // scale 1 on it.
  void (*multiply_encode)(const float* in, const float* m, int64_t n, int64_t bc, int32_t fp8_dtype, uint8_t* out);
  // Byte transpose into an output that is not read back soon:
  // dst[j * dst_ld + i] = src[i * src_ld + j] for i < h, j < w. The AVX-512
  // path transposes 64 x 16 bytes at a time (four 16 x 16 transposes, one
  // per 128-bit lane) and writes each column's 64 bytes with one streaming
  // store where dst is 64-byte aligned (then an sfence before returning).
  void (*transpose_bytes_out)(const uint8_t* src, int64_t src_ld, int64_t h, int64_t w, uint8_t* dst, int64_t dst_ld);
  // Byte copy into an output that is not read back soon: dst[i * dst_ld + j]
  // = src[i * src_ld + j] for i < h, j < w. The AVX-512 path writes whole
  // 64-byte lines of dst with streaming stores, the portable one 16-byte
  // pieces with SSE2 streaming stores where the build has SSE2 (then an
  // sfence), so that dst is not read for ownership.
  void (*copy_bytes_out)(const uint8_t* src, int64_t src_ld, int64_t h, int64_t w, uint8_t* dst, int64_t dst_ld);
  // The scales of nb blocks (block/block_scales.hpp) from the bits of their
  // largest finite magnitudes, tops[q] < 0x7F800000, 16 blocks at a time
  // on the AVX-512 path (exact: one IEEE division per block, the rest in
  // integers). fp8_max is an FP8 dtype's largest value (fp8_max_value,
  // 240 or more). Both return the largest of tops, also when some are at
  // or above 0x7F800000 (then those blocks' outputs are unspecified).
  // MXFP8: codes[q] = mx_scale_code(float_of(tops[q]), fp8_max, rounding),
  // multipliers[q] = mx_multiplier(codes[q]).
  uint32_t (*mx_scales)(const uint32_t* tops, int64_t nb, float fp8_max, int32_t rounding, uint8_t* codes,
                        float* multipliers);
  // FP32 blocks: multipliers[q] = fp32_block_scale(float_of(tops[q]),
  // fp8_max, epsilon, pow2), scale_inv[q] = 1 / multipliers[q].
  uint32_t (*fp32_scales)(const uint32_t* tops, int64_t nb, float fp8_max, float epsilon, bool pow2, float* scale_inv,
                          float* multipliers);
};

const BlockRowKernels& portable_block_row_kernels();
// nullptr when this build or this CPU has no AVX-512 F/BW/VL/DQ path.
const BlockRowKernels* avx512_block_row_kernels();
// nullptr when this build or this CPU has no AVX2 path.
const BlockRowKernels* avx2_block_row_kernels();
// AVX-512 when cpu_isa() (dispatch/isa.hpp) is avx512 or higher, AVX2 at avx2, else
// portable.
const BlockRowKernels& block_row_kernels();

}  // namespace octet_cpu
