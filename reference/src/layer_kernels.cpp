// Kernels of the layers (plugin ABI 1.2): LayerNorm/RMSNorm forward and
// backward, GELU/SwiGLU forward and backward, bias gradient, accumulate.
// Plain loops in FP32 in the order octet_backend.h states, every operation
// through octet_math.h: separately rounded, and with defined NaN results
// (the first NaN operand in the order written here, quieted, else the
// default NaN 0xFFC00000; numerics.md "NaN results").
#include <octet/octet_math.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "argument_checks.hpp"
#include "host_errors.hpp"
#include "kernels.hpp"
#include "octet_reference/codecs.hpp"

namespace octet::ref {
namespace {

float at(const octet_matrix_view& v, int64_t r, int64_t c) {
  float value = 0.0f;
  load_element(v.data, v.dtype, element_index(v, r, c), &value);
  return value;
}

void put(const octet_matrix_view& v, int64_t r, int64_t c, float value) {
  store_element(v.data, v.dtype, element_index(v, r, c), value, true);
}

int32_t check_vector(const char* kernel, const char* name, const octet_matrix_view& v, int64_t cols) {
  if (int32_t s = check_matrix(kernel, name, v, DtypeClass::HighPrecision)) return s;
  return check_shape(kernel, name, v, 1, cols, "1 x cols of the input");
}

// The fields of a fused quantize (args->quantize) that quantize() would
// check, named as the caller's argument. Run with the kernel's other checks,
// before anything is written: a call it rejects leaves every output (y, mean,
// rstd, sums, the codes) untouched. quantize->input is not checked (the
// kernel supplies it). Neither code buffer is accepted, as quantize()
// accepts it (an amax and scale_inv only pass).
int32_t check_fused_quantize(const char* kernel, const octet_quantize_args* q) {
  if (q == nullptr) return OCTET_STATUS_SUCCESS;
  if (int32_t s = check_struct_size(kernel, "args->quantize", q->struct_size, sizeof(octet_quantize_args))) return s;
  if (!is_fp8(q->out_dtype))
    return report(OCTET_STATUS_INVALID_ARGUMENT, std::string(kernel) + ": args->quantize->out_dtype is " +
                                                     dtype_name(q->out_dtype) + " (" + std::to_string(q->out_dtype) +
                                                     ") but must be " + kFp8DtypeNames);
  return check_not_null(kernel, "args->quantize->scale", q->scale);
}

// The fused quantize: y (already rounded to its dtype, in `rounded`) through
// quantize_matrix, so the codes equal those of a separate quantize() pass.
// Its arguments were checked by check_fused_quantize, so it cannot fail
// after the norm's outputs are written.
int32_t fused_quantize(const octet_quantize_args* q, int32_t dtype, int64_t rows, int64_t cols,
                       std::vector<unsigned char>& rounded) {
  octet_quantize_args args = *q;
  args.input = octet_matrix_view{rounded.data(), dtype, 0, rows, cols, cols};
  return quantize_matrix(&args);
}

// The aliasing rule of octet_norm_backward_args: dx may be dy itself (the
// same data, dtype and ld: each row is computed from values read before it
// is written, so the result is that of separate buffers); any other shared
// memory between dx and dy, or any between dx and x, would let a write
// change a value still to be read, and is refused naming both arguments.
int32_t check_grad_input_aliasing(const char* kernel, const octet_matrix_view& x, const octet_matrix_view& dy,
                                  const octet_matrix_view& dx) {
  if (octet_matrix_views_overlap(&dx, &x))
    return report(OCTET_STATUS_INVALID_ARGUMENT,
                  std::string(kernel) + ": args->grad_input shares memory with args->input (dx may not overlap x)");
  const bool same = dx.data == dy.data && dx.dtype == dy.dtype && (dx.ld == dy.ld || dx.rows <= 1);
  if (!same && octet_matrix_views_overlap(&dx, &dy))
    return report(OCTET_STATUS_INVALID_ARGUMENT,
                  std::string(kernel) +
                      ": args->grad_input partially overlaps args->grad_output (dx may be dy itself, with the "
                      "same data, dtype and ld, or not overlap it)");
  return OCTET_STATUS_SUCCESS;
}

// The FP32 operations, named short so that each expression below reads as
// octet_backend.h writes it (operands in the same order, left to right).
constexpr auto& add = octet_math_add;
constexpr auto& sub = octet_math_sub;
constexpr auto& mul = octet_math_mul;
constexpr auto& div = octet_math_div;

// tanh(0.7978845608 * (x + 0.044715 * x * x * x))
float gelu_tanh(float x) {
  const float cube = mul(mul(mul(0.044715f, x), x), x);
  return octet_math_tanhf(mul(0.7978845608f, add(x, cube)));
}

// 0.5 * x * (1 + t)
float gelu(float x) { return mul(mul(0.5f, x), add(1.0f, gelu_tanh(x))); }

// 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * 0.7978845608 * (1 + 3 * 0.044715 * x * x)
float gelu_derivative(float x) {
  const float t = gelu_tanh(x);
  const float poly = add(1.0f, mul(mul(3.0f * 0.044715f, x), x));  // 3 * 0.044715: one FP32 constant
  return add(mul(0.5f, add(1.0f, t)), mul(mul(mul(mul(0.5f, x), sub(1.0f, mul(t, t))), 0.7978845608f), poly));
}

// 1 / (1 + e^-a)
float sigmoid(float a) { return div(1.0f, add(1.0f, octet_math_expf(-a))); }

}  // namespace

int32_t norm_forward(const octet_norm_forward_args* args) {
  const char* kernel = "norm_forward";
  if (int32_t s = check_not_null(kernel, "args", args)) return s;
  if (int32_t s = check_struct_size(kernel, "args", args->struct_size, sizeof(octet_norm_forward_args))) return s;
  if (args->kind != OCTET_NORM_LAYERNORM && args->kind != OCTET_NORM_RMSNORM)
    return report(OCTET_STATUS_INVALID_ARGUMENT,
                  std::string(kernel) + ": args->kind (" + std::to_string(args->kind) + ") is not an OCTET_NORM_*");
  const octet_matrix_view& x = args->input;
  if (int32_t s = check_matrix(kernel, "args->input", x, DtypeClass::HighPrecision)) return s;
  const int64_t rows = x.rows, cols = x.cols;
  if (int32_t s = check_vector(kernel, "args->gamma", args->gamma, cols)) return s;
  const bool layernorm = args->kind == OCTET_NORM_LAYERNORM;
  if (layernorm && args->beta.data != nullptr)
    if (int32_t s = check_vector(kernel, "args->beta", args->beta, cols)) return s;
  if (!is_high_precision(args->output.dtype))
    return report(OCTET_STATUS_INVALID_ARGUMENT, std::string(kernel) + ": args->output.dtype must be fp32, bf16 or fp16");
  if (args->output.data != nullptr) {
    if (int32_t s = check_matrix(kernel, "args->output", args->output, DtypeClass::HighPrecision)) return s;
    if (int32_t s = check_shape(kernel, "args->output", args->output, rows, cols, "same rows x cols as input")) return s;
  }
  if (int32_t s = check_fused_quantize(kernel, args->quantize)) return s;
  const size_t esize = dtype_size(args->output.dtype);
  std::vector<unsigned char> rounded;
  if (args->quantize != nullptr) rounded = host_vector<unsigned char>(size_t(rows * cols) * esize);
  const octet_matrix_view dense{rounded.data(), args->output.dtype, 0, rows, cols, cols};
  const float n = float(cols);
  for (int64_t r = 0; r < rows; ++r) {
    float mean = 0.0f, rstd = 0.0f;
    if (layernorm) {
      float sum = 0.0f;
      for (int64_t c = 0; c < cols; ++c) sum = add(sum, at(x, r, c));
      mean = div(sum, n);
      float var = 0.0f;
      for (int64_t c = 0; c < cols; ++c) {
        const float d = sub(at(x, r, c), mean);
        var = add(var, mul(d, d));
      }
      rstd = div(1.0f, octet_math_sqrtf(add(div(var, n), args->epsilon)));
    } else {
      float ms = 0.0f;
      for (int64_t c = 0; c < cols; ++c) {
        const float v = at(x, r, c);
        ms = add(ms, mul(v, v));
      }
      rstd = div(1.0f, octet_math_sqrtf(add(div(ms, n), args->epsilon)));
    }
    for (int64_t c = 0; c < cols; ++c) {
      float y = layernorm ? mul(mul(sub(at(x, r, c), mean), rstd), at(args->gamma, 0, c))
                          : mul(mul(at(x, r, c), rstd), at(args->gamma, 0, c));
      if (layernorm && args->beta.data != nullptr) y = add(y, at(args->beta, 0, c));
      if (args->output.data != nullptr) put(args->output, r, c, y);
      if (!rounded.empty()) put(dense, r, c, y);
    }
    if (args->mean_out != nullptr) args->mean_out[r] = mean;
    if (args->rstd_out != nullptr) args->rstd_out[r] = rstd;
  }
  if (args->quantize != nullptr) return fused_quantize(args->quantize, args->output.dtype, rows, cols, rounded);
  return OCTET_STATUS_SUCCESS;
}

int32_t norm_backward(const octet_norm_backward_args* args) {
  const char* kernel = "norm_backward";
  if (int32_t s = check_not_null(kernel, "args", args)) return s;
  if (int32_t s = check_struct_size(kernel, "args", args->struct_size, sizeof(octet_norm_backward_args))) return s;
  if (args->kind != OCTET_NORM_LAYERNORM && args->kind != OCTET_NORM_RMSNORM)
    return report(OCTET_STATUS_INVALID_ARGUMENT,
                  std::string(kernel) + ": args->kind (" + std::to_string(args->kind) + ") is not an OCTET_NORM_*");
  const octet_matrix_view& x = args->input;
  const octet_matrix_view& dy = args->grad_output;
  const octet_matrix_view& dx = args->grad_input;
  if (int32_t s = check_matrix(kernel, "args->input", x, DtypeClass::HighPrecision)) return s;
  const int64_t rows = x.rows, cols = x.cols;
  if (int32_t s = check_matrix(kernel, "args->grad_output", dy, DtypeClass::HighPrecision)) return s;
  if (int32_t s = check_shape(kernel, "args->grad_output", dy, rows, cols, "same rows x cols as input")) return s;
  if (int32_t s = check_matrix(kernel, "args->grad_input", dx, DtypeClass::HighPrecision)) return s;
  if (int32_t s = check_shape(kernel, "args->grad_input", dx, rows, cols, "same rows x cols as input")) return s;
  if (int32_t s = check_grad_input_aliasing(kernel, x, dy, dx)) return s;
  if (int32_t s = check_vector(kernel, "args->gamma", args->gamma, cols)) return s;
  const bool layernorm = args->kind == OCTET_NORM_LAYERNORM;
  if (int32_t s = check_not_null(kernel, "args->rstd", args->rstd)) return s;
  if (layernorm)
    if (int32_t s = check_not_null(kernel, "args->mean", args->mean)) return s;
  if (int32_t s = check_not_null(kernel, "args->dgamma_out", args->dgamma_out)) return s;
  const size_t width = static_cast<size_t>(cols);
  // dyr holds the row of dy: dx may be dy itself, so dy's values are read
  // (all of the row) before that row of dx is written.
  std::vector<float> dgamma = host_vector<float>(width), dbeta = host_vector<float>(width),
                     xhat = host_vector<float>(width), g = host_vector<float>(width), dyr = host_vector<float>(width);
  const float n = float(cols);
  for (int64_t r = 0; r < rows; ++r) {
    const float rstd = args->rstd[r];
    const float mean = layernorm ? args->mean[r] : 0.0f;
    float sum_g = 0.0f, sum_gx = 0.0f;
    for (int64_t c = 0; c < cols; ++c) {
      xhat[size_t(c)] = layernorm ? mul(sub(at(x, r, c), mean), rstd) : mul(at(x, r, c), rstd);
      dyr[size_t(c)] = at(dy, r, c);
      g[size_t(c)] = mul(dyr[size_t(c)], at(args->gamma, 0, c));
      sum_g = add(sum_g, g[size_t(c)]);
      sum_gx = add(sum_gx, mul(g[size_t(c)], xhat[size_t(c)]));
    }
    const float mean_g = div(sum_g, n), mean_gx = div(sum_gx, n);
    for (int64_t c = 0; c < cols; ++c) {
      const float inner = layernorm ? sub(sub(g[size_t(c)], mean_g), mul(xhat[size_t(c)], mean_gx))
                                    : sub(g[size_t(c)], mul(xhat[size_t(c)], mean_gx));
      put(dx, r, c, mul(rstd, inner));
      dgamma[size_t(c)] = add(dgamma[size_t(c)], mul(dyr[size_t(c)], xhat[size_t(c)]));
      dbeta[size_t(c)] = add(dbeta[size_t(c)], dyr[size_t(c)]);
    }
  }
  for (int64_t c = 0; c < cols; ++c) {
    args->dgamma_out[c] = dgamma[size_t(c)];
    if (args->dbeta_out != nullptr) args->dbeta_out[c] = dbeta[size_t(c)];
  }
  return OCTET_STATUS_SUCCESS;
}

int32_t activation(const octet_activation_args* args, bool backward) {
  const char* kernel = backward ? "activation_backward" : "activation_forward";
  if (int32_t s = check_not_null(kernel, "args", args)) return s;
  if (int32_t s = check_struct_size(kernel, "args", args->struct_size, sizeof(octet_activation_args))) return s;
  if (args->kind != OCTET_ACTIVATION_GELU && args->kind != OCTET_ACTIVATION_SWIGLU)
    return report(OCTET_STATUS_INVALID_ARGUMENT, std::string(kernel) + ": args->kind (" +
                                                     std::to_string(args->kind) + ") is not an OCTET_ACTIVATION_*");
  const octet_matrix_view& x = args->input;
  if (int32_t s = check_matrix(kernel, "args->input", x, DtypeClass::HighPrecision)) return s;
  const bool swiglu = args->kind == OCTET_ACTIVATION_SWIGLU;
  if (swiglu && x.cols % 2 != 0)
    return report(OCTET_STATUS_INVALID_ARGUMENT, std::string(kernel) + ": SwiGLU needs an even number of input columns");
  const int64_t rows = x.rows, n = swiglu ? x.cols / 2 : x.cols;
  if (!backward) {
    if (int32_t s = check_matrix(kernel, "args->output", args->output, DtypeClass::HighPrecision)) return s;
    if (int32_t s = check_shape(kernel, "args->output", args->output, rows, n, "rows x n")) return s;
    if (octet_matrix_views_overlap(&args->output, &x))
      return report(OCTET_STATUS_INVALID_ARGUMENT,
                    std::string(kernel) + ": args->output shares memory with args->input (an activation's outputs "
                                          "may not overlap its inputs)");
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < n; ++c) {
        const float a = at(x, r, c);
        put(args->output, r, c, swiglu ? mul(mul(a, sigmoid(a)), at(x, r, c + n)) : gelu(a));
      }
    return OCTET_STATUS_SUCCESS;
  }
  if (int32_t s = check_matrix(kernel, "args->grad_output", args->grad_output, DtypeClass::HighPrecision)) return s;
  if (int32_t s = check_shape(kernel, "args->grad_output", args->grad_output, rows, n, "rows x n")) return s;
  if (int32_t s = check_matrix(kernel, "args->grad_input", args->grad_input, DtypeClass::HighPrecision)) return s;
  if (int32_t s = check_shape(kernel, "args->grad_input", args->grad_input, rows, x.cols, "same as input")) return s;
  for (const auto& [other, name] : {std::pair<const octet_matrix_view*, const char*>{&x, "args->input"},
                                    {&args->grad_output, "args->grad_output"}}) {
    if (octet_matrix_views_overlap(&args->grad_input, other))
      return report(OCTET_STATUS_INVALID_ARGUMENT, std::string(kernel) + ": args->grad_input shares memory with " +
                                                       name + " (an activation's outputs may not overlap its inputs)");
  }
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < n; ++c) {
      const float dy = at(args->grad_output, r, c), a = at(x, r, c);
      if (!swiglu) {
        put(args->grad_input, r, c, mul(dy, gelu_derivative(a)));
        continue;
      }
      const float b = at(x, r, c + n), s = sigmoid(a);
      put(args->grad_input, r, c, mul(mul(dy, b), mul(s, add(1.0f, mul(a, sub(1.0f, s))))));
      put(args->grad_input, r, c + n, mul(dy, mul(a, s)));
    }
  return OCTET_STATUS_SUCCESS;
}

