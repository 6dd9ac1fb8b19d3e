// Plugin ABI 1.2 entries (see entries.hpp): norm_forward, norm_backward,
// activation_forward/backward, bias_gradient, accumulate. Kernels in
// layer_kernels.cu. Every argument, the fused quantize's included, is checked
// before anything is queued, so a rejected call leaves every output as it was
// (numerics.md section 9).
#include <octet/octet_backend.h>

#include <cstddef>

#include "checks.hpp"
#include "context.hpp"
#include "entries.hpp"
#include "errors.hpp"
#include "layer_kernels.hpp"

namespace octet_cuda {
namespace {

void check_vector(const char* arg, const octet_matrix_view& v, int64_t cols) {
  check_view(arg, &v, kHighPrecision);
  require(v.rows == 1 && v.cols == cols, arg, " is ", v.rows, "x", v.cols, " but must be 1x", cols,
          " (1 x cols of the input)");
}

void check_shape(const char* arg, const octet_matrix_view& v, int64_t rows, int64_t cols, const char* rule) {
  require(v.rows == rows && v.cols == cols, arg, " is ", v.rows, "x", v.cols, " but must be ", rows, "x", cols, " (",
          rule, ")");
}

void check_norm_kind(int32_t kind) {
  require(kind == OCTET_NORM_LAYERNORM || kind == OCTET_NORM_RMSNORM, "args->kind (", kind,
          ") is not an OCTET_NORM_* (OCTET_NORM_LAYERNORM = 0, OCTET_NORM_RMSNORM = 1)");
}

// The fused quantize follows quantize()'s rules (backend.cpp): a struct of
// at least the plugin ABI 1.0 fields up to scale, fields beyond struct_size count as
// NULL, E4M3/E5M2 codes, a scale, and some output. Its input is replaced by
// the kernel's own (rows x cols).
octet_quantize_args checked_fused_quantize(const octet_quantize_args* given, int64_t rows, int64_t cols) {
  require(OCTET_PLUGIN_HOLDS(given->struct_size, octet_quantize_args, scale), "args->quantize->struct_size (",
          given->struct_size, ") is too small to hold the scale");
  octet_quantize_args q = octet::plugin::read_struct(given);
  require(q.out_dtype == OCTET_DTYPE_E4M3 || q.out_dtype == OCTET_DTYPE_E5M2, "args->quantize->out_dtype (",
          q.out_dtype, ") must be E4M3 or E5M2");
  require(q.scale != nullptr, "args->quantize->scale is NULL");
  const bool empty = rows == 0 || cols == 0;
  require(empty || q.rowwise_out != nullptr || q.columnwise_out != nullptr || q.scale_inv_out != nullptr ||
              q.amax_out != nullptr,
          "args->quantize asks for no output (rowwise_out, columnwise_out, scale_inv_out and amax_out are all NULL)");
  q.input = octet_matrix_view{};
  return q;
}

int32_t cuda_norm_forward(octet_backend_context* context, const octet_norm_forward_args* args) {
  return guarded("norm_forward", [&] {
    require(context != nullptr, "context is NULL");
    require(args != nullptr, "args is NULL");
    require_struct_size("args", args->struct_size, sizeof(octet_norm_forward_args));
    check_norm_kind(args->kind);
    const octet_matrix_view& x = args->input;
    check_view("args->input", &x, kHighPrecision);
    check_vector("args->gamma", args->gamma, x.cols);
    if (args->kind == OCTET_NORM_LAYERNORM && args->beta.data != nullptr) check_vector("args->beta", args->beta, x.cols);
    require(dtype_in(args->output.dtype, kHighPrecision), "args->output.dtype is ", dtype_label(args->output.dtype),
            " (", args->output.dtype, ") but must be fp32, bf16 or fp16 (also when output.data is NULL: the fused "
            "quantize reads y in that dtype)");
    if (args->output.data != nullptr) {
      check_view("args->output", &args->output, kHighPrecision);
      check_shape("args->output", args->output, x.rows, x.cols, "same rows x cols as the input");
    }
    octet_quantize_args quantize{};
    if (args->quantize != nullptr) quantize = checked_fused_quantize(args->quantize, x.rows, x.cols);
    bind(context, "norm_forward");
    check_cuda(launch_norm_forward(*args, args->quantize != nullptr ? &quantize : nullptr, context->stream),
               "norm_forward kernel launch");
  });
}

int32_t cuda_norm_backward(octet_backend_context* context, const octet_norm_backward_args* args) {
  return guarded("norm_backward", [&] {
    require(context != nullptr, "context is NULL");
    require(args != nullptr, "args is NULL");
    require_struct_size("args", args->struct_size, sizeof(octet_norm_backward_args));
    check_norm_kind(args->kind);
    const octet_matrix_view& x = args->input;
    check_view("args->input", &x, kHighPrecision);
    check_view("args->grad_output", &args->grad_output, kHighPrecision);
    check_shape("args->grad_output", args->grad_output, x.rows, x.cols, "same rows x cols as the input");
    check_view("args->grad_input", &args->grad_input, kHighPrecision);
    check_shape("args->grad_input", args->grad_input, x.rows, x.cols, "same rows x cols as the input");
    // The aliasing rule of octet_norm_backward_args. In place (dx is dy) is
    // safe here: the column sums read dy in a kernel queued before the row
    // kernel, which reads each element of x and dy before writing it in dx.
    const octet_matrix_view& dy = args->grad_output;
    const octet_matrix_view& dx = args->grad_input;
    require(!octet_matrix_views_overlap(&dx, &x),
            "args->grad_input shares memory with args->input (dx may not overlap x)");
    const bool in_place = dx.data == dy.data && dx.dtype == dy.dtype && (dx.ld == dy.ld || dx.rows <= 1);
    require(in_place || !octet_matrix_views_overlap(&dx, &dy),
            "args->grad_input partially overlaps args->grad_output (dx may be dy itself, with the same data, dtype "
            "and ld, or not overlap it)");
    check_vector("args->gamma", args->gamma, x.cols);
    require(args->rstd != nullptr, "args->rstd is NULL (the forward's rstd, one float per row)");
    if (args->kind == OCTET_NORM_LAYERNORM) {
      require(args->mean != nullptr, "args->mean is NULL (LayerNorm needs the forward's mean, one float per row)");
    }
    require(args->dgamma_out != nullptr, "args->dgamma_out is NULL");
    bind(context, "norm_backward");
    check_cuda(launch_norm_backward(*args, context->stream), "norm_backward kernel launch");
  });
}

int32_t activation(octet_backend_context* context, const octet_activation_args* args, bool backward) {
  return guarded(backward ? "activation_backward" : "activation_forward", [&] {
    require(context != nullptr, "context is NULL");
    require(args != nullptr, "args is NULL");
    require_struct_size("args", args->struct_size, sizeof(octet_activation_args));
    require(args->kind == OCTET_ACTIVATION_GELU || args->kind == OCTET_ACTIVATION_SWIGLU, "args->kind (", args->kind,
            ") is not an OCTET_ACTIVATION_* (OCTET_ACTIVATION_GELU = 0, OCTET_ACTIVATION_SWIGLU = 1)");
    const octet_matrix_view& x = args->input;
    check_view("args->input", &x, kHighPrecision);
    const bool swiglu = args->kind == OCTET_ACTIVATION_SWIGLU;
    require(!swiglu || x.cols % 2 == 0, "args->input has ", x.cols,
            " columns but SwiGLU needs an even number of input columns ([a | b])");
    const int64_t n = swiglu ? x.cols / 2 : x.cols;
    if (!backward) {
      check_view("args->output", &args->output, kHighPrecision);
      check_shape("args->output", args->output, x.rows, n, swiglu ? "rows x cols/2 of the input" : "rows x cols of the input");
      require(!octet_matrix_views_overlap(&args->output, &x),
              "args->output shares memory with args->input (an activation's outputs may not overlap its inputs)");
      bind(context, "activation_forward");
    } else {
      check_view("args->grad_output", &args->grad_output, kHighPrecision);
      check_shape("args->grad_output", args->grad_output, x.rows, n,
                  swiglu ? "rows x cols/2 of the input" : "rows x cols of the input");
      check_view("args->grad_input", &args->grad_input, kHighPrecision);
      check_shape("args->grad_input", args->grad_input, x.rows, x.cols, "same rows x cols as the input");
      require(!octet_matrix_views_overlap(&args->grad_input, &x),
              "args->grad_input shares memory with args->input (an activation's outputs may not overlap its inputs)");
      require(!octet_matrix_views_overlap(&args->grad_input, &args->grad_output),
              "args->grad_input shares memory with args->grad_output (an activation's outputs may not overlap its "
              "inputs)");
      bind(context, "activation_backward");
    }
    check_cuda(launch_activation(*args, backward, context->stream),
               backward ? "activation_backward kernel launch" : "activation_forward kernel launch");
  });
}

int32_t cuda_activation_forward(octet_backend_context* context, const octet_activation_args* args) {
  return activation(context, args, false);
}

int32_t cuda_activation_backward(octet_backend_context* context, const octet_activation_args* args) {
  return activation(context, args, true);
}

int32_t cuda_bias_gradient(octet_backend_context* context, const octet_bias_gradient_args* args) {
  return guarded("bias_gradient", [&] {
    require(context != nullptr, "context is NULL");
    require(args != nullptr, "args is NULL");
    require_struct_size("args", args->struct_size, sizeof(octet_bias_gradient_args));
    const octet_matrix_view& dy = args->grad_output;
    check_view("args->grad_output", &dy, kHighPrecision);
    require(args->sums_out != nullptr, "args->sums_out is NULL");
    octet_quantize_args quantize{};
    if (args->quantize != nullptr) quantize = checked_fused_quantize(args->quantize, dy.rows, dy.cols);
    bind(context, "bias_gradient");
    check_cuda(launch_bias_gradient(*args, args->quantize != nullptr ? &quantize : nullptr, context->stream),
               "bias_gradient kernel launch");
  });
}

int32_t cuda_accumulate(octet_backend_context* context, const octet_matrix_view* x, const octet_matrix_view* y,
                        int32_t accumulate) {
  return guarded("accumulate", [&] {
    require(context != nullptr, "context is NULL");
    check_view("x", x, kHighPrecision);
    check_view("y", y, kHighPrecision);
    check_same_shape(*x, *y, "x and y");
    bind(context, "accumulate");
    check_cuda(launch_accumulate(*x, *y, accumulate != 0, context->stream), "accumulate kernel launch");
  });
}

}  // namespace

void add_layer_entries(octet_backend_api& api) {
  api.norm_forward = cuda_norm_forward;
  api.norm_backward = cuda_norm_backward;
  api.activation_forward = cuda_activation_forward;
  api.activation_backward = cuda_activation_backward;
  api.bias_gradient = cuda_bias_gradient;
  api.accumulate = cuda_accumulate;
}

}  // namespace octet_cuda
