// A quantizer's scaling state: its amax history ring, and where the state
// lives (the host fields, or resident in a backend's memory).
#include "scaling/quantizer_state.hpp"

#include <algorithm>
#include <cmath>

#include "runtime/error.hpp"

namespace octet::core {
namespace {

size_t state_floats(const QuantizerState& q) { return 2 + q.history.size(); }

// Uploads the host fields (which must be current) into a state on `ctx`,
// reallocating when the context or the history length changed.
void upload(QuantizerState& q, const std::shared_ptr<ContextState>& ctx) {
  const size_t bytes = state_floats(q) * sizeof(float);
  std::shared_ptr<ResidentScaling> resident = q.resident;
  if (!resident || resident->ctx.get() != ctx.get() || resident->state.bytes() != bytes) {
    resident = std::make_shared<ResidentScaling>();
    resident->ctx = ctx;
    resident->state = Buffer(ctx, bytes, OCTET_MEMORY_QUANTIZED_COPIES);
  }
  std::vector<float> packed(state_floats(q));
  packed[0] = q.scale;
  packed[1] = q.scale_inv;
  std::copy(q.history.begin(), q.history.end(), packed.begin() + 2);
  resident->state.copy_from_host(packed.data(), bytes);
  q.resident = std::move(resident);
  q.host_current = true;
}

}  // namespace

std::shared_ptr<QuantizerState> new_quantizer_state(int32_t role, std::shared_ptr<const RecipeState> recipe) {
  auto q = std::make_shared<QuantizerState>();
  q->role = role;
  q->recipe = std::move(recipe);
  if (q->recipe && q->recipe->kind == OCTET_RECIPE_DELAYED)
    q->resize_history(size_t(q->recipe->delayed.amax_history_len));
  if (q->recipe && q->recipe->kind == OCTET_RECIPE_STATIC) {
    q->scale = q->recipe->fixed.scale;
    q->scale_inv = 1.0f / q->scale;
  }
  return q;
}

std::vector<float> QuantizerState::history_newest_first() const {
  const size_t n = history.size();
  std::vector<float> out;
  out.reserve(n);
  for (size_t i = current + 1; i-- > 0;) out.push_back(history[i]);  // current, then back to slot 0
  for (size_t i = n; i-- > current + 1;) out.push_back(history[i]);  // then from the end back
  return out;
}

void QuantizerState::resize_history(size_t length) {
  if (history.size() == length) return;
  std::vector<float> newest = history_newest_first();
  newest.resize(length, 0.0f);
  // Re-lay as a ring with the current slot at 0, older ones going backwards.
  history.assign(length, 0.0f);
  current = 0;
  for (size_t i = 0; i < length; ++i) history[(length - i) % length] = newest[i];
}

void QuantizerState::record(float amax) {
  // The step's amax is the max over every tensor recorded in it; a NaN is
  // ignored, like NaN elements in octet_amax.
  history[current] = std::fmax(history[current], amax);
}

void copy_floats(const ContextState& ctx, const float* src, float* dst, int64_t count) {
  require_entry(ctx, ctx.api().convert != nullptr, "convert");
  octet_matrix_view in{const_cast<float*>(src), OCTET_DTYPE_FP32, 0, 1, count, count};
  octet_matrix_view out{dst, OCTET_DTYPE_FP32, 0, 1, count, count};
  call_backend(ctx, "convert", [&] { return ctx.api().convert(ctx.handle, &in, &out, 0); });
}

bool device_scaling(const ContextState& ctx) { return ctx.backend->device_scaling; }

void sync_host(QuantizerState& q) {
  if (!q.resident || q.host_current) return;
  std::vector<float> packed(state_floats(q));
  q.resident->state.copy_to_host(packed.data(), packed.size() * sizeof(float));
  q.scale = packed[0];
  q.scale_inv = packed[1];
  std::copy(packed.begin() + 2, packed.end(), q.history.begin());
  q.host_current = true;
}

void push_host_write(QuantizerState& q) {
  if (q.resident) upload(q, q.resident->ctx);
}

void resize_history_anywhere(QuantizerState& q, size_t length) {
  if (q.history.size() == length) return;
  sync_host(q);
  q.resize_history(length);
  push_host_write(q);
}

// The host path from here on: the state comes back and stays on the host.
void release_to_host(QuantizerState& q) {
  sync_host(q);
  q.resident.reset();
  q.host_current = true;
}

// Resident on `ctx` with a history of `length`: a state resident elsewhere
// (another context) migrates through the host, as does a resize.
void make_resident(QuantizerState& q, const std::shared_ptr<ContextState>& ctx, size_t length) {
  if (q.resident && q.resident->ctx.get() == ctx.get() && q.history.size() == length) return;
  sync_host(q);
  q.resize_history(length);
  upload(q, ctx);
}

// Where the backend has the scaling entries, every recipe keeps its state
// in the backend's memory, so a quantize copies nothing to the host (on a
// GPU, a copy to the host is a synchronisation). The exception is static
// scaling with observe = 1: its statistics come to the host on every call
// anyway.
bool device_path(const ContextState& ctx, const RecipeState& r) { return device_scaling(ctx) && !r.observes(); }

}  // namespace octet::core
