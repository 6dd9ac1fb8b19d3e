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
// 2. tanhf and expf. The reference calls the host libm (std::tanh/std::exp on
//    float). A device tanhf/expf is not the same function. glibc_tanhf and
//    glibc_expf below are the algorithms of glibc 2.36 x86-64 (the libm of the
//    build machine's Debian 12): tanhf/expm1f from fdlibm in FP32, and the
//    ARM-optimized-routines expf in FP64 in its FMA form (the ifunc variant
//    glibc picks on any CPU with FMA and AVX2). Every constant was read from
//    that libm's .rodata. The host test compares them with the host libm on
//    every FP32 input. A reference linked with another libm (glibc >= 2.41
//    has correctly rounded tanhf) can differ in the last bit of some results;
//    the host test is what detects that.
#pragma once

#include <cstdint>

#if !defined(__CUDA_ARCH__)
#include <cmath>
#include <cstring>
#endif

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

// ---- glibc 2.36 tanhf (fdlibm s_tanhf.c, s_expm1f.c) --------------------
// Only finite, non-NaN values reach the arithmetic, so plain rn_* suffice.

OCTET_CUDA_HD float glibc_expm1f(float x) {
  constexpr float kHuge = 1.0e30f, kTiny = 1.0e-30f;
  const uint32_t bits = bits_of(x);
  const bool negative = (bits & 0x80000000u) != 0u;
  const uint32_t hx = bits & 0x7FFFFFFFu;
  const float o_threshold = float_of(0x42B17180u);
  const float ln2_hi = float_of(0x3F317180u), ln2_lo = float_of(0x3717F7D1u);
  const float invln2 = float_of(0x3FB8AA3Bu);
  const float q1 = float_of(0xBD088889u), q2 = float_of(0x3AD00D01u), q3 = float_of(0xB8A670CDu),
              q4 = float_of(0x36867E54u), q5 = float_of(0xB457EDBBu);
  if (hx >= 0x4195B844u) {    // |x| >= 27 ln2
    if (hx >= 0x42B17218u) {  // |x| >= 88.72...
      if (hx > 0x7F800000u) return quieted(x);
      if (hx == 0x7F800000u) return negative ? -1.0f : x;
      if (x > o_threshold) return rn_mul(kHuge, kHuge);
    }
    if (negative) return rn_sub(kTiny, 1.0f);
  }
  float hi, lo, c = 0.0f;
  int32_t k;
  if (hx > 0x3EB17218u) {    // |x| > ln2 / 2
    if (hx < 0x3F851592u) {  // and |x| < 1.5 ln2
      if (!negative) {
        hi = rn_sub(x, ln2_hi);
        lo = ln2_lo;
        k = 1;
      } else {
        hi = rn_add(x, ln2_hi);
        lo = fneg(ln2_lo);
        k = -1;
      }
    } else {
      // C's float -> int conversion truncates (cvttss2si).
      k = static_cast<int32_t>(rn_add(rn_mul(invln2, x), negative ? -0.5f : 0.5f));
      const float t = static_cast<float>(k);
      hi = rn_sub(x, rn_mul(t, ln2_hi));
      lo = rn_mul(t, ln2_lo);
    }
    x = rn_sub(hi, lo);
    c = rn_sub(rn_sub(hi, x), lo);
  } else if (hx < 0x33000000u) {  // |x| < 2^-25: x itself (x - 0)
    return x;
  } else {
    k = 0;
  }
  const float hfx = rn_mul(0.5f, x);
  const float hxs = rn_mul(x, hfx);
  const float r1 = rn_add(
      1.0f, rn_mul(hxs, rn_add(q1, rn_mul(hxs, rn_add(q2, rn_mul(hxs, rn_add(q3, rn_mul(hxs, rn_add(q4, rn_mul(hxs, q5))))))))));
  const float t = rn_sub(3.0f, rn_mul(r1, hfx));
  float e = rn_mul(hxs, rn_div(rn_sub(r1, t), rn_sub(6.0f, rn_mul(x, t))));
  if (k == 0) return rn_sub(x, rn_sub(rn_mul(x, e), hxs));
  e = rn_sub(rn_mul(x, rn_sub(e, c)), c);
  e = rn_sub(e, hxs);
  if (k == -1) return rn_sub(rn_mul(0.5f, rn_sub(x, e)), 0.5f);
  if (k == 1) {
    if (x < -0.25f) return rn_mul(-2.0f, rn_sub(e, rn_add(x, 0.5f)));
    return rn_add(1.0f, rn_mul(2.0f, rn_sub(x, e)));
  }
  const uint32_t k_bits = static_cast<uint32_t>(k) << 23;  // k added to the exponent field
  if (k <= -2 || k > 56) {
    const float y = rn_sub(1.0f, rn_sub(e, x));
    return rn_sub(float_of(bits_of(y) + k_bits), 1.0f);
  }
  if (k < 23) {
    const float t1 = float_of(0x3F800000u - (0x1000000u >> k));  // 1 - 2^-k
    const float y = rn_sub(t1, rn_sub(e, x));
    return float_of(bits_of(y) + k_bits);
  }
  const float t2 = float_of(static_cast<uint32_t>(0x7F - k) << 23);  // 2^-k
  const float y = rn_add(rn_sub(x, rn_add(e, t2)), 1.0f);
  return float_of(bits_of(y) + k_bits);
}

