#include "narrow_format.hpp"

#include <algorithm>
#include <cmath>

#include "float_bits.hpp"

namespace octet::ref {
namespace {

// Bits needed to write x (0 for 0).
int bit_width(uint64_t x) { return x == 0 ? 0 : 64 - __builtin_clzll(x); }

// Rounds significand / 2^shift to an integer, ties to even.
uint64_t shift_right_nearest_even(uint64_t significand, int shift) {
  // An FP32 significand has 24 bits: from a shift of 26 on, it is below half
  // of one unit and rounds to zero (the shift is also kept defined).
  if (shift >= 26) return 0;
  const uint64_t kept = significand >> shift;
  const uint64_t remainder = significand & ((uint64_t{1} << shift) - 1);
  const uint64_t half = uint64_t{1} << (shift - 1);
  if (remainder > half || (remainder == half && (kept & 1) != 0)) return kept + 1;
  return kept;
}

}  // namespace

uint64_t round_to_narrow_code(uint32_t magnitude_bits, const NarrowFormat& format) {
  const int mantissa_bits = format.mantissa_bits;
  const int min_normal_exponent = 1 - format.exponent_bias;

  // |x| = significand * 2^exponent with an integer significand.
  const uint32_t exponent_field = magnitude_bits >> kFp32FractionBits;
  const uint32_t fraction = magnitude_bits & kFp32FractionMask;
  const uint64_t significand =
      exponent_field == 0 ? fraction : (fraction | (1u << kFp32FractionBits));
  const int exponent = static_cast<int>(exponent_field == 0 ? 1 : exponent_field) -
                       kFp32Bias - kFp32FractionBits;
  if (significand == 0) return 0;

  // floor(log2 |x|), then the spacing 2^quantum_exponent of the target values
  // around |x|. Below the normal range the spacing stays that of the first
  // normal binade (subnormals); above, nothing bounds it (overflow is the
  // caller's decision, made on the rounded result).
  const int leading_exponent = exponent + bit_width(significand) - 1;
  int quantum_exponent = std::max(leading_exponent, min_normal_exponent) - mantissa_bits;

  // units = |x| / 2^quantum_exponent rounded to an integer: the one rounding.
  uint64_t units = exponent >= quantum_exponent
                       ? significand << (exponent - quantum_exponent)
                       : shift_right_nearest_even(significand, quantum_exponent - exponent);
  if (units == 0) return 0;

  // Rounding up may carry into the next binade: 2^(M+1) units of the old
  // spacing are 2^M units of the next one.
  if ((units >> (mantissa_bits + 1)) != 0) {
    units >>= 1;
    ++quantum_exponent;
  }
  const uint64_t implicit_one = uint64_t{1} << mantissa_bits;
  if (units < implicit_one) return units;  // subnormal: exponent field 0

  const uint64_t biased_exponent =
      static_cast<uint64_t>(quantum_exponent + mantissa_bits + format.exponent_bias);
  return (biased_exponent << mantissa_bits) | (units - implicit_one);
}

float narrow_code_to_float(uint32_t magnitude_code, const NarrowFormat& format) {
  const int mantissa_bits = format.mantissa_bits;
  const uint32_t exponent_field = magnitude_code >> mantissa_bits;
  const uint32_t mantissa = magnitude_code & ((1u << mantissa_bits) - 1);
  if (exponent_field == 0) {
    // mantissa * 2^(1 - bias - M): a small integer times a power of two that
    // FP32 holds exactly (BF16 subnormals are FP32 subnormals).
    return std::ldexp(static_cast<float>(mantissa),
                      1 - format.exponent_bias - mantissa_bits);
  }
  const uint32_t fp32_exponent = exponent_field - format.exponent_bias + kFp32Bias;
  return float_of((fp32_exponent << kFp32FractionBits) |
                  (mantissa << (kFp32FractionBits - mantissa_bits)));
}

}  // namespace octet::ref
