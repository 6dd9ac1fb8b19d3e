// Facts about dtypes that the core's argument checks need.
#pragma once

#include <octet/octet.h>

#include <cstddef>

namespace octet::core {

size_t dtype_size(octet_dtype dtype);
const char* dtype_name(octet_dtype dtype);
inline bool is_fp8(octet_dtype d) { return d == OCTET_DTYPE_E4M3 || d == OCTET_DTYPE_E5M2; }
inline bool is_high_precision(octet_dtype d) {
  return d == OCTET_DTYPE_FP32 || d == OCTET_DTYPE_BF16 || d == OCTET_DTYPE_FP16;
}
inline bool is_known(octet_dtype d) { return dtype_size(d) != 0; }

}  // namespace octet::core
