// Autocast scopes on a context (autocast.cpp).
#pragma once

#include <cstddef>
#include <memory>

#include "runtime/context.hpp"
#include "scaling/quantizer.hpp"

namespace octet::core {

// The innermost open scope's recipe, or null.
std::shared_ptr<const RecipeState> autocast_recipe(const ContextState& ctx);
// Remembers that `q` was used inside the open scopes (first use only).
void autocast_note_use(ContextState& ctx, const std::shared_ptr<QuantizerState>& q);

// True when the caller set a communicator on the context.
bool has_communicator(const ContextState& ctx);
// The communicator's allreduce_max over values[0..count). A failing status
// becomes a Failure with that status; `consequence` says what was left
// undone.
void communicator_allreduce_max(const ContextState& ctx, float* values, size_t count, const char* consequence);

}  // namespace octet::core
