// Per-element and per-row math of the layer kernels (plugin ABI 1.2), as
// __host__ __device__ code so that the host build can be compared bit for bit
// with the reference (tests/cuda_backend/layer_math_host_test.cpp).
//
// Two things make the reference's bits hard to reproduce on a GPU, and both
// are handled here rather than hoped away:
//
// 1. NaN results. The reference runs on x86-64 (SSE scalar arithmetic): an
//    operation with a NaN operand returns that operand quieted (the first
//    operand when both are NaN), and an invalid operation (inf - inf, 0 * inf,
//    0 / 0, sqrt(-1)) returns the "default NaN" 0xFFC00000, which is
//    negative. A GPU returns the canonical NaN 0x7FFFFFFF instead. The sign
//    survives into FP8/BF16/FP16 codes (0xFF vs 0x7F), so every FP32
//    operation below goes through fadd/fsub/fmul/fdiv/fsqrt, which give the
//    x86 result whenever the IEEE result is NaN. Which operand comes first
//    is the compiler's choice for + and * (it may swap them): the operands
//    below are written in the order the compiled reference uses (read off
//    its results, two different NaNs meeting at each operation), which is
//    why some products read "rstd * x" where the header writes "x * rstd".
//    Values are the same either way; only which NaN survives differs. The
//    host test checks every such site against the reference.
//
// 2. tanhf and expf are octet_math_tanhf / octet_math_expf
//    (<octet/octet_math.h>), the functions the reference and the cpu backend
//    call: fixed binary64 sequences with explicit fma, so the device computes
//    the same bits as the host, whatever its own libm.
#pragma once

#include <cstdint>

#if !defined(__CUDA_ARCH__)
#include <cmath>
#include <cstring>
#endif

#include <octet/octet_math.h>

#include "codecs.cuh"

