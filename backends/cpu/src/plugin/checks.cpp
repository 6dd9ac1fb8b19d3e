#include "plugin/checks.hpp"

#include <cstdint>

#include "plugin/errors.hpp"

namespace octet_cpu {

namespace {
// Written once by initialize() (single-threaded, per the ABI), then read.
octet::plugin::Host g_host;
}  // namespace

const octet::plugin::Host& host() { return g_host; }
void set_host_services(const octet_host_services* host) { g_host.remember(host); }

// The checks are the plugin SDK's, reported through g_host.
int32_t require_pointer(const char* kernel, const char* name, const void* p) {
  return octet::plugin::check_not_null(g_host, kernel, name, p);
}

int32_t require_struct_size(const char* kernel, const char* name, std::size_t given, std::size_t needed) {
  return octet::plugin::check_struct_size(g_host, kernel, name, given, needed);
}

int32_t require_matrix(const char* kernel, const char* name, const octet_matrix_view& v, Accept accept,
                       int32_t wrong_class_status) {
  return octet::plugin::check_matrix(g_host, kernel, name, v, octet::plugin::dtype_set(accept), wrong_class_status);
}

int32_t require_fp8_dtype(const char* kernel, const char* name, int32_t dtype) {
  if (is_fp8(dtype)) return OCTET_STATUS_SUCCESS;
  return report(OCTET_STATUS_INVALID_ARGUMENT, std::string(kernel) + ": " + name + " is " + dtype_name(dtype) + " (" +
                                                   std::to_string(dtype) +
                                                   "); only e4m3, e5m2, e4m3fnuz or e5m2fnuz are accepted");
}

int32_t require_shape(const char* kernel, const char* name, const octet_matrix_view& v, int64_t rows, int64_t cols,
                      const char* rule) {
  return octet::plugin::check_shape(g_host, kernel, name, v, rows, cols, rule);
}

}  // namespace octet_cpu
