// The open autocast scopes of a context, as quantizers and layers see them.
#include "scaling/autocast_scope.hpp"

#include <algorithm>

#include "scaling/recipe.hpp"

namespace octet::core {

std::shared_ptr<const RecipeState> autocast_recipe(const ContextState& ctx) {
  return ctx.autocast_stack.empty() ? nullptr : ctx.autocast_stack.back()->state;
}

void autocast_note_use(ContextState& ctx, const std::shared_ptr<QuantizerState>& q) {
  if (ctx.autocast_stack.empty()) return;
  if (std::find(ctx.autocast_used.begin(), ctx.autocast_used.end(), q) == ctx.autocast_used.end())
    ctx.autocast_used.push_back(q);
}

}  // namespace octet::core
