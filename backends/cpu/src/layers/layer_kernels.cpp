// Plugin ABI 1.2 kernels for layers: LayerNorm/RMSNorm forward and backward,
// GELU/SwiGLU forward and backward, bias gradient, accumulate.
//
// Bit-identical with the reference: every FP32 operation is done in the order
// octet_backend.h states (and -ffp-contract=off keeps each multiply and add
// separately rounded). The row sums of the norms are sequential, left to
// right, as the header and the reference order them; the column sums (dgamma,
// dbeta, bias gradient) run over rows in order, one accumulator per column, so
// they vectorise across columns and parallelise over column blocks without
// changing a bit. The activations' math is elementwise/activation_rows.hpp's (AVX-512 or
// portable, both the reference's bits). Rows are shared among OpenMP
// threads; every buffer is allocated before a parallel region (no exception
// inside one).
#include "layers/layer_kernels.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "dispatch/parallel_policy.hpp"
#include "elementwise/activation_rows.hpp"
#include "elementwise/row_kernels.hpp"
#include "plugin/checks.hpp"
#include "plugin/errors.hpp"
#include "plugin/kernels.hpp"

namespace octet_cpu {
namespace {

constexpr int64_t kColumnBlock = 512;      // columns per block of the column sums

// The FP32 values of `n` elements of row r from column c: the data itself
// when it is FP32, else widened (exactly) into `buffer`.
const float* values(const RowKernels& k, const octet_matrix_view& v, int64_t r, int64_t c,
                    int64_t n, float* buffer) {
  if (v.dtype == OCTET_DTYPE_FP32) return reinterpret_cast<const float*>(element_ptr(v, r, c));
  k.widen(element_ptr(v, r, c), v.dtype, n, buffer);
  return buffer;
}

std::vector<float> widen_vector(const RowKernels& k, const octet_matrix_view& v, int64_t n) {
  std::vector<float> out(static_cast<std::size_t>(n));
  if (n > 0) k.widen(v.data, v.dtype, n, out.data());
  return out;
}

int32_t require_vector(const char* kernel, const char* name, const octet_matrix_view& v,
                       int64_t cols) {
  if (int32_t s = require_matrix(kernel, name, v, Accept::HighPrecision)) return s;
  return require_shape(kernel, name, v, 1, cols, "1 x cols of the input");
}

// The fields of a fused quantize (args->quantize) that quantize_kernel
// would check, named as the caller's argument. Run with the kernel's other
// checks, before anything is written: a call it rejects leaves every output
// (y, mean, rstd, sums, the codes) untouched, as the reference does.
// quantize->input is not checked (the kernel supplies it); neither code
// buffer is accepted, as quantize() accepts it (amax and scale_inv only).
int32_t require_fused_quantize(const char* kernel, const octet_quantize_args* q) {
  if (q == nullptr) return OCTET_STATUS_SUCCESS;
  if (int32_t s = require_struct_size(kernel, "args->quantize", q->struct_size,
                                      sizeof(octet_quantize_args))) {
    return s;
  }
  if (int32_t s = require_fp8_dtype(kernel, "args->quantize->out_dtype", q->out_dtype)) return s;
  return require_pointer(kernel, "args->quantize->scale", q->scale);
}

// The aliasing rule of octet_norm_backward_args, as the reference applies
// it: dx may be dy itself (the same data, dtype and ld: dgamma/dbeta read dy
// before any dx row is written, and each dx row is computed from copies of
// its x and dy rows); any other shared memory between dx and dy, or any
// between dx and x, is refused naming both arguments.
int32_t require_grad_input_aliasing(const char* kernel, const octet_matrix_view& x,
                                    const octet_matrix_view& dy, const octet_matrix_view& dx) {
  if (octet_matrix_views_overlap(&dx, &x)) {
    return report(OCTET_STATUS_INVALID_ARGUMENT,
                  std::string(kernel) +
                      ": args->grad_input shares memory with args->input (dx may not overlap x)");
  }
  const bool same = dx.data == dy.data && dx.dtype == dy.dtype && (dx.ld == dy.ld || dx.rows <= 1);
  if (!same && octet_matrix_views_overlap(&dx, &dy)) {
    return report(OCTET_STATUS_INVALID_ARGUMENT,
                  std::string(kernel) +
                      ": args->grad_input partially overlaps args->grad_output (dx may be dy "
                      "itself, with the same data, dtype and ld, or not overlap it)");
  }
  return OCTET_STATUS_SUCCESS;
}

int threads() { return std::max(1, omp_get_max_threads()); }

int thread_id() { return omp_get_thread_num(); }

// Column sums over rows in order: sums[c] = sum_r f(r, c) for the columns of
// [c0, c0 + width), `row(r, c0, width, buffer)` giving the row's values.
// Blocks of columns are shared among threads.
template <typename Row>
void column_sums(int64_t rows, int64_t cols, int64_t scratch_per_thread, std::vector<float>& scratch,
                 Row&& row) {
  const int64_t blocks = (cols + kColumnBlock - 1) / kColumnBlock;
  const bool parallel = threads_for(double(rows) * double(cols), kElementsPerThread) > 1 && blocks > 1;
#pragma omp parallel if (parallel)
  {
    const octet::DefaultFloatMode float_mode;  // this thread, for the region (dispatch/parallel_policy.hpp)
#pragma omp for schedule(static)
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t c0 = b * kColumnBlock;
      const int64_t width = std::min(kColumnBlock, cols - c0);
      float* buffer = scratch.data() + static_cast<std::size_t>(thread_id() * scratch_per_thread);
      row(c0, width, buffer);
    }
  }
}

}  // namespace

