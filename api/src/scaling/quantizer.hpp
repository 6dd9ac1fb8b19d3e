// A quantizer: quantizing through it (the scale its recipe chooses, then the
// bookkeeping), and the handle users hold. Its state, and where that lives,
// is quantizer_state.hpp; how its scale is updated, scale_update.hpp.
#pragma once

#include <octet/octet.h>

#include <memory>
#include <vector>

#include "runtime/context.hpp"
#include "scaling/quantizer_state.hpp"
#include "scaling/recipe.hpp"
#include "tensor/tensor.hpp"

namespace octet::core {

// ---- per-quantize bookkeeping (octet_quantizer_quantize and the layers) ----

// The scale a quantize used: on the host path its value; on the device path
// it stays in the output's SCALE (no copy to the host).
struct UsedScale {
  bool on_device = false;
  float host = 1.0f;
  // Current scaling with reduce_amax and a communicator: the scale came from
  // this all-reduced amax, which the quantizer records instead of the
  // tensor's own (the output's AMAX stays the tensor's own).
  bool amax_reduced = false;
  float reduced_amax = 0.0f;
};

// Phase 1: puts the scale this quantize uses into out's SCALE (per-tensor
// recipes; block recipes compute theirs from the data). Current scaling
// computes it from `in` (all-reducing the amax first when its recipe has
// reduce_amax and the context a communicator). Changes no quantizer state
// beyond moving it to the host: a failure between the phases leaves the
// quantizer as it was.
// `reduced_amax`, when given, is in's amax already all-reduced (by
// reduce_amaxes, batched with other tensors'): used instead of a call of
// its own.
UsedScale quantizer_prepare(const std::shared_ptr<ContextState>& ctx, QuantizerState& q, const RecipeState& r,
                            const TensorState& in, TensorState& out, const float* reduced_amax = nullptr);
// Phase 2, after the kernel that wrote out's codes, SCALE_INV and AMAX
// succeeded: records the quantize in the quantizer (amax into the history,
// the scale, the observation counts of a static recipe with observe = 1)
// and notes the quantizer in the open autocast scope. On a backend with the
// scaling entries, delayed and current scaling keep the state there
// (resident on `ctx`, its history resized to the recipe's here).
void quantizer_commit(const std::shared_ptr<ContextState>& ctx, const std::shared_ptr<QuantizerState>& q,
                      const std::shared_ptr<const RecipeState>& r, const TensorState& out, const UsedScale& used,
                      const octet_quantize_stats* observed);
// Both phases around quantize_into: the one quantize-through-a-quantizer of
// the library. stats (host) may be NULL; a static recipe with observe = 1
// collects them itself.
UsedScale quantize_through(const std::shared_ptr<ContextState>& ctx, const std::shared_ptr<QuantizerState>& q,
                           const std::shared_ptr<const RecipeState>& r, const TensorState& in, TensorState& out,
                           uint32_t usages, bool saturate, octet_quantize_stats* stats,
                           const float* reduced_amax = nullptr);

// Whether a quantize under `r` all-reduces its amax: current scaling with
// reduce_amax, and a communicator on the context.
bool reduces_amax(const ContextState& ctx, const RecipeState& r);
// The amaxes of `inputs`, about to be quantized under `r` in this order,
// all-reduced (MAX) in ONE allreduce_max call, for quantize_through's
// reduced_amax; empty (no call) unless reduces_amax. Every process batches
// the same tensors, so the calls still match across processes.
std::vector<float> reduce_amaxes(const std::shared_ptr<ContextState>& ctx, const RecipeState& r,
                                 const std::vector<const TensorState*>& inputs);

}  // namespace octet::core

struct octet_quantizer {
  std::shared_ptr<octet::core::QuantizerState> state;
  OCTET_POOLED_HANDLE(octet::core::HandleKind::Quantizer)
};

namespace octet::core {
// A quantizer argument: not NULL, live; the context its state is resident
// on (if any) is held for the running call.
QuantizerState& quantizer_arg(const octet_quantizer* q, const char* name = "quantizer");
}  // namespace octet::core
