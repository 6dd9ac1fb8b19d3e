// The FP4 rules of numerics.md section 15 on single values, shared by the cpu
// backend's FP4 quantize, dequantize and GEMM (fp4/quantize_fp4.cpp,
// fp4/gemm_fp4_kernel.cpp, fp4/gemm_fp4_avx512_bf16.cpp): the modes' block shapes, E2M1 encode
// (nearest even and stochastic) and decode, and the block scales. Plain C++.
#pragma once

#include <octet/octet_math.h>
#include <octet/octet_types.h>

#include <cmath>
#include <cstdint>

#include "codecs/scalar_codecs.hpp"

namespace octet_cpu {

struct Fp4Mode {
  int64_t block_rows;
  int64_t block_cols;
  bool nvfp4;  // E4M3 block scales and an FP32 tensor scale; else E8M0
};

// False for a value that is not one FP4 scaling mode.
inline bool fp4_mode_of(int32_t scaling_mode, Fp4Mode* mode) {
  switch (scaling_mode) {
    case OCTET_SCALING_MXFP4_1X32:
      *mode = {1, 32, false};
      return true;
    case OCTET_SCALING_NVFP4_1X16:
      *mode = {1, 16, true};
      return true;
    case OCTET_SCALING_NVFP4_16X16:
      *mode = {16, 16, true};
      return true;
    default:
      return false;
  }
}

// The E2M1 magnitudes, code = index.
constexpr float kE2M1Values[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};

inline float e2m1_decode(uint8_t code) {
  const float v = kE2M1Values[code & 0x7];
  return (code & 0x8) != 0 ? -v : v;
}

// E2M1 magnitude code of a = |y| (not NaN), rounded to nearest even,
// saturating at 6 (code 7): the ties 0.25, 1.25, 2.5 and 5 go down to the
// even code, 0.75, 1.75 and 3.5 up; 7 and above overflow (to 6 here).
inline uint8_t e2m1_magnitude_rne(float a) {
  return static_cast<uint8_t>((a > 0.25f) + (a >= 0.75f) + (a > 1.25f) + (a >= 1.75f) + (a > 2.5f) + (a >= 3.5f) +
                              (a > 5.0f));
}

// True when the non-saturating E2M1 encode of scaled (not NaN) overflows:
// |scaled| rounds above 6, i.e. is 7 or more (infinity included).
inline bool e2m1_overflows(float scaled) { return std::fabs(scaled) >= 7.0f; }

// E2M1 code of y (not NaN), nearest even, saturating; -0 keeps its sign.
inline uint8_t e2m1_encode_rne(float y) {
  return static_cast<uint8_t>((std::signbit(y) ? 0x8 : 0x0) | e2m1_magnitude_rne(std::fabs(y)));
}

// E2M1 code of y (not NaN) rounded stochastically with the random bits r
// (numerics.md 15.1): between the magnitudes lo <= |y| < hi, hi iff
// r < floor((|y| - lo) / (hi - lo) * 2^32); |y| >= 6 gives 6.
inline uint8_t e2m1_encode_stochastic(float y, uint32_t r) {
  const uint8_t sign = std::signbit(y) ? 0x8 : 0x0;
  const float a = std::fabs(y);
  if (a >= 6.0f) return static_cast<uint8_t>(sign | 0x7);
  const int lo = (a >= 0.5f) + (a >= 1.0f) + (a >= 1.5f) + (a >= 2.0f) + (a >= 3.0f) + (a >= 4.0f);
  const float spacing = kE2M1Values[lo + 1] - kE2M1Values[lo];
  const float fraction = (a - kE2M1Values[lo]) / spacing;  // exact, in [0, 1)
  const uint64_t threshold = static_cast<uint64_t>(std::floor(std::ldexp(static_cast<double>(fraction), 32)));
  return static_cast<uint8_t>(sign | (static_cast<uint64_t>(r) < threshold ? lo + 1 : lo));
}

// NVFP4 tensor scale g from the finite amax A: A / 2688, 1 when that is 0.
inline float nvfp4_tensor_scale(float finite_amax) {
  const float g = octet_math_div(finite_amax, 2688.0f);
  return g == 0.0f ? 1.0f : g;
}

// NVFP4 E4M3 block scale code: e4m3_sat((amax / 6) / g).
inline uint8_t nvfp4_block_scale_code(float block_amax, float g) {
  return encode_fp8(octet_math_div(octet_math_div(block_amax, 6.0f), g), kE4M3, true);
}

// MXFP4 E8M0 block scale code of a finite block_amax >= 0: rounding 0
// RCEIL (E8M0-CEIL(amax / 6)), 1 FLOOR (2^(floor(log2 amax) - 2)).
inline uint8_t mxfp4_block_scale_code(float block_amax, int32_t rounding) {
  if (block_amax == 0.0f) return 0x00;
  if (rounding == 0) {
    const float quotient = octet_math_div(block_amax, 6.0f);
    return quotient == 0.0f ? uint8_t{0x00} : encode_e8m0(quotient, true);
  }
  const int code = std::ilogb(block_amax) - 2 + 127;
  if (code < 0) return 0x00;
  if (code > 0xFE) return 0xFE;
  return static_cast<uint8_t>(code);
}

// Packed rows (docs/abi.md, "Sub-byte dtypes"): bytes per row of `cols`
// codes, and the code at column c of a row.
inline int64_t fp4_row_bytes(int64_t cols) { return (cols + 1) / 2; }
inline uint8_t fp4_code_at(const uint8_t* row, int64_t c) {
  const uint8_t byte = row[c / 2];
  return (c % 2 == 0) ? static_cast<uint8_t>(byte & 0x0F) : static_cast<uint8_t>(byte >> 4);
}

}  // namespace octet_cpu
