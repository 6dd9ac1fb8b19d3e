// Failures inside the backend are C++ exceptions (Failure); every ABI entry
// runs its body through guarded(), which turns any exception into a status
// reported through the host's callback. No exception crosses the ABI. The
// mechanics are the plugin SDK's (<octet/octet_plugin.hpp>), bound to the
// cuda backend's Host, whose label starts every message with "cuda ".
#pragma once

#include <octet/octet_backend.h>
#include <octet/octet_plugin.hpp>

#include <cuda_runtime_api.h>

#include <new>
#include <sstream>
#include <string>
#include <utility>

namespace octet_cuda {

using octet::plugin::Failure;

template <typename... Parts>
std::string concat(Parts&&... parts) {
  std::ostringstream out;
  (out << ... << std::forward<Parts>(parts));
  return out.str();
}

template <typename... Parts>
[[noreturn]] void fail(int32_t status, Parts&&... parts) {
  throw Failure{status, concat(std::forward<Parts>(parts)...)};
}

template <typename... Parts>
void require(bool condition, Parts&&... parts) {
  if (!condition) fail(OCTET_STATUS_INVALID_ARGUMENT, std::forward<Parts>(parts)...);
}

// "cudaErrorInsufficientDriver (35): CUDA driver version is insufficient ..."
std::string cuda_error_text(cudaError_t error);

// Throws BACKEND_ERROR (OUT_OF_MEMORY for allocation failures) naming `what`.
void check_cuda(cudaError_t error, const char* what);

// The host's services, kept from initialize().
const octet::plugin::Host& host();
// Keeps a copy of the host services (initialize).
void set_host_services(const octet_host_services* host);

// Reports through the host callback; never throws. Returns status.
inline int32_t report(int32_t status, const std::string& message) noexcept {
  try {
    return host().report(status, message);
  } catch (...) {
    return status;  // a C++ host's callback threw
  }
}

// Runs an entry's body (void: success) so that no exception crosses the ABI.
template <typename Body>
int32_t guarded(const char* entry, Body&& body) noexcept {
  return octet::plugin::guard(host(), entry, std::forward<Body>(body));
}

// INVALID_ARGUMENT when a struct of `given` bytes is shorter than `required`.
inline void require_struct_size(const char* name, size_t given, size_t required) {
  octet::plugin::raise(octet::plugin::struct_size_problem(name, given, required));
}

}  // namespace octet_cuda