int32_t norm_forward_kernel(const octet_norm_forward_args* args) {
  const char* kernel = "norm_forward";
  if (int32_t s = require_pointer(kernel, "args", args)) return s;
  if (int32_t s = require_struct_size(kernel, "args", args->struct_size,
                                      sizeof(octet_norm_forward_args))) {
    return s;
  }
  if (args->kind != OCTET_NORM_LAYERNORM && args->kind != OCTET_NORM_RMSNORM) {
    return report(OCTET_STATUS_INVALID_ARGUMENT, std::string(kernel) + ": args->kind (" +
                                                     std::to_string(args->kind) +
                                                     ") is not an OCTET_NORM_*");
  }
  const octet_matrix_view x = args->input;
  if (int32_t s = require_matrix(kernel, "args->input", x, Accept::HighPrecision)) return s;
  const int64_t rows = x.rows, cols = x.cols;
  if (int32_t s = require_vector(kernel, "args->gamma", args->gamma, cols)) return s;
  const bool layernorm = args->kind == OCTET_NORM_LAYERNORM;
  const bool has_beta = layernorm && args->beta.data != nullptr;
  if (has_beta) {
    if (int32_t s = require_vector(kernel, "args->beta", args->beta, cols)) return s;
  }
  const octet_matrix_view out = args->output;
  if (!is_high_precision(out.dtype)) {
    return report(OCTET_STATUS_INVALID_ARGUMENT,
                  std::string(kernel) + ": args->output.dtype must be fp32, bf16 or fp16");
  }
  if (out.data != nullptr) {
    if (int32_t s = require_matrix(kernel, "args->output", out, Accept::HighPrecision)) return s;
    if (int32_t s = require_shape(kernel, "args->output", out, rows, cols,
                                  "same rows x cols as input")) {
      return s;
    }
  }
  if (int32_t s = require_fused_quantize(kernel, args->quantize)) return s;
  const RowKernels& k = row_kernels();
  const std::vector<float> gamma = widen_vector(k, args->gamma, cols);
  const std::vector<float> beta = has_beta ? widen_vector(k, args->beta, cols) : std::vector<float>();
  // The fused quantize reads y rounded to output.dtype: the output itself,
  // or a dense copy when the output is not stored.
  std::vector<unsigned char> dense;
  octet_matrix_view rounded = out;
  if (args->quantize != nullptr && out.data == nullptr) {
    dense.resize(static_cast<std::size_t>(rows * cols) * dtype_size(out.dtype));
    rounded = octet_matrix_view{dense.data(), out.dtype, 0, rows, cols, cols};
  }
  const int64_t per_thread = 2 * std::max<int64_t>(cols, 1);
  std::vector<float> scratch(static_cast<std::size_t>(threads() * per_thread));
  const float n = float(cols);
  const float epsilon = args->epsilon;
  float* mean_out = args->mean_out;
  float* rstd_out = args->rstd_out;
  const bool parallel = threads_for(double(rows) * double(cols), kElementsPerThread) > 1 && rows > 1;
#pragma omp parallel if (parallel)
  {
    const octet::DefaultFloatMode float_mode;  // this thread, for the region (dispatch/parallel_policy.hpp)
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      float* buffer = scratch.data() + static_cast<std::size_t>(thread_id() * per_thread);
      const float* xr = values(k, x, r, 0, cols, buffer);
      float* y = buffer + cols;
      float mean = 0.0f, rstd = 0.0f;
      if (layernorm) {
        float sum = 0.0f;
        for (int64_t c = 0; c < cols; ++c) sum += xr[c];
        mean = sum / n;
        float var = 0.0f;
        for (int64_t c = 0; c < cols; ++c) {
          const float d = xr[c] - mean;
          var += d * d;
        }
        rstd = 1.0f / std::sqrt(var / n + epsilon);
        const float* g = gamma.data();
        for (int64_t c = 0; c < cols; ++c) y[c] = ((xr[c] - mean) * rstd) * g[c];
        if (has_beta) {
          const float* bt = beta.data();
          for (int64_t c = 0; c < cols; ++c) y[c] = y[c] + bt[c];
        }
      } else {
        float ms = 0.0f;
        for (int64_t c = 0; c < cols; ++c) ms += xr[c] * xr[c];
        rstd = 1.0f / std::sqrt(ms / n + epsilon);
        const float* g = gamma.data();
        for (int64_t c = 0; c < cols; ++c) y[c] = (xr[c] * rstd) * g[c];
      }
      if (rounded.data != nullptr) k.narrow(y, cols, rounded.dtype, true, element_ptr_mut(rounded, r, 0));
      if (mean_out != nullptr) mean_out[r] = mean;
      if (rstd_out != nullptr) rstd_out[r] = rstd;
    }
  }
  // Checked above (require_fused_quantize), so this cannot reject its
  // arguments after y, mean and rstd are written.
  if (args->quantize != nullptr) {
    octet_quantize_args q = *args->quantize;
    q.input = rounded;
    return quantize_kernel(&q);
  }
  return OCTET_STATUS_SUCCESS;
}

