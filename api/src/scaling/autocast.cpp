// Autocast scopes: a stack of recipes on a context. Ending the outermost
// scope reduces the amaxes of the delayed-scaling quantizers used in it
// (through the caller's communicator) and updates their scales.
#include <octet/octet.h>

#include <memory>
#include <vector>

#include "runtime/communicator.hpp"
#include "runtime/context.hpp"
#include "runtime/error.hpp"
#include "scaling/recipe.hpp"
#include "scaling/scale_update.hpp"

namespace octet::core {
namespace {

// The end-of-step work of the outermost scope. All or nothing: the reduced
// amaxes and the host updates are computed on copies and committed only when
// the communicator and every user callback succeeded. A quantizer whose
// state is resident in backend memory (and whose recipe has no callback) is
// updated there by delayed_scaling_update after the commit point; with a
// communicator its current-slot amax comes to the host for the reduction
// (one copy per quantizer per step) and the reduced value goes back.
void finish_step(ContextState& ctx, const std::vector<std::shared_ptr<QuantizerState>>& used) {
  struct Entry {
    QuantizerState* q;
    const RecipeState* r;
    bool on_device;  // updated by the backend
    bool reduced;
    float amax;      // this step's amax, after the reduction
    QuantizerState updated;  // host path: the updated copy
  };
  std::vector<Entry> entries;
  for (const auto& q : used) {
    const RecipeState* r = q->effective();
    if (r == nullptr || r->kind != OCTET_RECIPE_DELAYED) continue;
    Entry e{q.get(), r, q->resident != nullptr && !update_needs_host(*r), r->delayed.reduce_amax != 0, 0.0f, {}};
    entries.push_back(std::move(e));
  }
  const bool reducing = has_communicator(ctx);
  // Host copies: every host-path quantizer, and the amax of every reduced
  // one (a download leaves the device the truth: nothing changes yet).
  for (Entry& e : entries) {
    if (!e.on_device || (reducing && e.reduced)) sync_host(*e.q);
    if (!e.on_device) {
      e.updated = *e.q;
      e.updated.resize_history(size_t(e.r->delayed.amax_history_len));
    }
    e.amax = e.q->history[e.q->current];
  }
  if (reducing) {
    // One call for all quantizers, in order of first use: every process
    // must run the same scopes with the same quantizers.
    std::vector<float> amaxes;
    for (const Entry& e : entries)
      if (e.reduced) amaxes.push_back(e.amax);
    if (!amaxes.empty()) {
      communicator_allreduce_max(ctx, amaxes.data(), amaxes.size(), "the scope is closed but no scale was updated");
      size_t k = 0;
      for (Entry& e : entries) {
        if (!e.reduced) continue;
        e.amax = amaxes[k++];
        if (!e.on_device) e.updated.history[e.updated.current] = e.amax;
      }
    }
  }
  // A failing callback throws here, before any quantizer changed.
  for (Entry& e : entries)
    if (!e.on_device) apply_scale_update(e.updated, *e.r);
  for (Entry& e : entries) {
    if (!e.on_device) {
      *e.q = std::move(e.updated);
      push_host_write(*e.q);  // resident with a callback: back to the device
      continue;
    }
    if (reducing && e.reduced) {
      // The host copy is current (downloaded above): the reduced amax goes
      // into its slot on both sides.
      e.q->history[e.q->current] = e.amax;
      e.q->resident->state.copy_from_host(&e.amax, sizeof(float), sizeof(float) * (2 + e.q->current));
    }
    update_scale(*e.q, *e.r);
  }
}

}  // namespace
}  // namespace octet::core

using namespace octet::core;

extern "C" {

OCTET_API octet_status octet_autocast_begin(octet_context* context, const octet_recipe* recipe) {
  return guarded("octet_autocast_begin", [&] {
    ContextState& ctx = context_arg(context);
    require_live_handle(recipe, HandleKind::Recipe, "recipe");
    require_recipe_on_backend(*recipe->state, ctx, "argument 'recipe'");
    require(ctx.autocast_stack.size() < 64, "autocast scopes nest at most 64 deep");
    // A pooled handle: octet_autocast_get_state hands it out.
    ctx.autocast_stack.push_back(std::shared_ptr<octet_recipe>(new octet_recipe{recipe->state}));
  });
}

OCTET_API octet_status octet_autocast_end(octet_context* context) {
  return guarded("octet_autocast_end", [&] {
    ContextState& ctx = context_arg(context);
    require(!ctx.autocast_stack.empty(), "no autocast scope is open on this context");
    ctx.autocast_stack.pop_back();
    if (!ctx.autocast_stack.empty()) return;
    std::vector<std::shared_ptr<QuantizerState>> used;
    used.swap(ctx.autocast_used);
    finish_step(ctx, used);
  });
}

OCTET_API octet_status octet_autocast_get_state(const octet_context* context, int32_t* depth,
                                                const octet_recipe** recipe) {
  return guarded("octet_autocast_get_state", [&] {
    const ContextState& ctx = context_arg(context);
    if (depth != nullptr) *depth = int32_t(ctx.autocast_stack.size());
    // The scope's own handle: valid while the scope is open.
    if (recipe != nullptr) *recipe = ctx.autocast_stack.empty() ? nullptr : ctx.autocast_stack.back().get();
  });
}

}  // extern "C"
