#include "argument_checks.hpp"

#include <cstdint>

#include "host_errors.hpp"

namespace octet::ref {

const std::string kFp8DtypeNames = "e4m3, e5m2, e4m3fnuz or e5m2fnuz";

bool is_fp8(int32_t dtype) {
  return dtype == OCTET_DTYPE_E4M3 || dtype == OCTET_DTYPE_E5M2 || dtype == OCTET_DTYPE_E4M3FNUZ ||
         dtype == OCTET_DTYPE_E5M2FNUZ;
}

bool is_high_precision(int32_t dtype) {
  return dtype == OCTET_DTYPE_FP32 || dtype == OCTET_DTYPE_BF16 || dtype == OCTET_DTYPE_FP16;
}

// The checks are the plugin SDK's (<octet/octet_plugin.hpp>), reported
// through the reference's Host.
int32_t check_not_null(const char* kernel, const char* name, const void* pointer) {
  return plugin::check_not_null(host(), kernel, name, pointer);
}

int32_t check_struct_size(const char* kernel, const char* name, std::size_t given,
                          std::size_t required) {
  return plugin::check_struct_size(host(), kernel, name, given, required);
}

int32_t check_matrix(const char* kernel, const char* name, const octet_matrix_view& view,
                     DtypeClass accepted, int32_t outside_class_status) {
  if (view.dtype == OCTET_DTYPE_E2M1) {
    return report(OCTET_STATUS_UNSUPPORTED,
                  std::string(kernel) + ": " + name + ".dtype is e2m1: the reference stores no packed FP4 matrix");
  }
  constexpr uint32_t kFp8 = plugin::kOcpFp8Dtypes | plugin::kFnuzFp8Dtypes;
  const uint32_t set = accepted == DtypeClass::Fp8 ? kFp8
                       : accepted == DtypeClass::HighPrecision
                           ? plugin::kHighPrecisionDtypes
                           : plugin::kHighPrecisionDtypes | kFp8 | OCTET_DTYPE_BIT(OCTET_DTYPE_E8M0);
  return plugin::check_matrix(host(), kernel, name, view, set, outside_class_status);
}

int32_t check_shape(const char* kernel, const char* name, const octet_matrix_view& view,
                    int64_t rows, int64_t cols, const std::string& rule) {
  return plugin::check_shape(host(), kernel, name, view, rows, cols, rule);
}

}  // namespace octet::ref
