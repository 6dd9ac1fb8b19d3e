// The normalisation (LayerNorm, RMSNorm) and activation (GELU, SwiGLU)
// steps of a layer, through the plugin ABI 1.2 kernels; a norm forward
// writes its output's FP8 copy in the same pass where it can.
#include "layers/norm_activation.hpp"

#include "layers/layer_tensors.hpp"
#include "ops/quantize.hpp"

namespace octet::core {

NormOut norm_forward(LayerState& layer, const Precision& precision, bool training, const TensorState& x) {
  const ContextPtr& ctx = layer.ctx;
  const ContextState& c = *ctx;
  require_entry(c, has_feature(c, OCTET_FEATURE_NORM), "norm_forward");
  NormOut out;
  const int32_t keep = training ? OCTET_MEMORY_SAVED_ACTIVATIONS : OCTET_MEMORY_WORKSPACE;
  out.y = make_plain(ctx, layer.options.params_dtype, x.rows, x.cols, OCTET_MEMORY_WORKSPACE);
  if (layer.norm == OCTET_LAYER_LAYERNORM) out.mean = make_plain(ctx, OCTET_DTYPE_FP32, 1, x.rows, keep);
  out.rstd = make_plain(ctx, OCTET_DTYPE_FP32, 1, x.rows, keep);
  octet_norm_forward_args a{};
  a.struct_size = sizeof(a);
  a.kind = layer.norm == OCTET_LAYER_LAYERNORM ? OCTET_NORM_LAYERNORM : OCTET_NORM_RMSNORM;
  a.epsilon = layer.epsilon;
  a.input = x.rowwise_view();
  a.gamma = layer.params[size_t(layer.norm_weight)].value->state.rowwise_view();
  if (layer.norm_bias >= 0) a.beta = layer.params[size_t(layer.norm_bias)].value->state.rowwise_view();
  a.output = out.y->state.rowwise_view();
  a.mean_out = out.mean ? static_cast<float*>(out.mean->state.data.data()) : nullptr;
  a.rstd_out = static_cast<float*>(out.rstd->state.data.data());
  // The normalisation output quantized in the same pass, where the scale is
  // known before the data (delayed, static).
  LinearUnit& linear = layer.linears.front();
  const uint32_t x_usages = input_usages(layer, precision, training);
  octet_quantize_args qa{};
  TensorPtr q;
  UsedScale scale;
  if (x_usages != 0 && fusable(*precision.recipe)) {
    const octet_dtype dtype = precision.recipe->dtype_for(OCTET_ROLE_INPUT);
    q = make_fp8(ctx, dtype, x.rows, x.cols, x_usages);
    if (one_pass_quantize_args(c, q->state, x_usages, true, qa)) {
      // The input of quantizer_prepare is only read by current scaling,
      // which is never fused (fusable).
      scale = quantizer_prepare(ctx, *quantizer(linear, OCTET_ROLE_INPUT), *precision.recipe, x, q->state);
      a.quantize = &qa;
    } else {
      q.reset();
    }
  }
  call_backend(c, "norm_forward", [&] { return c.api().norm_forward(c.handle, &a); });
  if (q) quantizer_commit(ctx, quantizer(linear, OCTET_ROLE_INPUT), precision.recipe, q->state, scale, nullptr);
  out.input.hp = &out.y->state;
  out.input.owned = out.y;
  out.input.quantized = q;
  out.input.scale = scale;
  return out;
}

void norm_backward(LayerState& layer, SavedState& saved, const TensorState& dy, TensorState* dx, bool accumulate) {
  const ContextPtr& ctx = layer.ctx;
  const ContextState& c = *ctx;
  TensorPtr scratch;
  if (dx == nullptr) {
    scratch = make_plain(ctx, layer.options.params_dtype, dy.rows, dy.cols, OCTET_MEMORY_WORKSPACE);
    dx = &scratch->state;
  }
  TensorPtr dgamma = make_plain(ctx, OCTET_DTYPE_FP32, 1, dy.cols, OCTET_MEMORY_WORKSPACE);
  TensorPtr dbeta;
  if (layer.norm_bias >= 0) dbeta = make_plain(ctx, OCTET_DTYPE_FP32, 1, dy.cols, OCTET_MEMORY_WORKSPACE);
  octet_norm_backward_args a{};
  a.struct_size = sizeof(a);
  a.kind = layer.norm == OCTET_LAYER_LAYERNORM ? OCTET_NORM_LAYERNORM : OCTET_NORM_RMSNORM;
  a.input = saved.x->state.rowwise_view();
  a.grad_output = dy.rowwise_view();
  a.gamma = layer.params[size_t(layer.norm_weight)].value->state.rowwise_view();
  a.mean = saved.mean ? static_cast<const float*>(saved.mean->state.data.data()) : nullptr;
  a.rstd = static_cast<const float*>(saved.rstd->state.data.data());
  a.grad_input = octet_matrix_view{dx->data.data(), dx->dtype, 0, dx->rows, dx->cols, dx->cols};
  a.dgamma_out = static_cast<float*>(dgamma->state.data.data());
  a.dbeta_out = dbeta ? static_cast<float*>(dbeta->state.data.data()) : nullptr;
  call_backend(c, "norm_backward", [&] { return c.api().norm_backward(c.handle, &a); });
  bool fresh = false;
  TensorState& gamma_grad = ensure_grad(layer, layer.params[size_t(layer.norm_weight)], &fresh);
  accumulate_into(c, dgamma->state, gamma_grad, accumulate && !fresh);
  if (dbeta) {
    TensorState& beta_grad = ensure_grad(layer, layer.params[size_t(layer.norm_bias)], &fresh);
    accumulate_into(c, dbeta->state, beta_grad, accumulate && !fresh);
  }
}

void activation_call(const ContextState& c, int32_t kind, const TensorState& in, const TensorState* out,
                     const TensorState* dy, TensorState* dx) {
  octet_activation_args a{};
  a.struct_size = sizeof(a);
  a.kind = kind == OCTET_LAYER_SWIGLU ? OCTET_ACTIVATION_SWIGLU : OCTET_ACTIVATION_GELU;
  a.input = in.rowwise_view();
  if (out != nullptr) {
    a.output = out->rowwise_view();
    call_backend(c, "activation_forward", [&] { return c.api().activation_forward(c.handle, &a); });
    return;
  }
  a.grad_output = dy->rowwise_view();
  a.grad_input = dx->rowwise_view();
  call_backend(c, "activation_backward", [&] { return c.api().activation_backward(c.handle, &a); });
}

}  // namespace octet::core
