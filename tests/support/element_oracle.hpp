// Test-side element codecs, written independently of the reference: FP8
// from the spec table (fp8_spec.hpp), BF16 by rounding in double, FP16 by
// the compiler's _Float16, E8M0 by frexp. Used to compute every kernel's
// expected output.
#pragma once

#include <octet/octet.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "fp8_spec.hpp"

namespace octet::test {

inline uint16_t oracle_bf16_encode(float x) {
  const uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  if (std::isnan(x)) return sign | 0x7FC0;  // NaN: tests compare NaN-ness only
  if (std::isinf(x)) return sign | 0x7F80;
  const double a = std::fabs(static_cast<double>(x));
  if (a == 0) return sign;
  const int exponent = std::max(std::ilogb(a), -126);
  const double quantum = std::ldexp(1.0, exponent - 7);
  const double rounded = std::nearbyint(a / quantum) * quantum;  // ties to even
  if (rounded >= std::ldexp(1.0, 128)) return sign | 0x7F80;
  return static_cast<uint16_t>(sign | (float_bits(static_cast<float>(rounded)) >> 16));
}

inline float oracle_bf16_decode(uint16_t code) {
  return bits_float(static_cast<uint32_t>(code) << 16);
}

inline uint16_t oracle_fp16_encode(float x) {
  const _Float16 h = static_cast<_Float16>(x);
  uint16_t bits;
  std::memcpy(&bits, &h, sizeof bits);
  return bits;
}

inline float oracle_fp16_decode(uint16_t code) {
  _Float16 h;
  std::memcpy(&h, &code, sizeof h);
  return static_cast<float>(h);
}

inline float oracle_fp8_decode(uint8_t code, const Fp8Spec& spec) {
  const bool negative = (code & 0x80) != 0;
  switch (fp8_kind(code, spec)) {
    case Fp8Kind::NaN: return std::numeric_limits<float>::quiet_NaN();
    case Fp8Kind::Infinity:
      return negative ? -std::numeric_limits<float>::infinity()
                      : std::numeric_limits<float>::infinity();
    case Fp8Kind::Finite: break;
  }
  const double magnitude = fp8_magnitude_value(code & 0x7F, spec);
  return static_cast<float>(negative ? -magnitude : magnitude);
}

inline uint8_t oracle_e8m0_encode(float x, bool round_up) {
  if (std::isnan(x) || x <= 0.0f) return 0xFF;
  if (std::isinf(x)) return 0xFE;
  int exponent_plus_one;
  const double fraction = std::frexp(static_cast<double>(x), &exponent_plus_one);
  int exponent = exponent_plus_one - 1;  // floor(log2 x): fraction is in [0.5, 1)
  if (round_up && fraction != 0.5) exponent += 1;
  const int code = exponent + 127;
  if (code < 0) return 0x00;
  if (code > 0xFE) return 0xFE;
  return static_cast<uint8_t>(code);
}

inline float oracle_e8m0_decode(uint8_t code) {
  if (code == 0xFF) return std::numeric_limits<float>::quiet_NaN();
  return static_cast<float>(std::ldexp(1.0, code - 127));
}

// The spec of an FP8 dtype; nullptr for any other dtype.
inline const Fp8Spec* fp8_spec_of(int32_t dtype) {
  switch (dtype) {
    case OCTET_DTYPE_E4M3:
      return &kE4M3Spec;
    case OCTET_DTYPE_E5M2:
      return &kE5M2Spec;
    case OCTET_DTYPE_E4M3FNUZ:
      return &kE4M3FnuzSpec;
    case OCTET_DTYPE_E5M2FNUZ:
      return &kE5M2FnuzSpec;
    default:
      return nullptr;
  }
}

inline std::size_t oracle_dtype_size(int32_t dtype) {
  switch (dtype) {
    case OCTET_DTYPE_FP32: return 4;
    case OCTET_DTYPE_BF16: case OCTET_DTYPE_FP16: return 2;
    default: return 1;
  }
}

// Element `index` of an array of `dtype`, widened to FP32 (FP8 codes unscaled).
inline float oracle_load(const void* base, int32_t dtype, std::size_t index) {
  const auto* bytes = static_cast<const unsigned char*>(base);
  uint16_t half = 0;
  float value = 0;
  switch (dtype) {
    case OCTET_DTYPE_FP32: std::memcpy(&value, bytes + 4 * index, 4); return value;
    case OCTET_DTYPE_BF16: std::memcpy(&half, bytes + 2 * index, 2); return oracle_bf16_decode(half);
    case OCTET_DTYPE_FP16: std::memcpy(&half, bytes + 2 * index, 2); return oracle_fp16_decode(half);
    case OCTET_DTYPE_E4M3: return oracle_fp8_decode(bytes[index], kE4M3Spec);
    case OCTET_DTYPE_E5M2: return oracle_fp8_decode(bytes[index], kE5M2Spec);
    case OCTET_DTYPE_E4M3FNUZ:
      return oracle_fp8_decode(bytes[index], kE4M3FnuzSpec);
    case OCTET_DTYPE_E5M2FNUZ:
      return oracle_fp8_decode(bytes[index], kE5M2FnuzSpec);
    case OCTET_DTYPE_E8M0: return oracle_e8m0_decode(bytes[index]);
  }
  throw std::logic_error("oracle_load: unknown dtype");
}

// FP32 narrowed to `dtype`'s bits (RNE; FP8 with the given saturation; E8M0
// with the exponent rounded up, the rule docs/numerics.md gives convert).
inline uint32_t oracle_store_bits(int32_t dtype, float value, bool saturate) {
  switch (dtype) {
    case OCTET_DTYPE_FP32: return float_bits(value);
    case OCTET_DTYPE_BF16: return oracle_bf16_encode(value);
    case OCTET_DTYPE_FP16: return oracle_fp16_encode(value);
    case OCTET_DTYPE_E4M3: return fp8_expected_encode(value, kE4M3Spec, saturate);
    case OCTET_DTYPE_E5M2: return fp8_expected_encode(value, kE5M2Spec, saturate);
    case OCTET_DTYPE_E4M3FNUZ:
      return fp8_expected_encode(value, kE4M3FnuzSpec, saturate);
    case OCTET_DTYPE_E5M2FNUZ:
      return fp8_expected_encode(value, kE5M2FnuzSpec, saturate);
    case OCTET_DTYPE_E8M0: return oracle_e8m0_encode(value, true);
  }
  throw std::logic_error("oracle_store_bits: unknown dtype");
}

// Raw bits of element `index` (zero-extended), for exact comparisons.
inline uint32_t raw_bits(const void* base, int32_t dtype, std::size_t index) {
  const std::size_t size = oracle_dtype_size(dtype);
  uint32_t bits = 0;
  std::memcpy(&bits, static_cast<const unsigned char*>(base) + size * index, size);
  return bits;
}

}  // namespace octet::test
