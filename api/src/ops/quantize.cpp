#include "ops/quantize.hpp"

#include "ops/fp4.hpp"

#include "runtime/error.hpp"
#include "runtime/versioned_struct.hpp"
#include "tensor/dtype.hpp"

namespace octet::core {
namespace {

// Device memory for one statistics record, copied back into the user's struct.
class StatsSlot {
 public:
  StatsSlot(const std::shared_ptr<ContextState>& ctx, octet_quantize_stats* out) : out_(out) {
    if (out_ != nullptr) buffer_ = Buffer(ctx, sizeof(octet_quantize_statistics), OCTET_MEMORY_WORKSPACE);
  }
  octet_quantize_statistics* device() const {
    return out_ ? static_cast<octet_quantize_statistics*>(buffer_.data()) : nullptr;
  }
  void publish(uint64_t total) const {
    if (out_ == nullptr) return;
    octet_quantize_statistics s{};
    buffer_.copy_to_host(&s, sizeof(s));
    out_->nan_count = s.nan_count;
    out_->saturated_count = s.saturated_count;
    out_->flushed_count = s.flushed_count;
    out_->total_count = total;
    out_->amax = s.amax;
  }

 private:
  octet_quantize_stats* out_;
  Buffer buffer_;
};

void quantize_blocks(const std::shared_ptr<ContextState>& context, const TensorState& in, TensorState& out,
                     uint32_t usages, const BlockParams& block, const StatsSlot& stats) {
  const ContextState& ctx = *context;
  require_entry(ctx, (ctx.backend->features & OCTET_FEATURE_BLOCK_QUANTIZE) != 0, "block_quantize");
  octet_block_quantize_args args{};
  args.struct_size = sizeof(args);
  args.input = in.rowwise_view();
  args.out_dtype = out.dtype;
  args.scale_dtype = out.scale_inv_dtype();
  args.e8m0_rounding = block.e8m0_rounding;
  args.power_of_two = block.power_of_two;
  args.amax_epsilon = block.amax_epsilon;
  args.amax_out = out.scalar(kAmax);
  bool stats_taken = false;
  // Each usage is quantized from the high-precision input: a columnwise
  // block is a run down a column, with its own scale.
  for (bool columnwise : {false, true}) {
    uint32_t usage = columnwise ? OCTET_USAGE_COLUMNWISE : OCTET_USAGE_ROWWISE;
    if (!(usages & usage)) continue;
    args.transposed = columnwise ? 1 : 0;
    const TensorState::BlockShape shape = out.block_shape(columnwise);
    args.block_rows = shape.rows;
    args.block_cols = shape.cols;
    args.out = static_cast<uint8_t*>(columnwise ? out.columnwise.data() : out.data.data());
    args.scale_inv_out = columnwise ? out.columnwise_scale_inv.data() : out.rowwise_scale_inv.data();
    args.stats_out = stats_taken ? nullptr : stats.device();
    stats_taken = true;
    call_backend(ctx, "block_quantize", [&] { return ctx.api().block_quantize(ctx.handle, &args); });
  }
}

// A per-tensor quantize of `out` (dtype, scale, SCALE_INV, AMAX), with no
// input and no copy chosen yet.
octet_quantize_args quantize_args_into(const TensorState& out, bool saturate) {
  octet_quantize_args args{};
  args.struct_size = sizeof(args);
  args.out_dtype = out.dtype;
  args.saturate = saturate ? 1 : 0;
  args.scale = out.scalar(kScale);
  args.scale_inv_out = out.scalar(kScaleInv);
  args.amax_out = out.scalar(kAmax);
  return args;
}

// The rowwise codes are written for the rowwise usage, and for the
// columnwise one where the backend reads columns natively.
bool writes_rowwise(const ContextState& ctx, uint32_t usages) {
  return (usages & OCTET_USAGE_ROWWISE) || ((usages & OCTET_USAGE_COLUMNWISE) && ctx.caps.native_columnwise != 0);
}

}  // namespace

bool one_pass_quantize_args(const ContextState& ctx, TensorState& out, uint32_t usages, bool saturate,
                            octet_quantize_args& args) {
  const bool transposed = (usages & OCTET_USAGE_COLUMNWISE) && bool(out.columnwise);
  if (transposed && ctx.caps.fused_cast_transpose == 0) return false;
  args = quantize_args_into(out, saturate);
  args.rowwise_out = writes_rowwise(ctx, usages) ? static_cast<uint8_t*>(out.data.data()) : nullptr;
  args.columnwise_out = transposed ? static_cast<uint8_t*>(out.columnwise.data()) : nullptr;
  return true;
}

octet_quantize_options quantize_defaults() {
  octet_quantize_options o{};
  o.struct_size = sizeof(o);
  o.saturate = 1;
  return o;
}

float amax_on_backend(const std::shared_ptr<ContextState>& context, const TensorState& in) {
  const ContextState& ctx = *context;
  require_entry(ctx, ctx.api().amax != nullptr, "amax");
  Buffer result(context, sizeof(float), OCTET_MEMORY_WORKSPACE);
  octet_matrix_view view = in.rowwise_view();
  call_backend(ctx, "amax", [&] { return ctx.api().amax(ctx.handle, &view, static_cast<float*>(result.data())); });
  float value = 0.0f;
  result.copy_to_host(&value, sizeof(value));
  return value;
}

Fp4Params fp4_params_of(const octet_quantize_options& o) {
  require(o.stochastic_rounding == 0 || o.stochastic_rounding == 1, "options->stochastic_rounding (",
          o.stochastic_rounding, ") must be 0 or 1");
  require(o.hadamard_transform == 0 || o.hadamard_transform == 1, "options->hadamard_transform (", o.hadamard_transform,
          ") must be 0 or 1");
  Fp4Params p;
  p.stochastic_rounding = o.stochastic_rounding != 0;
  p.hadamard_transform = o.hadamard_transform != 0;
  p.seed = o.seed;
  p.offset = o.offset;
  return p;
}

octet_quantize_options read_quantize_options(const octet_quantize_options* options) {
  return read_versioned(options, quantize_defaults(), "options");
}

uint32_t check_quantize(const ContextState& ctx, const TensorState& in, const TensorState& out, uint32_t requested) {
  (void)ctx;
  require(is_high_precision(in.dtype) && !in.quantized(), "tensor 'input' must be a plain FP32, BF16 or FP16 tensor (it is ",
          dtype_name(in.dtype), ")");
  require(out.quantized(),
          "tensor 'output' must be a quantized tensor (an FP8 or E2M1 dtype created with usages != 0)");
  require_same_shape(in, "input", out, "output");
  uint32_t usages = requested == 0 ? out.usages : requested;
  require((usages & ~out.usages) == 0, "options->usages (", requested,
          ") asks for a usage tensor 'output' was not created with (", out.usages, ")");
  return usages;
}

void quantize_into(const std::shared_ptr<ContextState>& context, const TensorState& in, TensorState& out,
                   uint32_t usages, bool saturate, const BlockParams& block, octet_quantize_stats* stats_out,
                   const Fp4Params* fp4) {
  const ContextState& ctx = *context;
  if (out.fp4()) {
    require(saturate,
            "options->saturate must be 1 for an FP4 output: block scales are chosen so that nothing "
            "overflows, and E2M1 has no code for an overflow");
    Fp4Params params = fp4 != nullptr ? *fp4 : Fp4Params{};
    params.e8m0_rounding = fp4 != nullptr ? fp4->e8m0_rounding : block.e8m0_rounding;
    StatsSlot stats(context, stats_out);
    quantize_fp4(context, in, out, usages, params, stats.device());
    stats.publish(uint64_t(in.numel()));
    return;
  }
  require(fp4 == nullptr || (!fp4->stochastic_rounding && !fp4->hadamard_transform),
          "options->stochastic_rounding and options->hadamard_transform apply to FP4 outputs only (tensor 'output' is ",
          dtype_name(out.dtype), ")");
  if (stats_out != nullptr && !out.block_scaled())
    require_entry(ctx, (ctx.backend->features & OCTET_FEATURE_QUANTIZE_STATISTICS) != 0,
                  "quantize_with_statistics");
  StatsSlot stats(context, stats_out);
  if (out.block_scaled()) {
    require(saturate, "options->saturate must be 1 for a block-scaled output: block scales are chosen so that "
                      "nothing overflows, and MX conversion always saturates");
    quantize_blocks(context, in, out, usages, block, stats);
    stats.publish(uint64_t(in.numel()));
    return;
  }
  require_entry(ctx, ctx.api().quantize != nullptr, "quantize");
  octet_quantize_args args{};
  auto run_quantize = [&] {
    if (stats.device() != nullptr)
      call_backend(ctx, "quantize_with_statistics",
                   [&] { return ctx.api().quantize_with_statistics(ctx.handle, &args, stats.device()); });
    else
      call_backend(ctx, "quantize", [&] { return ctx.api().quantize(ctx.handle, &args); });
  };
  if (one_pass_quantize_args(ctx, out, usages, saturate, args)) {
    args.input = in.rowwise_view();
    run_quantize();
    stats.publish(uint64_t(in.numel()));
    return;
  }
  require_entry(ctx, ctx.api().transpose != nullptr, "transpose");
  args = quantize_args_into(out, saturate);
  args.input = in.rowwise_view();
  // No fused cast+transpose: quantize rowwise, then transpose the codes.
  Buffer scratch;
  uint8_t* rowwise = static_cast<uint8_t*>(out.data.data());
  if (!writes_rowwise(ctx, usages) || rowwise == nullptr) {
    scratch = Buffer(context, size_t(out.numel()), OCTET_MEMORY_WORKSPACE);
    rowwise = static_cast<uint8_t*>(scratch.data());
  }
  args.rowwise_out = rowwise;
  run_quantize();
  octet_matrix_view src{rowwise, out.dtype, 0, out.rows, out.cols, out.cols};
  octet_matrix_view dst = out.columnwise_view();
  call_backend(ctx, "transpose", [&] { return ctx.api().transpose(ctx.handle, &src, &dst); });
  stats.publish(uint64_t(in.numel()));
}

}  // namespace octet::core

// The struct as users' ABI 1.0-1.7 callers know it: it ends where the 1.8
// fields begin. The unsized symbol must never write past that.
constexpr size_t kQuantizeOptionsSize17 = offsetof(octet_quantize_options, stochastic_rounding);

extern "C" OCTET_API octet_status(octet_quantize_options_init)(octet_quantize_options* options) {
  return octet::core::guarded("octet_quantize_options_init", [&] {
    octet::core::require(options != nullptr, "argument 'options' is NULL");
    octet::core::write_defaults(octet::core::quantize_defaults(), options, kQuantizeOptionsSize17);
  });
}

extern "C" OCTET_API octet_status octet_quantize_options_init_sized(octet_quantize_options* options,
                                                                    size_t struct_size) {
  return octet::core::guarded("octet_quantize_options_init_sized",
                              [&] { octet::core::init_sized(options, octet::core::quantize_defaults(), struct_size); });
}