int32_t norm_backward_kernel(const octet_norm_backward_args* args) {
  const char* kernel = "norm_backward";
  if (int32_t s = require_pointer(kernel, "args", args)) return s;
  if (int32_t s = require_struct_size(kernel, "args", args->struct_size,
                                      sizeof(octet_norm_backward_args))) {
    return s;
  }
  if (args->kind != OCTET_NORM_LAYERNORM && args->kind != OCTET_NORM_RMSNORM) {
    return report(OCTET_STATUS_INVALID_ARGUMENT, std::string(kernel) + ": args->kind (" +
                                                     std::to_string(args->kind) +
                                                     ") is not an OCTET_NORM_*");
  }
  const octet_matrix_view x = args->input, dy = args->grad_output, dx = args->grad_input;
  if (int32_t s = require_matrix(kernel, "args->input", x, Accept::HighPrecision)) return s;
  const int64_t rows = x.rows, cols = x.cols;
  if (int32_t s = require_matrix(kernel, "args->grad_output", dy, Accept::HighPrecision)) return s;
  if (int32_t s = require_shape(kernel, "args->grad_output", dy, rows, cols,
                                "same rows x cols as input")) {
    return s;
  }
  if (int32_t s = require_matrix(kernel, "args->grad_input", dx, Accept::HighPrecision)) return s;
  if (int32_t s = require_shape(kernel, "args->grad_input", dx, rows, cols,
                                "same rows x cols as input")) {
    return s;
  }
  if (int32_t s = require_grad_input_aliasing(kernel, x, dy, dx)) return s;
  if (int32_t s = require_vector(kernel, "args->gamma", args->gamma, cols)) return s;
  const bool layernorm = args->kind == OCTET_NORM_LAYERNORM;
  if (int32_t s = require_pointer(kernel, "args->rstd", args->rstd)) return s;
  if (layernorm) {
    if (int32_t s = require_pointer(kernel, "args->mean", args->mean)) return s;
  }
  if (int32_t s = require_pointer(kernel, "args->dgamma_out", args->dgamma_out)) return s;
  const RowKernels& k = row_kernels();
  const std::vector<float> gamma = widen_vector(k, args->gamma, cols);
  const float* mean = args->mean;
  const float* rstd = args->rstd;

  // dgamma and dbeta first (x and dy are read before dx is written, so dx
  // may be dy itself): per column, rows in order.
  std::vector<float> dgamma(static_cast<std::size_t>(cols)), dbeta(static_cast<std::size_t>(cols));
  {
    const int64_t per_thread = 2 * kColumnBlock;
    std::vector<float> scratch(static_cast<std::size_t>(threads() * per_thread));
    column_sums(rows, cols, per_thread, scratch, [&](int64_t c0, int64_t width, float* buffer) {
      float* dg = dgamma.data() + c0;
      float* db = dbeta.data() + c0;
      for (int64_t c = 0; c < width; ++c) dg[c] = db[c] = 0.0f;
      for (int64_t r = 0; r < rows; ++r) {
        const float* xr = values(k, x, r, c0, width, buffer);
        const float* g = values(k, dy, r, c0, width, buffer + kColumnBlock);
        const float m = layernorm ? mean[r] : 0.0f, s = rstd[r];
        if (layernorm) {
          for (int64_t c = 0; c < width; ++c) {
            const float xhat = (xr[c] - m) * s;
            dg[c] += g[c] * xhat;
            db[c] += g[c];
          }
        } else {
          for (int64_t c = 0; c < width; ++c) {
            const float xhat = xr[c] * s;
            dg[c] += g[c] * xhat;
            db[c] += g[c];
          }
        }
      }
    });
  }

  const int64_t per_thread = 2 * std::max<int64_t>(cols, 1);
  std::vector<float> scratch(static_cast<std::size_t>(threads() * per_thread));
  const float n = float(cols);
  const bool parallel = threads_for(double(rows) * double(cols), kElementsPerThread) > 1 && rows > 1;
#pragma omp parallel if (parallel)
  {
    const octet::DefaultFloatMode float_mode;  // this thread, for the region (dispatch/parallel_policy.hpp)
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      float* xhat = scratch.data() + static_cast<std::size_t>(thread_id() * per_thread);
      float* g = xhat + cols;
      k.widen(element_ptr(x, r, 0), x.dtype, cols, xhat);
      k.widen(element_ptr(dy, r, 0), dy.dtype, cols, g);
      const float s = rstd[r];
      const float m = layernorm ? mean[r] : 0.0f;
      const float* gm = gamma.data();
      if (layernorm) {
        for (int64_t c = 0; c < cols; ++c) xhat[c] = (xhat[c] - m) * s;
      } else {
        for (int64_t c = 0; c < cols; ++c) xhat[c] = xhat[c] * s;
      }
      for (int64_t c = 0; c < cols; ++c) g[c] = g[c] * gm[c];
      float sum_g = 0.0f, sum_gx = 0.0f;
      for (int64_t c = 0; c < cols; ++c) {
        sum_g += g[c];
        sum_gx += g[c] * xhat[c];
      }
      const float mean_g = sum_g / n, mean_gx = sum_gx / n;
      if (layernorm) {
        for (int64_t c = 0; c < cols; ++c) g[c] = s * (g[c] - mean_g - xhat[c] * mean_gx);
      } else {
        for (int64_t c = 0; c < cols; ++c) g[c] = s * (g[c] - xhat[c] * mean_gx);
      }
      k.narrow(g, cols, dx.dtype, true, element_ptr_mut(dx, r, 0));
    }
  }
  std::copy(dgamma.begin(), dgamma.end(), args->dgamma_out);
  if (args->dbeta_out != nullptr) std::copy(dbeta.begin(), dbeta.end(), args->dbeta_out);
  return OCTET_STATUS_SUCCESS;
}

