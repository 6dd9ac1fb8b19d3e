// Autocast scopes on a context (autocast.cpp).
#pragma once

#include <memory>

#include "context.hpp"
#include "quantizer.hpp"

namespace octet::core {

// The innermost open scope's recipe, or null.
std::shared_ptr<const RecipeState> autocast_recipe(const ContextState& ctx);
// Remembers that `q` was used inside the open scopes (first use only).
void autocast_note_use(ContextState& ctx, const std::shared_ptr<QuantizerState>& q);

}  // namespace octet::core
