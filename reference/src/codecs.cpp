// The exact codecs of the reference (numerics.md sections 1 and 2). Rounding
// mechanics are shared (narrow_format.hpp); this file holds what each format
// does with signs, NaN, infinity and overflow.
#include "octet_reference/codecs.hpp"

#include <octet/octet_types.h>

#include "float_bits.hpp"
#include "narrow_format.hpp"

namespace octet::ref {
namespace {

const NarrowFormat& narrow_format_of(Fp8Format format) {
  switch (format) {
    case Fp8Format::E4M3:
      return kE4M3Format;
    case Fp8Format::E5M2:
      return kE5M2Format;
    case Fp8Format::E4M3FNUZ:
      return kE4M3FnuzFormat;
    case Fp8Format::E5M2FNUZ:
      return kE5M2FnuzFormat;
    case Fp8Format::E2M1:
      break;
  }
  return kE2M1Format;
}

bool is_fnuz(Fp8Format format) { return format == Fp8Format::E4M3FNUZ || format == Fp8Format::E5M2FNUZ; }

bool is_nan_bits(uint32_t magnitude_bits) { return magnitude_bits > kFp32Infinity; }

// Both FP8 formats put their quiet NaN with all magnitude bits set, so a NaN
// keeps only its sign.
constexpr uint8_t kFp8NanMagnitude = 0x7F;
constexpr uint8_t kE5M2InfinityMagnitude = 0x7C;
// FNUZ formats: the code of negative zero is their one NaN.
constexpr uint8_t kFnuzNan = 0x80;
constexpr uint8_t kE2M1SignBit = 0x8;

constexpr uint16_t kHalfInfinity = 0x7C00;
constexpr uint16_t kHalfQuietBit = 0x0200;
constexpr uint16_t kBf16Infinity = 0x7F80;
constexpr uint16_t kBf16QuietBit = 0x0040;

}  // namespace

float fp8_max(Fp8Format format) {
  const NarrowFormat& narrow = narrow_format_of(format);
  return narrow_code_to_float(narrow.max_finite_code, narrow);
}

bool fp8_format_of_dtype(int32_t dtype, Fp8Format* format) {
  switch (dtype) {
    case OCTET_DTYPE_E4M3:
      *format = Fp8Format::E4M3;
      return true;
    case OCTET_DTYPE_E5M2:
      *format = Fp8Format::E5M2;
      return true;
    case OCTET_DTYPE_E4M3FNUZ:
      *format = Fp8Format::E4M3FNUZ;
      return true;
    case OCTET_DTYPE_E5M2FNUZ:
      *format = Fp8Format::E5M2FNUZ;
      return true;
    case OCTET_DTYPE_E2M1:
      *format = Fp8Format::E2M1;
      return true;
    default:
      return false;
  }
}

namespace {

// FNUZ: one NaN (0x80), which also takes non-saturated overflow and
// infinity; no negative zero, so a result of zero is 0x00 whatever the sign.
uint8_t fnuz_encode(uint32_t bits, const NarrowFormat& narrow, bool saturate) {
  const uint8_t sign = static_cast<uint8_t>((bits & kFp32SignBit) >> 24);
  const uint32_t magnitude = bits & ~kFp32SignBit;
  if (is_nan_bits(magnitude)) return kFnuzNan;
  const uint8_t overflow = saturate ? static_cast<uint8_t>(sign | narrow.max_finite_code) : kFnuzNan;
  if (magnitude == kFp32Infinity) return overflow;
  const uint64_t code = round_to_narrow_code(magnitude, narrow);
  if (code > narrow.max_finite_code) return overflow;
  if (code == 0) return 0x00;
  return sign | static_cast<uint8_t>(code);
}

// E2M1: no NaN and no infinity. Saturation maps overflow and infinity to
// +-6; what has no code (NaN; without saturation, overflow and infinity)
// gives kE2M1NoCode for the caller to refuse. Zero keeps its sign (0x8 is -0).
uint8_t e2m1_encode(uint32_t bits, bool saturate) {
  const uint8_t sign = (bits & kFp32SignBit) != 0 ? kE2M1SignBit : 0;
  const uint32_t magnitude = bits & ~kFp32SignBit;
  if (is_nan_bits(magnitude)) return kE2M1NoCode;
  const uint8_t overflow = saturate ? static_cast<uint8_t>(sign | kE2M1Format.max_finite_code) : kE2M1NoCode;
  if (magnitude == kFp32Infinity) return overflow;
  const uint64_t code = round_to_narrow_code(magnitude, kE2M1Format);
  if (code > kE2M1Format.max_finite_code) return overflow;
  return sign | static_cast<uint8_t>(code);
}

}  // namespace

uint8_t fp8_encode(float value, Fp8Format format, bool saturate) {
  const uint32_t bits = bits_of(value);
  if (format == Fp8Format::E2M1) return e2m1_encode(bits, saturate);
  const NarrowFormat& narrow = narrow_format_of(format);
  if (is_fnuz(format)) return fnuz_encode(bits, narrow, saturate);
  const uint8_t sign = static_cast<uint8_t>((bits & kFp32SignBit) >> 24);
  const uint32_t magnitude = bits & ~kFp32SignBit;

  if (is_nan_bits(magnitude)) return sign | kFp8NanMagnitude;

  // E4M3 has no infinity: without saturation its overflow is NaN.
  const uint8_t overflow_magnitude =
      saturate ? static_cast<uint8_t>(narrow.max_finite_code)
               : (format == Fp8Format::E4M3 ? kFp8NanMagnitude : kE5M2InfinityMagnitude);
  if (magnitude == kFp32Infinity) return sign | overflow_magnitude;

  const uint64_t code = round_to_narrow_code(magnitude, narrow);
  if (code > narrow.max_finite_code) return sign | overflow_magnitude;
  return sign | static_cast<uint8_t>(code);  // zero keeps its sign too
}

float fp8_decode(uint8_t code, Fp8Format format) {
  if (format == Fp8Format::E2M1) {
    const uint32_t sign = (code & kE2M1SignBit) != 0 ? kFp32SignBit : 0;
    return float_of(sign | bits_of(narrow_code_to_float(code & 0x7u, kE2M1Format)));
  }
  const NarrowFormat& narrow = narrow_format_of(format);
  // FNUZ: 0x80 is the NaN (a quiet NaN, positive: the code has no sign);
  // every other code is finite.
  if (is_fnuz(format) && code == kFnuzNan) return float_of(kFp32Infinity | kFp32QuietBit);
  const uint32_t sign = static_cast<uint32_t>(code & 0x80) << 24;
  const uint32_t magnitude = code & 0x7Fu;
  if (magnitude > narrow.max_finite_code) {
    // E4M3: only 0x7F is left (NaN). E5M2: 0x7C is infinity, 0x7D-0x7F NaN.
    const bool infinity = format == Fp8Format::E5M2 && magnitude == kE5M2InfinityMagnitude;
    return float_of(sign | kFp32Infinity | (infinity ? 0 : kFp32QuietBit));
  }
  return float_of(sign | bits_of(narrow_code_to_float(magnitude, narrow)));
}

uint16_t bf16_encode(float value) {
  const uint32_t bits = bits_of(value);
  const uint16_t sign = static_cast<uint16_t>((bits & kFp32SignBit) >> 16);
  const uint32_t magnitude = bits & ~kFp32SignBit;
  if (is_nan_bits(magnitude)) {
    // Keep the leading payload bits, and make sure the result stays a NaN
    // (the kept bits alone could be zero) by setting the quiet bit.
    return sign | kBf16Infinity | kBf16QuietBit |
           static_cast<uint16_t>((magnitude & kFp32FractionMask) >> 16);
  }
  if (magnitude == kFp32Infinity) return sign | kBf16Infinity;
  const uint64_t code = round_to_narrow_code(magnitude, kBf16Format);
  // The code above max finite is exactly infinity's (0x7F80).
  return sign | static_cast<uint16_t>(code > kBf16Format.max_finite_code ? kBf16Infinity : code);
}

float bf16_decode(uint16_t code) {
  uint32_t bits = static_cast<uint32_t>(code) << 16;
  if (is_nan_bits(bits & ~kFp32SignBit)) bits |= kFp32QuietBit;
  return float_of(bits);
}

uint16_t fp16_encode(float value) {
  const uint32_t bits = bits_of(value);
  const uint16_t sign = static_cast<uint16_t>((bits & kFp32SignBit) >> 16);
  const uint32_t magnitude = bits & ~kFp32SignBit;
  if (is_nan_bits(magnitude)) {
    return sign | kHalfInfinity | kHalfQuietBit |
           static_cast<uint16_t>((magnitude & kFp32FractionMask) >> 13);
  }
  if (magnitude == kFp32Infinity) return sign | kHalfInfinity;
  const uint64_t code = round_to_narrow_code(magnitude, kFp16Format);
  return sign | static_cast<uint16_t>(code > kFp16Format.max_finite_code ? kHalfInfinity : code);
}

float fp16_decode(uint16_t code) {
  const uint32_t sign = static_cast<uint32_t>(code & 0x8000) << 16;
  const uint32_t magnitude = code & 0x7FFFu;
  if (magnitude >= kHalfInfinity) {
    const uint32_t payload = static_cast<uint32_t>(magnitude & 0x03FF) << 13;
    if (payload == 0) return float_of(sign | kFp32Infinity);
    return float_of(sign | kFp32Infinity | kFp32QuietBit | payload);
  }
  return float_of(sign | bits_of(narrow_code_to_float(magnitude, kFp16Format)));
}

namespace {

constexpr uint8_t kE8m0Nan = 0xFF;
constexpr int kE8m0Bias = 127;
constexpr int kE8m0MaxCode = 0xFE;

}  // namespace

uint8_t e8m0_encode(float value, bool round_up) {
  const uint32_t bits = bits_of(value);
  const uint32_t magnitude = bits & ~kFp32SignBit;
  // No power of two is NaN, zero or negative.
  if (is_nan_bits(magnitude) || magnitude == 0 || (bits & kFp32SignBit) != 0) return kE8m0Nan;
  if (magnitude == kFp32Infinity) return kE8m0MaxCode;

  const uint32_t exponent_field = magnitude >> kFp32FractionBits;
  const uint32_t fraction = magnitude & kFp32FractionMask;
  int floor_log2;
  bool power_of_two;
  if (exponent_field != 0) {
    floor_log2 = static_cast<int>(exponent_field) - kFp32Bias;
    power_of_two = fraction == 0;
  } else {
    // FP32 subnormal: fraction * 2^-149, leading bit at position p gives 2^(p-149).
    int leading_bit = 31;
    while ((fraction >> leading_bit) == 0) --leading_bit;
    floor_log2 = leading_bit - 149;
    power_of_two = (fraction & (fraction - 1)) == 0;
  }
  const int exponent = (round_up && !power_of_two) ? floor_log2 + 1 : floor_log2;
  const int code = exponent + kE8m0Bias;
  if (code < 0) return 0x00;
  if (code > kE8m0MaxCode) return kE8m0MaxCode;
  return static_cast<uint8_t>(code);
}

float e8m0_decode(uint8_t code) {
  if (code == kE8m0Nan) return float_of(kFp32Infinity | kFp32QuietBit);
  // 2^(code - 127); code 0 is 2^-127, an FP32 subnormal (fraction bit 22).
  constexpr uint32_t kTwoToMinus127Bits = 0x00400000u;
  if (code == 0) return float_of(kTwoToMinus127Bits);
  return float_of(static_cast<uint32_t>(code) << kFp32FractionBits);
}

}  // namespace octet::ref
