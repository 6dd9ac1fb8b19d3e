// Per-element and per-block math of the plugin ABI 1.1 kernels (numerics.md
// sections 10, 11, 12 and 14.1): block scales (E8M0 RCEIL/FLOOR, FP32 current
// scaling), the element encode of a block, the statistics classification of
// one element, the block dequantize of one element and the block GEMM's
// element in the reference's order. Everything is __host__ __device__ so
// tests/cuda_backend/block_math_host_test.cpp checks these very functions
// against the reference on the host.
//
// NaN bits: host_float_ops.cuh (octet_math.h's NaN results on both sides).
#pragma once

#include <octet/octet_math.h>

#include <cmath>
#include <cstdint>

#include <octet/octet_backend.h>

#include "codecs.cuh"
#include "host_float_ops.cuh"

namespace octet_cuda {

OCTET_CUDA_HD float fp8_max_value(bool e4m3) { return e4m3 ? 448.0f : 57344.0f; }

// ---- block scales (numerics.md section 11) ----

// E8M0 scale code of a block whose amax (max |x| over its finite elements)
// is block_amax; never the NaN code 0xFF. floor_rounding: the OCP FLOOR
// rule, else RCEIL.
OCTET_CUDA_HD uint8_t mx_scale_code(float block_amax, bool e4m3, bool floor_rounding) {
  if (block_amax == 0.0f) return 0x00u;
  if (!floor_rounding) {
    // A non-zero amax whose quotient underflows to 0 still gets the smallest
    // scale 0x00 (2^-127), not the NaN code e8m0_encode gives 0.
    const float quotient = rn_div(block_amax, fp8_max_value(e4m3));
    return quotient == 0.0f ? 0x00u : e8m0_encode(quotient, true);
  }
  const uint32_t magnitude = bits_of(block_amax) & 0x7FFFFFFFu;
  const uint32_t exp_field = magnitude >> 23;
  int floor_log2;
  if (exp_field != 0u) {
    floor_log2 = static_cast<int>(exp_field) - 127;
  } else {  // FP32 subnormal: the leading one of the fraction sets the exponent
    int top = 22;
    while (((magnitude >> top) & 1u) == 0u) --top;
    floor_log2 = top - 149;
  }
  const int code = floor_log2 - (e4m3 ? 8 : 15) + 127;
  if (code < 0) return 0x00u;
  if (code > 0xFE) return 0xFEu;
  return static_cast<uint8_t>(code);
}

// 1 / X for an E8M0 code other than 0xFF: 2^(127 - code). Multiplying by it
// gives the same FP32 value as dividing by X (both are x * 2^-e rounded
// once), and it is an FP32 number for every code (2^-127 is a subnormal).
OCTET_CUDA_HD float mx_multiplier(uint8_t code) {
  if (code == 0xFEu) return float_of(0x00400000u);
  return float_of(static_cast<uint32_t>(254u - code) << 23);
}

// FP32 block scale by the current-scaling rule (numerics.md 14.1):
// fp8_max / max(block_amax, epsilon) with block_amax the largest |x| of the
// block's finite elements; 1 when that is 0 or inf; +inf becomes FLT_MAX;
// power_of_two clears the mantissa.
OCTET_CUDA_HD float fp32_block_scale(float block_amax, bool e4m3, float epsilon, bool power_of_two) {
  // fmax semantics: a NaN epsilon leaves block_amax.
  const float amax = epsilon > block_amax ? epsilon : block_amax;
  if (!is_finite(amax) || amax == 0.0f) return 1.0f;
  float scale = rn_div(fp8_max_value(e4m3), amax);
  if (!is_finite(scale)) scale = float_of(0x7F7FFFFFu);  // FLT_MAX
  if (power_of_two) scale = float_of(bits_of(scale) & 0xFF800000u);
  return scale;
}

// ---- elements ----

// The code of x in a block whose encoder input is x * multiplier: a NaN
// keeps its sign, an infinity saturates to max finite. *scaled gets the
// encoder's input, which the statistics need.
OCTET_CUDA_HD uint8_t block_encode(float x, float multiplier, bool e4m3, float* scaled) {
  *scaled = host_mul(x, multiplier);
  return fp8_encode(*scaled, e4m3, true);
}

// Statistics of one element (numerics.md, quantize statistics): x the input,
// scaled the encoder's input, code the code written.
enum : unsigned { kCountNan = 1u, kCountSaturated = 2u, kCountFlushed = 4u };

OCTET_CUDA_HD unsigned classify_element(float x, float scaled, uint8_t code, bool e4m3) {
  if (is_nan(x)) return kCountNan;
  unsigned flags = 0u;
  // Saturated: the non-saturating conversion overflows (an infinity
  // included; a NaN scaled value, from a NaN per-tensor scale, is not a
  // saturation).
  if (!is_nan(scaled)) {
    const uint32_t magnitude = fp8_encode(scaled, e4m3, false) & 0x7Fu;
    if (e4m3 ? magnitude == 0x7Fu : magnitude >= 0x7Cu) flags |= kCountSaturated;
  }
  if (is_finite(x) && x != 0.0f && (code & 0x7Fu) == 0u) flags |= kCountFlushed;
  return flags;
}

// scale_inv of a block from its scale grid.
OCTET_CUDA_HD float block_scale_inv(const void* grid, bool e8m0, int64_t index) {
  return e8m0 ? e8m0_decode(static_cast<const uint8_t*>(grid)[index]) : static_cast<const float*>(grid)[index];
}

// decode(code) * scale_inv (of two NaNs, the decoded code's).
OCTET_CUDA_HD float block_dequantize_value(uint8_t code, bool e4m3, float scale_inv) {
  return host_mul(fp8_decode(code, e4m3), scale_inv);
}

// ---- block GEMM (numerics.md section 12) ----

// sum over k-blocks of partial * (sa * sb), each partial summed in ascending
// k, every operation rounded on its own with the host's NaN results. The
// kernel's fast path gives the same bits whenever this is not NaN; it calls
// this for the elements where it is.
OCTET_CUDA_HD float block_gemm_accumulate(const octet_block_gemm_args& args, int64_t i, int64_t j) {
  const int64_t bk = args.a_block_cols;
  const int64_t k_blocks = (args.k + bk - 1) / bk;
  const bool e8m0 = args.scale_dtype == OCTET_DTYPE_E8M0;
  float acc = 0.0f;
  for (int64_t kb = 0; kb < k_blocks; ++kb) {
    float partial = 0.0f;
    const int64_t k_end = (kb + 1) * bk < args.k ? (kb + 1) * bk : args.k;
    for (int64_t kk = kb * bk; kk < k_end; ++kk) {
      const float a = load_as_float(args.a.data, args.a.dtype, i * args.a.ld + kk);
      const float b = load_as_float(args.b.data, args.b.dtype, j * args.b.ld + kk);
      partial = host_add(host_mul(a, b), partial);  // of two NaNs, the product's
    }
    const float sa = block_scale_inv(args.a_scale_inv, e8m0, (i / args.a_block_rows) * k_blocks + kb);
    const float sb = block_scale_inv(args.b_scale_inv, e8m0, (j / args.b_block_rows) * k_blocks + kb);
    acc = host_add(host_mul(host_mul(sa, sb), partial), acc);  // of two NaNs, the scales', then the block's
  }
  return acc;
}

// alpha * acc (+ beta * D) (+ bias[j]) (-> GELU), in the reference's order,
// with the host's NaN results. beta == 0 never reads D.
OCTET_CUDA_HD float block_gemm_epilogue(float acc, const octet_block_gemm_args& args, int64_t i, int64_t j) {
  float v = host_mul(acc, args.alpha);  // of two NaNs, acc's
  if (args.beta != 0.0f) {
    v = host_add(v, host_mul(args.beta, load_as_float(args.d.data, args.d.dtype, i * args.d.ld + j)));
  }
  if (args.bias.data != nullptr) v = host_add(v, load_as_float(args.bias.data, args.bias.dtype, j));
  if (args.epilogue == OCTET_EPILOGUE_GELU) {
    // 0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v))), left to right,
    // tanhf being octet_math_tanhf as in the reference
    const float cube = host_mul(host_mul(host_mul(0.044715f, v), v), v);
    const float inner = host_mul(0.7978845608f, host_add(v, cube));
    v = host_mul(host_mul(0.5f, v), host_add(1.0f, octet_math_tanhf(inner)));
  }
  return v;
}

}  // namespace octet_cuda
