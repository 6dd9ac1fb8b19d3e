// A layer argument, and a parameter's gradient (allocated on first need).
#include "layers/layer_state.hpp"

#include "layers/layer_tensors.hpp"
#include "runtime/error.hpp"

namespace octet::core {

LayerState& layer_arg(const octet_layer* layer) {
  require_live_handle(layer, HandleKind::Layer, "layer");
  enter_context(*layer->state.ctx);
  return const_cast<LayerState&>(layer->state);
}

TensorState& ensure_grad(LayerState& layer, Parameter& param, bool* fresh) {
  *fresh = !param.grad;
  if (!param.grad) {
    const octet_tensor_desc desc = tensor_desc(layer.options.params_dtype, param.ndim, param.shape[0], param.shape[1]);
    param.grad = make_tensor(layer.ctx, desc, OCTET_MEMORY_PARAMETERS);
  }
  return param.grad->state;
}

}  // namespace octet::core
