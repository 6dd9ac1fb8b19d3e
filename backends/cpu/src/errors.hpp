// Error reporting through the host's callback, and the guard that keeps
// every exception inside the plugin (no exception crosses the ABI).
#pragma once

#include <octet/octet_backend.h>

#include <new>
#include <string>

namespace octet_cpu {

// Set at initialize(), cleared at shutdown().
void set_host_services(const octet_host_services* host);

// Reports `message` with `status` to the host and returns `status`.
int32_t report(int32_t status, const std::string& message);

template <typename Body>
int32_t guarded(const char* entry, Body&& body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return report(OCTET_STATUS_OUT_OF_MEMORY, std::string(entry) + ": out of host memory");
  } catch (const std::exception& e) {
    return report(OCTET_STATUS_BACKEND_ERROR, std::string(entry) + ": " + e.what());
  } catch (...) {
    return report(OCTET_STATUS_BACKEND_ERROR, std::string(entry) + ": unknown failure");
  }
}

}  // namespace octet_cpu
