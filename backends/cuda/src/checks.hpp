// Argument checks shared by the entries (they throw Failure, see errors.hpp).
#pragma once

#include <octet/octet_backend.h>
#include <octet/octet_plugin.hpp>

#include <cstddef>
#include <cstdint>

namespace octet_cuda {

constexpr uint32_t kHighPrecision =
    OCTET_DTYPE_BIT(OCTET_DTYPE_FP32) | OCTET_DTYPE_BIT(OCTET_DTYPE_BF16) | OCTET_DTYPE_BIT(OCTET_DTYPE_FP16);
constexpr uint32_t kFp8 = OCTET_DTYPE_BIT(OCTET_DTYPE_E4M3) | OCTET_DTYPE_BIT(OCTET_DTYPE_E5M2);
constexpr uint32_t kAllDtypes = kHighPrecision | kFp8 | OCTET_DTYPE_BIT(OCTET_DTYPE_E8M0);

// The plugin SDK's dtype helpers.
using octet::plugin::dtype_in;
inline size_t dtype_bytes(int32_t dtype) { return octet::plugin::dtype_size(dtype); }  // 0 for unknown dtypes
inline const char* dtype_label(int32_t dtype) { return octet::plugin::dtype_name(dtype); }

// dtype in `allowed`, rows, cols >= 0, ld >= cols, data present and
// aligned to the element size when not empty.
void check_view(const char* arg, const octet_matrix_view* view, uint32_t allowed);
void check_same_shape(const octet_matrix_view& a, const octet_matrix_view& b, const char* names);

}  // namespace octet_cuda
