// A quantizer: the scaling state of one tensor role, kept on the host or,
// on a backend with the plugin ABI 1.3 scaling entries, in that backend's
// memory (docs/recipes.md, "Where the scaling state lives").
#pragma once

#include <octet/octet.h>

#include <memory>
#include <vector>

#include "buffer.hpp"
#include "recipe.hpp"
#include "tensor.hpp"

namespace octet::core {

// A quantizer's state resident in one context's backend memory:
// [scale, scale_inv, history[n]] floats, laid out as the host fields are
// (the ring's `current`, its length and the update count stay on the host:
// they decide which slot a kernel touches, never a value).
struct ResidentScaling {
  std::shared_ptr<ContextState> ctx;
  Buffer state;
};

struct QuantizerState {
  std::shared_ptr<const RecipeState> recipe;       // null: follows autocast
  std::shared_ptr<const RecipeState> last_recipe;  // the one last quantized with
  int32_t role = OCTET_ROLE_INPUT;
  float scale = 1.0f;
  float scale_inv = 1.0f;
  // Ring buffer of amaxes; `current` is this step's slot. Length 1 for
  // recipes without a history. Its size is the length even while the
  // values are on the device.
  std::vector<float> history = std::vector<float>(1, 0.0f);
  size_t current = 0;
  uint64_t update_count = 0;
  float observed_amax = 0.0f;
  uint64_t observed_saturated = 0;
  uint64_t observed_total = 0;
  // Where the truth is. Null: the host fields above. Set: the device state,
  // and the host's scale, scale_inv and history equal it only while
  // host_current is true (after a download or an upload).
  std::shared_ptr<ResidentScaling> resident;
  bool host_current = true;

  // The recipe in effect: own, else last used (null if neither).
  const RecipeState* effective() const { return recipe ? recipe.get() : last_recipe.get(); }
  // Newest first: [0] = current step.
  std::vector<float> history_newest_first() const;
  // Makes the history `length` long (a new recipe of another length keeps
  // the newest entries). Host fields only: see resize_history_anywhere.
  void resize_history(size_t length);
  void record(float amax);
};

// ---- where the state lives ----------------------------------------------

// Copies `count` floats between two places of the context's memory. The
// plugin ABI has no device-to-device copy; convert FP32 -> FP32 of a
// 1 x count view is an exact copy by contract.
void copy_floats(const ContextState& ctx, const float* src, float* dst, int64_t count);
// True when the context's backend provides the scaling entries.
bool device_scaling(const ContextState& ctx);
// Makes the host fields current (one copy to the host when they are stale);
// the device, if any, stays the truth. Host reads call this first.
void sync_host(QuantizerState& q);
// After a host write to the host fields: uploads them when the state is
// resident (sync_host must have run before the write).
void push_host_write(QuantizerState& q);
// Resizes the history wherever the state lives.
void resize_history_anywhere(QuantizerState& q, size_t length);

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
UsedScale quantizer_prepare(const std::shared_ptr<ContextState>& ctx, QuantizerState& q, const RecipeState& r,
                            const TensorState& in, TensorState& out);
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
                           uint32_t usages, bool saturate, octet_quantize_stats* stats);

// ---- the delayed-scaling update -----------------------------------------

// The delayed-scaling update of numerics.md 14.2 on the host fields. Throws
// before changing anything if a callback fails.
void apply_scale_update(QuantizerState& q, const RecipeState& recipe);
// Whether the update needs the host (a user callback).
bool update_needs_host(const RecipeState& recipe);
// The update wherever the state lives: on the device with
// delayed_scaling_update when resident and no callback is involved, else on
// the host (a resident state is downloaded, updated and uploaded).
void update_scale(QuantizerState& q, const RecipeState& recipe);

// Current scaling (numerics.md 14.1): the scale from an amax.
float current_scale(float amax, float fp8_max, float epsilon, bool power_of_two);

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
