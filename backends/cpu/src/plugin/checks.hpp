// Argument checks shared by the kernels. Each failing check reports one
// message naming the argument and the rule, and returns the status.
#pragma once

#include <octet/octet_backend.h>
#include <octet/octet_plugin.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

namespace octet_cpu {

// The dtype classes a matrix argument accepts (the plugin SDK's).
using Accept = octet::plugin::DtypeClass;

using octet::plugin::dtype_name;  // the plugin SDK's
using octet::plugin::dtype_size;
inline bool is_fp8(int32_t d) {
  return d == OCTET_DTYPE_E4M3 || d == OCTET_DTYPE_E5M2 || d == OCTET_DTYPE_E4M3FNUZ || d == OCTET_DTYPE_E5M2FNUZ;
}
inline bool is_fnuz(int32_t d) { return d == OCTET_DTYPE_E4M3FNUZ || d == OCTET_DTYPE_E5M2FNUZ; }
inline bool is_high_precision(int32_t d) {
  return d == OCTET_DTYPE_FP32 || d == OCTET_DTYPE_BF16 || d == OCTET_DTYPE_FP16;
}

int32_t require_pointer(const char* kernel, const char* name, const void* p);
int32_t require_struct_size(const char* kernel, const char* name, std::size_t given,
                            std::size_t needed);
int32_t require_matrix(const char* kernel, const char* name, const octet_matrix_view& v,
                       Accept accept, int32_t wrong_class_status = OCTET_STATUS_INVALID_ARGUMENT);
// `dtype` is E4M3, E5M2, E4M3FNUZ or E5M2FNUZ (INVALID_ARGUMENT otherwise).
int32_t require_fp8_dtype(const char* kernel, const char* name, int32_t dtype);
int32_t require_shape(const char* kernel, const char* name, const octet_matrix_view& v,
                      int64_t rows, int64_t cols, const char* rule);

}  // namespace octet_cpu
