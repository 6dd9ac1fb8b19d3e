// GroupedLinear's forward and backward: each expert's rows as views of the
// caller's input, output and gradients (no copy), through that expert's
// linear exactly as a Linear runs it.
#include "layers/grouped_linear.hpp"

#include <string>

#include "layers/layer_tensors.hpp"
#include "layers/linear.hpp"
#include "runtime/error.hpp"
#include "scaling/quantizer.hpp"
#include "tensor/tensor_slice.hpp"

namespace octet::core {
namespace {

TensorState rows_of(const TensorState& t, int64_t begin, int64_t count, const char* name, size_t g) {
  return slice(t, true, begin, count, concat("rows of expert ", g, " of tensor '", name, "'"));
}

// Runs `step` for expert g, naming the expert in its error.
template <typename Step>
void for_expert(size_t g, Step&& step) {
  try {
    step();
  } catch (const Failure& failure) {
    fail(failure.status(), "expert ", g, ": ", failure.what());
  }
}

void zero_gradient(LayerState& layer, Parameter& param, bool accumulate) {
  bool fresh = false;
  TensorState& grad = ensure_grad(layer, param, &fresh);
  if (!accumulate || fresh) fill_zero(grad);
}

}  // namespace

std::vector<int64_t> grouped_splits(const LayerState& layer, size_t group_count, const int64_t* splits, int64_t rows) {
  const size_t experts = layer.linears.size();
  require(group_count == experts, "argument 'group_count' (", group_count, ") must be the layer's num_groups (",
          experts, ")");
  require(splits != nullptr, "argument 'splits' is NULL: it must hold group_count (", group_count, ") row counts");
  std::vector<int64_t> out(splits, splits + group_count);
  int64_t total = 0;
  for (size_t g = 0; g < group_count; ++g) {
    require(out[g] >= 0, "splits[", g, "] (", out[g], ") must be >= 0");
    require(out[g] <= rows - total, "the splits add up to more than the input's ", rows, " rows (at splits[", g, "])");
    total += out[g];
  }
  require(total == rows, "the splits add up to ", total, " but the input has ", rows,
          " rows: every row goes to one expert");
  return out;
}

void grouped_forward(LayerState& layer, const Precision& precision, bool training, const TensorState& x, TensorState& y,
                     SavedState& saved) {
  // Each expert's amaxes would be all-reduced on its own, and the ranks'
  // splits differ (an expert with no rows on one rank only): refused rather
  // than letting the ranks' collectives disagree.
  require(!(precision.recipe && reduces_amax(*layer.ctx, *precision.recipe)),
          "a GroupedLinear does not run recipes that all-reduce amaxes (current scaling with reduce_amax and a "
          "communicator on the context): use delayed scaling, or current scaling without reduce_amax");
  const std::vector<int64_t>& splits = saved.splits;
  int64_t begin = 0;
  for (size_t g = 0; g < splits.size(); ++g) {
    const int64_t count = splits[g];
    if (count == 0) continue;
    for_expert(g, [&] {
      const TensorState xv = rows_of(x, begin, count, "input", g);
      TensorState yv = rows_of(y, begin, count, "output", g);
      LinearInput in;
      in.hp = &xv;
      linear_forward(layer, layer.linears[g], precision, training, in, yv, training ? &saved.linears[g] : nullptr);
    });
    begin += count;
  }
}

void grouped_backward(LayerState& layer, SavedState& saved, const TensorState& dy, TensorState* dx, bool accumulate) {
  const std::vector<int64_t>& splits = saved.splits;
  const size_t experts = splits.size();
  std::vector<TensorState> dy_rows(experts), dx_rows(experts);
  std::vector<PreparedGradOutput> prepared(experts);
  int64_t begin = 0;
  for (size_t g = 0; g < experts; ++g) {
    const int64_t count = splits[g];
    if (count == 0) continue;
    for_expert(g, [&] {
      dy_rows[g] = rows_of(dy, begin, count, "grad_output", g);
      if (dx != nullptr) dx_rows[g] = rows_of(*dx, begin, count, "grad_input", g);
      prepared[g] =
          linear_backward_quantize(layer, layer.linears[g], saved.recipe, saved.linears[g], dy_rows[g], dx != nullptr);
    });
    begin += count;
  }
  for (size_t g = 0; g < experts; ++g) {
    LinearUnit& linear = layer.linears[g];
    if (splits[g] == 0) {
      if (!fp8_only(layer)) zero_gradient(layer, layer.params[linear.weight], accumulate);
      if (linear.bias >= 0) zero_gradient(layer, layer.params[size_t(linear.bias)], accumulate);
      continue;
    }
    for_expert(g, [&] {
      linear_backward_dgrad(layer, saved.recipe, saved.linears[g], prepared[g], dy_rows[g],
                            dx != nullptr ? &dx_rows[g] : nullptr);
      linear_backward_parameters(layer, linear, saved.recipe, saved.linears[g], prepared[g], dy_rows[g], accumulate);
    });
    prepared[g] = PreparedGradOutput{};
    saved.linears[g] = SavedLinear{};
  }
}

}  // namespace octet::core
