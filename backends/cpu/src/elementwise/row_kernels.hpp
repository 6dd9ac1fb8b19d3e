// Contiguous-run kernels (n elements in a row), in two implementations
// chosen at run time: AVX2+F16C, or portable C++. Both are exact.
#pragma once

#include <cstdint>

namespace octet_cpu {

// What a per-tensor quantize with statistics counts besides its amax.
struct QuantizeCounts {
  uint64_t nan = 0, saturated = 0, flushed = 0;
};

// Where the counts of count_quantize start: |x * scale| >= saturate_from
// overflows the format without saturation; |x * scale| <= flush_to (x
// non-zero) encodes as +-0.
struct QuantizeThresholds {
  float saturate_from, flush_to;
};
QuantizeThresholds quantize_thresholds(int32_t fp8_dtype);

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
  // scale_encode without the amax: out[i] = fp8(in[i] * scale).
  void (*encode)(const float* in, int64_t n, float scale, int32_t fp8_dtype, bool saturate,
                 uint8_t* out);
  // max over i of (bits(in[i]) & 0x7FFFFFFF) as an unsigned integer: the
  // bits of the largest magnitude, or above 0x7F800000 when a NaN is there
  // (block quantize's amax and NaN test in one pass).
  uint32_t (*abs_bits_max)(const float* in, int64_t n);
  // Adds to *counts the NaN, saturated and flushed counts of n inputs
  // quantized as fp8(in[i] * scale) (thresholds: quantize_thresholds of
  // the FP8 dtype), without encoding them.
  void (*count_quantize)(const float* in, int64_t n, float scale, QuantizeThresholds t, QuantizeCounts* counts);
};

const RowKernels& portable_row_kernels();
// nullptr when this build has no AVX2 path.
const RowKernels* avx2_row_kernels();
// nullptr when this build or this CPU has no AVX-512 F/BW/VL/DQ path. Its
// widen, narrow, scale and transpose_bytes are the AVX2 ones.
const RowKernels* avx512_row_kernels();

// The kernels in use: AVX-512 when cpu_isa() (dispatch/isa.hpp) is avx512 or higher,
// AVX2 at avx2 (OCTET_CPU_ISA=avx2|portable or OCTET_CPU_DISABLE_SIMD=1
// lowers it).
const RowKernels& row_kernels();

// Exact FP32 values of every FP8 / E8M0 code (filled once).
const float* fp8_table(int32_t dtype);
const float* e8m0_table();

}  // namespace octet_cpu
