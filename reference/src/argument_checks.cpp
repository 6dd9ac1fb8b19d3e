#include "argument_checks.hpp"

#include <cstdint>

#include "host_errors.hpp"

namespace octet::ref {

const char* dtype_name(int32_t dtype) {
  switch (dtype) {
    case OCTET_DTYPE_FP32: return "fp32";
    case OCTET_DTYPE_BF16: return "bf16";
    case OCTET_DTYPE_FP16: return "fp16";
    case OCTET_DTYPE_E4M3: return "e4m3";
    case OCTET_DTYPE_E5M2: return "e5m2";
    case OCTET_DTYPE_E4M3FNUZ:
      return "e4m3fnuz";
    case OCTET_DTYPE_E5M2FNUZ:
      return "e5m2fnuz";
    case OCTET_DTYPE_E8M0: return "e8m0";
    case OCTET_DTYPE_E2M1:
      return "e2m1";
    default: return "invalid";
  }
}

std::size_t dtype_size(int32_t dtype) {
  switch (dtype) {
    case OCTET_DTYPE_FP32: return 4;
    case OCTET_DTYPE_BF16:
    case OCTET_DTYPE_FP16: return 2;
    case OCTET_DTYPE_E4M3:
    case OCTET_DTYPE_E5M2:
    case OCTET_DTYPE_E4M3FNUZ:
    case OCTET_DTYPE_E5M2FNUZ:
    case OCTET_DTYPE_E8M0: return 1;
    default: return 0;
  }
}

const std::string kFp8DtypeNames = "e4m3, e5m2, e4m3fnuz or e5m2fnuz";

bool is_fp8(int32_t dtype) {
  return dtype == OCTET_DTYPE_E4M3 || dtype == OCTET_DTYPE_E5M2 || dtype == OCTET_DTYPE_E4M3FNUZ ||
         dtype == OCTET_DTYPE_E5M2FNUZ;
}

bool is_high_precision(int32_t dtype) {
  return dtype == OCTET_DTYPE_FP32 || dtype == OCTET_DTYPE_BF16 || dtype == OCTET_DTYPE_FP16;
}

int32_t check_not_null(const char* kernel, const char* name, const void* pointer) {
  if (pointer != nullptr) return OCTET_STATUS_SUCCESS;
  return report(OCTET_STATUS_INVALID_ARGUMENT,
                std::string(kernel) + ": " + name + " must not be NULL");
}

int32_t check_struct_size(const char* kernel, const char* name, std::size_t given,
                          std::size_t required) {
  if (given >= required) return OCTET_STATUS_SUCCESS;
  return report(OCTET_STATUS_INVALID_ARGUMENT,
                std::string(kernel) + ": " + name + "->struct_size (" + std::to_string(given) +
                    ") must be at least " + std::to_string(required) +
                    " (the plugin ABI 1.0 size)");
}

int32_t check_matrix(const char* kernel, const char* name, const octet_matrix_view& view,
                     DtypeClass accepted, int32_t outside_class_status) {
  const std::string where = std::string(kernel) + ": " + name;
  if (view.dtype == OCTET_DTYPE_E2M1) {
    return report(OCTET_STATUS_UNSUPPORTED, where + ".dtype is e2m1: the reference stores no packed FP4 matrix");
  }
  if (dtype_size(view.dtype) == 0) {
    return report(OCTET_STATUS_INVALID_ARGUMENT,
                  where + ".dtype (" + std::to_string(view.dtype) + ") is not an octet_dtype");
  }
  if (accepted == DtypeClass::Fp8 && !is_fp8(view.dtype)) {
    return report(outside_class_status,
                  where + ".dtype is " + dtype_name(view.dtype) + " but must be " + kFp8DtypeNames);
  }
  if (accepted == DtypeClass::HighPrecision && !is_high_precision(view.dtype)) {
    return report(outside_class_status, where + ".dtype is " + dtype_name(view.dtype) +
                                            " but must be fp32, bf16 or fp16");
  }
  if (view.rows < 0 || view.cols < 0) {
    return report(OCTET_STATUS_INVALID_ARGUMENT,
                  where + " has negative rows (" + std::to_string(view.rows) + ") or cols (" +
                      std::to_string(view.cols) + ")");
  }
  if (view.ld < view.cols) {
    return report(OCTET_STATUS_INVALID_ARGUMENT,
                  where + ".ld (" + std::to_string(view.ld) + ") must be >= " + name +
                      ".cols (" + std::to_string(view.cols) + ")");
  }
  if (view.data == nullptr && view.rows > 0 && view.cols > 0) {
    return report(OCTET_STATUS_INVALID_ARGUMENT,
                  where + ".data must not be NULL for a non-empty matrix");
  }
  return OCTET_STATUS_SUCCESS;
}

int32_t check_shape(const char* kernel, const char* name, const octet_matrix_view& view,
                    int64_t rows, int64_t cols, const std::string& rule) {
  if (view.rows == rows && view.cols == cols) return OCTET_STATUS_SUCCESS;
  return report(OCTET_STATUS_INVALID_ARGUMENT,
                std::string(kernel) + ": " + name + " is " + std::to_string(view.rows) + "x" +
                    std::to_string(view.cols) + " but must be " + std::to_string(rows) + "x" +
                    std::to_string(cols) + " (" + rule + ")");
}

}  // namespace octet::ref