namespace octet_cuda {
namespace lmath {

// ---- FP32 operations, IEEE round-to-nearest, x86 NaN results ------------

OCTET_CUDA_HD bool is_nan(float v) { return (bits_of(v) & 0x7FFFFFFFu) > 0x7F800000u; }

OCTET_CUDA_HD float quieted(float v) { return float_of(bits_of(v) | 0x00400000u); }

// What an x86 SSE operation returns when its IEEE result is NaN.
OCTET_CUDA_HD float x86_nan(float first, float second) {
  if (is_nan(first)) return quieted(first);
  if (is_nan(second)) return quieted(second);
  return float_of(0xFFC00000u);
}

OCTET_CUDA_HD float rn_add(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
OCTET_CUDA_HD float rn_sub(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}
OCTET_CUDA_HD float rn_mul(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
OCTET_CUDA_HD float rn_div(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}

OCTET_CUDA_HD float fadd(float a, float b) {
  const float r = rn_add(a, b);
  return is_nan(r) ? x86_nan(a, b) : r;
}
OCTET_CUDA_HD float fsub(float a, float b) {
  const float r = rn_sub(a, b);
  return is_nan(r) ? x86_nan(a, b) : r;
}
OCTET_CUDA_HD float fmul(float a, float b) {
  const float r = rn_mul(a, b);
  return is_nan(r) ? x86_nan(a, b) : r;
}
OCTET_CUDA_HD float fdiv(float a, float b) {
  const float r = rn_div(a, b);
  return is_nan(r) ? x86_nan(a, b) : r;
}
OCTET_CUDA_HD float fsqrt(float a) {
#if defined(__CUDA_ARCH__)
  const float r = __fsqrt_rn(a);
#else
  const float r = std::sqrt(a);
#endif
  return is_nan(r) ? x86_nan(a, a) : r;
}
OCTET_CUDA_HD float fneg(float a) { return float_of(bits_of(a) ^ 0x80000000u); }
OCTET_CUDA_HD float fabs_bits(float a) { return float_of(bits_of(a) & 0x7FFFFFFFu); }

// ---- activations (octet_backend.h, each operation left to right) --------

constexpr float kGeluA = 0.7978845608f;
constexpr float kGeluB = 0.044715f;

OCTET_CUDA_HD float gelu_tanh_of(float x) {
  const float cube = fmul(fmul(fmul(kGeluB, x), x), x);
  return octet_math_tanhf(fmul(kGeluA, fadd(x, cube)));
}

// 0.5f * x * (1 + tanhf(0.7978845608f * (x + 0.044715f * x * x * x)))
OCTET_CUDA_HD float gelu(float x) { return fmul(fmul(0.5f, x), fadd(1.0f, gelu_tanh_of(x))); }

// 0.5f * (1 + t) + 0.5f * x * (1 - t * t) * 0.7978845608f * (1 + 3 * 0.044715f * x * x)
OCTET_CUDA_HD float gelu_derivative(float x) {
  const float t = gelu_tanh_of(x);
  const float left = fmul(0.5f, fadd(1.0f, t));
  const float three_b = rn_mul(3.0f, kGeluB);  // a constant in the reference's expression
  const float poly = fadd(1.0f, fmul(fmul(three_b, x), x));
  const float right = fmul(fmul(fmul(fmul(0.5f, x), fsub(1.0f, fmul(t, t))), kGeluA), poly);
  return fadd(left, right);
}

// s = 1 / (1 + expf(-a))
OCTET_CUDA_HD float sigmoid(float a) { return fdiv(1.0f, fadd(1.0f, octet_math_expf(fneg(a)))); }

// y = (a * s) * b
OCTET_CUDA_HD float swiglu(float a, float b) { return fmul(fmul(a, sigmoid(a)), b); }

// dx = dy * gelu'(x)
OCTET_CUDA_HD float gelu_backward(float dy, float x) { return fmul(gelu_derivative(x), dy); }

// da = dy * b * (s * (1 + a * (1 - s))); db = dy * (a * s)
struct SwigluGrad {
  float da;
  float db;
};
OCTET_CUDA_HD SwigluGrad swiglu_backward(float dy, float a, float b) {
  const float s = sigmoid(a);
  SwigluGrad g;
  g.da = fmul(fmul(s, fadd(1.0f, fmul(a, fsub(1.0f, s)))), fmul(b, dy));
  g.db = fmul(dy, fmul(a, s));
  return g;
}

// ---- normalisation (octet_backend.h; sums left to right, one step each) --

// One step of a row or column sum: sum + v.
OCTET_CUDA_HD float sum_step(float sum, float v) { return fadd(sum, v); }
// One step of the LayerNorm variance: var + (x - mean)^2.
OCTET_CUDA_HD float variance_step(float var, float x, float mean) {
  const float d = fsub(x, mean);
  return fadd(fmul(d, d), var);
}
// One step of the RMSNorm mean square: ms + x * x.
OCTET_CUDA_HD float square_step(float ms, float x) { return fadd(fmul(x, x), ms); }
// sum / cols (cols as FP32, as the reference converts it).
OCTET_CUDA_HD float mean_of(float sum, int64_t cols) { return fdiv(sum, static_cast<float>(cols)); }
// 1 / sqrtf(var_sum / cols + epsilon) (LayerNorm var sum, RMSNorm square sum).
OCTET_CUDA_HD float rstd_of(float sum, int64_t cols, float epsilon) {
  return fdiv(1.0f, fsqrt(fadd(fdiv(sum, static_cast<float>(cols)), epsilon)));
}
// x_hat = (x - mean) * rstd (LayerNorm) or x * rstd (RMSNorm).
OCTET_CUDA_HD float normalized(float x, float mean, float rstd, bool layernorm) {
  return layernorm ? fmul(fsub(x, mean), rstd) : fmul(rstd, x);
}
// y = x_hat * gamma (+ beta for LayerNorm with beta).
OCTET_CUDA_HD float norm_output(float x, float mean, float rstd, float gamma, bool layernorm, bool has_beta,
                                float beta) {
  float y = fmul(normalized(x, mean, rstd, layernorm), gamma);
  if (layernorm && has_beta) y = fadd(y, beta);
  return y;
}
// Backward, one step of the row sums: sum_g += g, sum_gx += g * x_hat,
// with g = dy * gamma.
struct BackwardSums {
  float sum_g;
  float sum_gx;
};
OCTET_CUDA_HD void backward_row_step(BackwardSums& s, float x, float dy, float gamma, float mean, float rstd,
                                     bool layernorm) {
  const float xhat = normalized(x, mean, rstd, layernorm);
  const float g = fmul(dy, gamma);
  s.sum_g = fadd(s.sum_g, g);
  s.sum_gx = fadd(fmul(g, xhat), s.sum_gx);
}
// dx = rstd * (g - mean_g - x_hat * mean_gx)   (RMSNorm: no mean_g term)
OCTET_CUDA_HD float norm_input_grad(float x, float dy, float gamma, float mean, float rstd, float mean_g,
                                    float mean_gx, bool layernorm) {
  const float xhat = normalized(x, mean, rstd, layernorm);
  const float g = fmul(dy, gamma);
  const float inner = layernorm ? fsub(fsub(g, mean_g), fmul(mean_gx, xhat)) : fsub(g, fmul(mean_gx, xhat));
  return fmul(inner, rstd);
}
// dgamma += dy * x_hat
OCTET_CUDA_HD float dgamma_step(float dgamma, float x, float dy, float mean, float rstd, bool layernorm) {
  return fadd(fmul(dy, normalized(x, mean, rstd, layernorm)), dgamma);
}

// ---- element storage --------------------------------------------------

// The value a store to `dtype` keeps, as FP32 (what the fused quantize reads).
OCTET_CUDA_HD float rounded_to(float v, int32_t dtype) {
  switch (dtype) {
    case OCTET_DTYPE_BF16: return bf16_decode(bf16_encode(v));
    case OCTET_DTYPE_FP16: return fp16_decode(fp16_encode(v));
    default: return v;
  }
}

// quantize(): q = fp8(x * scale).
OCTET_CUDA_HD uint8_t quantize_code(float x, float scale, bool e4m3, bool saturate) {
  return fp8_encode(fmul(x, scale), e4m3, saturate);
}

// |x| for the amax (NaN counts as 0: ignored).
OCTET_CUDA_HD float amax_candidate(float x) { return is_nan(x) ? 0.0f : fabs_bits(x); }

}  // namespace lmath
}  // namespace octet_cuda
