// Autocast scopes: a stack of recipes on a context. Ending the outermost
// scope reduces the amaxes of the delayed-scaling quantizers used in it
// (through the caller's communicator) and updates their scales.
#include "autocast.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "backend_info.hpp"
#include "error.hpp"

namespace octet::core {

std::shared_ptr<const RecipeState> autocast_recipe(const ContextState& ctx) {
  return ctx.autocast_stack.empty() ? nullptr : ctx.autocast_stack.back()->state;
}

void autocast_note_use(ContextState& ctx, const std::shared_ptr<QuantizerState>& q) {
  if (ctx.autocast_stack.empty()) return;
  if (std::find(ctx.autocast_used.begin(), ctx.autocast_used.end(), q) == ctx.autocast_used.end())
    ctx.autocast_used.push_back(q);
}

namespace {

// The end-of-step work of the outermost scope. All or nothing: the reduced
// amaxes and the updates are computed on copies and committed only when the
// communicator and every user callback succeeded.
void finish_step(ContextState& ctx, const std::vector<std::shared_ptr<QuantizerState>>& used) {
  std::vector<QuantizerState*> delayed;
  std::vector<QuantizerState> updated;
  std::vector<size_t> reduced;  // indexes into `updated`
  for (const auto& q : used) {
    const RecipeState* r = q->effective();
    if (r == nullptr || r->kind != OCTET_RECIPE_DELAYED) continue;
    delayed.push_back(q.get());
    updated.push_back(*q);
    updated.back().resize_history(size_t(r->delayed.amax_history_len));
    if (r->delayed.reduce_amax) reduced.push_back(updated.size() - 1);
  }
  if (ctx.communicator.struct_size != 0 && ctx.communicator.allreduce_max != nullptr && !reduced.empty()) {
    // One call for all quantizers, in order of first use: every process
    // must run the same scopes with the same quantizers.
    std::vector<float> amaxes;
    for (size_t i : reduced) amaxes.push_back(updated[i].history[updated[i].current]);
    octet_status s = ctx.communicator.allreduce_max(amaxes.data(), amaxes.size(), ctx.communicator.user_data);
    if (s != OCTET_STATUS_SUCCESS)
      fail(s, "the communicator's allreduce_max returned ", octet_status_name(s),
           "; the scope is closed but no scale was updated");
    for (size_t k = 0; k < reduced.size(); ++k) updated[reduced[k]].history[updated[reduced[k]].current] = amaxes[k];
  }
  // A failing callback throws here, before any quantizer changed.
  for (QuantizerState& q : updated) apply_scale_update(q, *q.effective());
  for (size_t i = 0; i < delayed.size(); ++i) *delayed[i] = std::move(updated[i]);
}

}  // namespace
}  // namespace octet::core

using namespace octet::core;

extern "C" {

OCTET_API octet_status octet_context_set_communicator(octet_context* context, const octet_communicator* communicator) {
  return guarded("octet_context_set_communicator", [&] {
    require(context != nullptr, "argument 'context' is NULL");
    ContextState& ctx = *context->state;
    if (communicator == nullptr) {
      ctx.communicator = octet_communicator{};
      return;
    }
    require_struct(communicator, communicator->struct_size, "communicator");
    octet_communicator c{};
    std::memcpy(&c, communicator, std::min(communicator->struct_size, sizeof(c)));
    require(c.allreduce_max != nullptr, "communicator->allreduce_max is NULL");
    c.struct_size = sizeof(c);
    ctx.communicator = c;
  });
}

OCTET_API octet_status octet_autocast_begin(octet_context* context, const octet_recipe* recipe) {
  return guarded("octet_autocast_begin", [&] {
    require(context != nullptr, "argument 'context' is NULL");
    require(recipe != nullptr, "argument 'recipe' is NULL");
    ContextState& ctx = *context->state;
    require(ctx.autocast_stack.size() < 64, "autocast scopes nest at most 64 deep");
    ctx.autocast_stack.push_back(std::make_shared<octet_recipe>(octet_recipe{recipe->state}));
  });
}

OCTET_API octet_status octet_autocast_end(octet_context* context) {
  return guarded("octet_autocast_end", [&] {
    require(context != nullptr, "argument 'context' is NULL");
    ContextState& ctx = *context->state;
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
    require(context != nullptr, "argument 'context' is NULL");
    const ContextState& ctx = *context->state;
    if (depth != nullptr) *depth = int32_t(ctx.autocast_stack.size());
    // The scope's own handle: valid while the scope is open.
    if (recipe != nullptr) *recipe = ctx.autocast_stack.empty() ? nullptr : ctx.autocast_stack.back().get();
  });
}

}  // extern "C"
