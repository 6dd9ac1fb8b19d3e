// One linear, y = x W^T + b: its forward (high precision or FP8, per GEMM)
// and its backward in three phases.
#include "layers/linear.hpp"

#include <vector>

#include "layers/layer_tensors.hpp"
#include "ops/gemm.hpp"
#include "ops/quantize.hpp"
#include "runtime/error.hpp"
#include "tensor/dtype.hpp"

namespace octet::core {
namespace {

// Usages of the FP8 weight in forward: rowwise for fprop, plus the
// columnwise usage when a backward (or a cached weight) will read W
// transposed and needs a copy for it:
// - block recipes: always (the columnwise usage is its own quantization of
//   W^T, numerics.md section 11);
// - per-tensor recipes: only where the backend has no native columnwise
//   access (TN-only FP8 GEMMs). dgrad then reads the transposed codes, and
//   writing them in forward's fused cast+transpose pass costs N x K bytes
//   written, where transposing the rowwise codes in backward reads and
//   writes N x K each (and needs an N x K workspace), per micro-batch for a
//   cached weight. With native access dgrad reads the rowwise codes as they
//   are.
// An FP8-only weight is the stored parameter: rowwise, as it is.
uint32_t weight_usages(const ContextState& ctx, const LayerState& layer, const RecipeState& r, bool training,
                       bool dgrad) {
  if (layer.options.weight_storage == OCTET_WEIGHTS_FP8_ONLY) return OCTET_USAGE_ROWWISE;
  if (r.per_tensor() && ctx.caps.native_columnwise) return OCTET_USAGE_ROWWISE;
  if ((training && dgrad && !layer.options.minimize_memory) || layer.options.weight_cache)
    return OCTET_USAGE_ROWWISE | OCTET_USAGE_COLUMNWISE;
  return OCTET_USAGE_ROWWISE;
}

const TensorState* weight_hp(const LayerState& layer, const LinearUnit& linear) {
  if (fp8_only(layer)) return nullptr;
  const TensorState* w = layer.params[linear.weight].tensor();
  require(w != nullptr, "parameter '", layer.params[linear.weight].name,
          "' is not set: the layer was created with skip_weight_allocation; give it with octet_layer_set_weight");
  return w->quantized() ? nullptr : w;
}

// An FP8 weight given with octet_layer_set_weight, checked against the
// precision this forward runs with; null if the weight is high precision.
// Non-owning: set_weight's contract keeps it alive until backward.
TensorPtr given_fp8_weight(const LayerState& layer, const LinearUnit& linear, const Precision& precision,
                           bool training) {
  const Parameter& param = layer.params[linear.weight];
  if (fp8_only(layer) || param.borrowed == nullptr || !param.borrowed->state.quantized()) return nullptr;
  const TensorState& w = param.borrowed->state;
  require(precision.recipe != nullptr, "parameter '", param.name,
          "' was given as an FP8 tensor (octet_layer_set_weight): forward needs an FP8 recipe (the layer's or an "
          "autocast scope's)");
  const RecipeState& r = *precision.recipe;
  require(r.per_tensor() && w.dtype == r.dtype_for(OCTET_ROLE_WEIGHT), "parameter '", param.name, "' was given as ",
          dtype_name(w.dtype), " per-tensor codes but the recipe's weight role is ",
          dtype_name(r.dtype_for(OCTET_ROLE_WEIGHT)), " ", scaling_mode_name(r.scaling_mode_for(OCTET_ROLE_WEIGHT)));
  require(precision.fprop && (!training || precision.dgrad), "parameter '", param.name,
          "' was given as an FP8 tensor but the recipe overrides a GEMM that reads the weight to high precision, "
          "and the layer has no high-precision copy");
  return TensorPtr(TensorPtr{}, const_cast<octet_tensor*>(param.borrowed));
}

octet_gemm_options gemm_options(int32_t trans_a, int32_t trans_b, float beta, const octet_tensor* bias) {
  octet_gemm_options o{};
  o.struct_size = sizeof(o);
  o.trans_a = trans_a;
  o.trans_b = trans_b;
  o.alpha = 1.0f;
  o.beta = beta;
  o.bias = bias;
  return o;
}

void keep_high_precision_input(LayerState& layer, const LinearInput& x, SavedLinear& saved_linear) {
  if (layer.options.save_original_input && x.caller != nullptr) {
    saved_linear.x_borrowed = x.caller;
  } else if (x.owned) {
    x.owned->state.recategorize(OCTET_MEMORY_SAVED_ACTIVATIONS);
    saved_linear.x_hp = x.owned;
  } else {
    saved_linear.x_hp = copy_of(layer.ctx, *x.hp, OCTET_MEMORY_SAVED_ACTIVATIONS);
  }
}

TensorPtr bias_sums(const ContextPtr& ctx, const TensorState& dy, const octet_quantize_args* fused) {
  const ContextState& c = *ctx;
  require_entry(c, has_feature(c, OCTET_FEATURE_BIAS_GRADIENT), "bias_gradient");
  TensorPtr sums = make_plain(ctx, OCTET_DTYPE_FP32, 1, dy.cols, OCTET_MEMORY_WORKSPACE);
  octet_bias_gradient_args a{};
  a.struct_size = sizeof(a);
  a.grad_output = dy.rowwise_view();
  a.sums_out = static_cast<float*>(sums->state.data.data());
  a.quantize = fused;
  call_backend(c, "bias_gradient", [&] { return c.api().bias_gradient(c.handle, &a); });
  return sums;
}

// A cached FP8 weight that this forward can use as it is.
bool cache_fits(const ContextState& ctx, const LayerState& layer, const LinearUnit& linear, const RecipeState& r,
                bool training, bool dgrad) {
  const TensorPtr& cached = linear.cached_weight;
  const uint32_t w_usages = weight_usages(ctx, layer, r, training, dgrad);
  return layer.options.weight_cache && cached && cached->state.dtype == r.dtype_for(OCTET_ROLE_WEIGHT) &&
         cached->state.scaling_mode == r.scaling_mode_for(OCTET_ROLE_WEIGHT) &&
         (cached->state.usages & w_usages) == w_usages;
}

}  // namespace

uint32_t input_usages(const LayerState& layer, const Precision& precision, bool training) {
  if (!precision.recipe) return 0;
  const bool save_original = layer.options.save_original_input != 0;
  uint32_t usages = precision.fprop ? OCTET_USAGE_ROWWISE : 0;
  if (training && precision.wgrad && !save_original) usages |= OCTET_USAGE_COLUMNWISE;
  return usages;
}

bool forward_quantizes_weight(const LayerState& layer, const LinearUnit& linear, const Precision& precision,
                              bool training) {
  if (!precision.recipe || fp8_only(layer)) return false;
  const TensorState* given = layer.params[linear.weight].tensor();
  if (given != nullptr && given->quantized()) return false;  // an FP8 weight given with set_weight
  if (!(precision.fprop || (training && precision.dgrad))) return false;
  return !cache_fits(*layer.ctx, layer, linear, *precision.recipe, training, precision.dgrad);
}

void linear_forward(LayerState& layer, LinearUnit& linear, const Precision& precision, bool training, LinearInput x,
                    TensorState& y, SavedLinear* saved_linear, const ReducedAmaxes& reduced) {
  const ContextPtr& ctx = layer.ctx;
  const octet_tensor* bias = linear.bias >= 0 ? layer.params[size_t(linear.bias)].value.get() : nullptr;
  const TensorState* w_hp = weight_hp(layer, linear);
  const TensorPtr w_given = given_fp8_weight(layer, linear, precision, training);
  if (!precision.recipe) {
    run_gemm(ctx, *x.hp, *w_hp, y, gemm_options(0, 0, 0.0f, bias));
    if (training) {
      saved_linear->w_hp = w_hp;
      keep_high_precision_input(layer, x, *saved_linear);
    }
    return;
  }
  // Input: rowwise for this GEMM, columnwise kept for the weight gradient
  // (both from one fused cast+transpose pass where the backend has it).
  const uint32_t x_usages = input_usages(layer, precision, training);
  // Current scaling with reduce_amax: x's and W's amaxes in one call.
  const bool quantize_x = !x.quantized && x_usages != 0;
  const bool quantize_w = forward_quantizes_weight(layer, linear, precision, training);
  ReducedAmaxes amaxes = reduced;
  std::vector<const TensorState*> pending;
  if (quantize_x && !amaxes.has_x) pending.push_back(x.hp);
  if (quantize_w && !amaxes.has_w) pending.push_back(w_hp);
  const std::vector<float> batch = reduce_amaxes(ctx, *precision.recipe, pending);
  if (!batch.empty()) {
    size_t next = 0;
    if (quantize_x && !amaxes.has_x) amaxes.has_x = true, amaxes.x = batch[next++];
    if (quantize_w && !amaxes.has_w) amaxes.has_w = true, amaxes.w = batch[next++];
  }
  if (quantize_x) {
    Quantized q = quantize_role(ctx, linear, OCTET_ROLE_INPUT, precision.recipe, *x.hp, x_usages, nullptr,
                                amaxes.has_x ? &amaxes.x : nullptr);
    x.quantized = q.tensor;
    x.scale = q.scale;
  }
  // Weight: rowwise, and the copy dgrad reads where it needs one (see
  // weight_usages).
  TensorPtr w_q;
  UsedScale w_scale;
  const RecipeState& r = *precision.recipe;
  if (precision.fprop || (training && precision.dgrad)) {
    const uint32_t w_usages = weight_usages(*ctx, layer, r, training, precision.dgrad);
    if (fp8_only(layer) || w_given) {
      w_q = w_given ? w_given : layer.params[linear.weight].value;
      // Its scale stays where it is on the device path (kept from SCALE).
      w_scale.on_device = device_scaling(*ctx);
      if (!w_scale.on_device) w_scale.host = read_scalar(w_q->state, kScale);
    } else if (!quantize_w) {  // the cache fits
      w_q = linear.cached_weight;
      w_scale = linear.cached_scale;
    } else {
      Quantized q = quantize_role(ctx, linear, OCTET_ROLE_WEIGHT, precision.recipe, *w_hp, w_usages, nullptr,
                                  amaxes.has_w ? &amaxes.w : nullptr);
      w_q = q.tensor;
      w_scale = q.scale;
      if (layer.options.weight_cache) {
        linear.cached_weight = w_q;
        linear.cached_scale = w_scale;
      }
    }
  }
  if (precision.fprop)
    run_gemm(ctx, x.quantized->state, w_q->state, y, gemm_options(0, 0, 0.0f, bias));
  else
    run_gemm(ctx, *x.hp, *w_hp, y, gemm_options(0, 0, 0.0f, bias));
  if (!training) return;

  saved_linear->fp8_fprop = precision.fprop;
  saved_linear->fp8_dgrad = precision.dgrad;
  saved_linear->fp8_wgrad = precision.wgrad;
  saved_linear->w_hp = w_hp;
  const bool save_original = layer.options.save_original_input != 0;
  if (precision.wgrad && !save_original) {
    keep_columnwise_only(x.quantized->state);
    x.quantized->state.recategorize(OCTET_MEMORY_SAVED_ACTIVATIONS);
    saved_linear->x_q = x.quantized;
  } else {
    keep_high_precision_input(layer, x, *saved_linear);
    if (precision.fprop && x.quantized) saved_linear->x_scale = keep_scale(ctx, x.quantized->state, x.scale);
  }
  if (precision.dgrad) {
    const bool shared = fp8_only(layer) || w_given || layer.options.weight_cache;
    if (shared || !layer.options.minimize_memory) {
      // dgrad reads the columnwise copy where there is one: the rowwise
      // codes of a weight quantized for this step alone can go.
      if (!shared && w_q->state.columnwise) keep_columnwise_only(w_q->state);
      saved_linear->w_q = w_q;
    } else
      saved_linear->w_scale = keep_scale(ctx, w_q->state, w_scale);  // backward quantizes the weight again
  }
}

PreparedGradOutput linear_backward_quantize(LayerState& layer, LinearUnit& linear,
                                            const std::shared_ptr<const RecipeState>& r,
                                            const SavedLinear& saved_linear, const TensorState& dy, bool has_dx) {
  const ContextPtr& ctx = layer.ctx;
  Parameter* bias = linear.bias >= 0 ? &layer.params[size_t(linear.bias)] : nullptr;
  const bool fp8 = r != nullptr;
  PreparedGradOutput prepared;
  uint32_t& dy_usages = prepared.dy_usages;
  if (fp8 && saved_linear.fp8_dgrad && has_dx) dy_usages |= OCTET_USAGE_ROWWISE;
  if (fp8 && saved_linear.fp8_wgrad && !fp8_only(layer)) dy_usages |= OCTET_USAGE_COLUMNWISE;

  // dy: its FP8 copies, and the bias gradient (fused into the same pass when
  // the scale is known beforehand: delayed and static scaling).
  TensorPtr& dy_q = prepared.dy_q;
  TensorPtr& sums = prepared.sums;
  if (dy_usages != 0) {
    octet_quantize_args qa{};
    TensorPtr t = make_role(ctx, *r, OCTET_ROLE_GRADIENT, dy.rows, dy.cols, dy_usages);
    if (bias != nullptr && fusable(*r) && one_pass_quantize_args(*ctx, t->state, dy_usages, true, qa)) {
      const std::shared_ptr<QuantizerState>& q = quantizer(linear, OCTET_ROLE_GRADIENT);
      const UsedScale scale = quantizer_prepare(ctx, *q, *r, dy, t->state);
      sums = bias_sums(ctx, dy, &qa);
      quantizer_commit(ctx, q, r, t->state, scale, nullptr);
      dy_q = t;
    } else {
      if (bias != nullptr) sums = bias_sums(ctx, dy, nullptr);
      dy_q = quantize_role(ctx, linear, OCTET_ROLE_GRADIENT, r, dy, dy_usages, t).tensor;
    }
  } else if (bias != nullptr) {
    sums = bias_sums(ctx, dy, nullptr);
  }
  return prepared;
}

void linear_backward_dgrad(LayerState& layer, const std::shared_ptr<const RecipeState>& r, SavedLinear& saved_linear,
                           const PreparedGradOutput& prepared, const TensorState& dy, TensorState* dx) {
  const ContextPtr& ctx = layer.ctx;
  const bool fp8 = r != nullptr;
  const TensorPtr& dy_q = prepared.dy_q;
  // dgrad: dx = dy W (dy rowwise, W columnwise).
  if (dx != nullptr) {
    if (fp8 && saved_linear.fp8_dgrad) {
      TensorPtr w_q = saved_linear.w_q;
      // minimize_memory: the forward's codes again, straight into the usage
      // dgrad reads (per-tensor: where columns are not read natively, the
      // fused pass writes the transposed copy, with no rowwise copy and no
      // transpose in the GEMM adaptation; block recipes: W^T's own blocks).
      if (!w_q)
        w_q = requantize(ctx, *saved_linear.w_hp, *r, OCTET_ROLE_WEIGHT, OCTET_USAGE_COLUMNWISE, saved_linear.w_scale);
      run_gemm(ctx, dy_q->state, w_q->state, *dx, gemm_options(0, 1, 0.0f, nullptr));
      if (prepared.dy_usages & OCTET_USAGE_COLUMNWISE) keep_columnwise_only(dy_q->state);
    } else {
      run_gemm(ctx, dy, *saved_linear.w_hp, *dx, gemm_options(0, 1, 0.0f, nullptr));
    }
  }
  saved_linear.w_q.reset();  // the weight copy is no longer needed (a cache keeps its own)
}

void linear_backward_parameters(LayerState& layer, LinearUnit& linear, const std::shared_ptr<const RecipeState>& r,
                                SavedLinear& saved_linear, const PreparedGradOutput& prepared, const TensorState& dy,
                                bool accumulate) {
  const ContextPtr& ctx = layer.ctx;
  Parameter* bias = linear.bias >= 0 ? &layer.params[size_t(linear.bias)] : nullptr;
  const bool fp8 = r != nullptr;
  const TensorPtr& dy_q = prepared.dy_q;
  // wgrad: dW = dy^T x (dy columnwise, x columnwise).
  if (!fp8_only(layer)) {
    bool fresh = false;
    TensorState& grad = ensure_grad(layer, layer.params[linear.weight], &fresh);
    const octet_gemm_options o = gemm_options(1, 1, accumulate && !fresh ? 1.0f : 0.0f, nullptr);
    const TensorState* x_hp = saved_linear.x_borrowed ? &saved_linear.x_borrowed->state
                              : saved_linear.x_hp     ? &saved_linear.x_hp->state
                                                      : nullptr;
    if (fp8 && saved_linear.fp8_wgrad) {
      TensorPtr x_col = saved_linear.x_q;
      if (!x_col) {
        // save_original_input: quantize the kept input again, with the scale
        // of forward when forward quantized it (same codes).
        x_col = saved_linear.fp8_fprop
                    ? requantize(ctx, *x_hp, *r, OCTET_ROLE_INPUT, OCTET_USAGE_COLUMNWISE, saved_linear.x_scale)
                    : quantize_role(ctx, linear, OCTET_ROLE_INPUT, r, *x_hp, OCTET_USAGE_COLUMNWISE).tensor;
      }
      run_gemm(ctx, dy_q->state, x_col->state, grad, o);
    } else {
      run_gemm(ctx, dy, *x_hp, grad, o);
    }
  }
  if (bias != nullptr) {
    bool fresh = false;
    TensorState& grad = ensure_grad(layer, *bias, &fresh);
    accumulate_into(*ctx, prepared.sums->state, grad, accumulate && !fresh);
  }
}

void linear_backward(LayerState& layer, LinearUnit& linear, const std::shared_ptr<const RecipeState>& r,
                     SavedLinear& saved_linear, const TensorState& dy, TensorState* dx, bool accumulate) {
  const PreparedGradOutput prepared = linear_backward_quantize(layer, linear, r, saved_linear, dy, dx != nullptr);
  linear_backward_dgrad(layer, r, saved_linear, prepared, dy, dx);
  linear_backward_parameters(layer, linear, r, saved_linear, prepared, dy, accumulate);
}

}  // namespace octet::core
