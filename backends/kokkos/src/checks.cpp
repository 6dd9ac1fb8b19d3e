#include "checks.hpp"

namespace octet_kokkos {
namespace {

// Written by initialize() before any kernel runs, read afterwards.
octet::plugin::Host g_host;

}  // namespace

const octet::plugin::Host& host() { return g_host; }
void remember_host_services(const octet_host_services* host) { g_host.remember(host); }

// The checks are the plugin SDK's, reported through g_host.
int32_t check_not_null(const char* kernel, const char* name, const void* pointer) {
  return octet::plugin::check_not_null(g_host, kernel, name, pointer);
}

int32_t check_struct_size(const char* kernel, const char* name, std::size_t given, std::size_t required) {
  return octet::plugin::check_struct_size(g_host, kernel, name, given, required);
}

int32_t check_matrix(const char* kernel, const char* name, const octet_matrix_view& view, DtypeClass accepted,
                     int32_t outside_class_status) {
  return octet::plugin::check_matrix(g_host, kernel, name, view, octet::plugin::dtype_set(accepted),
                                     outside_class_status);
}

int32_t check_shape(const char* kernel, const char* name, const octet_matrix_view& view, int64_t rows,
                    int64_t cols, const std::string& rule) {
  return octet::plugin::check_shape(g_host, kernel, name, view, rows, cols, rule);
}

}  // namespace octet_kokkos
