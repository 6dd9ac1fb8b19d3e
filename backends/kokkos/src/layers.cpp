// The layer kernels of plugin ABI 1.2 (octet_backend.h): LayerNorm/RMSNorm
// forward and backward, GELU/SwiGLU forward and backward, bias gradient and
// accumulate, in FP32 through octet_math.h in the reference's order (row
// sums left to right, column sums over rows in order), so every result is
// the reference's bits. Rows go to Kokkos teams: one thread of the team
// forms the row's sums (their order is part of the contract), the team
// writes the row.
#include <string>
#include <utility>

#include "views.hpp"

namespace octet_kokkos {
namespace {

int32_t check_vector(const char* kernel, const char* name, const octet_matrix_view& v, int64_t cols) {
  if (int32_t s = check_matrix(kernel, name, v, DtypeClass::HighPrecision)) return s;
  return check_shape(kernel, name, v, 1, cols, "1 x cols of the input");
}

int32_t check_fused_quantize(const char* kernel, const octet_quantize_args* q) {
  if (q == nullptr) return OCTET_STATUS_SUCCESS;
  if (int32_t s = check_struct_size(kernel, "args->quantize", q->struct_size, sizeof(octet_quantize_args))) return s;
  if (!is_fp8(q->out_dtype))
    return report(OCTET_STATUS_INVALID_ARGUMENT, std::string(kernel) + ": args->quantize->out_dtype is " +
                                                     dtype_name(q->out_dtype) + " (" + std::to_string(q->out_dtype) +
                                                     ") but must be " + kFp8DtypeNames);
  return check_not_null(kernel, "args->quantize->scale", q->scale);
}

// tanh(0.7978845608 * (x + 0.044715 * x * x * x))
KOKKOS_INLINE_FUNCTION float gelu_tanh(float x) {
  const float cube = mul(mul(mul(0.044715f, x), x), x);
  return tanh_of(mul(0.7978845608f, add(x, cube)));
}
KOKKOS_INLINE_FUNCTION float gelu(float x) { return mul(mul(0.5f, x), add(1.0f, gelu_tanh(x))); }
KOKKOS_INLINE_FUNCTION float gelu_derivative(float x) {
  const float t = gelu_tanh(x);
  const float poly = add(1.0f, mul(mul(3.0f * 0.044715f, x), x));
  return add(mul(0.5f, add(1.0f, t)), mul(mul(mul(mul(0.5f, x), sub(1.0f, mul(t, t))), 0.7978845608f), poly));
}
KOKKOS_INLINE_FUNCTION float sigmoid(float a) { return div(1.0f, add(1.0f, exp_of(-a))); }

// Two FP32 values of a row (mean and rstd, or the two means of the
// backward) packed into one integer: what Kokkos 3's single() broadcasts to
// the team (a plain scalar, as its volatile broadcast needs).
KOKKOS_INLINE_FUNCTION uint64_t pack(float first, float second) {
  return (static_cast<uint64_t>(bits_of(first)) << 32) | bits_of(second);
}
KOKKOS_INLINE_FUNCTION float first_of(uint64_t p) { return float_of(static_cast<uint32_t>(p >> 32)); }
KOKKOS_INLINE_FUNCTION float second_of(uint64_t p) { return float_of(static_cast<uint32_t>(p)); }

}  // namespace

int32_t norm_forward_kernel(const octet_norm_forward_args* args) {
  const char* kernel = "norm_forward";
  if (int32_t s = check_not_null(kernel, "args", args)) return s;
  if (int32_t s = check_struct_size(kernel, "args", args->struct_size, sizeof(octet_norm_forward_args))) return s;
  if (args->kind != OCTET_NORM_LAYERNORM && args->kind != OCTET_NORM_RMSNORM)
    return report(OCTET_STATUS_INVALID_ARGUMENT,
                  std::string(kernel) + ": args->kind (" + std::to_string(args->kind) + ") is not an OCTET_NORM_*");
  const octet_matrix_view& xv = args->input;
  if (int32_t s = check_matrix(kernel, "args->input", xv, DtypeClass::HighPrecision)) return s;
  const int64_t rows = xv.rows, cols = xv.cols;
  if (int32_t s = check_vector(kernel, "args->gamma", args->gamma, cols)) return s;
  const bool layernorm = args->kind == OCTET_NORM_LAYERNORM;
  if (layernorm && args->beta.data != nullptr)
    if (int32_t s = check_vector(kernel, "args->beta", args->beta, cols)) return s;
  if (!is_high_precision(args->output.dtype))
    return report(OCTET_STATUS_INVALID_ARGUMENT,
                  std::string(kernel) + ": args->output.dtype must be fp32, bf16 or fp16");
  if (args->output.data != nullptr) {
    if (int32_t s = check_matrix(kernel, "args->output", args->output, DtypeClass::HighPrecision)) return s;
    if (int32_t s = check_shape(kernel, "args->output", args->output, rows, cols, "same rows x cols as input"))
      return s;
  }
  if (int32_t s = check_fused_quantize(kernel, args->quantize)) return s;

  const size_t esize = dtype_size(args->output.dtype);
  const bool fused = args->quantize != nullptr;
  // The fused quantize reads y as rounded to output.dtype: a dense copy.
  using Bytes = Kokkos::View<unsigned char*, MemSpace>;
  const size_t rounded_bytes = fused ? static_cast<size_t>(rows * cols) * esize : 0;
  Bytes rounded = allocate_view(rounded_bytes, [&] {
    return Bytes(Kokkos::view_alloc("octet_kokkos::norm_rounded", Kokkos::WithoutInitializing), rounded_bytes);
  });
  const octet_matrix_view dense_view{rounded.data(), args->output.dtype, 0, rows, cols, cols};
  const Mat x(xv), gamma(args->gamma), out(args->output), dense(dense_view);
  const bool has_beta = layernorm && args->beta.data != nullptr;
  const Mat beta = has_beta ? Mat(args->beta) : Mat();
  const bool write_out = args->output.data != nullptr;
  const DeviceView<float> mean_out(args->mean_out, args->mean_out != nullptr ? static_cast<size_t>(rows) : 0);
  const DeviceView<float> rstd_out(args->rstd_out, args->rstd_out != nullptr ? static_cast<size_t>(rows) : 0);
  const bool write_mean = args->mean_out != nullptr, write_rstd = args->rstd_out != nullptr;
  const float epsilon = args->epsilon;
  const float n = float(cols);
  if (rows > 0) {
    Kokkos::parallel_for(
        "octet_kokkos::norm_forward", Team(static_cast<int>(rows), Kokkos::AUTO), KOKKOS_LAMBDA(const Member& team) {
          const int64_t r = team.league_rank();
          uint64_t st = 0;  // mean, rstd
          Kokkos::single(
              Kokkos::PerTeam(team),
              [&](uint64_t& out_stats) {
                float mean = 0.0f, rstd;
                if (layernorm) {
                  float sum = 0.0f;
                  for (int64_t c = 0; c < cols; ++c) sum = add(sum, x.at(r, c));
                  mean = div(sum, n);
                  float var = 0.0f;
                  for (int64_t c = 0; c < cols; ++c) {
                    const float d = sub(x.at(r, c), mean);
                    var = add(var, mul(d, d));
                  }
                  rstd = div(1.0f, sqrt_of(add(div(var, n), epsilon)));
                } else {
                  float ms = 0.0f;
                  for (int64_t c = 0; c < cols; ++c) {
                    const float v = x.at(r, c);
                    ms = add(ms, mul(v, v));
                  }
                  rstd = div(1.0f, sqrt_of(add(div(ms, n), epsilon)));
                }
                out_stats = pack(mean, rstd);
                if (write_mean) mean_out(r) = mean;
                if (write_rstd) rstd_out(r) = rstd;
              },
              st);
          team.team_barrier();
          const float mean = first_of(st), rstd = second_of(st);
          Kokkos::parallel_for(Kokkos::TeamThreadRange(team, cols), [&](int64_t c) {
            float y = layernorm ? mul(mul(sub(x.at(r, c), mean), rstd), gamma.at(0, c))
                                : mul(mul(x.at(r, c), rstd), gamma.at(0, c));
            if (has_beta) y = add(y, beta.at(0, c));
            if (write_out) out.put(r, c, y, true);
            if (fused) dense.put(r, c, y, true);
          });
        });
    Kokkos::fence();
  }
  if (fused) {
    octet_quantize_args q = *args->quantize;
    q.input = dense_view;
    quantize_checked(q, nullptr);
  }
  return OCTET_STATUS_SUCCESS;
}

int32_t norm_backward_kernel(const octet_norm_backward_args* args) {
  const char* kernel = "norm_backward";
  if (int32_t s = check_not_null(kernel, "args", args)) return s;
  if (int32_t s = check_struct_size(kernel, "args", args->struct_size, sizeof(octet_norm_backward_args))) return s;
  if (args->kind != OCTET_NORM_LAYERNORM && args->kind != OCTET_NORM_RMSNORM)
    return report(OCTET_STATUS_INVALID_ARGUMENT,
                  std::string(kernel) + ": args->kind (" + std::to_string(args->kind) + ") is not an OCTET_NORM_*");
  const octet_matrix_view& xv = args->input;
  const octet_matrix_view& dyv = args->grad_output;
  const octet_matrix_view& dxv = args->grad_input;
  if (int32_t s = check_matrix(kernel, "args->input", xv, DtypeClass::HighPrecision)) return s;
  const int64_t rows = xv.rows, cols = xv.cols;
  if (int32_t s = check_matrix(kernel, "args->grad_output", dyv, DtypeClass::HighPrecision)) return s;
  if (int32_t s = check_shape(kernel, "args->grad_output", dyv, rows, cols, "same rows x cols as input")) return s;
  if (int32_t s = check_matrix(kernel, "args->grad_input", dxv, DtypeClass::HighPrecision)) return s;
  if (int32_t s = check_shape(kernel, "args->grad_input", dxv, rows, cols, "same rows x cols as input")) return s;
  if (octet_matrix_views_overlap(&dxv, &xv))
    return report(OCTET_STATUS_INVALID_ARGUMENT,
                  std::string(kernel) + ": args->grad_input shares memory with args->input (dx may not overlap x)");
  const bool same = dxv.data == dyv.data && dxv.dtype == dyv.dtype && (dxv.ld == dyv.ld || dxv.rows <= 1);
  if (!same && octet_matrix_views_overlap(&dxv, &dyv))
    return report(OCTET_STATUS_INVALID_ARGUMENT,
                  std::string(kernel) +
                      ": args->grad_input partially overlaps args->grad_output (dx may be dy itself, with the "
                      "same data, dtype and ld, or not overlap it)");
  if (int32_t s = check_vector(kernel, "args->gamma", args->gamma, cols)) return s;
  const bool layernorm = args->kind == OCTET_NORM_LAYERNORM;
  if (int32_t s = check_not_null(kernel, "args->rstd", args->rstd)) return s;
  if (layernorm)
    if (int32_t s = check_not_null(kernel, "args->mean", args->mean)) return s;
  if (int32_t s = check_not_null(kernel, "args->dgamma_out", args->dgamma_out)) return s;

  const Mat x(xv), dy(dyv), dx(dxv), gamma(args->gamma);
  const DeviceView<float> rstd(const_cast<float*>(args->rstd), static_cast<size_t>(rows));
  const DeviceView<float> mean(layernorm ? const_cast<float*>(args->mean) : nullptr, layernorm ? static_cast<size_t>(rows) : 0);
  const DeviceView<float> dgamma(args->dgamma_out, static_cast<size_t>(cols));
  const bool has_dbeta = args->dbeta_out != nullptr;
  const DeviceView<float> dbeta(args->dbeta_out, has_dbeta ? static_cast<size_t>(cols) : 0);
  const float n = float(cols);
  if (cols == 0) return OCTET_STATUS_SUCCESS;
  // 1. dgamma and dbeta: per column, rows in order, from all of dy before any
  //    of dx is written (dx may be dy itself).
  Kokkos::parallel_for(
      "octet_kokkos::norm_backward_dgamma", Range(0, cols), KOKKOS_LAMBDA(int64_t c) {
        float dg = 0.0f, db = 0.0f;
        for (int64_t r = 0; r < rows; ++r) {
          const float xhat = layernorm ? mul(sub(x.at(r, c), mean(r)), rstd(r)) : mul(x.at(r, c), rstd(r));
          const float d = dy.at(r, c);
          dg = add(dg, mul(d, xhat));
          db = add(db, d);
        }
        dgamma(c) = dg;
        if (has_dbeta) dbeta(c) = db;
      });
  Kokkos::fence();
  if (rows == 0) return OCTET_STATUS_SUCCESS;
  // 2. dx: per row, the two means first (one thread, left to right), then the
  //    row, each element read before it is written.
  Kokkos::parallel_for(
      "octet_kokkos::norm_backward_dx", Team(static_cast<int>(rows), Kokkos::AUTO), KOKKOS_LAMBDA(const Member& team) {
        const int64_t r = team.league_rank();
        const float rs = rstd(r), mu = layernorm ? mean(r) : 0.0f;
        uint64_t means = 0;
        Kokkos::single(
            Kokkos::PerTeam(team),
            [&](uint64_t& m) {
              float sum_g = 0.0f, sum_gx = 0.0f;
              for (int64_t c = 0; c < cols; ++c) {
                const float xhat = layernorm ? mul(sub(x.at(r, c), mu), rs) : mul(x.at(r, c), rs);
                const float g = mul(dy.at(r, c), gamma.at(0, c));
                sum_g = add(sum_g, g);
                sum_gx = add(sum_gx, mul(g, xhat));
              }
              m = pack(div(sum_g, n), div(sum_gx, n));
            },
            means);
        team.team_barrier();
        const float mean_g = first_of(means), mean_gx = second_of(means);
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, cols), [&](int64_t c) {
          const float xhat = layernorm ? mul(sub(x.at(r, c), mu), rs) : mul(x.at(r, c), rs);
          const float g = mul(dy.at(r, c), gamma.at(0, c));
          const float inner = layernorm ? sub(sub(g, mean_g), mul(xhat, mean_gx)) : sub(g, mul(xhat, mean_gx));
          dx.put(r, c, mul(rs, inner), true);
        });
      });
  Kokkos::fence();
  return OCTET_STATUS_SUCCESS;
}

