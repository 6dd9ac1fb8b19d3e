// The normalisation (LayerNorm, RMSNorm) and activation (GELU, SwiGLU)
// steps of a layer, through the plugin ABI 1.2 kernels.
#pragma once

#include <octet/octet.h>

#include <cstdint>

#include "layers/layer_state.hpp"
#include "layers/linear.hpp"

namespace octet::core {

// A norm forward's output, its statistics (kept for backward), and the
// output as the first linear's input (with its FP8 copy when the kernel
// wrote one in the same pass: delayed and static scaling).
struct NormOut {
  TensorPtr y, mean, rstd;
  LinearInput input;
};

NormOut norm_forward(LayerState& layer, const Precision& precision, bool training, const TensorState& x);
// dx (or scratch when dx is NULL) and the norm parameters' gradients.
void norm_backward(LayerState& layer, SavedState& saved, const TensorState& dy, TensorState* dx, bool accumulate);
// The activation's forward (out set) or backward (dy and dx set).
void activation_call(const ContextState& c, int32_t kind, const TensorState& in, const TensorState* out,
                     const TensorState* dy, TensorState* dx);

}  // namespace octet::core
