// The open autocast scopes of a context, as quantizers and layers see them:
// the recipe in effect, and the quantizers used since the outermost scope
// opened. The scopes' entry points (octet_autocast_*) are in autocast.cpp.
#pragma once

#include <memory>

#include "runtime/context.hpp"

namespace octet::core {

// The innermost open scope's recipe, or null.
std::shared_ptr<const RecipeState> autocast_recipe(const ContextState& ctx);
// Remembers that `q` was used inside the open scopes (first use only).
void autocast_note_use(ContextState& ctx, const std::shared_ptr<QuantizerState>& q);

}  // namespace octet::core
