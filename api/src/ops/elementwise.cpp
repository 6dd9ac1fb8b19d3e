// Element-wise operations: convert, amax, quantize, dequantize. The core
// checks arguments and decides which copies to produce; the backend computes.
#include <octet/octet.h>

#include "ops/fp4.hpp"
#include "ops/quantize.hpp"
#include "runtime/error.hpp"
#include "runtime/versioned_struct.hpp"
#include "tensor/dtype.hpp"
#include "tensor/tensor.hpp"

namespace octet::core {
namespace {

void require_high_precision(const TensorState& t, const char* name) {
  require(is_high_precision(t.dtype) && !t.quantized(), "tensor '", name, "' must be a plain FP32, BF16 or FP16 tensor (it is ",
          dtype_name(t.dtype), ")");
}

// A block-scaled tensor: the rowwise copy with its scale grid, or else the
// columnwise copy dequantized and transposed back.
void dequantize_blocks(const std::shared_ptr<ContextState>& context, const TensorState& in, TensorState& out) {
  const ContextState& ctx = *context;
  require_entry(ctx, (ctx.backend->features & OCTET_FEATURE_BLOCK_QUANTIZE) != 0, "block_dequantize");
  octet_block_dequantize_args args{};
  args.struct_size = sizeof(args);
  args.scale_dtype = in.scale_inv_dtype();
  args.block_rows = in.block_shape(false).rows;
  args.block_cols = in.block_shape(false).cols;
  if (in.data) {
    args.input = in.rowwise_view();
    args.scale_inv = in.rowwise_scale_inv.data();
    args.output = out.rowwise_view();
    call_backend(ctx, "block_dequantize", [&] { return ctx.api().block_dequantize(ctx.handle, &args); });
    return;
  }
  require_entry(ctx, ctx.api().transpose != nullptr, "transpose");
  Buffer scratch(context, size_t(out.numel()) * out.element_bytes(), OCTET_MEMORY_WORKSPACE);
  args.input = in.columnwise_view();
  args.scale_inv = in.columnwise_scale_inv.data();
  args.block_rows = in.block_shape(true).rows;
  args.block_cols = in.block_shape(true).cols;
  args.output = octet_matrix_view{scratch.data(), out.dtype, 0, out.cols, out.rows, out.rows};
  call_backend(ctx, "block_dequantize", [&] { return ctx.api().block_dequantize(ctx.handle, &args); });
  octet_matrix_view dst = out.rowwise_view();
  call_backend(ctx, "transpose", [&] { return ctx.api().transpose(ctx.handle, &args.output, &dst); });
}

}  // namespace
}  // namespace octet::core

using namespace octet::core;

