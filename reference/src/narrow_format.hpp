// Rounding of FP32 values into a binary floating-point format narrower than
// FP32 (the FP8 formats, E2M1, FP16, BF16). Only the mechanics shared by every such
// format live here; what each format does with NaN, infinity and overflow is
// decided by its codec (codecs.cpp).
#pragma once

#include <cstdint>

namespace octet::ref {

struct NarrowFormat {
  int mantissa_bits;
  int exponent_bias;         // the smallest normal exponent is 1 - bias
  uint32_t max_finite_code;  // magnitude code of the largest finite value
};

constexpr NarrowFormat kE4M3Format{3, 7, 0x7E};      // 448
constexpr NarrowFormat kE5M2Format{2, 15, 0x7B};     // 57344
constexpr NarrowFormat kE4M3FnuzFormat{3, 8, 0x7F};  // 240
constexpr NarrowFormat kE5M2FnuzFormat{2, 16, 0x7F};  // 57344
constexpr NarrowFormat kE2M1Format{1, 1, 0x7};        // 6
constexpr NarrowFormat kFp16Format{10, 15, 0x7BFF};  // 65504
constexpr NarrowFormat kBf16Format{7, 127, 0x7F7F};  // 0x1.FEp127

// Rounds the finite magnitude given by `magnitude_bits` (FP32 bits without
// the sign) to the nearest value of `format`, ties to even, with the exponent
// unbounded above, and returns its magnitude code (exponent field above the
// mantissa field). A result greater than format.max_finite_code means the
// value overflowed; the caller applies its overflow rule. Monotonic: a larger
// magnitude never gives a smaller code.
uint64_t round_to_narrow_code(uint32_t magnitude_bits, const NarrowFormat& format);

// FP32 value of a finite magnitude code (<= max_finite_code); exact.
float narrow_code_to_float(uint32_t magnitude_code, const NarrowFormat& format);

}  // namespace octet::ref
