// How the reference reports failures: through the host's callback, the way
// every plugin must (octet_backend.h), never through thread-local state.
// The mechanics are the plugin SDK's (<octet/octet_plugin.hpp>); this file
// binds them to the reference's one Host.
#pragma once

#include <octet/octet_backend.h>
#include <octet/octet_plugin.hpp>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <new>
#include <string>
#include <utility>
#include <vector>

namespace octet::ref {

// The host's services given to initialize(), kept by host_errors.cpp.
const plugin::Host& host();

// Keeps a copy of the host's services (the host's struct may be older,
// hence smaller, than ours). NULL forgets them.
void remember_host_services(const octet_host_services* host);

// Reports `message` with `status` to the host (when it gave a callback) and
// returns `status`, so a check can end with `return report(...)`.
inline int32_t report(int32_t status, const std::string& message) { return host().report(status, message); }

// A host allocation that failed: guarded() reports OUT_OF_MEMORY with the
// size asked.
using plugin::OutOfMemory;

// `count` copies of `value` in host memory; OutOfMemory naming the bytes
// when they cannot be had. Every kernel allocation whose size follows the
// arguments' shapes goes through here.
template <typename T>
std::vector<T> host_vector(std::size_t count, T value = T()) {
  if (count > std::numeric_limits<std::size_t>::max() / sizeof(T))
    throw OutOfMemory(std::numeric_limits<std::size_t>::max(), "host memory");
  try {
    return std::vector<T>(count, value);
  } catch (const std::bad_alloc&) {
    throw OutOfMemory(count * sizeof(T), "host memory");
  }
}

// Runs an entry point's body so that no exception crosses the C ABI.
template <typename Body>
int32_t guarded(const char* entry_name, Body&& body) noexcept {
  return plugin::guard(host(), entry_name, std::forward<Body>(body));
}

}  // namespace octet::ref
