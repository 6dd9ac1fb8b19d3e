// Comparing GEMM outputs with the reference's: numerics.md section 13
// leaves the sign and payload of a GEMM's NaN results unspecified (the
// reference's GEMM loops use the host's arithmetic, whose NaN answers vary
// between CPUs), so a NaN matches any NaN; every other element must have
// the same bits.
#pragma once

#include <octet/octet.h>

#include <cstdint>
#include <vector>

namespace octet_cuda_test {

inline bool gemm_element_is_nan(const uint8_t* p, int32_t dtype) {
  if (dtype == OCTET_DTYPE_FP32) {
    const uint32_t b = uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
    return (b & 0x7FFFFFFFu) > 0x7F800000u;
  }
  const uint32_t h = uint32_t(p[0]) | uint32_t(p[1]) << 8;  // little-endian 16-bit
  return dtype == OCTET_DTYPE_BF16 ? (h & 0x7FFFu) > 0x7F80u : (h & 0x7FFFu) > 0x7C00u;
}

// The index of the first element (of `dtype`: FP32, BF16 or FP16) that
// differs, NaN matching NaN; -1 if none; 0 when the sizes differ.
inline int64_t first_gemm_difference(const std::vector<uint8_t>& got, const std::vector<uint8_t>& expected,
                                     int32_t dtype) {
  if (got.size() != expected.size()) return 0;
  const size_t width = dtype == OCTET_DTYPE_FP32 ? 4 : 2;
  for (size_t e = 0; e * width < got.size(); ++e) {
    const uint8_t* g = got.data() + e * width;
    const uint8_t* x = expected.data() + e * width;
    bool same = true;
    for (size_t i = 0; i < width; ++i) same = same && g[i] == x[i];
    if (!same && !(gemm_element_is_nan(g, dtype) && gemm_element_is_nan(x, dtype))) return int64_t(e);
  }
  return -1;
}

}  // namespace octet_cuda_test
