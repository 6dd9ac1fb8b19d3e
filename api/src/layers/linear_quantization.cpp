// Which GEMMs of a linear run in FP8, and quantizing through its
// quantizers: the quantizer's own steps (quantize_through, quantize_into),
// with the tensors the layer needs.
#include "layers/linear_quantization.hpp"

#include "layers/layer_tensors.hpp"
#include "ops/quantize.hpp"

namespace octet::core {

Precision precision_of(const std::shared_ptr<const RecipeState>& r) {
  Precision precision;
  if (!r) return precision;
  precision.recipe = r;
  const bool delayed = r->kind == OCTET_RECIPE_DELAYED;
  precision.fprop = !(delayed && r->delayed.override_fprop);
  precision.dgrad = !(delayed && r->delayed.override_dgrad);
  precision.wgrad =
      !(delayed && r->delayed.override_wgrad) && !(r->kind == OCTET_RECIPE_ROWWISE && r->rowwise.high_precision_wgrad);
  return precision;
}

const std::shared_ptr<QuantizerState>& quantizer(LinearUnit& linear, int32_t role) {
  return linear.quantizers[size_t(role)]->state;
}

bool fusable(const RecipeState& r) { return r.per_tensor() && r.kind != OCTET_RECIPE_CURRENT && !r.observes(); }

TensorPtr make_role(const ContextPtr& ctx, const RecipeState& r, int32_t role, int64_t rows, int64_t cols,
                    uint32_t usages) {
  return make_fp8(ctx, r.dtype_for(role), rows, cols, usages, r.scaling_mode_for(role));
}

Quantized quantize_role(const ContextPtr& ctx, LinearUnit& linear, int32_t role,
                        const std::shared_ptr<const RecipeState>& r, const TensorState& in, uint32_t usages,
                        TensorPtr into, const float* reduced_amax) {
  Quantized out;
  out.tensor = into ? into : make_role(ctx, *r, role, in.rows, in.cols, usages);
  out.scale =
      quantize_through(ctx, quantizer(linear, role), r, in, out.tensor->state, usages, true, nullptr, reduced_amax);
  return out;
}

KeptScale keep_scale(const ContextPtr& ctx, const TensorState& t, const UsedScale& used) {
  KeptScale kept;
  kept.host = used.host;
  if (used.on_device && t.scaling_mode == OCTET_SCALING_PER_TENSOR) {  // block scales: from the data
    kept.device = std::make_shared<Buffer>(ctx, sizeof(float), OCTET_MEMORY_SAVED_ACTIVATIONS);
    copy_floats(*ctx, t.scalar(kScale), static_cast<float*>(kept.device->data()), 1);
  }
  return kept;
}

TensorPtr requantize(const ContextPtr& ctx, const TensorState& in, const RecipeState& r, int32_t role, uint32_t usages,
                     const KeptScale& scale) {
  TensorPtr t = make_role(ctx, r, role, in.rows, in.cols, usages);
  if (r.per_tensor()) {
    if (scale.device)
      copy_floats(*ctx, static_cast<const float*>(scale.device->data()), t->state.scalar(kScale), 1);
    else
      write_scale(t->state, scale.host);
  }
  // FP4: the input and weight roles draw no random bits, so the stream does
  // not matter; the transform's signs come from the recipe's seed.
  const Fp4Params fp4 = r.fp4_params(role, 0, in.rows);
  quantize_into(ctx, in, t->state, usages, true, r.block_params(), nullptr, r.fp4() ? &fp4 : nullptr);
  return t;
}

}  // namespace octet::core
