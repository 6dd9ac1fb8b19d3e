// A quantizer's state: the scale and amax history of one tensor role, kept
// on the host or, on a backend with the plugin ABI 1.3 scaling entries, in
// that backend's memory (docs/recipes.md, "Where the scaling state lives").
#pragma once

#include <octet/octet.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/context.hpp"
#include "scaling/recipe.hpp"
#include "tensor/buffer.hpp"

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
  // FP4 recipes: the stochastic-rounding stream counter. Quantize n draws
  // streams 2n (rowwise) and 2n + 1 (columnwise): it advances by 2 per
  // quantize and is saved in checkpoints (numerics.md 15.5).
  uint64_t stream_offset = 0;
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

// A new quantizer's state for `role`: with a recipe, a delayed recipe's
// history length or a static recipe's fixed scale; without one (null), it
// follows the autocast scope it is used in.
std::shared_ptr<QuantizerState> new_quantizer_state(int32_t role, std::shared_ptr<const RecipeState> recipe);

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
// The host path from here on: the state comes back and stays on the host.
void release_to_host(QuantizerState& q);
// Resident on `ctx` with a history of `length`: a state resident elsewhere
// (another context) migrates through the host, as does a resize.
void make_resident(QuantizerState& q, const std::shared_ptr<ContextState>& ctx, size_t length);
// Whether a quantize with `r` on `ctx` keeps the state in the backend's
// memory: wherever the backend has the scaling entries, except static
// scaling with observe = 1 (its statistics come to the host on every call).
bool device_path(const ContextState& ctx, const RecipeState& r);

}  // namespace octet::core
