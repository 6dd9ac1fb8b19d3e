// GEMM: the core picks, for each FP8 operand, the stored copy and transpose
// flag that the backend's declared layouts can run (docs/layers.md, "Precision"),
// transposing into a workspace only when no stored copy fits.
#include <octet/octet.h>

#include <cstddef>
#include <cstring>
#include <vector>

#include "ops/gemm.hpp"

#include "ops/fp4.hpp"
#include "ops/quantize.hpp"
#include "runtime/error.hpp"
#include "runtime/versioned_struct.hpp"
#include "tensor/dtype.hpp"
#include "tensor/tensor.hpp"

namespace octet::core {
namespace {

struct Operand {
  octet_matrix_view view;
  int32_t trans;
};

uint32_t layout_of(int32_t trans_a, int32_t trans_b) {
  if (!trans_a) return trans_b ? OCTET_GEMM_LAYOUT_NN : OCTET_GEMM_LAYOUT_TN;
  return trans_b ? OCTET_GEMM_LAYOUT_NT : OCTET_GEMM_LAYOUT_TT;
}

// The ways an operand can be presented, best first. Reading the rowwise copy
// transposed is the native columnwise access; the transposed copy read with
// the flag flipped is the Hopper-class way.
std::vector<Operand> candidates(const TensorState& t, int32_t trans, bool native_columnwise) {
  std::vector<Operand> out;
  out.reserve(2);
  auto add_rowwise = [&] {
    if (t.data) out.push_back({t.rowwise_view(), trans});
  };
  auto add_transposed = [&] {
    if (t.columnwise) out.push_back({t.columnwise_view(), trans ? 0 : 1});
  };
  if (!trans || native_columnwise) {
    add_rowwise();
    add_transposed();
  } else {
    add_transposed();
    add_rowwise();
  }
  return out;
}

octet_gemm_options gemm_defaults() {
  octet_gemm_options o{};
  o.struct_size = sizeof(o);
  o.alpha = 1.0f;
  o.saturate_output = 1;
  return o;
}

// The K-contiguous copy of a block-scaled operand: the rowwise copy when it
// is used as stored, the columnwise copy (quantized from x^T) when it is
// used transposed. Block GEMMs therefore always run the TN layout.
struct BlockOperand {
  octet_matrix_view view;
  const void* scale_inv;
  int32_t block_rows, block_cols;
};

BlockOperand block_operand(const TensorState& t, int32_t trans, const char* name) {
  if (!trans) {
    require(bool(t.data), "tensor '", name, "' is block-scaled and used as stored: it needs the rowwise usage");
    require(t.scaling_mode != OCTET_SCALING_PER_COLUMN, "tensor '", name,
            "' is per-column scaled and used as stored (trans_", name,
            " = 0): its scales vary along K, so no epilogue can apply them; use it transposed (its columnwise "
            "copy has one scale per row) or quantize it per-row (numerics.md section 16)");
    const TensorState::BlockShape shape = t.block_shape(false);
    return {t.rowwise_view(), t.rowwise_scale_inv.data(), shape.rows, shape.cols};
  }
  require(bool(t.columnwise), "tensor '", name,
          "' is block-scaled and used transposed: it needs the columnwise usage (a copy quantized along the "
          "other dimension)");
  const TensorState::BlockShape shape = t.block_shape(true);
  return {t.columnwise_view(), t.columnwise_scale_inv.data(), shape.rows, shape.cols};
}

octet_block_gemm_args block_scaled_gemm_args(const ContextState& ctx, const TensorState& ta, const TensorState& tb,
                                             TensorState& td, const octet_gemm_options& o, int64_t m, int64_t n,
                                             int64_t k) {
  bool mx_a = ta.scaling_mode == OCTET_SCALING_MXFP8_1X32, mx_b = tb.scaling_mode == OCTET_SCALING_MXFP8_1X32;
  bool fp32_a = ta.scaling_mode == OCTET_SCALING_BLOCK_1X128 || ta.scaling_mode == OCTET_SCALING_BLOCK_128X128;
  bool fp32_b = tb.scaling_mode == OCTET_SCALING_BLOCK_1X128 || tb.scaling_mode == OCTET_SCALING_BLOCK_128X128;
  if (!((mx_a && mx_b) || (fp32_a && fp32_b) || (ta.axiswise() && tb.axiswise())))
    fail(OCTET_STATUS_UNSUPPORTED, "tensors 'a' (", scaling_mode_name(ta.scaling_mode), ") and 'b' (",
         scaling_mode_name(tb.scaling_mode),
         ") cannot be multiplied: block-scaled GEMMs take MXFP8 with MXFP8, 1x128/128x128 with 1x128/128x128, "
         "or per-row/per-column with per-row/per-column");
  require_entry(ctx, (ctx.backend->features & OCTET_FEATURE_BLOCK_GEMM) != 0, "block_gemm");
  BlockOperand a = block_operand(ta, o.trans_a, "a");
  BlockOperand b = block_operand(tb, o.trans_b, "b");
  octet_block_gemm_args args{};
  args.struct_size = sizeof(args);
  args.m = m;
  args.n = n;
  args.k = k;
  args.a = a.view;
  args.b = b.view;
  args.a_scale_inv = a.scale_inv;
  args.b_scale_inv = b.scale_inv;
  args.scale_dtype = ta.scale_inv_dtype();
  args.a_block_rows = a.block_rows;
  args.a_block_cols = a.block_cols;
  args.b_block_rows = b.block_rows;
  args.b_block_cols = b.block_cols;
  args.alpha = o.alpha;
  args.beta = o.beta;
  args.d = td.rowwise_view();
  args.epilogue = o.epilogue;
  args.bias = bias_view(ctx, o, n);
  return args;
}

// FP8 D (users' ABI 1.4). A backend that declares fp8_gemm_output encodes
// the rowwise codes in its GEMM and the core transposes them for a
// columnwise copy; otherwise the GEMM writes FP32 into a workspace and
// quantize encodes it, which is the definition the direct path must match.
void gemm_to_fp8(const std::shared_ptr<ContextState>& context, octet_gemm_args& args, TensorState& td, bool saturate) {
  const ContextState& ctx = *context;
  if (ctx.caps.fp8_gemm_output != 0 && td.data) {
    args.d = td.rowwise_view();
    args.d_saturate = saturate ? 1 : 0;
    args.d_scale = td.scalar(kScale);
    args.d_scale_inv_out = td.scalar(kScaleInv);
    args.d_amax_out = td.scalar(kAmax);
    if (td.columnwise) require_entry(ctx, ctx.api().transpose != nullptr, "transpose");
    call_backend(ctx, "gemm", [&] { return ctx.api().gemm(ctx.handle, &args); });
    if (td.columnwise) {
      octet_matrix_view rowwise = td.rowwise_view();
      octet_matrix_view transposed = td.columnwise_view();
      call_backend(ctx, "transpose", [&] { return ctx.api().transpose(ctx.handle, &rowwise, &transposed); });
    }
    return;
  }
  octet_tensor_desc desc{};
  desc.struct_size = sizeof(desc);
  desc.dtype = OCTET_DTYPE_FP32;
  desc.ndim = 2;
  desc.shape[0] = args.m;
  desc.shape[1] = args.n;
  std::unique_ptr<octet_tensor> r = create_tensor(context, desc, OCTET_MEMORY_WORKSPACE);
  args.d = r->state.rowwise_view();
  call_backend(ctx, "gemm", [&] { return ctx.api().gemm(ctx.handle, &args); });
  quantize_into(context, r->state, td, td.usages, saturate, BlockParams{}, nullptr);
}

}  // namespace

octet_matrix_view bias_view(const ContextState& ctx, const octet_gemm_options& o, int64_t n) {
  if (o.bias == nullptr) return octet_matrix_view{};
  const TensorState& bias = tensor_arg(o.bias, ctx, "options->bias");
  require(is_high_precision(bias.dtype) && !bias.quantized(), "tensor 'options->bias' must be FP32, BF16 or FP16");
  require(bias.numel() == n, "tensor 'options->bias' has ", bias.numel(), " elements but N is ", n);
  return octet_matrix_view{bias.data.data(), bias.dtype, 0, 1, n, n};
}

PreparedGemm prepare_gemm(const std::shared_ptr<ContextState>& context, const TensorState& ta, const TensorState& tb,
                          TensorState& td, const octet_gemm_options& o) {
  PreparedGemm prepared;
  const ContextState& ctx = *context;
  require(o.trans_a == 0 || o.trans_a == 1, "options->trans_a (", o.trans_a, ") must be 0 or 1");
  require(o.trans_b == 0 || o.trans_b == 1, "options->trans_b (", o.trans_b, ") must be 0 or 1");
  require(o.epilogue == OCTET_EPILOGUE_NONE || o.epilogue == OCTET_EPILOGUE_GELU, "options->epilogue (", o.epilogue,
          ") must be OCTET_EPILOGUE_NONE or OCTET_EPILOGUE_GELU");

  bool fp8 = is_fp8(ta.dtype) && is_fp8(tb.dtype);
  bool high = is_high_precision(ta.dtype) && is_high_precision(tb.dtype);
  bool fp4 = ta.dtype == OCTET_DTYPE_E2M1 && tb.dtype == OCTET_DTYPE_E2M1;
  require(fp8 || high || fp4, "tensors 'a' (", dtype_name(ta.dtype), ") and 'b' (", dtype_name(tb.dtype),
          ") must both be FP8 (E4M3/E5M2/E4M3FNUZ/E5M2FNUZ), both FP4 (E2M1) or both FP32/BF16/FP16");
  require(!fp8 || is_fnuz(ta.dtype) == is_fnuz(tb.dtype), "tensors 'a' (", dtype_name(ta.dtype), ") and 'b' (",
          dtype_name(tb.dtype), ") mix an OCP FP8 format with an FNUZ one; both must be OCP (E4M3/E5M2) or both FNUZ");
  require(o.fast_accumulation == 0 || o.fast_accumulation == 1, "options->fast_accumulation (", o.fast_accumulation,
          ") must be 0 or 1");
  const bool fp8_out = is_fp8(td.dtype);
  if (fp8_out) {
    require(!fp8 || is_fnuz(td.dtype) == is_fnuz(ta.dtype), "tensor 'd' (", dtype_name(td.dtype),
            ") and the operands (", dtype_name(ta.dtype), ") mix an OCP FP8 format with an FNUZ one");
    require(td.quantized() && !td.block_scaled(), "tensor 'd' is ", dtype_name(td.dtype),
            ": an FP8 GEMM output must be a per-tensor quantized tensor (usages != 0, per-tensor scaling), "
            "whose SCALE sets the encoding");
    require(o.beta == 0.0f, "options->beta (", o.beta,
            ") must be 0 when tensor 'd' is FP8: FP8 codes are not accumulated into");
    require(o.saturate_output == 0 || o.saturate_output == 1, "options->saturate_output (", o.saturate_output,
            ") must be 0 or 1");
  } else {
    require(is_high_precision(td.dtype) && !td.quantized(),
            "tensor 'd' must be a plain FP32, BF16 or FP16 tensor, or a per-tensor quantized FP8 tensor");
  }

  const int64_t m = o.trans_a ? ta.cols : ta.rows;
  const int64_t k = o.trans_a ? ta.rows : ta.cols;
  const int64_t n = o.trans_b ? tb.cols : tb.rows;
  const int64_t kb = o.trans_b ? tb.rows : tb.cols;
  require(k == kb, "inner dimensions differ: 'a' gives K = ", k, " (trans_a = ", o.trans_a, "), 'b' gives K = ", kb,
          " (trans_b = ", o.trans_b, ")");
  require(td.rows == m && td.cols == n, "tensor 'd' is ", td.rows, "x", td.cols, " but the product is ", m, "x", n);

  if (fp4) {
    if (fp8_out)
      fail(OCTET_STATUS_UNSUPPORTED, "tensor 'd' is ", dtype_name(td.dtype),
           ": FP4 GEMMs write FP32, BF16 or FP16 only");
    prepared.entry = PreparedGemm::Entry::Fp4Gemm;
    prepared.fp4 = fp4_gemm_args(ctx, ta, tb, td, o, m, n, k);
    return prepared;
  }
  if (ta.block_scaled() || tb.block_scaled()) {
    if (fp8_out)
      fail(OCTET_STATUS_UNSUPPORTED, "tensor 'd' is ", dtype_name(td.dtype),
           ": block-scaled GEMMs write FP32, BF16 or FP16 only");
    prepared.entry = PreparedGemm::Entry::BlockGemm;
    prepared.block = block_scaled_gemm_args(ctx, ta, tb, td, o, m, n, k);
    return prepared;
  }
  octet_gemm_args& args = prepared.gemm;
  args.struct_size = sizeof(args);
  args.m = m;
  args.n = n;
  args.k = k;
  args.alpha = o.alpha;
  args.beta = o.beta;
  args.epilogue = o.epilogue;
  args.fast_accumulation = o.fast_accumulation;
  args.d = td.rowwise_view();
  args.bias = bias_view(ctx, o, n);
  if (fp8) {
    require((ctx.caps.dtypes & OCTET_DTYPE_BIT(ta.dtype)) && (ctx.caps.dtypes & OCTET_DTYPE_BIT(tb.dtype)), "backend '",
            ctx.backend->name, "' does not declare the FP8 dtypes of 'a' and 'b'");
    args.a_scale_inv = ta.quantized() ? ta.scalar(kScaleInv) : nullptr;
    args.b_scale_inv = tb.quantized() ? tb.scalar(kScaleInv) : nullptr;
  }
  require_entry(ctx, ctx.api().gemm != nullptr, "gemm");

  const bool native = ctx.caps.native_columnwise != 0;
  std::vector<Operand> a_options = candidates(ta, o.trans_a, native);
  std::vector<Operand> b_options = candidates(tb, o.trans_b, native);
  require(!a_options.empty() && !b_options.empty(), "an operand has no stored data");
  const uint32_t layouts = fp8 ? ctx.caps.fp8_gemm_layouts : uint32_t(OCTET_GEMM_LAYOUT_ALL);
  bool chosen = false;
  for (const Operand& oa : a_options) {
    for (const Operand& ob : b_options) {
      if (!chosen && (layouts & layout_of(oa.trans, ob.trans))) {
        args.a = oa.view;
        args.trans_a = oa.trans;
        args.b = ob.view;
        args.trans_b = ob.trans;
        chosen = true;
      }
    }
  }
  // No stored copy fits: make K-contiguous copies (the TN layout) here.
  if (!chosen) {
    if (!(layouts & OCTET_GEMM_LAYOUT_TN))
      fail(OCTET_STATUS_UNSUPPORTED, "backend '", ctx.backend->name, "' declares no usable FP8 GEMM layout");
    require_entry(ctx, ctx.api().transpose != nullptr, "transpose");
    auto k_contiguous = [&](const Operand& op, Buffer& workspace) {
      if (!op.trans) return op;
      workspace =
          Buffer(context, size_t(op.view.rows * op.view.cols) * dtype_size(op.view.dtype), OCTET_MEMORY_WORKSPACE);
      octet_matrix_view t{workspace.data(), op.view.dtype, 0, op.view.cols, op.view.rows, op.view.rows};
      call_backend(ctx, "transpose", [&] { return ctx.api().transpose(ctx.handle, &op.view, &t); });
      return Operand{t, 0};
    };
    Operand oa = k_contiguous(a_options.front(), prepared.a_workspace);
    Operand ob = k_contiguous(b_options.front(), prepared.b_workspace);
    args.a = oa.view;
    args.trans_a = 0;
    args.b = ob.view;
    args.trans_b = 0;
  }
  return prepared;
}

void run_prepared(const ContextState& ctx, const PreparedGemm& p) {
  switch (p.entry) {
    case PreparedGemm::Entry::Gemm:
      call_backend(ctx, "gemm", [&] { return ctx.api().gemm(ctx.handle, &p.gemm); });
      return;
    case PreparedGemm::Entry::BlockGemm:
      call_backend(ctx, "block_gemm", [&] { return ctx.api().block_gemm(ctx.handle, &p.block); });
      return;
    case PreparedGemm::Entry::Fp4Gemm:
      call_backend(ctx, "fp4_gemm", [&] { return ctx.api().fp4_gemm(ctx.handle, &p.fp4); });
      return;
  }
}

void run_gemm(const std::shared_ptr<ContextState>& context, const TensorState& ta, const TensorState& tb,
              TensorState& td, const octet_gemm_options& o) {
  PreparedGemm prepared = prepare_gemm(context, ta, tb, td, o);
  if (is_fp8(td.dtype)) {
    gemm_to_fp8(context, prepared.gemm, td, o.saturate_output != 0);
    return;
  }
  run_prepared(*context, prepared);
}

}  // namespace octet::core

