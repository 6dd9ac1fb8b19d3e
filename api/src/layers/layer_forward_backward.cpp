// A whole layer's forward and backward: the order of its steps (norm,
// linears, activation), what forward saves for backward, and the MLP's
// backward ordered so that every step that can fail comes before the first
// gradient is written. octet_layer_forward, octet_layer_backward and
// octet_saved_destroy, and octet_layer_forward_grouped for GroupedLinear.
#include <vector>

#include "layers/grouped_linear.hpp"
#include "layers/layer_state.hpp"
#include "layers/layer_tensors.hpp"
#include "layers/linear.hpp"
#include "layers/linear_quantization.hpp"
#include "layers/norm_activation.hpp"
#include "runtime/error.hpp"
#include "scaling/autocast_scope.hpp"
#include "tensor/dtype.hpp"

namespace octet::core {
namespace {

int64_t layer_in(const LayerState& layer) { return layer.linears.front().in; }
int64_t layer_out(const LayerState& layer) {
  return layer.kind == LayerKind::LayerNormMlp ? layer_in(layer) : layer.linears.front().out;
}

void check_activation(const LayerState& layer, const TensorState& t, const char* name, int64_t rows, int64_t cols) {
  require(!t.quantized() && is_high_precision(t.dtype), "tensor '", name, "' must be a plain ",
          dtype_name(layer.options.params_dtype), " tensor (it is ", dtype_name(t.dtype),
          t.quantized() ? ", quantized" : "", ")");
  require(t.dtype == layer.options.params_dtype, "tensor '", name, "' is ", dtype_name(t.dtype), " but the layer's ",
          "params_dtype is ", dtype_name(layer.options.params_dtype), ": inputs, outputs and gradients use that dtype");
  require(t.cols == cols, "tensor '", name, "' has shape ", shape_text(t), ": its last dimension must be ", cols);
  if (rows >= 0)
    require(t.rows == rows, "tensor '", name, "' has shape ", shape_text(t), ": its leading dimensions must hold ",
            rows, " rows, as the input's do");
}

// A grouped forward's splits (null for the other kinds).
struct GroupSplits {
  size_t count = 0;
  const int64_t* splits = nullptr;
};

void layer_forward(LayerState& layer, const octet_tensor* input, octet_tensor* output, bool training, SavedState& saved,
                   const GroupSplits* groups = nullptr) {
  const ContextPtr& ctx = layer.ctx;
  const bool grouped = layer.kind == LayerKind::GroupedLinear;
  require(grouped == (groups != nullptr),
          grouped ? "the layer is a GroupedLinear: forward it with octet_layer_forward_grouped, giving the splits"
                  : "octet_layer_forward_grouped takes a GroupedLinear layer; forward this one with "
                    "octet_layer_forward");
  const TensorState& x = tensor_arg(input, *ctx, "input");
  TensorState& y = tensor_arg(output, *ctx, "output");
  require(input != output, "tensors 'input' and 'output' must be different tensors");
  check_activation(layer, x, "input", -1, layer_in(layer));
  check_activation(layer, y, "output", x.rows, layer_out(layer));
  if (grouped) saved.splits = grouped_splits(layer, groups->count, groups->splits, x.rows);
  Precision precision = precision_of(layer.recipe ? layer.recipe : autocast_recipe(*ctx));
  if (fp8_only(layer)) {
    require(!training, "the layer stores FP8-only weights (inference): forward with training = 0");
    require(precision.fprop,
            "the layer stores FP8-only weights but its recipe overrides the forward GEMM to high precision");
  }
  saved.recipe = precision.recipe;
  saved.rows = x.rows;
  saved.training = training;
  saved.linears.resize(layer.linears.size());

  if (grouped) {
    grouped_forward(layer, precision, training, x, y, saved);
    return;
  }
  if (layer.kind == LayerKind::Linear) {
    LinearInput in;
    in.hp = &x;
    in.caller = input;
    linear_forward(layer, layer.linears[0], precision, training, in, y, &saved.linears[0]);
    return;
  }
  if (layer.kind == LayerKind::LayerNormMlp) {
    const ContextState& c = *ctx;
    require_entry(c, has_feature(c, OCTET_FEATURE_ACTIVATION), "activation_forward");
  }
  NormOut norm_out = norm_forward(layer, precision, training, x);
  if (training) {
    saved.x = copy_of(ctx, x, OCTET_MEMORY_SAVED_ACTIVATIONS);
    saved.mean = norm_out.mean;
    saved.rstd = norm_out.rstd;
  }
  if (layer.kind == LayerKind::LayerNormLinear) {
    linear_forward(layer, layer.linears[0], precision, training, norm_out.input, y, &saved.linears[0]);
    return;
  }
  LinearUnit& fc1 = layer.linears[0];
  LinearUnit& fc2 = layer.linears[1];
  // Current scaling with reduce_amax: FC1's input and weight and FC2's
  // weight in one communicator call (FC2's input, made by FC1, needs a
  // second one).
  ReducedAmaxes fc1_amaxes, fc2_amaxes;
  if (precision.recipe && reduces_amax(*ctx, *precision.recipe)) {
    std::vector<const TensorState*> pending;
    const bool x1 = !norm_out.input.quantized && input_usages(layer, precision, training) != 0;
    // An unset weight (skip_weight_allocation) is left to linear_forward's
    // error.
    const bool w1 = forward_quantizes_weight(layer, fc1, precision, training) && layer.params[fc1.weight].tensor();
    const bool w2 = forward_quantizes_weight(layer, fc2, precision, training) && layer.params[fc2.weight].tensor();
    if (x1) pending.push_back(norm_out.input.hp);
    if (w1) pending.push_back(layer.params[fc1.weight].tensor());
    if (w2) pending.push_back(layer.params[fc2.weight].tensor());
    const std::vector<float> batch = reduce_amaxes(ctx, *precision.recipe, pending);
    size_t next = 0;
    if (x1) fc1_amaxes.has_x = true, fc1_amaxes.x = batch[next++];
    if (w1) fc1_amaxes.has_w = true, fc1_amaxes.w = batch[next++];
    if (w2) fc2_amaxes.has_w = true, fc2_amaxes.w = batch[next++];
  }
  TensorPtr h = make_plain(ctx, layer.options.params_dtype, x.rows, fc1.out,
                           training ? OCTET_MEMORY_SAVED_ACTIVATIONS : OCTET_MEMORY_WORKSPACE);
  linear_forward(layer, fc1, precision, training, norm_out.input, h->state, &saved.linears[0], fc1_amaxes);
  norm_out = NormOut{};  // the normalisation output is no longer needed (unless saved)
  TensorPtr activated = make_plain(ctx, layer.options.params_dtype, x.rows, layer.ffn, OCTET_MEMORY_WORKSPACE);
  activation_call(*ctx, layer.activation, h->state, &activated->state, nullptr, nullptr);
  if (training) saved.h = h;
  h.reset();
  LinearInput in;
  in.hp = &activated->state;
  in.owned = activated;
  activated.reset();
  linear_forward(layer, fc2, precision, training, in, y, &saved.linears[1], fc2_amaxes);
}

void layer_backward(LayerState& layer, SavedState& saved, const TensorState& dy, TensorState* dx, bool accumulate) {
  const ContextPtr& ctx = layer.ctx;
  if (layer.kind == LayerKind::GroupedLinear) {
    grouped_backward(layer, saved, dy, dx, accumulate);
    return;
  }
  if (layer.kind == LayerKind::Linear) {
    linear_backward(layer, layer.linears[0], saved.recipe, saved.linears[0], dy, dx, accumulate);
    return;
  }
  TensorPtr d_norm_out =
      make_plain(ctx, layer.options.params_dtype, saved.rows, layer_in(layer), OCTET_MEMORY_WORKSPACE);
  if (layer.kind == LayerKind::LayerNormLinear) {
    linear_backward(layer, layer.linears[0], saved.recipe, saved.linears[0], dy, &d_norm_out->state, accumulate);
  } else {
    LinearUnit& fc1 = layer.linears[0];
    LinearUnit& fc2 = layer.linears[1];
    TensorPtr da = make_plain(ctx, layer.options.params_dtype, saved.rows, layer.ffn, OCTET_MEMORY_WORKSPACE);
    // In FP8, dh is quantized before FC2's gradients are written: with
    // current scaling and reduce_amax that quantize calls the communicator,
    // and if it fails, backward must fail with every gradient as it was (no
    // result half-written, docs/abi.md). It costs FC2's saved input and dy's
    // columnwise copy living beside dh. High precision quantizes nothing, so
    // FC2 finishes first and frees its saved input before dh exists.
    const bool fp8 = saved.recipe != nullptr;
    PreparedGradOutput fc2_prepared;
    if (fp8) {
      fc2_prepared = linear_backward_quantize(layer, fc2, saved.recipe, saved.linears[1], dy, true);
      linear_backward_dgrad(layer, saved.recipe, saved.linears[1], fc2_prepared, dy, &da->state);
    } else {
      linear_backward(layer, fc2, saved.recipe, saved.linears[1], dy, &da->state, accumulate);
      saved.linears[1] = SavedLinear{};
    }
    TensorPtr dh = make_plain(ctx, layer.options.params_dtype, saved.rows, fc1.out, OCTET_MEMORY_WORKSPACE);
    activation_call(*ctx, layer.activation, saved.h->state, nullptr, &da->state, &dh->state);
    da.reset();
    saved.h.reset();
    if (fp8) {
      const PreparedGradOutput fc1_prepared =
          linear_backward_quantize(layer, fc1, saved.recipe, saved.linears[0], dh->state, true);
      linear_backward_parameters(layer, fc2, saved.recipe, saved.linears[1], fc2_prepared, dy, accumulate);
      fc2_prepared = PreparedGradOutput{};
      saved.linears[1] = SavedLinear{};
      linear_backward_dgrad(layer, saved.recipe, saved.linears[0], fc1_prepared, dh->state, &d_norm_out->state);
      linear_backward_parameters(layer, fc1, saved.recipe, saved.linears[0], fc1_prepared, dh->state, accumulate);
    } else {
      linear_backward(layer, fc1, saved.recipe, saved.linears[0], dh->state, &d_norm_out->state, accumulate);
    }
  }
  saved.linears.clear();
  norm_backward(layer, saved, d_norm_out->state, dx, accumulate);
}

// Entry points a backward will need, checked before the saved handle is consumed.
void require_backward_entries(const LayerState& layer) {
  const ContextState& c = *layer.ctx;
  for (const LinearUnit& linear : layer.linears)
    if (linear.bias >= 0) {
      require_entry(c, has_feature(c, OCTET_FEATURE_BIAS_GRADIENT), "bias_gradient");
      require_entry(c, has_feature(c, OCTET_FEATURE_ACCUMULATE), "accumulate");
    }
  if (layer.kind != LayerKind::Linear && layer.kind != LayerKind::GroupedLinear) {
    require_entry(c, has_feature(c, OCTET_FEATURE_NORM), "norm_backward");
    require_entry(c, has_feature(c, OCTET_FEATURE_ACCUMULATE), "accumulate");
  }
  if (layer.kind == LayerKind::LayerNormMlp)
    require_entry(c, has_feature(c, OCTET_FEATURE_ACTIVATION), "activation_backward");
}

}  // namespace
}  // namespace octet::core

