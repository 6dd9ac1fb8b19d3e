// The caller's communicator on a context (octet_context_set_communicator):
// what the core all-reduces amaxes through across processes.
#pragma once

#include <cstddef>

#include "runtime/context.hpp"

namespace octet::core {

// True when the caller set a communicator on the context.
bool has_communicator(const ContextState& ctx);
// The communicator's allreduce_max over values[0..count). A failing status
// becomes a Failure with that status; `consequence` says what was left
// undone.
void communicator_allreduce_max(const ContextState& ctx, float* values, size_t count, const char* consequence);

}  // namespace octet::core
