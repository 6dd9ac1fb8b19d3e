// Plugin ABI 1.1 entries (see entries.hpp): quantize_with_statistics,
// block_quantize, block_dequantize, block_gemm. Each checks its arguments
// by the reference's rules (a clear status and message naming the argument),
// then queues its kernels (block_kernels.cu) on the context's stream.
#include <optional>

#include "block_kernels.hpp"
#include "checks.hpp"
#include "context.hpp"
#include "entries.hpp"
#include "errors.hpp"
#include "kernels.hpp"

namespace octet_cuda {
namespace {

void check_fp8_out(int32_t dtype) {
  require(dtype == OCTET_DTYPE_E4M3 || dtype == OCTET_DTYPE_E5M2, "args->out_dtype is ", dtype_label(dtype), " (",
          dtype, ") but must be e4m3 or e5m2");
}

void check_block_shape(int32_t block_rows, int32_t block_cols) {
  require(block_rows >= 1 && block_cols >= 1, "args->block_rows x args->block_cols is ", block_rows, "x", block_cols,
          " but a block must be at least 1x1");
}

void check_scale_dtype(int32_t scale_dtype) {
  require(scale_dtype == OCTET_DTYPE_E8M0 || scale_dtype == OCTET_DTYPE_FP32, "args->scale_dtype is ",
          dtype_label(scale_dtype), " (", scale_dtype, ") but must be e8m0 or fp32");
}

void check_shape(const char* arg, const octet_matrix_view& view, int64_t rows, int64_t cols, const char* rule) {
  require(view.rows == rows && view.cols == cols, arg, " must be ", rows, "x", cols, " (", rule, ") but is ",
          view.rows, "x", view.cols);
}

int32_t cuda_quantize_with_statistics(octet_backend_context* context, const octet_quantize_args* given,
                                      octet_quantize_statistics* stats_out) {
  return guarded("quantize_with_statistics", [&] {
    require(context != nullptr, "context is NULL");
    require(given != nullptr, "args is NULL");
    require(stats_out != nullptr, "stats_out is NULL");
    require(OCTET_PLUGIN_HOLDS(given->struct_size, octet_quantize_args, scale),
            "args->struct_size is too small to hold the scale");
    // Fields beyond the caller's struct_size count as NULL (as quantize reads them).
    const octet_quantize_args args = octet::plugin::read_struct(given);
    check_view("args->input", &args.input, kHighPrecision);
    check_fp8_out(args.out_dtype);
    require(args.scale != nullptr, "args->scale is NULL");
    bind(context, "quantize_with_statistics");
    check_cuda(launch_quantize(args, context->stream), "quantize kernel launch");
    Scratch accumulator(context, sizeof(StatisticsAccumulator));
    check_cuda(launch_quantize_statistics(args, static_cast<StatisticsAccumulator*>(accumulator.get()), stats_out,
                                          context->stream),
               "quantize statistics kernel launch");
  });
}

int32_t cuda_block_quantize(octet_backend_context* context, const octet_block_quantize_args* args) {
  return guarded("block_quantize", [&] {
    require(context != nullptr, "context is NULL");
    require(args != nullptr, "args is NULL");
    require_struct_size("args", args->struct_size, sizeof *args);
    check_view("args->input", &args->input, kHighPrecision);
    check_fp8_out(args->out_dtype);
    check_block_shape(args->block_rows, args->block_cols);
    check_scale_dtype(args->scale_dtype);
    require(args->scale_dtype != OCTET_DTYPE_E8M0 || args->e8m0_rounding == 0 || args->e8m0_rounding == 1,
            "args->e8m0_rounding is ", args->e8m0_rounding, " but must be 0 (RCEIL) or 1 (FLOOR)");
    require(args->out != nullptr, "args->out is NULL");
    require(args->scale_inv_out != nullptr, "args->scale_inv_out is NULL");
    bind(context, "block_quantize");
    std::optional<Scratch> accumulator;  // only when amax or statistics are asked for
    if (args->amax_out != nullptr || args->stats_out != nullptr) {
      accumulator.emplace(context, sizeof(StatisticsAccumulator));
    }
    check_cuda(launch_block_quantize(
                   *args, accumulator ? static_cast<StatisticsAccumulator*>(accumulator->get()) : nullptr,
                   context->stream),
               "block_quantize kernel launch");
  });
}

int32_t cuda_block_dequantize(octet_backend_context* context, const octet_block_dequantize_args* args) {
  return guarded("block_dequantize", [&] {
    require(context != nullptr, "context is NULL");
    require(args != nullptr, "args is NULL");
    require_struct_size("args", args->struct_size, sizeof *args);
    check_view("args->input", &args->input, kFp8);
    check_view("args->output", &args->output, kHighPrecision);
    check_same_shape(args->input, args->output, "args->input and args->output");
    check_block_shape(args->block_rows, args->block_cols);
    check_scale_dtype(args->scale_dtype);
    require(args->scale_inv != nullptr, "args->scale_inv is NULL");
    bind(context, "block_dequantize");
    check_cuda(launch_block_dequantize(*args, context->stream), "block_dequantize kernel launch");
  });
}

int32_t cuda_block_gemm(octet_backend_context* context, const octet_block_gemm_args* args) {
  return guarded("block_gemm", [&] {
    require(context != nullptr, "context is NULL");
    require(args != nullptr, "args is NULL");
    require_struct_size("args", args->struct_size, sizeof *args);
    require(args->m >= 0 && args->n >= 0 && args->k >= 0, "args->m, args->n, args->k are ", args->m, ", ", args->n,
            ", ", args->k, "; none may be negative");
    check_view("args->a", &args->a, kFp8);
    check_view("args->b", &args->b, kFp8);
    check_shape("args->a", args->a, args->m, args->k, "[m,k]");
    check_shape("args->b", args->b, args->n, args->k, "[n,k]");
    check_scale_dtype(args->scale_dtype);
    require(args->a_block_rows >= 1 && args->a_block_cols >= 1 && args->b_block_rows >= 1 && args->b_block_cols >= 1 &&
                args->a_block_cols == args->b_block_cols,
            "block shapes ", args->a_block_rows, "x", args->a_block_cols, " (a) and ", args->b_block_rows, "x",
            args->b_block_cols, " (b) must be at least 1x1 and cover the same extent of k (a_block_cols == "
            "b_block_cols)");
    require(args->a_scale_inv != nullptr, "args->a_scale_inv is NULL");
    require(args->b_scale_inv != nullptr, "args->b_scale_inv is NULL");
    // FP8 output is a valid dtype this entry does not write (as the reference).
    if (dtype_in(args->d.dtype, kFp8 | OCTET_DTYPE_BIT(OCTET_DTYPE_E8M0))) {
      fail(OCTET_STATUS_UNSUPPORTED, "args->d.dtype is ", dtype_label(args->d.dtype),
           "; block_gemm writes fp32, bf16 or fp16 only");
    }
    check_view("args->d", &args->d, kHighPrecision);
    check_shape("args->d", args->d, args->m, args->n, "[m,n]");
    if (args->bias.data != nullptr) {
      check_view("args->bias", &args->bias, kHighPrecision);
      check_shape("args->bias", args->bias, 1, args->n, "one row of n elements");
    }
    require(args->epilogue == OCTET_EPILOGUE_NONE || args->epilogue == OCTET_EPILOGUE_GELU, "args->epilogue is ",
            args->epilogue, " but must be OCTET_EPILOGUE_NONE or OCTET_EPILOGUE_GELU");
    bind(context, "block_gemm");
    check_cuda(launch_block_gemm(*args, context->stream), "block_gemm kernel launch");
  });
}

}  // namespace

void add_block_entries(octet_backend_api& api) {
  api.quantize_with_statistics = cuda_quantize_with_statistics;
  api.block_quantize = cuda_block_quantize;
  api.block_dequantize = cuda_block_dequantize;
  api.block_gemm = cuda_block_gemm;
}

}  // namespace octet_cuda