using namespace octet::core;

namespace {

octet_status forward_entry(const char* function, octet_layer* layer, const octet_tensor* input, octet_tensor* output,
                           int32_t training, octet_saved** saved, const GroupSplits* groups) {
  return guarded(function, [&] {
    LayerState& state = layer_arg(layer);
    require(training == 0 || training == 1, "argument 'training' (", training, ") must be 0 or 1");
    require(!training || saved != nullptr,
            "argument 'saved' is NULL: a training forward returns the handle its backward consumes");
    auto handle = std::make_unique<octet_saved>();
    handle->state.layer_id = state.id;
    handle->state.ctx = state.ctx;
    layer_forward(state, input, output, training != 0, handle->state, groups);
    if (saved != nullptr) *saved = handle.release();
  });
}

}  // namespace

extern "C" {

OCTET_API octet_status octet_layer_forward(octet_layer* layer, const octet_tensor* input, octet_tensor* output,
                                           int32_t training, octet_saved** saved) {
  return forward_entry("octet_layer_forward", layer, input, output, training, saved, nullptr);
}

OCTET_API octet_status octet_layer_forward_grouped(octet_layer* layer, const octet_tensor* input, size_t group_count,
                                                   const int64_t* splits, octet_tensor* output, int32_t training,
                                                   octet_saved** saved) {
  const GroupSplits groups{group_count, splits};
  return forward_entry("octet_layer_forward_grouped", layer, input, output, training, saved, &groups);
}

OCTET_API octet_status octet_layer_backward(octet_layer* layer, octet_saved** saved, const octet_tensor* grad_output,
                                            octet_tensor* grad_input, int32_t accumulate) {
  return guarded("octet_layer_backward", [&] {
    LayerState& state = layer_arg(layer);
    require(saved != nullptr && *saved != nullptr,
            "argument 'saved' is NULL (or points to NULL): pass the handle a training forward returned; each "
            "handle is consumed by one backward");
    require_live_handle(*saved, HandleKind::Saved, "*saved");
    SavedState& saved_state = (*saved)->state;
    require(saved_state.layer_id == state.id, "the saved handle was returned by a forward of another layer");
    require(saved_state.training,
            "the saved handle comes from an inference forward (training = 0), which keeps nothing for "
            "backward");
    require(accumulate == 0 || accumulate == 1, "argument 'accumulate' (", accumulate, ") must be 0 or 1");
    const ContextState& ctx = *state.ctx;
    const TensorState& dy = tensor_arg(grad_output, ctx, "grad_output");
    check_activation(state, dy, "grad_output", saved_state.rows, layer_out(state));
    TensorState* dx = nullptr;
    if (grad_input != nullptr) {
      dx = &tensor_arg(grad_input, ctx, "grad_input");
      check_activation(state, *dx, "grad_input", saved_state.rows, layer_in(state));
      require(grad_input != grad_output, "tensors 'grad_output' and 'grad_input' must be different tensors");
    }
    require_backward_entries(state);
    std::unique_ptr<octet_saved> owner(*saved);  // consumed from here on
    *saved = nullptr;
    layer_backward(state, owner->state, dy, dx, accumulate != 0);
  });
}

OCTET_API void octet_saved_destroy(octet_saved* saved) {
  if (saved == nullptr) return;
  std::shared_ptr<ContextState> keep;  // outlives the call's hold on the context
  guarded("octet_saved_destroy", [&] {
    require_live_handle(saved, HandleKind::Saved, "saved");
    keep = saved->state.ctx;
    if (keep) enter_context(*keep);
    delete saved;
  });
}

}  // extern "C"