int32_t activation_kernel(const octet_activation_args* args, bool backward) {
  const char* kernel = backward ? "activation_backward" : "activation_forward";
  if (int32_t s = require_pointer(kernel, "args", args)) return s;
  if (int32_t s = require_struct_size(kernel, "args", args->struct_size,
                                      sizeof(octet_activation_args))) {
    return s;
  }
  if (args->kind != OCTET_ACTIVATION_GELU && args->kind != OCTET_ACTIVATION_SWIGLU) {
    return report(OCTET_STATUS_INVALID_ARGUMENT, std::string(kernel) + ": args->kind (" +
                                                     std::to_string(args->kind) +
                                                     ") is not an OCTET_ACTIVATION_*");
  }
  const octet_matrix_view x = args->input;
  if (int32_t s = require_matrix(kernel, "args->input", x, Accept::HighPrecision)) return s;
  const bool swiglu = args->kind == OCTET_ACTIVATION_SWIGLU;
  if (swiglu && x.cols % 2 != 0) {
    return report(OCTET_STATUS_INVALID_ARGUMENT,
                  std::string(kernel) + ": SwiGLU needs an even number of input columns");
  }
  const int64_t rows = x.rows, n = swiglu ? x.cols / 2 : x.cols;
  const RowKernels& k = row_kernels();
  const ActivationRows& act = activation_rows();
  const bool parallel = threads_for(double(rows) * double(x.cols), kElementsPerThread) > 1 && rows > 1;
  if (!backward) {
    const octet_matrix_view y = args->output;
    if (int32_t s = require_matrix(kernel, "args->output", y, Accept::HighPrecision)) return s;
    if (int32_t s = require_shape(kernel, "args->output", y, rows, n, "rows x n")) return s;
    // Rows run in parallel: an output overlapping the input would race.
    if (octet_matrix_views_overlap(&y, &x)) {
      return report(OCTET_STATUS_INVALID_ARGUMENT,
                    std::string(kernel) + ": args->output shares memory with args->input (an activation's "
                                          "outputs may not overlap its inputs)");
    }
    const int64_t per_thread = x.cols + n + 1;
    std::vector<float> scratch(static_cast<std::size_t>(threads() * per_thread));
#pragma omp parallel if (parallel)
    {
      const octet::DefaultFloatMode float_mode;  // this thread, for the region (dispatch/parallel_policy.hpp)
#pragma omp for schedule(static)
      for (int64_t r = 0; r < rows; ++r) {
        float* buffer = scratch.data() + static_cast<std::size_t>(thread_id() * per_thread);
        const float* in = values(k, x, r, 0, x.cols, buffer);
        float* out = buffer + x.cols;
        if (swiglu) {
          act.swiglu(in, in + n, n, out);
        } else {
          act.gelu(in, n, out);
        }
        k.narrow(out, n, y.dtype, true, element_ptr_mut(y, r, 0));
      }
    }
    return OCTET_STATUS_SUCCESS;
  }
  const octet_matrix_view dy = args->grad_output, dx = args->grad_input;
  if (int32_t s = require_matrix(kernel, "args->grad_output", dy, Accept::HighPrecision)) return s;
  if (int32_t s = require_shape(kernel, "args->grad_output", dy, rows, n, "rows x n")) return s;
  if (int32_t s = require_matrix(kernel, "args->grad_input", dx, Accept::HighPrecision)) return s;
  if (int32_t s = require_shape(kernel, "args->grad_input", dx, rows, x.cols, "same as input")) {
    return s;
  }
  // Rows run in parallel: a grad_input overlapping an input would race.
  for (const auto& [other, name] : {std::pair<const octet_matrix_view*, const char*>{&x, "args->input"},
                                    {&dy, "args->grad_output"}}) {
    if (octet_matrix_views_overlap(&dx, other)) {
      return report(OCTET_STATUS_INVALID_ARGUMENT,
                    std::string(kernel) + ": args->grad_input shares memory with " + name +
                        " (an activation's outputs may not overlap its inputs)");
    }
  }
  const int64_t per_thread = 2 * x.cols + n + 1;
  std::vector<float> scratch(static_cast<std::size_t>(threads() * per_thread));
#pragma omp parallel if (parallel)
  {
    const octet::DefaultFloatMode float_mode;  // this thread, for the region (dispatch/parallel_policy.hpp)
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      float* buffer = scratch.data() + static_cast<std::size_t>(thread_id() * per_thread);
      float* in = buffer;
      float* g = buffer + x.cols;
      float* out = g + n;
      k.widen(element_ptr(x, r, 0), x.dtype, x.cols, in);
      k.widen(element_ptr(dy, r, 0), dy.dtype, n, g);
      if (swiglu) {
        act.swiglu_backward(in, in + n, g, n, out, out + n);
      } else {
        act.gelu_backward(in, g, n, out);
      }
      k.narrow(out, x.cols, dx.dtype, true, element_ptr_mut(dx, r, 0));
    }
  }
  return OCTET_STATUS_SUCCESS;
}

