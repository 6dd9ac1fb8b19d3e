// Block scales of block quantize (numerics.md section 11), one block at a
// time, from the block's largest finite magnitude: MXFP8's E8M0 code (RCEIL
// or FLOOR) and multiplier, and the FP32 blocks' scale. The scales kernels
// of block/block_rows.hpp compute the same bits for many blocks at once; the
// portable ones call these.
#pragma once

#include <cfloat>
#include <cstdint>

#include "codecs/scalar_codecs.hpp"

namespace octet_cpu {

// The exponent of an FP8 dtype's largest finite value (fp8_max_value): 8
// for E4M3 (448), 7 for E4M3FNUZ (240), 15 for E5M2 and E5M2FNUZ (57344).
inline int fp8_max_exponent(float fp8_max) { return static_cast<int>(bits_of(fp8_max) >> 23) - 127; }

// E8M0 scale code of a block whose largest finite |x| is block_amax >= 0:
// rounding 0 RCEIL (E8M0-CEIL(block_amax / fp8_max); a quotient that
// underflows to zero gets 0x00, 2^-127), 1 FLOOR (2^(floor(log2
// block_amax) - emax), clamped to [0x00, 0xFE]). 0x00 for an all-zero block.
inline uint8_t mx_scale_code(float block_amax, float fp8_max, int32_t rounding) {
  if (block_amax == 0.0f) return 0x00;
  if (rounding == 0) {
    const float quotient = block_amax / fp8_max;
    return quotient == 0.0f ? uint8_t{0x00} : encode_e8m0(quotient, true);
  }
  const uint32_t u = bits_of(block_amax);
  const uint32_t exp = u >> 23;
  const int floor_log2 = exp != 0 ? static_cast<int>(exp) - 127 : (31 - __builtin_clz(u)) - 149;  // else subnormal
  const int code = floor_log2 - fp8_max_exponent(fp8_max) + 127;
  return static_cast<uint8_t>(code < 0 ? 0 : (code > 0xFE ? 0xFE : code));
}

// The encoder's multiplier of an E8M0 scale code c < 0xFF: 1 / 2^(c - 127)
// = 2^(127 - c), an FP32 normal for c < 0xFE, 2^-127 (subnormal) for 0xFE.
inline float mx_multiplier(uint8_t code) {
  return code == 0xFE ? float_of(0x00400000u) : float_of(static_cast<uint32_t>(254u - code) << 23);
}

// FP32 block scale of a block whose largest finite |x| is block_amax >= 0:
// fp8_max / max(epsilon, block_amax), 1 where that amax is zero or not
// finite, FLT_MAX where the quotient overflows, and its mantissa cleared
// when pow2.
inline float fp32_block_scale(float block_amax, float fp8_max, float epsilon, bool pow2) {
  const float amax = epsilon > block_amax ? epsilon : block_amax;
  if ((bits_of(amax) & 0x7F800000u) == 0x7F800000u || amax == 0.0f) return 1.0f;
  float scale = fp8_max / amax;
  if ((bits_of(scale) & 0x7F800000u) == 0x7F800000u) scale = FLT_MAX;
  if (pow2) scale = float_of(bits_of(scale) & 0xFF800000u);
  return scale;
}

}  // namespace octet_cpu
