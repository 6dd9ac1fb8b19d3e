// The state of a layer (docs/layers.md: Linear, LayerNormLinear,
// LayerNormMLP; docs/grouped_linear.md: GroupedLinear): its parameters, its linears with their quantizers, and
// what a training forward saves for backward.
#pragma once

#include <octet/octet.h>

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "layers/layer_tensors.hpp"
#include "scaling/quantizer.hpp"
#include "scaling/recipe.hpp"
#include "tensor/tensor.hpp"

namespace octet::core {

enum class LayerKind { Linear, LayerNormLinear, LayerNormMlp, GroupedLinear };

struct Parameter {
  std::string name;
  int32_t ndim = 1;
  int64_t shape[2] = {0, 0};
  TensorPtr value;                       // null: skip_weight_allocation (see borrowed)
  const octet_tensor* borrowed = nullptr;  // octet_layer_set_weight
  TensorPtr grad;                        // allocated on first need
  const TensorState* tensor() const { return value ? &value->state : borrowed ? &borrowed->state : nullptr; }
};

// The scale a tensor was quantized with, kept to quantize the same data
// again in backward: the host value on the host path, or one float in the
// context's memory copied from the tensor's SCALE where the quantizer state
// lives on the device (no copy to the host). Not counted by the memory
// ledger: bookkeeping, like the quantizer state.
struct KeptScale {
  float host = 1.0f;
  std::shared_ptr<Buffer> device;  // null: use `host`
};

// One GEMM-bearing sub-layer: y = x W^T + b.
struct LinearUnit {
  int64_t in = 0, out = 0;
  size_t weight = 0;   // parameter index
  int bias = -1;       // parameter index or -1
  // By octet_tensor_role; pooled handles, as octet_layer_get_quantizer hands them out.
  std::array<std::shared_ptr<octet_quantizer>, 3> quantizers;
  TensorPtr cached_weight;                    // weight cache: FP8 rowwise copy
  UsedScale cached_scale;
};

struct LayerState {
  std::shared_ptr<ContextState> ctx;
  uint64_t id = 0;
  LayerKind kind = LayerKind::Linear;
  octet_linear_options options{};
  std::shared_ptr<const RecipeState> recipe;  // the layer's own, or null
  int32_t norm = OCTET_LAYER_LAYERNORM;
  float epsilon = 1e-5f;
  int32_t activation = OCTET_LAYER_GELU;
  int64_t ffn = 0;
  int norm_weight = -1, norm_bias = -1;
  std::vector<Parameter> params;
  std::vector<LinearUnit> linears;  // GroupedLinear: one per expert
  bool shared_quantizers = false;   // GroupedLinear: every expert's are linears[0]'s
};

// What one linear's forward keeps for its backward.
struct SavedLinear {
  bool fp8_fprop = false, fp8_dgrad = false, fp8_wgrad = false;
  TensorPtr x_q;                      // FP8 input with the columnwise usage
  TensorPtr x_hp;                     // high-precision input kept by the layer
  const octet_tensor* x_borrowed = nullptr;  // save_original_input: the caller's
  KeptScale x_scale;                  // scale x was quantized with
  TensorPtr w_q;                      // FP8 weight (rowwise) for dgrad
  KeptScale w_scale;                  // used when w_q is not kept
  const TensorState* w_hp = nullptr;  // high-precision weight used
};

struct SavedState {
  std::shared_ptr<ContextState> ctx;  // the layer's
  uint64_t layer_id = 0;
  bool training = false;
  std::shared_ptr<const RecipeState> recipe;  // null: high precision
  int64_t rows = 0;
  TensorPtr x;            // the layer input (norm backward)
  TensorPtr mean, rstd;   // FP32 [rows]
  TensorPtr h;            // MLP: FC1 output (pre-activation)
  std::vector<SavedLinear> linears;
  std::vector<int64_t> splits;  // GroupedLinear: the rows of each expert
};

// A layer whose weights are stored in FP8 only (inference).
inline bool fp8_only(const LayerState& layer) { return layer.options.weight_storage == OCTET_WEIGHTS_FP8_ONLY; }

}  // namespace octet::core

struct octet_layer {
  octet::core::LayerState state;
  OCTET_POOLED_HANDLE(octet::core::HandleKind::Layer)
};

struct octet_saved {
  octet::core::SavedState state;
  OCTET_POOLED_HANDLE(octet::core::HandleKind::Saved)
};

namespace octet::core {
// A layer argument: not NULL, live, and its context held for the running call.
LayerState& layer_arg(const octet_layer* layer);
// A parameter's gradient, allocated (not zeroed) on first need; *fresh says
// whether it was.
TensorState& ensure_grad(LayerState& layer, Parameter& param, bool* fresh);
}  // namespace octet::core
