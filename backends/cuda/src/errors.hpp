// Failures inside the backend are C++ exceptions (Failure); every ABI entry
// runs its body through guarded(), which turns any exception into a status
// reported through the host's callback. No exception crosses the ABI.
#pragma once

#include <octet/octet_backend.h>

#include <cuda_runtime_api.h>

#include <new>
#include <sstream>
#include <string>
#include <utility>

namespace octet_cuda {

struct Failure {
  int32_t status;
  std::string message;
};

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

// Keeps a copy of the host services (initialize).
void set_host_services(const octet_host_services* host);

// Reports through the host callback; never throws. Returns status.
int32_t report(int32_t status, const std::string& message) noexcept;

template <typename Body>
int32_t guarded(const char* entry, Body&& body) noexcept {
  try {
    body();
    return OCTET_STATUS_SUCCESS;
  } catch (const Failure& failure) {
    try {
      return report(failure.status, std::string("cuda ") + entry + ": " + failure.message);
    } catch (...) {
      return report(failure.status, "cuda: (message lost: out of host memory)");
    }
  } catch (const std::bad_alloc&) {
    return report(OCTET_STATUS_OUT_OF_MEMORY, "cuda: out of host memory");
  } catch (...) {
    return report(OCTET_STATUS_INTERNAL, "cuda: unexpected exception");
  }
}

}  // namespace octet_cuda
