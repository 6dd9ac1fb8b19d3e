// What the block kernels share (block/block_quantize.cpp,
// block/block_dequantize.cpp, elementwise/quantize_statistics.cpp,
// gemm/block_gemm_kernel.cpp): the statistics of numerics.md section 10 and
// their accumulators, the block-shape and scale-dtype checks, and the
// reading of one scale from a grid.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "codecs/scalar_codecs.hpp"
#include "plugin/checks.hpp"
#include "plugin/errors.hpp"

namespace octet_cpu {

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

inline bool is_nan(float x) { return (bits_of(x) & 0x7FFFFFFFu) > 0x7F800000u; }
inline bool is_finite(float x) { return (bits_of(x) & 0x7F800000u) != 0x7F800000u; }

inline const Fp8Params& params_of(int32_t dtype) { return fp8_params(dtype); }
inline float fp8_max_of(int32_t dtype) { return fp8_max_value(dtype); }

// Statistics of numerics.md section 10, one accumulator per thread.
struct Counts {
  uint64_t nan = 0, saturated = 0, flushed = 0;
  float amax = 0.0f;
  char pad[40];  // keep threads' accumulators on separate cache lines
};

// Counts n elements x[i] whose encoder input was x[i] * scale and whose
// codes are codes[i].
inline void count(const float* x, int64_t n, float scale, const uint8_t* codes, int32_t dtype, Counts& c) {
  const Fp8Params& p = params_of(dtype);
  const bool e4m3 = dtype == OCTET_DTYPE_E4M3, fnuz = is_fnuz_dtype(dtype);
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    if (is_nan(v)) {
      ++c.nan;
      continue;
    }
    c.amax = max_magnitude(c.amax, v);
    const float y = v * scale;
    if (!is_nan(y)) {  // a NaN per-tensor scale saturates nothing
      // Overflow without saturation: NaN (E4M3), infinity (E5M2), the NaN 0x80 (FNUZ).
      const uint32_t unclamped = encode_fp8(y, p, false), m = unclamped & 0x7Fu;
      if (fnuz ? unclamped == 0x80u : e4m3 ? m == 0x7Fu : m >= 0x7Cu) ++c.saturated;
    }
    // A zero code (+0 or -0; FNUZ has one zero, 0x80 is its NaN).
    if (is_finite(v) && v != 0.0f && (fnuz ? codes[i] == 0 : (codes[i] & 0x7Fu) == 0)) ++c.flushed;
  }
}

inline void write_counts(const std::vector<Counts>& parts, octet_quantize_statistics* out) {
  octet_quantize_statistics s{};
  for (const Counts& c : parts) {
    s.nan_count += c.nan;
    s.saturated_count += c.saturated;
    s.flushed_count += c.flushed;
    s.amax = c.amax > s.amax ? c.amax : s.amax;
  }
  *out = s;
}

inline int32_t require_block_shape(const char* kernel, int32_t br, int32_t bc) {
  if (br >= 1 && bc >= 1) return OCTET_STATUS_SUCCESS;
  return report(OCTET_STATUS_INVALID_ARGUMENT, std::string(kernel) + ": block shape " + std::to_string(br) + "x" +
                                                   std::to_string(bc) + " must be at least 1x1");
}

inline int32_t require_scale_dtype(const char* kernel, int32_t scale_dtype) {
  if (scale_dtype == OCTET_DTYPE_E8M0 || scale_dtype == OCTET_DTYPE_FP32) {
    return OCTET_STATUS_SUCCESS;
  }
  return report(OCTET_STATUS_INVALID_ARGUMENT, std::string(kernel) + ": scale_dtype is " + dtype_name(scale_dtype) +
                                                   " (" + std::to_string(scale_dtype) + "); it must be e8m0 or fp32");
}

inline float scale_value(const void* grid, int32_t scale_dtype, std::size_t index) {
  return scale_dtype == OCTET_DTYPE_E8M0 ? decode_e8m0(static_cast<const uint8_t*>(grid)[index])
                                         : static_cast<const float*>(grid)[index];
}

}  // namespace octet_cpu
