#include "ops/fp4.hpp"

#include <octet/octet_random.h>

#include "ops/gemm.hpp"
#include "runtime/error.hpp"
#include "tensor/dtype.hpp"

namespace octet::core {

void quantize_fp4(const std::shared_ptr<ContextState>& context, const TensorState& in, TensorState& out,
                  uint32_t usages, const Fp4Params& params, octet_quantize_statistics* stats) {
  const ContextState& ctx = *context;
  require_entry(ctx, (ctx.backend->features & OCTET_FEATURE_FP4_QUANTIZE) != 0, "fp4_quantize");
  require(params.e8m0_rounding == OCTET_MX_ROUND_RCEIL || params.e8m0_rounding == OCTET_MX_ROUND_FLOOR,
          "the E8M0 rounding (", params.e8m0_rounding, ") must be OCTET_MX_ROUND_RCEIL or OCTET_MX_ROUND_FLOOR");
  if (params.hadamard_transform && (usages & OCTET_USAGE_COLUMNWISE))
    require(out.rows % 16 == 0,
            "options->hadamard_transform transforms 16-element groups along the columnwise copy's "
            "rows, so tensor 'output' needs a row count (the product of all dims but the last, ",
            out.rows, ") that is a multiple of 16");
  octet_fp4_quantize_args args{};
  args.struct_size = sizeof(args);
  args.input = in.rowwise_view();
  args.scaling_mode = out.scaling_mode;
  args.e8m0_rounding = params.e8m0_rounding;
  args.stochastic_rounding = params.stochastic_rounding ? 1 : 0;
  args.seed = params.seed;
  args.rht_sign_mask = octet_rht_sign_mask(params.seed);
  args.amax_out = out.scalar(kAmax);
  const bool nvfp4 = is_nvfp4_mode(out.scaling_mode);
  bool stats_taken = false;
  for (bool columnwise : {false, true}) {
    const uint32_t usage = columnwise ? OCTET_USAGE_COLUMNWISE : OCTET_USAGE_ROWWISE;
    if (!(usages & usage)) continue;
    args.transposed = columnwise ? 1 : 0;
    args.offset = params.offset + (columnwise ? 1 : 0);
    args.rht = columnwise && params.hadamard_transform ? 1 : 0;
    args.out = static_cast<uint8_t*>(columnwise ? out.columnwise.data() : out.data.data());
    args.scale_inv_out =
        static_cast<uint8_t*>(columnwise ? out.columnwise_scale_inv.data() : out.rowwise_scale_inv.data());
    args.tensor_scale_inv_out = nvfp4 ? out.scalar(columnwise ? kColumnwiseTensorScale : kRowwiseTensorScale) : nullptr;
    args.stats_out = stats_taken ? nullptr : stats;
    stats_taken = true;
    call_backend(ctx, "fp4_quantize", [&] { return ctx.api().fp4_quantize(ctx.handle, &args); });
  }
}

void dequantize_fp4(const std::shared_ptr<ContextState>& context, const TensorState& in, TensorState& out) {
  const ContextState& ctx = *context;
  require_entry(ctx, (ctx.backend->features & OCTET_FEATURE_FP4_QUANTIZE) != 0, "fp4_dequantize");
  const bool nvfp4 = is_nvfp4_mode(in.scaling_mode);
  octet_fp4_dequantize_args args{};
  args.struct_size = sizeof(args);
  args.scaling_mode = in.scaling_mode;
  if (in.data) {
    args.input = static_cast<const uint8_t*>(in.data.data());
    args.rows = in.rows;
    args.cols = in.cols;
    args.scale_inv = static_cast<const uint8_t*>(in.rowwise_scale_inv.data());
    args.tensor_scale_inv = nvfp4 ? in.scalar(kRowwiseTensorScale) : nullptr;
    args.output = out.rowwise_view();
    call_backend(ctx, "fp4_dequantize", [&] { return ctx.api().fp4_dequantize(ctx.handle, &args); });
    return;
  }
  // Only the columnwise copy: dequantize it, then transpose back.
  require_entry(ctx, ctx.api().transpose != nullptr, "transpose");
  Buffer scratch(context, size_t(out.numel()) * out.element_bytes(), OCTET_MEMORY_WORKSPACE);
  args.input = static_cast<const uint8_t*>(in.columnwise.data());
  args.rows = in.cols;
  args.cols = in.rows;
  args.scale_inv = static_cast<const uint8_t*>(in.columnwise_scale_inv.data());
  args.tensor_scale_inv = nvfp4 ? in.scalar(kColumnwiseTensorScale) : nullptr;
  args.output = octet_matrix_view{scratch.data(), out.dtype, 0, out.cols, out.rows, out.rows};
  call_backend(ctx, "fp4_dequantize", [&] { return ctx.api().fp4_dequantize(ctx.handle, &args); });
  octet_matrix_view dst = out.rowwise_view();
  call_backend(ctx, "transpose", [&] { return ctx.api().transpose(ctx.handle, &args.output, &dst); });
}

namespace {

// The K-contiguous copy of an FP4 operand (rowwise when used as stored,
// columnwise when used transposed), as for the FP8 block modes.
struct Fp4Operand {
  const uint8_t* codes;
  const uint8_t* scales;
  const float* tensor_scale;
};

Fp4Operand fp4_operand(const TensorState& t, int32_t trans, const char* name) {
  const bool nvfp4 = is_nvfp4_mode(t.scaling_mode);
  if (!trans) {
    require(bool(t.data), "tensor '", name, "' is FP4 and used as stored: it needs the rowwise usage");
    return {static_cast<const uint8_t*>(t.data.data()), static_cast<const uint8_t*>(t.rowwise_scale_inv.data()),
            nvfp4 ? t.scalar(kRowwiseTensorScale) : nullptr};
  }
  require(bool(t.columnwise), "tensor '", name,
          "' is FP4 and used transposed: it needs the columnwise usage (a copy quantized along the other dimension)");
  return {static_cast<const uint8_t*>(t.columnwise.data()), static_cast<const uint8_t*>(t.columnwise_scale_inv.data()),
          nvfp4 ? t.scalar(kColumnwiseTensorScale) : nullptr};
}

}  // namespace

octet_fp4_gemm_args fp4_gemm_args(const ContextState& ctx, const TensorState& ta, const TensorState& tb,
                                  TensorState& td, const octet_gemm_options& o, int64_t m, int64_t n, int64_t k) {
  if (!ta.fp4() || !tb.fp4() || is_nvfp4_mode(ta.scaling_mode) != is_nvfp4_mode(tb.scaling_mode))
    fail(OCTET_STATUS_UNSUPPORTED, "tensors 'a' (", scaling_mode_name(ta.scaling_mode), ") and 'b' (",
         scaling_mode_name(tb.scaling_mode),
         ") cannot be multiplied: FP4 GEMMs take MXFP4 with MXFP4, or NVFP4 (1x16 or 16x16) with NVFP4");
  require_entry(ctx, (ctx.backend->features & OCTET_FEATURE_FP4_GEMM) != 0, "fp4_gemm");
  const Fp4Operand a = fp4_operand(ta, o.trans_a, "a"), b = fp4_operand(tb, o.trans_b, "b");
  octet_fp4_gemm_args args{};
  args.struct_size = sizeof(args);
  args.m = m;
  args.n = n;
  args.k = k;
  args.a = a.codes;
  args.b = b.codes;
  args.a_scale_inv = a.scales;
  args.b_scale_inv = b.scales;
  args.a_tensor_scale_inv = a.tensor_scale;
  args.b_tensor_scale_inv = b.tensor_scale;
  args.a_scaling_mode = ta.scaling_mode;
  args.b_scaling_mode = tb.scaling_mode;
  args.alpha = o.alpha;
  args.beta = o.beta;
  args.d = td.rowwise_view();
  args.epilogue = o.epilogue;
  args.bias = bias_view(ctx, o, n);
  return args;
}

}  // namespace octet::core
