// How the reference reports failures: through the host's callback, the way
// every plugin must (octet_backend.h), never through thread-local state.
#pragma once

#include <octet/octet_backend.h>

#include <cstdint>
#include <new>
#include <string>

namespace octet::ref {

// Keeps a copy of the host's services given to initialize() (the host's
// struct may be older, hence smaller, than ours). NULL forgets them.
void remember_host_services(const octet_host_services* host);

// Reports `message` with `status` to the host (when it gave a callback) and
// returns `status`, so a check can end with `return report(...)`.
int32_t report(int32_t status, const std::string& message);

// Runs an entry point's body so that no exception crosses the C ABI.
template <typename Body>
int32_t guarded(const char* entry_name, Body&& body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    try {
      return report(OCTET_STATUS_OUT_OF_MEMORY, std::string(entry_name) + ": out of host memory");
    } catch (...) {
      return OCTET_STATUS_OUT_OF_MEMORY;
    }
  } catch (...) {
    try {
      return report(OCTET_STATUS_INTERNAL, std::string(entry_name) + ": unexpected exception");
    } catch (...) {
      return OCTET_STATUS_INTERNAL;
    }
  }
}

}  // namespace octet::ref
