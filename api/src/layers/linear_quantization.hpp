// Which GEMMs of a linear run in FP8 (the recipe's overrides), and
// quantizing through the linear's quantizers.
#pragma once

#include <octet/octet.h>

#include <cstdint>
#include <memory>

#include "layers/layer_state.hpp"
#include "scaling/quantizer.hpp"

namespace octet::core {

// The recipe a forward runs with and which of the three GEMMs use FP8.
struct Precision {
  std::shared_ptr<const RecipeState> recipe;         // null: high precision
  bool fprop = false, dgrad = false, wgrad = false;  // FP8 per GEMM
};

Precision precision_of(const std::shared_ptr<const RecipeState>& r);

// A tensor quantized through a quantizer, and the scale it used.
struct Quantized {
  TensorPtr tensor;
  UsedScale scale;
};

// The linear's quantizer of `role` (an octet_tensor_role).
const std::shared_ptr<QuantizerState>& quantizer(LinearUnit& linear, int32_t role);

// Whether a quantize can be fused into another kernel's pass (norm forward,
// bias gradient): per-tensor with the scale known before the data.
bool fusable(const RecipeState& r);

// A quantized tensor of `role` in the recipe's dtype and scaling mode (block
// recipes: 1x32 MXFP8, 1x128 for inputs and gradients, 128x128 for weights).
TensorPtr make_role(const ContextPtr& ctx, const RecipeState& r, int32_t role, int64_t rows, int64_t cols,
                    uint32_t usages);

// Quantizes `in` for `usages` with role `role`'s quantizer (into `into` if
// given, else a new tensor) and records the amax: the quantizer bookkeeping
// octet_quantizer_quantize does (quantize_through). `reduced_amax`: in's
// amax already all-reduced with others (reduce_amaxes).
Quantized quantize_role(const ContextPtr& ctx, LinearUnit& linear, int32_t role,
                        const std::shared_ptr<const RecipeState>& r, const TensorState& in, uint32_t usages,
                        TensorPtr into = nullptr, const float* reduced_amax = nullptr);

// Keeps the scale `t` was quantized with (see KeptScale): on the device
// path a copy of its SCALE, made now because `t` may be freed before
// backward.
KeptScale keep_scale(const ContextPtr& ctx, const TensorState& t, const UsedScale& used);

// The same codes again (the scale used before, or the block scales, which
// the data determine); nothing is recorded.
TensorPtr requantize(const ContextPtr& ctx, const TensorState& in, const RecipeState& r, int32_t role, uint32_t usages,
                     const KeptScale& scale);

}  // namespace octet::core