OCTET_CUDA_HD float glibc_tanhf(float x) {
  const uint32_t bits = bits_of(x);
  const uint32_t ix = bits & 0x7FFFFFFFu;
  const bool negative = (bits & 0x80000000u) != 0u;
  if (ix >= 0x7F800000u) {
    if (ix > 0x7F800000u) return quieted(x);  // 1/x + 1 keeps x's NaN
    return negative ? -1.0f : 1.0f;
  }
  float z;
  if (ix < 0x41B00000u) {  // |x| < 22
    if (ix == 0u) return x;
    if (ix < 0x24000000u) return rn_mul(x, rn_add(1.0f, x));  // |x| < 2^-55
    const float ax = fabs_bits(x);
    if (ix >= 0x3F800000u) {  // |x| >= 1
      const float t = glibc_expm1f(rn_add(ax, ax));
      z = rn_sub(1.0f, rn_div(2.0f, rn_add(t, 2.0f)));
    } else {
      const float t = glibc_expm1f(rn_mul(-2.0f, ax));
      z = rn_div(fneg(t), rn_add(t, 2.0f));
    }
  } else {
    z = rn_sub(1.0f, 1.0e-30f);
  }
  return negative ? fneg(z) : z;
}

// ---- glibc 2.36 expf (ARM optimized routines, FMA variant) --------------

OCTET_CUDA_HD uint64_t double_bits(double v) {
#if defined(__CUDA_ARCH__)
  return static_cast<uint64_t>(__double_as_longlong(v));
#else
  uint64_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
#endif
}
OCTET_CUDA_HD double double_of(uint64_t b) {
#if defined(__CUDA_ARCH__)
  return __longlong_as_double(static_cast<long long>(b));
#else
  double v;
  std::memcpy(&v, &b, sizeof v);
  return v;
#endif
}
OCTET_CUDA_HD double d_fma(double a, double b, double c) {
#if defined(__CUDA_ARCH__)
  return __fma_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}
OCTET_CUDA_HD double d_sub(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dsub_rn(a, b);
#else
  return a - b;
#endif
}
OCTET_CUDA_HD double d_mul(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}
OCTET_CUDA_HD float d_to_float(double v) {
#if defined(__CUDA_ARCH__)
  return __double2float_rn(v);
#else
  return static_cast<float>(v);
#endif
}

