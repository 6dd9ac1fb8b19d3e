// The parameters of a block-scaled quantize that a recipe chooses: a value
// type, so that recipes (scaling/recipe.hpp) name it without the tensors.
#pragma once

#include <octet/octet.h>

#include <cstdint>

namespace octet::core {

// Block-kernel parameters a recipe chooses (defaults: what octet_quantize
// uses for a block-scaled output without a recipe).
struct BlockParams {
  int32_t e8m0_rounding = OCTET_MX_ROUND_RCEIL;
  int32_t power_of_two = 0;
  float amax_epsilon = 0.0f;
};

// The FP4 options of a quantize (numerics.md section 15): from
// octet_quantize_options, or from an FP4 recipe and its quantizer's stream
// counter.
struct Fp4Params {
  int32_t e8m0_rounding = OCTET_MX_ROUND_RCEIL;
  bool stochastic_rounding = false;
  bool hadamard_transform = false;
  uint64_t seed = 0;
  uint64_t offset = 0;
};

}  // namespace octet::core