using namespace octet::core;

extern "C" OCTET_API octet_status octet_gemm(octet_context* context, const octet_tensor* a, const octet_tensor* b,
                                             octet_tensor* d, const octet_gemm_options* options) {
  return guarded("octet_gemm", [&] {
    const ContextState& ctx = context_arg(context);
    const TensorState& ta = tensor_arg(a, ctx, "a");
    const TensorState& tb = tensor_arg(b, ctx, "b");
    TensorState& td = tensor_arg(d, ctx, "d");
    require_allowed_scalar(ta, kScaleInv, "a");
    require_allowed_scalar(tb, kScaleInv, "b");
    if (is_fp8(td.dtype)) require_allowed_scalar(td, kScale, "d");
    run_gemm(context->state, ta, tb, td, read_versioned(options, gemm_defaults(), "options"));
  });
}

// The struct as users' ABI 1.0-1.3 callers know it: sizeof of the 1.3 layout, which
// ends where the 1.4 fields begin (after its tail padding, reserved_padding).
// The unsized symbol must never write past that.
constexpr size_t kGemmOptionsSize13 = offsetof(octet_gemm_options, fast_accumulation);

extern "C" OCTET_API octet_status(octet_gemm_options_init)(octet_gemm_options* options) {
  return guarded("octet_gemm_options_init", [&] {
    require(options != nullptr, "argument 'options' is NULL");
    write_defaults(gemm_defaults(), options, kGemmOptionsSize13);
  });
}

extern "C" OCTET_API octet_status octet_gemm_options_init_sized(octet_gemm_options* options, size_t struct_size) {
  return guarded("octet_gemm_options_init_sized", [&] { init_sized(options, gemm_defaults(), struct_size); });
}
