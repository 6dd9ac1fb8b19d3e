#include "checks.hpp"

#include <cstdint>
#include <cstring>

#include "errors.hpp"

namespace octet_cuda {
namespace {
// Written once by initialize() (single-threaded per the ABI), then read.
octet::plugin::Host g_host("cuda");
}  // namespace

std::string cuda_error_text(cudaError_t error) {
  const char* name = cudaGetErrorName(error);
  const char* text = cudaGetErrorString(error);
  return concat(name != nullptr ? name : "cudaError", " (", static_cast<int>(error),
                "): ", text != nullptr ? text : "unknown error");
}

void check_cuda(cudaError_t error, const char* what) {
  if (error == cudaSuccess) return;
  (void)cudaGetLastError();  // clear a non-sticky error
  fail(error == cudaErrorMemoryAllocation ? OCTET_STATUS_OUT_OF_MEMORY : OCTET_STATUS_BACKEND_ERROR, what,
       " failed: ", cuda_error_text(error));
}

const octet::plugin::Host& host() { return g_host; }

void set_host_services(const octet_host_services* host) { g_host.remember(host); }

void check_view(const char* arg, const octet_matrix_view* view, uint32_t allowed) {
  require(view != nullptr, arg);
  // A dtype outside `allowed` breaks the operation's rule (INVALID_ARGUMENT).
  octet::plugin::raise(octet::plugin::matrix_problem(arg, *view, allowed));
  // A misaligned 2- or 4-byte load faults on the device
  // (cudaErrorMisalignedAddress), a sticky error that ends the process's
  // CUDA context: refuse it here instead.
  const size_t width = dtype_bytes(view->dtype);
  require(view->rows == 0 || view->cols == 0 || reinterpret_cast<uintptr_t>(view->data) % width == 0, arg, ".data (",
          view->data, ") is not aligned to its ", width, "-byte ", dtype_label(view->dtype), " elements");
}

void check_same_shape(const octet_matrix_view& a, const octet_matrix_view& b, const char* names) {
  octet::plugin::raise(octet::plugin::same_shape_problem(names, a, b));
}

}  // namespace octet_cuda