int32_t bias_gradient(const octet_bias_gradient_args* args) {
  const char* kernel = "bias_gradient";
  if (int32_t s = check_not_null(kernel, "args", args)) return s;
  if (int32_t s = check_struct_size(kernel, "args", args->struct_size, sizeof(octet_bias_gradient_args))) return s;
  const octet_matrix_view& dy = args->grad_output;
  if (int32_t s = check_matrix(kernel, "args->grad_output", dy, DtypeClass::HighPrecision)) return s;
  if (int32_t s = check_not_null(kernel, "args->sums_out", args->sums_out)) return s;
  if (int32_t s = check_fused_quantize(kernel, args->quantize)) return s;
  std::vector<float> sums = host_vector<float>(size_t(dy.cols));
  for (int64_t r = 0; r < dy.rows; ++r)
    for (int64_t c = 0; c < dy.cols; ++c) sums[size_t(c)] = add(sums[size_t(c)], at(dy, r, c));
  if (args->quantize != nullptr) {
    octet_quantize_args q = *args->quantize;
    q.input = dy;
    if (int32_t s = quantize_matrix(&q)) return s;
  }
  for (int64_t c = 0; c < dy.cols; ++c) args->sums_out[c] = sums[size_t(c)];
  return OCTET_STATUS_SUCCESS;
}

int32_t accumulate_matrix(const octet_matrix_view* x, const octet_matrix_view* y, int32_t accumulate) {
  const char* kernel = "accumulate";
  if (int32_t s = check_not_null(kernel, "x", x)) return s;
  if (int32_t s = check_not_null(kernel, "y", y)) return s;
  if (int32_t s = check_matrix(kernel, "x", *x, DtypeClass::HighPrecision)) return s;
  if (int32_t s = check_matrix(kernel, "y", *y, DtypeClass::HighPrecision)) return s;
  if (int32_t s = check_shape(kernel, "y", *y, x->rows, x->cols, "same rows x cols as x")) return s;
  for (int64_t r = 0; r < x->rows; ++r)
    for (int64_t c = 0; c < x->cols; ++c) put(*y, r, c, accumulate ? add(at(*x, r, c), at(*y, r, c)) : at(*x, r, c));
  return OCTET_STATUS_SUCCESS;
}

}  // namespace octet::ref
