// A layer's parameters and quantizers as users reach them: names, values,
// gradients, borrowed and FP8-only weights, the weight cache's step.
#include "layers/layer_state.hpp"
#include "layers/layer_tensors.hpp"
#include "layers/linear_quantization.hpp"
#include "runtime/error.hpp"
#include "runtime/handle.hpp"
#include "tensor/dtype.hpp"

namespace octet::core {
namespace {

Parameter& param_arg(LayerState& layer, size_t index) {
  require(index < layer.params.size(), "argument 'index' (", index, ") must be < the parameter count (",
          layer.params.size(), ")");
  return layer.params[index];
}

}  // namespace
}  // namespace octet::core

using namespace octet::core;

extern "C" {

OCTET_API octet_status octet_layer_parameter_count(const octet_layer* layer, size_t* count) {
  return guarded("octet_layer_parameter_count", [&] {
    const LayerState& state = layer_arg(layer);
    require(count != nullptr, "argument 'count' is NULL");
    *count = state.params.size();
  });
}

OCTET_API octet_status octet_layer_parameter_name(const octet_layer* layer, size_t index, const char** name) {
  return guarded("octet_layer_parameter_name", [&] {
    LayerState& state = const_cast<LayerState&>(layer_arg(layer));
    require(name != nullptr, "argument 'name' is NULL");
    *name = param_arg(state, index).name.c_str();
  });
}

OCTET_API octet_status octet_layer_find_parameter(const octet_layer* layer, const char* name, size_t* index) {
  return guarded("octet_layer_find_parameter", [&] {
    const LayerState& state = layer_arg(layer);
    require(name != nullptr, "argument 'name' is NULL");
    require(index != nullptr, "argument 'index' is NULL");
    for (size_t i = 0; i < state.params.size(); ++i)
      if (state.params[i].name == name) {
        *index = i;
        return;
      }
    fail(OCTET_STATUS_NOT_FOUND, "the layer has no parameter named '", name, "'");
  });
}

OCTET_API octet_status octet_layer_get_parameter(octet_layer* layer, size_t index, octet_tensor** parameter) {
  return guarded("octet_layer_get_parameter", [&] {
    LayerState& state = layer_arg(layer);
    require(parameter != nullptr, "argument 'parameter' is NULL");
    Parameter& param = param_arg(state, index);
    if (param.value) {
      *parameter = param.value.get();
      return;
    }
    if (param.borrowed == nullptr)
      fail(OCTET_STATUS_NOT_FOUND, "parameter '", param.name,
           "' is not allocated (skip_weight_allocation) and no weight was given with octet_layer_set_weight");
    *parameter = const_cast<octet_tensor*>(param.borrowed);
  });
}

OCTET_API octet_status octet_layer_get_gradient(octet_layer* layer, size_t index, octet_tensor** gradient) {
  return guarded("octet_layer_get_gradient", [&] {
    LayerState& state = layer_arg(layer);
    require(gradient != nullptr, "argument 'gradient' is NULL");
    Parameter& param = param_arg(state, index);
    const bool fp8_weight = fp8_only(state) && param.ndim == 2;
    if (fp8_weight)
      fail(OCTET_STATUS_UNSUPPORTED, "parameter '", param.name,
           "' is an FP8-only (inference) weight: it has no gradient");
    bool fresh = false;
    TensorState& grad = ensure_grad(state, param, &fresh);
    if (fresh) fill_zero(grad);
    *gradient = param.grad.get();
  });
}

OCTET_API octet_status octet_layer_set_weight(octet_layer* layer, size_t index, const octet_tensor* weight) {
  return guarded("octet_layer_set_weight", [&] {
    LayerState& state = layer_arg(layer);
    Parameter& param = param_arg(state, index);
    require(state.options.skip_weight_allocation && param.ndim == 2, "parameter '", param.name,
            "' is not a weight matrix of a layer created with skip_weight_allocation = 1");
    const TensorState& w = tensor_arg(weight, *state.ctx, "weight");
    if (w.quantized()) {
      // A gathered FP8 weight (docs/distributed.md): forward runs on these
      // codes and this scale; nothing quantizes it again.
      require(!w.block_scaled() && (w.dtype == OCTET_DTYPE_E4M3 || w.dtype == OCTET_DTYPE_E5M2) &&
                  (w.usages & OCTET_USAGE_ROWWISE),
              "tensor 'weight' is quantized (", dtype_name(w.dtype), ", ", scaling_mode_name(w.scaling_mode),
              "): a quantized weight must be per-tensor E4M3 or E5M2 with the rowwise usage");
    } else {
      require(w.dtype == state.options.params_dtype, "tensor 'weight' must be a plain ",
              dtype_name(state.options.params_dtype), " tensor or a per-tensor FP8 one (it is ", dtype_name(w.dtype),
              ")");
    }
    require(w.rows == param.shape[0] && w.cols == param.shape[1], "tensor 'weight' has shape ", shape_text(w), " but '",
            param.name, "' is ", param.shape[0], "x", param.shape[1]);
    param.borrowed = weight;
    for (LinearUnit& linear : state.linears)
      if (linear.weight == index) linear.cached_weight.reset();
  });
}

OCTET_API octet_status octet_layer_set_saved_weight(octet_layer* layer, octet_saved* saved, size_t index,
                                                    const octet_tensor* weight) {
  return guarded("octet_layer_set_saved_weight", [&] {
    LayerState& state = layer_arg(layer);
    require(saved != nullptr, "argument 'saved' is NULL: pass the handle a training forward returned");
    require_live_handle(saved, HandleKind::Saved, "saved");
    SavedState& kept = saved->state;
    require(kept.layer_id == state.id, "the saved handle was returned by a forward of another layer");
    require(kept.training, "the saved handle comes from an inference forward (training = 0), which keeps nothing");
    Parameter& param = param_arg(state, index);
    require(state.options.skip_weight_allocation && param.ndim == 2, "parameter '", param.name,
            "' is not a weight matrix of a layer created with skip_weight_allocation = 1");
    const TensorState& w = tensor_arg(weight, *state.ctx, "weight");
    require(!w.quantized() && w.dtype == state.options.params_dtype, "tensor 'weight' must be a plain ",
            dtype_name(state.options.params_dtype), " tensor (it is ", dtype_name(w.dtype),
            w.quantized() ? ", quantized" : "", ")");
    require(w.rows == param.shape[0] && w.cols == param.shape[1], "tensor 'weight' has shape ", shape_text(w), " but '",
            param.name, "' is ", param.shape[0], "x", param.shape[1]);
    for (size_t i = 0; i < state.linears.size() && i < kept.linears.size(); ++i) {
      if (state.linears[i].weight != index) continue;
      SavedLinear& linear = kept.linears[i];
      require(linear.w_hp != nullptr, "parameter '", param.name,
              "': the forward ran on an FP8 weight given with octet_layer_set_weight, which its backward reads; "
              "there is no high-precision weight to replace");
      linear.w_hp = &w;
    }
  });
}

OCTET_API octet_status octet_layer_load_weight(octet_layer* layer, size_t index, const octet_tensor* weight) {
  return guarded("octet_layer_load_weight", [&] {
    LayerState& state = layer_arg(layer);
    Parameter& param = param_arg(state, index);
    require(fp8_only(state) && param.ndim == 2, "parameter '", param.name,
            "' is not an FP8-only weight (weight_storage = OCTET_WEIGHTS_FP8_ONLY); write high-precision "
            "parameters with octet_layer_get_parameter and octet_tensor_copy_from_host");
    const TensorState& w = tensor_arg(weight, *state.ctx, "weight");
    require(!w.quantized() && is_high_precision(w.dtype), "tensor 'weight' must be a plain FP32, BF16 or FP16 tensor");
    require(w.rows == param.shape[0] && w.cols == param.shape[1], "tensor 'weight' has shape ", shape_text(w), " but '",
            param.name, "' is ", param.shape[0], "x", param.shape[1]);
    for (LinearUnit& linear : state.linears)
      if (linear.weight == index)
        quantize_role(state.ctx, linear, OCTET_ROLE_WEIGHT, state.recipe, w, OCTET_USAGE_ROWWISE, param.value);
  });
}

OCTET_API octet_status octet_layer_new_step(octet_layer* layer) {
  return guarded("octet_layer_new_step", [&] {
    LayerState& state = layer_arg(layer);
    for (LinearUnit& linear : state.linears) linear.cached_weight.reset();
  });
}

OCTET_API octet_status octet_layer_get_quantizer(octet_layer* layer, size_t linear_index, int32_t role,
                                                 octet_quantizer** quantizer) {
  return guarded("octet_layer_get_quantizer", [&] {
    LayerState& state = layer_arg(layer);
    require(quantizer != nullptr, "argument 'quantizer' is NULL");
    require(linear_index < state.linears.size(), "argument 'linear_index' (", linear_index, ") must be < ",
            state.linears.size());
    require_role(role);
    *quantizer = state.linears[linear_index].quantizers[size_t(role)].get();
  });
}

}  // extern "C"
