// The caller's communicator on a context (octet_context_set_communicator):
// what the core all-reduces amaxes through across processes, and the
// collectives on buffers (users' ABI 1.7), started and waited on.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/context.hpp"

namespace octet::core {

// True when the caller set a communicator on the context.
bool has_communicator(const ContextState& ctx);
// The communicator's allreduce_max over values[0..count). A failing status
// becomes a Failure with that status; `consequence` says what was left
// undone.
void communicator_allreduce_max(const ContextState& ctx, float* values, size_t count, const char* consequence);

// The communicator for a collective named `call` (octet_allgather, ...):
// set, with the entry (`present`, named `entry`), and able to address the
// context's memory; else UNSUPPORTED naming what is missing.
const octet_communicator& collective_communicator(const ContextState& ctx, bool present, const char* entry,
                                                  const char* call);

// One collective in flight: wait() completes it (a failing status becomes
// a Failure naming the entry and `consequence`). Destroyed without a wait
// (an exception in between), it still waits, ignoring the status, so no
// request is left behind in the communicator.
class PendingCollective {
 public:
  PendingCollective() = default;
  PendingCollective(ContextState* ctx, void* request, const char* entry, const char* consequence)
      : ctx_(ctx), request_(request), entry_(entry), consequence_(consequence) {}
  PendingCollective(PendingCollective&& other) noexcept { *this = std::move(other); }
  PendingCollective& operator=(PendingCollective&& other) noexcept;
  PendingCollective(const PendingCollective&) = delete;
  PendingCollective& operator=(const PendingCollective&) = delete;
  ~PendingCollective();
  void wait();

 private:
  ContextState* ctx_ = nullptr;  // null: nothing in flight
  void* request_ = nullptr;
  const char* entry_ = "";
  const char* consequence_ = "";
};

// Starts a collective on buffers in the context's memory; `bytes` is what
// this process sends (for the statistics). The entry must be present
// (collective_communicator). A failing start is a Failure with its status.
PendingCollective start_allreduce(ContextState& ctx, const void* send, void* recv, size_t count, int32_t dtype,
                                  int32_t op, size_t bytes, const char* consequence);
PendingCollective start_allgather(ContextState& ctx, const void* send, void* recv, size_t send_count, int32_t dtype,
                                  size_t bytes, const char* consequence);
PendingCollective start_reduce_scatter(ContextState& ctx, const void* send, void* recv, size_t recv_count,
                                       int32_t dtype, int32_t op, size_t bytes, const char* consequence);

}  // namespace octet::core