int32_t activation_kernel(const octet_activation_args* args, bool backward) {
  const char* kernel = backward ? "activation_backward" : "activation_forward";
  if (int32_t s = check_not_null(kernel, "args", args)) return s;
  if (int32_t s = check_struct_size(kernel, "args", args->struct_size, sizeof(octet_activation_args))) return s;
  if (args->kind != OCTET_ACTIVATION_GELU && args->kind != OCTET_ACTIVATION_SWIGLU)
    return report(OCTET_STATUS_INVALID_ARGUMENT, std::string(kernel) + ": args->kind (" + std::to_string(args->kind) +
                                                     ") is not an OCTET_ACTIVATION_*");
  const octet_matrix_view& xv = args->input;
  if (int32_t s = check_matrix(kernel, "args->input", xv, DtypeClass::HighPrecision)) return s;
  const bool swiglu = args->kind == OCTET_ACTIVATION_SWIGLU;
  if (swiglu && xv.cols % 2 != 0)
    return report(OCTET_STATUS_INVALID_ARGUMENT,
                  std::string(kernel) + ": SwiGLU needs an even number of input columns");
  const int64_t rows = xv.rows, n = swiglu ? xv.cols / 2 : xv.cols;
  const Mat x(xv);
  if (!backward) {
    if (int32_t s = check_matrix(kernel, "args->output", args->output, DtypeClass::HighPrecision)) return s;
    if (int32_t s = check_shape(kernel, "args->output", args->output, rows, n, "rows x n")) return s;
    if (octet_matrix_views_overlap(&args->output, &xv))
      return report(OCTET_STATUS_INVALID_ARGUMENT,
                    std::string(kernel) + ": args->output shares memory with args->input (an activation's outputs "
                                          "may not overlap its inputs)");
    if (rows == 0 || n == 0) return OCTET_STATUS_SUCCESS;
    const Mat y(args->output);
    Kokkos::parallel_for(
        "octet_kokkos::activation_forward", Range2({0, 0}, {rows, n}), KOKKOS_LAMBDA(int64_t r, int64_t c) {
          const float a = x.at(r, c);
          y.put(r, c, swiglu ? mul(mul(a, sigmoid(a)), x.at(r, c + n)) : gelu(a), true);
        });
    Kokkos::fence();
    return OCTET_STATUS_SUCCESS;
  }
  if (int32_t s = check_matrix(kernel, "args->grad_output", args->grad_output, DtypeClass::HighPrecision)) return s;
  if (int32_t s = check_shape(kernel, "args->grad_output", args->grad_output, rows, n, "rows x n")) return s;
  if (int32_t s = check_matrix(kernel, "args->grad_input", args->grad_input, DtypeClass::HighPrecision)) return s;
  if (int32_t s = check_shape(kernel, "args->grad_input", args->grad_input, rows, xv.cols, "same as input")) return s;
  for (const auto& [other, name] : {std::pair<const octet_matrix_view*, const char*>{&xv, "args->input"},
                                    {&args->grad_output, "args->grad_output"}}) {
    if (octet_matrix_views_overlap(&args->grad_input, other))
      return report(OCTET_STATUS_INVALID_ARGUMENT, std::string(kernel) + ": args->grad_input shares memory with " +
                                                       name + " (an activation's outputs may not overlap its inputs)");
  }
  if (rows == 0 || n == 0) return OCTET_STATUS_SUCCESS;
  const Mat dyv(args->grad_output), dxv(args->grad_input);
  Kokkos::parallel_for(
      "octet_kokkos::activation_backward", Range2({0, 0}, {rows, n}), KOKKOS_LAMBDA(int64_t r, int64_t c) {
        const float dy = dyv.at(r, c), a = x.at(r, c);
        if (!swiglu) {
          dxv.put(r, c, mul(dy, gelu_derivative(a)), true);
          return;
        }
        const float b = x.at(r, c + n), s = sigmoid(a);
        dxv.put(r, c, mul(mul(dy, b), mul(s, add(1.0f, mul(a, sub(1.0f, s))))), true);
        dxv.put(r, c + n, mul(dy, mul(a, s)), true);
      });
  Kokkos::fence();
  return OCTET_STATUS_SUCCESS;
}

