#include "checks.hpp"

#include <cstdint>

#include "errors.hpp"

namespace octet_cpu {

namespace {
const octet_host_services* g_host = nullptr;
}

void set_host_services(const octet_host_services* host) { g_host = host; }

int32_t report(int32_t status, const std::string& message) {
  if (g_host != nullptr && g_host->report_error != nullptr) {
    g_host->report_error(g_host->host_data, status, message.c_str());
  }
  return status;
}

const char* dtype_name(int32_t dtype) {
  switch (dtype) {
    case OCTET_DTYPE_FP32: return "fp32";
    case OCTET_DTYPE_BF16: return "bf16";
    case OCTET_DTYPE_FP16: return "fp16";
    case OCTET_DTYPE_E4M3: return "e4m3";
    case OCTET_DTYPE_E5M2: return "e5m2";
    case OCTET_DTYPE_E8M0: return "e8m0";
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
    case OCTET_DTYPE_E8M0: return 1;
    default: return 0;
  }
}

int32_t require_pointer(const char* kernel, const char* name, const void* p) {
  if (p != nullptr) return OCTET_STATUS_SUCCESS;
  return report(OCTET_STATUS_INVALID_ARGUMENT,
                std::string(kernel) + ": " + name + " must not be NULL");
}

int32_t require_struct_size(const char* kernel, const char* name, std::size_t given,
                            std::size_t needed) {
  if (given >= needed) return OCTET_STATUS_SUCCESS;
  return report(OCTET_STATUS_INVALID_ARGUMENT,
                std::string(kernel) + ": " + name + "->struct_size is " + std::to_string(given) +
                    "; the plugin ABI 1.0 struct needs at least " + std::to_string(needed));
}

int32_t require_matrix(const char* kernel, const char* name, const octet_matrix_view& v,
                       Accept accept, int32_t wrong_class_status) {
  const std::string at = std::string(kernel) + ": " + name;
  if (dtype_size(v.dtype) == 0) {
    return report(OCTET_STATUS_INVALID_ARGUMENT,
                  at + ".dtype (" + std::to_string(v.dtype) + ") is not an octet_dtype");
  }
  if (accept == Accept::Fp8 && !is_fp8(v.dtype)) {
    return report(wrong_class_status, at + ".dtype is " + dtype_name(v.dtype) +
                                          "; only e4m3 or e5m2 are accepted here");
  }
  if (accept == Accept::HighPrecision && !is_high_precision(v.dtype)) {
    return report(wrong_class_status, at + ".dtype is " + dtype_name(v.dtype) +
                                          "; only fp32, bf16 or fp16 are accepted here");
  }
  if (v.rows < 0 || v.cols < 0) {
    return report(OCTET_STATUS_INVALID_ARGUMENT, at + " has a negative size (" +
                                                     std::to_string(v.rows) + " rows, " +
                                                     std::to_string(v.cols) + " cols)");
  }
  if (v.ld < v.cols) {
    return report(OCTET_STATUS_INVALID_ARGUMENT, at + ".ld (" + std::to_string(v.ld) +
                                                     ") is smaller than " + name + ".cols (" +
                                                     std::to_string(v.cols) + ")");
  }
  if (v.data == nullptr && v.rows > 0 && v.cols > 0) {
    return report(OCTET_STATUS_INVALID_ARGUMENT,
                  at + ".data is NULL but the matrix is not empty");
  }
  return OCTET_STATUS_SUCCESS;
}

int32_t require_fp8_dtype(const char* kernel, const char* name, int32_t dtype) {
  if (is_fp8(dtype)) return OCTET_STATUS_SUCCESS;
  return report(OCTET_STATUS_INVALID_ARGUMENT, std::string(kernel) + ": " + name + " is " +
                                                   dtype_name(dtype) + " (" +
                                                   std::to_string(dtype) +
                                                   "); only e4m3 or e5m2 are accepted");
}

int32_t require_shape(const char* kernel, const char* name, const octet_matrix_view& v,
                      int64_t rows, int64_t cols, const char* rule) {
  if (v.rows == rows && v.cols == cols) return OCTET_STATUS_SUCCESS;
  return report(OCTET_STATUS_INVALID_ARGUMENT,
                std::string(kernel) + ": " + name + " is " + std::to_string(v.rows) + "x" +
                    std::to_string(v.cols) + " where " + std::to_string(rows) + "x" +
                    std::to_string(cols) + " is required (" + rule + ")");
}

}  // namespace octet_cpu
