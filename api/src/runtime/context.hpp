// A context: one backend context plus the capabilities in effect for it
// (the backend's, narrowed by the capability profile).
#pragma once

#include <octet/octet.h>
#include <octet/octet_backend.h>

#include <atomic>
#include <memory>
#include <vector>

#include "runtime/handle.hpp"

#include "runtime/memory_ledger.hpp"
#include "runtime/registry.hpp"

namespace octet::core {

struct RecipeState;
struct QuantizerState;

// Which thread is inside a call that uses the context, and which call: a
// context is used by one thread at a time, and a second thread entering
// while another is inside is refused (enter_context).
struct ContextUse {
  std::atomic<const void*> owner{nullptr};  // a per-thread token, NULL when idle
  std::atomic<const char*> call{nullptr};   // the owner's outermost entry point
  uint32_t depth = 0;                       // the owner's nested entries (callbacks)
};

// Calls and bytes sent through the communicator, per octet_collective_kind.
struct CommunicationStats {
  uint64_t calls[OCTET_COLLECTIVE_MAX_KINDS] = {};
  uint64_t bytes_sent[OCTET_COLLECTIVE_MAX_KINDS] = {};
};

struct ContextState : std::enable_shared_from_this<ContextState> {
  std::shared_ptr<const Backend> backend;
  octet_backend_context* handle = nullptr;
  octet_backend_caps caps{};  // in effect after the profile
  int32_t profile = OCTET_PROFILE_NATIVE;
  // Autocast (autocast.cpp): open scopes, innermost last; the quantizers
  // used since the outermost one opened, in order of first use; and the
  // caller's communicator (struct_size 0: none).
  std::vector<std::shared_ptr<octet_recipe>> autocast_stack;  // handles owned by the scopes
  std::vector<std::shared_ptr<QuantizerState>> autocast_used;
  octet_communicator communicator{};
  mutable CommunicationStats communication;  // what went through the communicator (bookkeeping)
  MemoryLedger memory;  // bytes held by the buffers of this context
  ContextUse use;

  ContextState() = default;
  ContextState(const ContextState&) = delete;
  ContextState& operator=(const ContextState&) = delete;
  ~ContextState();

  const octet_backend_api& api() const { return *backend->api; }
  bool host_memory() const { return caps.memory_kind == OCTET_MEMORY_HOST; }
};

// Holds `ctx` for the running entry point (current_call()) until it returns.
// Another thread inside a call on `ctx` makes this INVALID_ARGUMENT naming
// both calls; the same thread may enter again (a callback calling Octet).
void enter_context(ContextState& ctx);
void leave_context(ContextState& ctx) noexcept;

// A context argument: not NULL, live, and held for the running call.
ContextState& context_arg(const octet_context* context, const char* name = "context");

// Fails with UNSUPPORTED naming `entry` when the backend does not provide it.
void require_entry(const ContextState& ctx, bool present, const char* name);

// Runs one backend entry point; a non-zero status becomes a Failure with the
// message the backend reported.
template <typename Call>
void call_backend(const ContextState& ctx, const char* entry, Call&& call) {
  clear_backend_message();
  check_backend_status(*ctx.backend, entry, call());
}

}  // namespace octet::core

// The handle users hold. Tensors share `state`, so it lives as long as any
// of them.
struct octet_context {
  std::shared_ptr<octet::core::ContextState> state;
  OCTET_POOLED_HANDLE(octet::core::HandleKind::Context)
};