// 2^(i/32) with i << 47 subtracted from the bits (__exp2f_data.tab).
OCTET_CUDA_HD uint64_t exp2f_table(uint32_t i) {
  // A switch rather than an array: usable from host and device code alike
  // without a __device__/__constant__ copy (the compiler makes it a lookup).
  switch (i & 31u) {
    case 0: return 0x3ff0000000000000ull;
    case 1: return 0x3fefd9b0d3158574ull;
    case 2: return 0x3fefb5586cf9890full;
    case 3: return 0x3fef9301d0125b51ull;
    case 4: return 0x3fef72b83c7d517bull;
    case 5: return 0x3fef54873168b9aaull;
    case 6: return 0x3fef387a6e756238ull;
    case 7: return 0x3fef1e9df51fdee1ull;
    case 8: return 0x3fef06fe0a31b715ull;
    case 9: return 0x3feef1a7373aa9cbull;
    case 10: return 0x3feedea64c123422ull;
    case 11: return 0x3feece086061892dull;
    case 12: return 0x3feebfdad5362a27ull;
    case 13: return 0x3feeb42b569d4f82ull;
    case 14: return 0x3feeab07dd485429ull;
    case 15: return 0x3feea47eb03a5585ull;
    case 16: return 0x3feea09e667f3bcdull;
    case 17: return 0x3fee9f75e8ec5f74ull;
    case 18: return 0x3feea11473eb0187ull;
    case 19: return 0x3feea589994cce13ull;
    case 20: return 0x3feeace5422aa0dbull;
    case 21: return 0x3feeb737b0cdc5e5ull;
    case 22: return 0x3feec49182a3f090ull;
    case 23: return 0x3feed503b23e255dull;
    case 24: return 0x3feee89f995ad3adull;
    case 25: return 0x3feeff76f2fb5e47ull;
    case 26: return 0x3fef199bdd85529cull;
    case 27: return 0x3fef3720dcef9069ull;
    case 28: return 0x3fef5818dcfba487ull;
    case 29: return 0x3fef7c97337b9b5full;
    case 30: return 0x3fefa4afa2a490daull;
    default: return 0x3fefd0765b6e4540ull;
  }
}

OCTET_CUDA_HD float glibc_expf(float x) {
  const uint32_t bits = bits_of(x);
  const uint32_t abstop = (bits >> 20) & 0x7FFu;
  if (abstop >= 0x42Bu) {  // |x| >= 88 (or inf/NaN)
    if (bits == 0xFF800000u) return 0.0f;
    if (abstop >= 0x7F8u) return is_nan(x) ? quieted(x) : x;  // x + x
    if (x > float_of(0x42B17217u)) return float_of(0x7F800000u);  // overflow
    if (x < float_of(0xC2CFF1B4u)) return 0.0f;                 // underflow
    if (x < float_of(0xC2CE8ECFu)) return float_of(0x00000001u);  // 0x1.4p-75f squared
  }
  const double inv_ln2_n = double_of(0x40471547652b82feull);  // 32 / ln 2
  const double shift = double_of(0x4338000000000000ull);      // 0x1.8p52
  const double c0 = double_of(0x3ebc6af84b912394ull), c1 = double_of(0x3f2ebfce50fac4f3ull),
               c2 = double_of(0x3f962e42ff0c52d6ull);
  const double xd = static_cast<double>(x);
  const double kd_shifted = d_fma(inv_ln2_n, xd, shift);
  const uint64_t ki = double_bits(kd_shifted);
  const double kd = d_sub(kd_shifted, shift);
  const double r = d_fma(inv_ln2_n, xd, -kd);
  const double s = double_of(exp2f_table(static_cast<uint32_t>(ki & 31u)) + (ki << 47));
  const double z = d_fma(c0, r, c1);
  const double r2 = d_mul(r, r);
  double y = d_fma(r, c2, 1.0);
  y = d_fma(z, r2, y);
  return d_to_float(d_mul(y, s));
}

// ---- activations (octet_backend.h, each operation left to right) --------

constexpr float kGeluA = 0.7978845608f;
constexpr float kGeluB = 0.044715f;

OCTET_CUDA_HD float gelu_tanh_of(float x) {
  const float cube = fmul(fmul(fmul(kGeluB, x), x), x);
  return glibc_tanhf(fmul(kGeluA, fadd(x, cube)));
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
OCTET_CUDA_HD float sigmoid(float a) { return fdiv(1.0f, fadd(1.0f, glibc_expf(fneg(a)))); }

// y = (a * s) * b
OCTET_CUDA_HD float swiglu(float a, float b) { return fmul(fmul(sigmoid(a), a), b); }

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
