// Per-element and per-row math of the layer kernels (plugin ABI 1.2), as
// __host__ __device__ code so that the host build can be compared bit for bit
// with the reference (tests/cuda_backend/layer_math_host_test.cpp).
//
// Two things make the reference's bits hard to reproduce on a GPU, and both
// are handled here rather than hoped away:
//
// 1. NaN results. An operation whose IEEE result is NaN returns the first
//    NaN operand quieted, else the default NaN 0xFFC00000 (negative):
//    octet_math.h's rule, which the reference computes with. A GPU returns
//    one canonical NaN instead, and the sign survives into FP8/BF16/FP16
//    codes (0xFF vs 0x7F), so every FP32 operation below goes through
//    host_add/host_sub/host_mul/host_div/host_sqrt (octet_math.h's). Which
//    operand is first is written in the reference's source
//    (reference/src/layer_kernels.cpp), in the order octet_backend.h states
//    each formula; the operands below are named in that same order. Values
//    are the same either way; only which NaN survives differs. The host test
//    checks every such site against the reference.
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
#include "host_float_ops.cuh"

namespace octet_cuda {
namespace lmath {

// ---- FP32 operations: host_float_ops.cuh (octet_math.h NaN results) ----


// ---- activations (octet_backend.h, each operation left to right) --------

constexpr float kGeluA = 0.7978845608f;
constexpr float kGeluB = 0.044715f;

OCTET_CUDA_HD float gelu_tanh_of(float x) {
  const float cube = host_mul(host_mul(host_mul(kGeluB, x), x), x);
  return octet_math_tanhf(host_mul(kGeluA, host_add(x, cube)));
}

// 0.5f * x * (1 + tanhf(0.7978845608f * (x + 0.044715f * x * x * x)))
OCTET_CUDA_HD float gelu(float x) { return host_mul(host_mul(0.5f, x), host_add(1.0f, gelu_tanh_of(x))); }

// 0.5f * (1 + t) + 0.5f * x * (1 - t * t) * 0.7978845608f * (1 + 3 * 0.044715f * x * x)
OCTET_CUDA_HD float gelu_derivative(float x) {
  const float t = gelu_tanh_of(x);
  const float left = host_mul(0.5f, host_add(1.0f, t));
  const float three_b = rn_mul(3.0f, kGeluB);  // a constant in the reference's expression
  const float poly = host_add(1.0f, host_mul(host_mul(three_b, x), x));
  const float right = host_mul(host_mul(host_mul(host_mul(0.5f, x), host_sub(1.0f, host_mul(t, t))), kGeluA), poly);
  return host_add(left, right);
}

// s = 1 / (1 + expf(-a))
OCTET_CUDA_HD float sigmoid(float a) { return host_div(1.0f, host_add(1.0f, octet_math_expf(negated(a)))); }

// y = (a * s) * b
OCTET_CUDA_HD float swiglu(float a, float b) { return host_mul(host_mul(a, sigmoid(a)), b); }

// dx = dy * gelu'(x)
OCTET_CUDA_HD float gelu_backward(float dy, float x) { return host_mul(dy, gelu_derivative(x)); }

// da = dy * b * (s * (1 + a * (1 - s))); db = dy * (a * s)
struct SwigluGrad {
  float da;
  float db;
};
OCTET_CUDA_HD SwigluGrad swiglu_backward(float dy, float a, float b) {
  const float s = sigmoid(a);
  SwigluGrad g;
  g.da = host_mul(host_mul(dy, b), host_mul(s, host_add(1.0f, host_mul(a, host_sub(1.0f, s)))));
  g.db = host_mul(dy, host_mul(a, s));
  return g;
}

// ---- normalisation (octet_backend.h; sums left to right, one step each) --

// One step of a row or column sum: sum + v.
OCTET_CUDA_HD float sum_step(float sum, float v) { return host_add(sum, v); }
// One step of the LayerNorm variance: var + (x - mean)^2.
OCTET_CUDA_HD float variance_step(float var, float x, float mean) {
  const float d = host_sub(x, mean);
  return host_add(var, host_mul(d, d));
}
// One step of the RMSNorm mean square: ms + x * x.
OCTET_CUDA_HD float square_step(float ms, float x) { return host_add(ms, host_mul(x, x)); }
// sum / cols (cols as FP32, as the reference converts it).
OCTET_CUDA_HD float mean_of(float sum, int64_t cols) { return host_div(sum, static_cast<float>(cols)); }
// 1 / sqrtf(var_sum / cols + epsilon) (LayerNorm var sum, RMSNorm square sum).
OCTET_CUDA_HD float rstd_of(float sum, int64_t cols, float epsilon) {
  return host_div(1.0f, host_sqrt(host_add(host_div(sum, static_cast<float>(cols)), epsilon)));
}
// x_hat = (x - mean) * rstd (LayerNorm) or x * rstd (RMSNorm).
OCTET_CUDA_HD float normalized(float x, float mean, float rstd, bool layernorm) {
  return layernorm ? host_mul(host_sub(x, mean), rstd) : host_mul(x, rstd);
}
// y = x_hat * gamma (+ beta for LayerNorm with beta).
OCTET_CUDA_HD float norm_output(float x, float mean, float rstd, float gamma, bool layernorm, bool has_beta,
                                float beta) {
  float y = host_mul(normalized(x, mean, rstd, layernorm), gamma);
  if (layernorm && has_beta) y = host_add(y, beta);
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
  const float g = host_mul(dy, gamma);
  s.sum_g = host_add(s.sum_g, g);
  s.sum_gx = host_add(s.sum_gx, host_mul(g, xhat));
}
// dx = rstd * (g - mean_g - x_hat * mean_gx)   (RMSNorm: no mean_g term)
OCTET_CUDA_HD float norm_input_grad(float x, float dy, float gamma, float mean, float rstd, float mean_g,
                                    float mean_gx, bool layernorm) {
  const float xhat = normalized(x, mean, rstd, layernorm);
  const float g = host_mul(dy, gamma);
  const float inner = layernorm ? host_sub(host_sub(g, mean_g), host_mul(xhat, mean_gx)) : host_sub(g, host_mul(xhat, mean_gx));
  return host_mul(rstd, inner);
}
// dgamma += dy * x_hat
OCTET_CUDA_HD float dgamma_step(float dgamma, float x, float dy, float mean, float rstd, bool layernorm) {
  return host_add(dgamma, host_mul(dy, normalized(x, mean, rstd, layernorm)));
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
  return fp8_encode(host_mul(x, scale), e4m3, saturate);
}

// |x| for the amax (NaN counts as 0: ignored).
OCTET_CUDA_HD float amax_candidate(float x) { return is_nan(x) ? 0.0f : abs_value(x); }

}  // namespace lmath
}  // namespace octet_cuda
