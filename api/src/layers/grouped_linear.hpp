// GroupedLinear (docs/grouped_linear.md): one Linear per expert over the
// rows of one input sorted by expert, each expert exactly a Linear on its
// rows (the linear's forward and three backward phases on row views).
#pragma once

#include <cstdint>
#include <vector>

#include "layers/layer_state.hpp"
#include "layers/linear_quantization.hpp"

namespace octet::core {

// The splits of a grouped forward, checked: group_count = the experts, each
// >= 0, adding up to `rows`.
std::vector<int64_t> grouped_splits(const LayerState& layer, size_t group_count, const int64_t* splits, int64_t rows);

// y's rows of expert g = x's rows of expert g through expert g's linear;
// saved (training) keeps each expert's SavedLinear and the splits.
void grouped_forward(LayerState& layer, const Precision& precision, bool training, const TensorState& x, TensorState& y,
                     SavedState& saved);

// Every expert's dy copies first (the phase that can fail after backward's
// checks), then each expert's dgrad into its rows of dx and its parameter
// gradients; an expert with no rows gets zero gradients (unchanged with
// accumulate).
void grouped_backward(LayerState& layer, SavedState& saved, const TensorState& dy, TensorState* dx, bool accumulate);

}  // namespace octet::core