int32_t bias_gradient_kernel(const octet_bias_gradient_args* args) {
  const char* kernel = "bias_gradient";
  if (int32_t s = require_pointer(kernel, "args", args)) return s;
  if (int32_t s = require_struct_size(kernel, "args", args->struct_size,
                                      sizeof(octet_bias_gradient_args))) {
    return s;
  }
  const octet_matrix_view dy = args->grad_output;
  if (int32_t s = require_matrix(kernel, "args->grad_output", dy, Accept::HighPrecision)) return s;
  if (int32_t s = require_pointer(kernel, "args->sums_out", args->sums_out)) return s;
  if (int32_t s = require_fused_quantize(kernel, args->quantize)) return s;
  // Its codes are those of quantize() with input = dy.
  if (args->quantize != nullptr) {
    octet_quantize_args q = *args->quantize;
    q.input = dy;
    if (int32_t s = quantize_kernel(&q)) return s;
  }
  const RowKernels& k = row_kernels();
  float* sums = args->sums_out;
  const int64_t rows = dy.rows;
  const int64_t per_thread = kColumnBlock;
  std::vector<float> scratch(static_cast<std::size_t>(threads() * per_thread));
  column_sums(rows, dy.cols, per_thread, scratch, [&](int64_t c0, int64_t width, float* buffer) {
    alignas(64) float acc[kColumnBlock];
    for (int64_t c = 0; c < width; ++c) acc[c] = 0.0f;
    for (int64_t r = 0; r < rows; ++r) {
      const float* v = values(k, dy, r, c0, width, buffer);
      for (int64_t c = 0; c < width; ++c) acc[c] += v[c];
    }
    std::copy(acc, acc + width, sums + c0);
  });
  return OCTET_STATUS_SUCCESS;
}

