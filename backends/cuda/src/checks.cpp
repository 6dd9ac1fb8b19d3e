#include "checks.hpp"

#include <cstdint>
#include <cstring>

#include "errors.hpp"

namespace octet_cuda {
namespace {
// Written once by initialize() (single-threaded per the ABI), then read.
octet_host_services g_host{};
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

void set_host_services(const octet_host_services* host) {
  g_host = octet_host_services{};
  const size_t known = host->struct_size < sizeof g_host ? host->struct_size : sizeof g_host;
  std::memcpy(&g_host, host, known);
}

int32_t report(int32_t status, const std::string& message) noexcept {
  if (g_host.report_error != nullptr) g_host.report_error(g_host.host_data, status, message.c_str());
  return status;
}

bool dtype_in(int32_t dtype, uint32_t set) {
  return dtype > 0 && dtype < 32 && (set & OCTET_DTYPE_BIT(dtype)) != 0;
}

size_t dtype_bytes(int32_t dtype) {
  switch (dtype) {
    case OCTET_DTYPE_FP32: return 4;
    case OCTET_DTYPE_BF16:
    case OCTET_DTYPE_FP16: return 2;
    case OCTET_DTYPE_E4M3:
    case OCTET_DTYPE_E5M2:
    case OCTET_DTYPE_E8M0: return 1;
    default: return 0;
  }
}

const char* dtype_label(int32_t dtype) {
  switch (dtype) {
    case OCTET_DTYPE_FP32: return "fp32";
    case OCTET_DTYPE_BF16: return "bf16";
    case OCTET_DTYPE_FP16: return "fp16";
    case OCTET_DTYPE_E4M3: return "e4m3";
    case OCTET_DTYPE_E5M2: return "e5m2";
    case OCTET_DTYPE_E8M0: return "e8m0";
    default: return "unknown dtype";
  }
}

void check_view(const char* arg, const octet_matrix_view* view, uint32_t allowed, const char* allowed_names) {
  require(view != nullptr, arg, " is NULL");
  if (!dtype_in(view->dtype, allowed)) {
    // Every dtype of octet.h is stored here, so a dtype outside `allowed`
    // breaks the operation's rule.
    fail(OCTET_STATUS_INVALID_ARGUMENT, arg, ".dtype is ", dtype_label(view->dtype),
         " (", view->dtype, ") but must be ", allowed_names);
  }
  require(view->rows >= 0 && view->cols >= 0 && view->ld >= view->cols, arg,
          " must have rows >= 0, cols >= 0 and ld >= cols (it has rows ", view->rows, ", cols ", view->cols, ", ld ",
          view->ld, ")");
  require(view->data != nullptr || view->rows == 0 || view->cols == 0, arg, ".data is NULL");
  // A misaligned 2- or 4-byte load faults on the device
  // (cudaErrorMisalignedAddress), a sticky error that ends the process's
  // CUDA context: refuse it here instead.
  const size_t width = dtype_bytes(view->dtype);
  require(view->rows == 0 || view->cols == 0 || reinterpret_cast<uintptr_t>(view->data) % width == 0, arg, ".data (",
          view->data, ") is not aligned to its ", width, "-byte ", dtype_label(view->dtype), " elements");
}

void check_same_shape(const octet_matrix_view& a, const octet_matrix_view& b, const char* names) {
  require(a.rows == b.rows && a.cols == b.cols, names, " must have the same rows and cols (", a.rows, "x", a.cols,
          " and ", b.rows, "x", b.cols, ")");
}

}  // namespace octet_cuda
