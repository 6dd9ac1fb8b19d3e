// The caller's communicator on a context: setting it, the all-reduce that
// delayed scaling (autocast) and current scaling (quantizers) call, the
// collectives on buffers started and waited on, and the statistics of what
// went through it.
#include "runtime/communicator.hpp"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <utility>

#include "runtime/error.hpp"
#include "runtime/versioned_struct.hpp"

namespace octet::core {
namespace {

// The users' ABI 1.0-1.6 struct ends at the first 1.7 field.
constexpr size_t kCommunicatorSize16 = offsetof(octet_communicator, rank);

void count(const ContextState& ctx, int32_t kind, size_t bytes) {
  ctx.communication.calls[kind] += 1;
  ctx.communication.bytes_sent[kind] += bytes;
}

void check_started(octet_status s, const char* entry, const char* consequence) {
  if (s != OCTET_STATUS_SUCCESS)
    fail(s, "the communicator's ", entry, " returned ", octet_status_name(s), "; ", consequence);
}

}  // namespace

bool has_communicator(const ContextState& ctx) { return ctx.communicator.allreduce_max != nullptr; }

void communicator_allreduce_max(const ContextState& ctx, float* values, size_t count_, const char* consequence) {
  count(ctx, OCTET_COLLECTIVE_AMAX, count_ * sizeof(float));
  const octet_status s = ctx.communicator.allreduce_max(values, count_, ctx.communicator.user_data);
  if (s != OCTET_STATUS_SUCCESS)
    fail(s, "the communicator's allreduce_max returned ", octet_status_name(s), "; ", consequence);
}

const octet_communicator& collective_communicator(const ContextState& ctx, bool present, const char* entry,
                                                  const char* call) {
  const octet_communicator& c = ctx.communicator;
  if (!has_communicator(ctx))
    fail(OCTET_STATUS_UNSUPPORTED, call,
         " needs a communicator on the context: set one with "
         "octet_context_set_communicator (over MPI: octet_mpi_communicator_init, octet/octet_mpi.h)");
  if (!present)
    fail(OCTET_STATUS_UNSUPPORTED, call, " needs the communicator's ", entry,
         " entry, which is NULL (or beyond the struct_size it was set with: a users' ABI 1.0-1.6 "
         "octet_communicator has no collectives)");
  const uint32_t bit = 1u << uint32_t(ctx.caps.memory_kind);
  if ((c.memory_kinds & bit) == 0)
    fail(OCTET_STATUS_UNSUPPORTED, call, ": the context's backend keeps tensors in ",
         ctx.host_memory() ? "host" : "device", " memory, which the communicator's memory_kinds (", c.memory_kinds,
         ") does not include");
  return c;
}

PendingCollective& PendingCollective::operator=(PendingCollective&& other) noexcept {
  if (this != &other) {
    this->~PendingCollective();
    ctx_ = std::exchange(other.ctx_, nullptr);
    request_ = other.request_;
    entry_ = other.entry_;
    consequence_ = other.consequence_;
  }
  return *this;
}

PendingCollective::~PendingCollective() {
  if (ctx_ == nullptr) return;
  ContextState* ctx = std::exchange(ctx_, nullptr);
  ctx->communicator.wait(request_, ctx->communicator.user_data);  // its status is lost with the exception in flight
}

void PendingCollective::wait() {
  if (ctx_ == nullptr) return;
  ContextState* ctx = std::exchange(ctx_, nullptr);
  const octet_status s = ctx->communicator.wait(request_, ctx->communicator.user_data);
  if (s != OCTET_STATUS_SUCCESS)
    fail(s, "the communicator's wait (for its ", entry_, ") returned ", octet_status_name(s), "; ", consequence_);
}

PendingCollective start_allreduce(ContextState& ctx, const void* send, void* recv, size_t n, int32_t dtype, int32_t op,
                                  size_t bytes, const char* consequence) {
  const octet_communicator& c = ctx.communicator;
  void* request = nullptr;
  count(ctx, OCTET_COLLECTIVE_ALLREDUCE, bytes);
  check_started(c.allreduce(send, recv, n, dtype, op, &request, c.user_data), "allreduce", consequence);
  return PendingCollective(&ctx, request, "allreduce", consequence);
}

PendingCollective start_allgather(ContextState& ctx, const void* send, void* recv, size_t send_count, int32_t dtype,
                                  size_t bytes, const char* consequence) {
  const octet_communicator& c = ctx.communicator;
  void* request = nullptr;
  count(ctx, OCTET_COLLECTIVE_ALLGATHER, bytes);
  check_started(c.allgather(send, recv, send_count, dtype, &request, c.user_data), "allgather", consequence);
  return PendingCollective(&ctx, request, "allgather", consequence);
}

PendingCollective start_reduce_scatter(ContextState& ctx, const void* send, void* recv, size_t recv_count,
                                       int32_t dtype, int32_t op, size_t bytes, const char* consequence) {
  const octet_communicator& c = ctx.communicator;
  void* request = nullptr;
  count(ctx, OCTET_COLLECTIVE_REDUCE_SCATTER, bytes);
  check_started(c.reduce_scatter(send, recv, recv_count, dtype, op, &request, c.user_data), "reduce_scatter",
                consequence);
  return PendingCollective(&ctx, request, "reduce_scatter", consequence);
}

}  // namespace octet::core

