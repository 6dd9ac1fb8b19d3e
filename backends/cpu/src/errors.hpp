// Error reporting through the host's callback, and the guard that keeps
// every exception inside the plugin (no exception crosses the ABI).
#pragma once

#include <octet/octet_backend.h>

#include <exception>
#include <new>
#include <string>

namespace octet_cpu {

// Set at initialize(), cleared at shutdown().
void set_host_services(const octet_host_services* host);

// Reports `message` with `status` to the host and returns `status`.
int32_t report(int32_t status, const std::string& message);

// Reports `status` with "<entry>: <what>". Building the message or the
// host's callback may itself throw (std::bad_alloc when memory is short);
// then the status is returned without a message, since nothing may leave a
// noexcept entry point.
inline int32_t report_quietly(int32_t status, const char* entry, const char* what) noexcept {
  try {
    return report(status, std::string(entry) + ": " + what);
  } catch (...) {
    return status;
  }
}

template <typename Body>
int32_t guarded(const char* entry, Body&& body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return report_quietly(OCTET_STATUS_OUT_OF_MEMORY, entry, "out of host memory");
  } catch (const std::exception& e) {
    return report_quietly(OCTET_STATUS_BACKEND_ERROR, entry, e.what());
  } catch (...) {
    return report_quietly(OCTET_STATUS_BACKEND_ERROR, entry, "unknown failure");
  }
}

}  // namespace octet_cpu
