// Validation shared by the reference kernels. Each check reports a message
// naming the kernel, the argument and the broken rule, and returns the
// status (OCTET_STATUS_SUCCESS when the argument is fine).
#pragma once

#include <octet/octet_backend.h>
#include <octet/octet_plugin.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

namespace octet::ref {

// "fp32", ...; bytes per element, 0 for E2M1 and for a value that is not an
// octet_dtype (the plugin SDK's).
using plugin::dtype_name;
using plugin::dtype_size;
bool is_fp8(int32_t dtype);  // E4M3, E5M2, E4M3FNUZ, E5M2FNUZ
// "e4m3, e5m2, e4m3fnuz or e5m2fnuz": the dtypes is_fp8 accepts, for messages.
extern const std::string kFp8DtypeNames;
bool is_high_precision(int32_t dtype);  // FP32, BF16, FP16

// Which dtypes a matrix argument accepts.
enum class DtypeClass { Any, Fp8, HighPrecision };

int32_t check_not_null(const char* kernel, const char* name, const void* pointer);
int32_t check_struct_size(const char* kernel, const char* name, std::size_t given,
                          std::size_t required);
// Dtype in the class (unknown codes are INVALID_ARGUMENT; known dtypes
// outside the class answer `outside_class_status`), rows/cols >= 0,
// ld >= cols, and data set unless the matrix is empty.
int32_t check_matrix(const char* kernel, const char* name, const octet_matrix_view& view,
                     DtypeClass accepted,
                     int32_t outside_class_status = OCTET_STATUS_INVALID_ARGUMENT);
int32_t check_shape(const char* kernel, const char* name, const octet_matrix_view& view,
                    int64_t rows, int64_t cols, const std::string& rule);

// Offset in elements of (row, col) in a view.
inline std::size_t element_index(const octet_matrix_view& view, int64_t row, int64_t col) {
  return static_cast<std::size_t>(row) * static_cast<std::size_t>(view.ld) +
         static_cast<std::size_t>(col);
}

}  // namespace octet::ref