using namespace octet::core;

extern "C" {

OCTET_API octet_status octet_context_set_communicator(octet_context* context, const octet_communicator* communicator) {
  return guarded("octet_context_set_communicator", [&] {
    ContextState& ctx = context_arg(context);
    if (communicator == nullptr) {
      ctx.communicator = octet_communicator{};
      return;
    }
    require_struct(communicator, communicator->struct_size, "communicator");
    octet_communicator c{};
    std::memcpy(&c, communicator, std::min(communicator->struct_size, sizeof(c)));
    require(c.allreduce_max != nullptr, "communicator->allreduce_max is NULL");
    if (communicator->struct_size > kCommunicatorSize16) {
      const bool collectives = c.allreduce != nullptr || c.allgather != nullptr || c.reduce_scatter != nullptr;
      if (collectives) {
        require(c.wait != nullptr,
                "communicator->wait is NULL but a collective (allreduce, allgather or reduce_scatter) is set: "
                "every started collective is completed through wait");
        require(c.size >= 1, "communicator->size (", c.size, ") must be >= 1: the number of processes");
        require(c.rank >= 0 && c.rank < c.size, "communicator->rank (", c.rank, ") must be in [0, size = ", c.size,
                ")");
        require(
            c.memory_kinds != 0 && (c.memory_kinds & ~uint32_t(OCTET_COMM_HOST_MEMORY | OCTET_COMM_DEVICE_MEMORY)) == 0,
            "communicator->memory_kinds (", c.memory_kinds,
            ") must be a non-empty set of OCTET_COMM_HOST_MEMORY and OCTET_COMM_DEVICE_MEMORY bits");
      }
    }
    c.struct_size = sizeof(c);
    ctx.communicator = c;
  });
}

OCTET_API octet_status octet_context_get_communication_stats(const octet_context* context,
                                                             octet_communication_stats* stats) {
  return guarded("octet_context_get_communication_stats", [&] {
    const ContextState& ctx = context_arg(context);
    require_struct(stats, stats != nullptr ? stats->struct_size : 0, "stats");
    octet_communication_stats out{};
    out.struct_size = sizeof(out);
    std::memcpy(out.calls, ctx.communication.calls, sizeof(out.calls));
    std::memcpy(out.bytes_sent, ctx.communication.bytes_sent, sizeof(out.bytes_sent));
    write_versioned(out, stats, "stats");
  });
}

OCTET_API octet_status octet_context_reset_communication_stats(octet_context* context) {
  return guarded("octet_context_reset_communication_stats", [&] {
    ContextState& ctx = context_arg(context);
    ctx.communication = CommunicationStats{};
  });
}

}  // extern "C"
