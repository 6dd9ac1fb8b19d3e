// One linear, y = x W^T + b, inside a layer: its forward (high precision,
// or FP8 per GEMM as the recipe says) and its backward in three phases.
#pragma once

#include <octet/octet.h>

#include <cstdint>
#include <memory>

#include "layers/layer_state.hpp"
#include "layers/linear_quantization.hpp"

namespace octet::core {

// A linear's input: high precision, and its FP8 copy where a fused norm
// pass already wrote one.
struct LinearInput {
  const TensorState* hp = nullptr;       // the high-precision input
  const octet_tensor* caller = nullptr;  // the caller's tensor (Linear), for borrowing
  TensorPtr owned;                       // an internal tensor the layer may keep
  TensorPtr quantized;                   // produced by a fused norm pass
  UsedScale scale;                       // the scale `quantized` used
};

// Usages of the input's quantized copy in forward.
uint32_t input_usages(const LayerState& layer, const Precision& precision, bool training);

// Whether a forward quantizes the linear's weight (not cached, not stored
// in FP8).
bool forward_quantizes_weight(const LayerState& layer, const LinearUnit& linear, const Precision& precision,
                              bool training);

// Amaxes of a forward's tensors already all-reduced, batched with other
// tensors of the step into one communicator call (current scaling with
// reduce_amax; reduce_amaxes).
struct ReducedAmaxes {
  bool has_x = false, has_w = false;
  float x = 0.0f, w = 0.0f;
};

// y = x W^T (+ bias), keeping in `saved_linear` (training) what backward
// reads. With current scaling and reduce_amax, the input's and the weight's
// amaxes are all-reduced in one call before either is quantized, except
// those `reduced` already holds.
void linear_forward(LayerState& layer, LinearUnit& linear, const Precision& precision, bool training, LinearInput x,
                    TensorState& y, SavedLinear* saved_linear, const ReducedAmaxes& reduced = ReducedAmaxes{});

// A linear's backward runs in three phases: dy's FP8 copies and the bias
// column sums (the one phase that can fail after backward's checks passed:
// current scaling may all-reduce dy's amax through the communicator; it
// writes nothing the caller sees), dgrad (into dx), then the parameter
// gradients. The MLP orders the phases of its two linears so that every
// fallible one comes before the first gradient is written.
struct PreparedGradOutput {
  uint32_t dy_usages = 0;  // dy's FP8 usages
  TensorPtr dy_q, sums;
};

// Phase 1: dy's FP8 copies (through the gradient quantizer) and the bias
// column sums, fused into one pass where the scale is known beforehand.
PreparedGradOutput linear_backward_quantize(LayerState& layer, LinearUnit& linear,
                                            const std::shared_ptr<const RecipeState>& r,
                                            const SavedLinear& saved_linear, const TensorState& dy, bool has_dx);
// Phase 2: dx = dy W (skipped when dx is NULL); frees the saved weight copy.
void linear_backward_dgrad(LayerState& layer, const std::shared_ptr<const RecipeState>& r, SavedLinear& saved_linear,
                           const PreparedGradOutput& prepared, const TensorState& dy, TensorState* dx);
// Phase 3: the weight gradient dW = dy^T x and the bias gradient, written
// or accumulated into the parameters' gradients.
void linear_backward_parameters(LayerState& layer, LinearUnit& linear, const std::shared_ptr<const RecipeState>& r,
                                SavedLinear& saved_linear, const PreparedGradOutput& prepared, const TensorState& dy,
                                bool accumulate);
// The three phases in order.
void linear_backward(LayerState& layer, LinearUnit& linear, const std::shared_ptr<const RecipeState>& r,
                     SavedLinear& saved_linear, const TensorState& dy, TensorState* dx, bool accumulate);

}  // namespace octet::core