int32_t bias_gradient_kernel(const octet_bias_gradient_args* args) {
  const char* kernel = "bias_gradient";
  if (int32_t s = check_not_null(kernel, "args", args)) return s;
  if (int32_t s = check_struct_size(kernel, "args", args->struct_size, sizeof(octet_bias_gradient_args))) return s;
  const octet_matrix_view& dyv = args->grad_output;
  if (int32_t s = check_matrix(kernel, "args->grad_output", dyv, DtypeClass::HighPrecision)) return s;
  if (int32_t s = check_not_null(kernel, "args->sums_out", args->sums_out)) return s;
  if (int32_t s = check_fused_quantize(kernel, args->quantize)) return s;
  const Mat dy(dyv);
  const int64_t rows = dyv.rows, cols = dyv.cols;
  using Floats = Kokkos::View<float*, MemSpace>;
  Floats sums = allocate_view(size_t(cols) * sizeof(float),
                              [&] { return Floats("octet_kokkos::bias_sums", static_cast<size_t>(cols)); });
  if (cols > 0) {
    Kokkos::parallel_for(
        "octet_kokkos::bias_gradient", Range(0, cols), KOKKOS_LAMBDA(int64_t c) {
          float sum = 0.0f;
          for (int64_t r = 0; r < rows; ++r) sum = add(sum, dy.at(r, c));
          sums(c) = sum;
        });
    Kokkos::fence();
  }
  if (args->quantize != nullptr) {
    octet_quantize_args q = *args->quantize;
    q.input = dyv;
    quantize_checked(q, nullptr);
  }
  if (cols > 0) Kokkos::deep_copy(DeviceView<float>(args->sums_out, static_cast<size_t>(cols)), sums);
  return OCTET_STATUS_SUCCESS;
}

int32_t accumulate_kernel(const octet_matrix_view* x, const octet_matrix_view* y, int32_t accumulate) {
  const char* kernel = "accumulate";
  if (int32_t s = check_not_null(kernel, "x", x)) return s;
  if (int32_t s = check_not_null(kernel, "y", y)) return s;
  if (int32_t s = check_matrix(kernel, "x", *x, DtypeClass::HighPrecision)) return s;
  if (int32_t s = check_matrix(kernel, "y", *y, DtypeClass::HighPrecision)) return s;
  if (int32_t s = check_shape(kernel, "y", *y, x->rows, x->cols, "same rows x cols as x")) return s;
  const Mat xm(*x), ym(*y);
  if (xm.empty()) return OCTET_STATUS_SUCCESS;
  const bool acc = accumulate != 0;
  Kokkos::parallel_for(
      "octet_kokkos::accumulate", Range2({0, 0}, {xm.rows, xm.cols}), KOKKOS_LAMBDA(int64_t r, int64_t c) {
        ym.put(r, c, acc ? add(xm.at(r, c), ym.at(r, c)) : xm.at(r, c), true);
      });
  Kokkos::fence();
  return OCTET_STATUS_SUCCESS;
}

}  // namespace octet_kokkos