int32_t accumulate_kernel(const octet_matrix_view* x, const octet_matrix_view* y,
                          int32_t accumulate) {
  const char* kernel = "accumulate";
  if (int32_t s = require_pointer(kernel, "x", x)) return s;
  if (int32_t s = require_pointer(kernel, "y", y)) return s;
  if (int32_t s = require_matrix(kernel, "x", *x, Accept::HighPrecision)) return s;
  if (int32_t s = require_matrix(kernel, "y", *y, Accept::HighPrecision)) return s;
  if (int32_t s = require_shape(kernel, "y", *y, x->rows, x->cols, "same rows x cols as x")) {
    return s;
  }
  const RowKernels& k = row_kernels();
  const octet_matrix_view in = *x, out = *y;
  const int64_t rows = in.rows, cols = in.cols;
  const int64_t per_thread = 2 * std::max<int64_t>(cols, 1);
  std::vector<float> scratch(static_cast<std::size_t>(threads() * per_thread));
  const bool parallel = threads_for(double(rows) * double(cols), kElementsPerThread) > 1 && rows > 1;
#pragma omp parallel if (parallel)
  {
    const octet::DefaultFloatMode float_mode;  // this thread, for the region (dispatch/parallel_policy.hpp)
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      float* a = scratch.data() + static_cast<std::size_t>(thread_id() * per_thread);
      float* b = a + cols;
      k.widen(element_ptr(in, r, 0), in.dtype, cols, a);
      if (accumulate != 0) {
        k.widen(element_ptr(out, r, 0), out.dtype, cols, b);
        for (int64_t c = 0; c < cols; ++c) a[c] = a[c] + b[c];
      }
      k.narrow(a, cols, out.dtype, true, element_ptr_mut(out, r, 0));
    }
  }
  return OCTET_STATUS_SUCCESS;
}

}  // namespace octet_cpu
