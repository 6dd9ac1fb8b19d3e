// The caller's communicator on a context: setting it, and the all-reduce
// that delayed scaling (autocast) and current scaling (quantizers) call.
#include "runtime/communicator.hpp"

#include <algorithm>
#include <cstring>

#include "runtime/error.hpp"
#include "runtime/versioned_struct.hpp"

namespace octet::core {

bool has_communicator(const ContextState& ctx) { return ctx.communicator.allreduce_max != nullptr; }

void communicator_allreduce_max(const ContextState& ctx, float* values, size_t count, const char* consequence) {
  const octet_status s = ctx.communicator.allreduce_max(values, count, ctx.communicator.user_data);
  if (s != OCTET_STATUS_SUCCESS)
    fail(s, "the communicator's allreduce_max returned ", octet_status_name(s), "; ", consequence);
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
    c.struct_size = sizeof(c);
    ctx.communicator = c;
  });
}

}  // extern "C"
