// Contiguous-run kernels (n elements in a row), in two implementations
// chosen at run time: AVX2+F16C, or portable C++. Both are exact.
#pragma once

#include <cstdint>

namespace octet_cpu {

struct RowKernels {
  const char* name;
  // n elements of `dtype` (any octet dtype) -> FP32 values.
  void (*widen)(const void* src, int32_t dtype, int64_t n, float* out);
  // FP32 values -> n elements of `dtype` (FP8 with `saturate`; E8M0 CEIL).
  void (*narrow)(const float* in, int64_t n, int32_t dtype, bool saturate, void* dst);
  // The fused quantize step: *amax = fmax(*amax, |in[i]|) (NaN ignored), and
  // out[i] = fp8(in[i] * scale).
  void (*scale_encode)(const float* in, int64_t n, float scale, int32_t fp8_dtype,
                       bool saturate, uint8_t* out, float* amax);
  // *amax = fmax(*amax, |in[i]|), NaN ignored.
  void (*amax)(const float* in, int64_t n, float* amax);
  // in[i] *= s (one FP32 multiply each).
  void (*scale)(float* in, int64_t n, float s);
  // Byte transpose: dst[j * dst_ld + i] = src[i * src_ld + j] for i < h,
  // j < w (AVX2 path: 16x16 blocks through SSE unpacks).
  void (*transpose_bytes)(const uint8_t* src, int64_t src_ld, int64_t h, int64_t w, uint8_t* dst,
                          int64_t dst_ld);
};

const RowKernels& portable_row_kernels();
// nullptr when this build has no AVX2 path.
const RowKernels* avx2_row_kernels();

// The kernels in use: AVX2 when cpu_isa() (isa.hpp) is avx2 or higher
// (OCTET_CPU_ISA=portable or OCTET_CPU_DISABLE_SIMD=1 lowers it).
const RowKernels& row_kernels();

// Exact FP32 values of every FP8 / E8M0 code (filled once).
const float* fp8_table(int32_t dtype);
const float* e8m0_table();

}  // namespace octet_cpu