extern "C" {

OCTET_API octet_status octet_convert(octet_context* context, const octet_tensor* input, octet_tensor* output,
                                     int32_t saturate) {
  return guarded("octet_convert", [&] {
    const ContextState& ctx = context_arg(context);
    const TensorState& in = tensor_arg(input, ctx, "input");
    TensorState& out = tensor_arg(output, ctx, "output");
    require_same_shape(in, "input", out, "output");
    require(in.dtype != OCTET_DTYPE_E2M1 && out.dtype != OCTET_DTYPE_E2M1,
            "octet_convert does not take E2M1 tensors: FP4 codes are written by octet_quantize and read by "
            "octet_dequantize, with their block scales");
    require(bool(in.data), "tensor 'input' has no rowwise data to convert");
    require(bool(out.data), "tensor 'output' has no rowwise data to write");
    require_entry(ctx, ctx.api().convert != nullptr, "convert");
    octet_matrix_view src = in.rowwise_view(), dst = out.rowwise_view();
    call_backend(ctx, "convert", [&] { return ctx.api().convert(ctx.handle, &src, &dst, saturate != 0); });
  });
}

OCTET_API octet_status octet_amax(octet_context* context, const octet_tensor* input, float* amax) {
  return guarded("octet_amax", [&] {
    const ContextState& ctx = context_arg(context);
    const TensorState& in = tensor_arg(input, ctx, "input");
    require(amax != nullptr, "argument 'amax' is NULL");
    require_high_precision(in, "input");
    *amax = amax_on_backend(context->state, in);
  });
}

OCTET_API octet_status octet_quantize(octet_context* context, const octet_tensor* input, octet_tensor* output,
                                      const octet_quantize_options* options) {
  return guarded("octet_quantize", [&] {
    const ContextState& ctx = context_arg(context);
    const TensorState& in = tensor_arg(input, ctx, "input");
    TensorState& out = tensor_arg(output, ctx, "output");
    octet_quantize_options o = read_quantize_options(options);
    uint32_t usages = check_quantize(ctx, in, out, o.usages);
    require_allowed_scalar(out, kScale, "output");
    const Fp4Params fp4 = fp4_params_of(o);
    quantize_into(context->state, in, out, usages, o.saturate != 0, BlockParams{}, nullptr, &fp4);
  });
}

OCTET_API octet_status octet_quantize_with_stats(octet_context* context, const octet_tensor* input,
                                                 octet_tensor* output, const octet_quantize_options* options,
                                                 octet_quantize_stats* stats) {
  return guarded("octet_quantize_with_stats", [&] {
    const ContextState& ctx = context_arg(context);
    const TensorState& in = tensor_arg(input, ctx, "input");
    TensorState& out = tensor_arg(output, ctx, "output");
    require_struct(stats, stats ? stats->struct_size : 0, "stats");
    octet_quantize_options o = read_quantize_options(options);
    uint32_t usages = check_quantize(ctx, in, out, o.usages);
    require_allowed_scalar(out, kScale, "output");
    octet_quantize_stats result{};
    const Fp4Params fp4 = fp4_params_of(o);
    quantize_into(context->state, in, out, usages, o.saturate != 0, BlockParams{}, &result, &fp4);
    write_versioned(result, stats, "stats");
  });
}

OCTET_API octet_status octet_dequantize(octet_context* context, const octet_tensor* input, octet_tensor* output) {
  return guarded("octet_dequantize", [&] {
    const ContextState& ctx = context_arg(context);
    const TensorState& in = tensor_arg(input, ctx, "input");
    TensorState& out = tensor_arg(output, ctx, "output");
    require(is_fp8(in.dtype) || in.fp4(),
            "tensor 'input' must be FP8 (E4M3, E5M2, E4M3FNUZ or E5M2FNUZ) or FP4 (E2M1); it is ",
            dtype_name(in.dtype));
    require_high_precision(out, "output");
    require_same_shape(in, "input", out, "output");
    if (in.fp4()) {
      dequantize_fp4(context->state, in, out);
      return;
    }
    require_allowed_scalar(in, kScaleInv, "input");
    if (in.block_scaled()) {
      dequantize_blocks(context->state, in, out);
      return;
    }
    require_entry(ctx, ctx.api().dequantize != nullptr, "dequantize");

    Buffer unit_scale;
    const float* scale_inv = nullptr;
    if (in.quantized()) {
      scale_inv = in.scalar(kScaleInv);
    } else {
      unit_scale = Buffer(context->state, sizeof(float), OCTET_MEMORY_WORKSPACE);
      const float one = 1.0f;
      unit_scale.copy_from_host(&one, sizeof(one));
      scale_inv = static_cast<const float*>(unit_scale.data());
    }
    octet_dequantize_args args{};
    args.struct_size = sizeof(args);
    args.scale_inv = scale_inv;
    if (in.data) {
      args.input = in.rowwise_view();
      args.output = out.rowwise_view();
      call_backend(ctx, "dequantize", [&] { return ctx.api().dequantize(ctx.handle, &args); });
      return;
    }
    // Only the transposed copy exists: dequantize it, then transpose back.
    require_entry(ctx, ctx.api().transpose != nullptr, "transpose");
    Buffer scratch(context->state, size_t(out.numel()) * out.element_bytes(), OCTET_MEMORY_WORKSPACE);
    args.input = in.columnwise_view();
    args.output = octet_matrix_view{scratch.data(), out.dtype, 0, out.cols, out.rows, out.rows};
    call_backend(ctx, "dequantize", [&] { return ctx.api().dequantize(ctx.handle, &args); });
    octet_matrix_view dst = out.rowwise_view();
    call_backend(ctx, "transpose", [&] { return ctx.api().transpose(ctx.handle, &args.output, &dst); });
  });
}

}  // extern "C"
