// Host-side argument checks and error reporting: the plugin SDK's
// (<octet/octet_plugin.hpp>), bound to the kokkos backend's Host. Every
// check reports one message naming the kernel, the argument and the broken
// rule (the same rules, and the same argument names, as the reference), and
// returns the status; OCTET_STATUS_SUCCESS when the argument is fine.
// Nothing here runs in a Kokkos kernel.
#pragma once

#include <octet/octet_backend.h>
#include <octet/octet_plugin.hpp>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>

namespace octet_kokkos {

// The host's services (the plugin SDK's Host, <octet/octet_plugin.hpp>).
const octet::plugin::Host& host();
// Keeps a copy of the host's services (NULL forgets them).
void remember_host_services(const octet_host_services* host);
inline int32_t report(int32_t status, const std::string& message) { return host().report(status, message); }

using octet::plugin::dtype_name;  // the plugin SDK's
using octet::plugin::dtype_size;
// The FP8 dtypes: OCP E4M3 / E5M2 and FNUZ E4M3FNUZ / E5M2FNUZ.
inline bool is_fp8(int32_t d) {
  return d == OCTET_DTYPE_E4M3 || d == OCTET_DTYPE_E5M2 || d == OCTET_DTYPE_E4M3FNUZ || d == OCTET_DTYPE_E5M2FNUZ;
}
// How the messages name them (the reference's words).
constexpr const char* kFp8DtypeNames = "e4m3, e5m2, e4m3fnuz or e5m2fnuz";
inline bool is_high_precision(int32_t d) {
  return d == OCTET_DTYPE_FP32 || d == OCTET_DTYPE_BF16 || d == OCTET_DTYPE_FP16;
}

using DtypeClass = octet::plugin::DtypeClass;  // the plugin SDK's

int32_t check_not_null(const char* kernel, const char* name, const void* pointer);
int32_t check_struct_size(const char* kernel, const char* name, std::size_t given, std::size_t required);
int32_t check_matrix(const char* kernel, const char* name, const octet_matrix_view& view, DtypeClass accepted,
                     int32_t outside_class_status = OCTET_STATUS_INVALID_ARGUMENT);
int32_t check_shape(const char* kernel, const char* name, const octet_matrix_view& view, int64_t rows,
                    int64_t cols, const std::string& rule);

// A view allocation of `bytes` that failed: guarded() reports it as
// OCTET_STATUS_OUT_OF_MEMORY with the size asked.
using octet::plugin::OutOfMemory;

// Runs `make` (a Kokkos view's constructor, whose only failure is its
// allocation) and turns a failure into OutOfMemory(bytes): Kokkos reports a
// failed allocation as std::runtime_error with the size rounded to a unit.
template <typename Make>
auto allocate_view(std::size_t bytes, Make&& make) -> decltype(make()) {
  try {
    return make();
  } catch (const std::bad_alloc&) {
    throw OutOfMemory(bytes);
  } catch (const std::runtime_error&) {
    throw OutOfMemory(bytes);
  }
}

// Runs an entry point's body so that no exception crosses the C ABI.
template <typename Body>
int32_t guarded(const char* entry, Body&& body) noexcept {
  return octet::plugin::guard(host(), entry, std::forward<Body>(body));
}

}  // namespace octet_kokkos
