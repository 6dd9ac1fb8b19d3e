// Exact scalar codecs (docs/numerics.md sections 1-5), written as integer
// bit manipulation so that the SIMD kernels can do the same steps lane by
// lane. Used by the portable path and for the tails of the SIMD loops.
#pragma once

#include <cstdint>
#include <cstring>

#include <octet/octet_types.h>

namespace octet_cpu {

inline uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float float_of(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// max(m, |x|) with every NaN x ignored, signalling ones included
// (std::fmax would return NaN for a signalling NaN). m is never NaN.
inline float max_magnitude(float m, float x) {
  const float a = float_of(bits_of(x) & 0x7FFFFFFFu);
  return a > m ? a : m;
}

// Parameters of an FP8 format as the encoder uses them: the OCP formats
// (E4M3, E5M2) and the FNUZ ones (E4M3FNUZ, E5M2FNUZ: numerics.md section
// 1, "FNUZ FP8"), whose one NaN 0x80 is also the overflow code without
// saturation, and whose zero has no sign.
struct Fp8Params {
  int mantissa_bits;        // 3 (E4M3, E4M3FNUZ) or 2 (E5M2, E5M2FNUZ)
  uint32_t rebias;          // (127 - bias) << mantissa_bits
  uint32_t min_normal_bits; // FP32 bits of the smallest normal
  float subnormal_magic;    // 2^(exponent of subnormal spacing + 23)
  uint32_t max_code;        // largest finite code (without sign)
  uint32_t overflow_sat;    // code on overflow when saturating
  uint32_t overflow_nosat;  // code on overflow otherwise (FNUZ: 0x80, the NaN)
  uint32_t nan_code;        // code of a NaN before the sign: 0x7F, or 0x80 (FNUZ)
  bool signed_zero;         // false (FNUZ): a value rounding to zero gives 0x00
};

constexpr Fp8Params kE4M3{3, (127u - 7u) << 3, (127u - 6u) << 23, 16384.0f /*2^14*/, 0x7E, 0x7E, 0x7F, 0x7F, true};
constexpr Fp8Params kE5M2{2, (127u - 15u) << 2, (127u - 14u) << 23, 128.0f /*2^7*/, 0x7B, 0x7B, 0x7C, 0x7F, true};
// FNUZ: bias 8 and 16, every code but 0x80 finite (max 0x7F: 240 and 57344).
// Subnormal spacing 2^-10 and 2^-17.
constexpr Fp8Params kE4M3Fnuz{3, (127u - 8u) << 3, (127u - 7u) << 23, 8192.0f /*2^13*/, 0x7F, 0x7F, 0x80, 0x80, false};
constexpr Fp8Params kE5M2Fnuz{2, (127u - 16u) << 2, (127u - 15u) << 23, 64.0f /*2^6*/, 0x7F, 0x7F, 0x80, 0x80, false};
// The SIMD encoders (codecs/encode_fp8_avx2.hpp, codecs/encode_fp8_avx512.hpp) saturate
// with an unsigned minimum against max_code: every format's saturated
// overflow code is its largest finite code.
static_assert(kE4M3.overflow_sat == kE4M3.max_code && kE5M2.overflow_sat == kE5M2.max_code &&
                  kE4M3Fnuz.overflow_sat == kE4M3Fnuz.max_code && kE5M2Fnuz.overflow_sat == kE5M2Fnuz.max_code,
              "saturation is a clamp to max_code");

inline bool is_fnuz_dtype(int32_t dtype) { return dtype == OCTET_DTYPE_E4M3FNUZ || dtype == OCTET_DTYPE_E5M2FNUZ; }

// The parameters of an FP8 dtype (E4M3, E5M2, E4M3FNUZ or E5M2FNUZ; the
// kernels' checks admit no other).
inline const Fp8Params& fp8_params(int32_t dtype) {
  switch (dtype) {
    case OCTET_DTYPE_E4M3:
      return kE4M3;
    case OCTET_DTYPE_E4M3FNUZ:
      return kE4M3Fnuz;
    case OCTET_DTYPE_E5M2FNUZ:
      return kE5M2Fnuz;
    default:
      return kE5M2;
  }
}

// The largest finite value of an FP8 dtype (the scale rules' fp8_max).
inline float fp8_max_value(int32_t dtype) {
  switch (dtype) {
    case OCTET_DTYPE_E4M3:
      return 448.0f;
    case OCTET_DTYPE_E4M3FNUZ:
      return 240.0f;
    default:
      return 57344.0f;
  }
}

// FP32 -> FP8, round to nearest even, overflow after rounding, NaN -> the
// NaN code (OCP: 0x7F with the sign; FNUZ: 0x80). Normal range: integer
// round-half-even on the FP32 bits, then rebias. Below the smallest normal:
// adding 2^(q+23) rounds |x| to a multiple of the subnormal spacing 2^q
// (one FP32 addition, exact RNE), and the low bits of the sum are the code.
// FNUZ: a zero drops its sign, and 0x80 | sign is 0x80 whatever the sign.
inline uint8_t encode_fp8(float x, const Fp8Params& p, bool saturate) {
  const uint32_t u = bits_of(x);
  uint32_t sign = (u >> 24) & 0x80u;
  const uint32_t a = u & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return static_cast<uint8_t>(sign | p.nan_code);
  const int shift = 23 - p.mantissa_bits;
  uint32_t code;
  if (a < p.min_normal_bits) {
    code = bits_of(float_of(a) + p.subnormal_magic) - bits_of(p.subnormal_magic);
  } else {
    const uint32_t rounded = a + ((1u << (shift - 1)) - 1u) + ((a >> shift) & 1u);
    code = (rounded >> shift) - p.rebias;
  }
  if (code > p.max_code) code = saturate ? p.overflow_sat : p.overflow_nosat;
  if (!p.signed_zero && code == 0) sign = 0;
  return static_cast<uint8_t>(sign | code);
}

// FP8 code of `dtype` -> FP32, computed from the fields (used to fill the
// tables).
inline float decode_fp8_slow(uint8_t code, int32_t dtype) {
  const bool fnuz = is_fnuz_dtype(dtype);
  const bool e4m3 = dtype == OCTET_DTYPE_E4M3 || dtype == OCTET_DTYPE_E4M3FNUZ;
  const uint32_t sign = uint32_t(code & 0x80u) << 24;
  const uint32_t mag = code & 0x7Fu;
  const int mbits = e4m3 ? 3 : 2;
  const int bias = (e4m3 ? 7 : 15) + (fnuz ? 1 : 0);
  if (fnuz) {
    if (code == 0x80u) return float_of(0x7FC00000u);  // the one NaN, no sign
  } else {
    if (e4m3 && mag == 0x7Fu) return float_of(sign | 0x7FC00000u);
    if (!e4m3 && mag >= 0x7Du) return float_of(sign | 0x7FC00000u);
    if (!e4m3 && mag == 0x7Cu) return float_of(sign | 0x7F800000u);
  }
  const uint32_t exp = mag >> mbits;
  const uint32_t man = mag & ((1u << mbits) - 1u);
  if (exp == 0) {
    // man * 2^(1 - bias - mbits), exact in FP32.
    float v = float(man);
    for (int i = 0; i < bias - 1 + mbits; ++i) v *= 0.5f;
    return float_of(sign | bits_of(v));
  }
  return float_of(sign | ((exp - bias + 127u) << 23) | (man << (23 - mbits)));
}

// FP32 -> BF16: RNE on the bits; NaN keeps its leading payload, made quiet.
inline uint16_t encode_bf16(float x) {
  const uint32_t u = bits_of(x);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
  return static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}
inline float decode_bf16(uint16_t h) {
  uint32_t u = uint32_t(h) << 16;
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) u |= 0x00400000u;
  return float_of(u);
}

// FP32 -> FP16: RNE with subnormals, overflow to infinity, NaN quiet with
// its leading payload.
inline uint16_t encode_fp16(float x) {
  const uint32_t u = bits_of(x);
  const uint32_t sign = (u >> 16) & 0x8000u;
  const uint32_t a = u & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return static_cast<uint16_t>(sign | 0x7E00u | ((a >> 13) & 0x3FFu));
  uint32_t h;
  if (a < 0x38800000u) {  // below 2^-14: multiples of 2^-24; magic 2^-1
    h = bits_of(float_of(a) + 0.5f) - bits_of(0.5f);
  } else {
    h = ((a + 0xFFFu + ((a >> 13) & 1u)) >> 13) - ((127u - 15u) << 10);
    if (h > 0x7C00u) h = 0x7C00u;
  }
  return static_cast<uint16_t>(sign | h);
}
inline float decode_fp16(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  const uint32_t man = h & 0x3FFu;
  if (exp == 0x1Fu) {
    return float_of(sign | 0x7F800000u | (man << 13) | (man != 0 ? 0x00400000u : 0u));
  }
  if (exp == 0) {
    // man * 2^-24, exact in FP32
    return float_of(sign | bits_of(float(man) * 5.9604644775390625e-8f));
  }
  return float_of(sign | ((exp + 112u) << 23) | (man << 13));
}

// E8M0: CEIL (convert's rounding) or FLOOR, clamped to 0x00..0xFE;
// NaN, zero and negatives give 0xFF.
inline uint8_t encode_e8m0(float x, bool ceil) {
  const uint32_t u = bits_of(x);
  if (u == 0 || (u >> 31) != 0 || u > 0x7F800000u) return 0xFF;
  if (u == 0x7F800000u) return 0xFE;
  const uint32_t exp = u >> 23;
  const uint32_t man = u & 0x7FFFFFu;
  if (exp == 0) {  // FP32 subnormal, below 2^-126
    return static_cast<uint8_t>(ceil && man > 0x400000u ? 1 : 0);
  }
  uint32_t code = exp + (ceil && man != 0 ? 1u : 0u);
  return static_cast<uint8_t>(code > 0xFEu ? 0xFEu : code);
}
inline float decode_e8m0(uint8_t c) {
  if (c == 0xFF) return float_of(0x7FC00000u);
  if (c == 0) return float_of(0x00400000u);  // 2^-127
  return float_of(uint32_t(c) << 23);
}

}  // namespace octet_cpu
