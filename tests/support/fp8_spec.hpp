// The FP8 formats as the OCP spec defines them, computed in double from
// sign/exponent/mantissa: the independent oracle for the codec tests. Nothing
// here calls the code under test.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace octet::test {

struct Fp8Spec {
  const char* name;
  int mantissa_bits;
  int bias;
  bool has_infinity;         // E5M2 only
  int max_finite_magnitude;  // 0x7E (448), 0x7B (57344), 0x7F (FNUZ: 240, 57344)
  bool fnuz;                 // one NaN 0x80, no infinity, no negative zero
};

inline const Fp8Spec kE4M3Spec{"E4M3", 3, 7, false, 0x7E, false};
inline const Fp8Spec kE5M2Spec{"E5M2", 2, 15, true, 0x7B, false};
inline const Fp8Spec kE4M3FnuzSpec{"E4M3FNUZ", 3, 8, false, 0x7F, true};
inline const Fp8Spec kE5M2FnuzSpec{"E5M2FNUZ", 2, 16, false, 0x7F, true};

enum class Fp8Kind { Finite, Infinity, NaN };

// Special codes from the spec table: E4M3 NaN = 0x7F/0xFF only;
// E5M2 inf = 0x7C/0xFC, NaN = 0x7D..0x7F / 0xFD..0xFF.
// FNUZ: 0x80 is the only NaN, every other code finite.
inline Fp8Kind fp8_kind(int code, const Fp8Spec& spec) {
  if (spec.fnuz) return code == 0x80 ? Fp8Kind::NaN : Fp8Kind::Finite;
  const int magnitude = code & 0x7F;
  if (magnitude <= spec.max_finite_magnitude) return Fp8Kind::Finite;
  if (spec.has_infinity && magnitude == 0x7C) return Fp8Kind::Infinity;
  return Fp8Kind::NaN;
}

// Value of a magnitude code by the format definition, ignoring special codes;
// also meaningful one code past max finite (the first value beyond the range
// when the exponent is unbounded: 480 for E4M3, 65536 for E5M2).
inline double fp8_magnitude_value(int magnitude, const Fp8Spec& spec) {
  const int exponent = magnitude >> spec.mantissa_bits;
  const int mantissa = magnitude & ((1 << spec.mantissa_bits) - 1);
  if (exponent == 0) return std::ldexp(mantissa, 1 - spec.bias - spec.mantissa_bits);
  return std::ldexp(1.0 + std::ldexp(mantissa, -spec.mantissa_bits), exponent - spec.bias);
}

// numerics.md section 2: nearest value, ties to the even code, exponent
// unbounded above, then the overflow rule. Found by search over the table.
inline uint8_t fp8_expected_encode(float x, const Fp8Spec& spec, bool saturate) {
  const int sign = std::signbit(x) ? 0x80 : 0x00;
  // FNUZ (numerics.md section 1): NaN and non-saturated overflow give the one
  // NaN 0x80; a zero result is 0x00 whatever the sign.
  const int nan_code = spec.fnuz ? 0x80 : (sign | 0x7F);
  const int overflow = saturate    ? (sign | spec.max_finite_magnitude)
                       : spec.fnuz ? 0x80
                                   : (sign | (spec.has_infinity ? 0x7C : 0x7F));
  if (std::isnan(x)) return static_cast<uint8_t>(nan_code);
  if (std::isinf(x)) return static_cast<uint8_t>(overflow);

  const double a = std::fabs(static_cast<double>(x));
  const int beyond = spec.max_finite_magnitude + 1;
  if (a >= fp8_magnitude_value(beyond, spec)) return static_cast<uint8_t>(overflow);
  int below = 0;  // largest code whose value is <= a
  while (below < beyond && fp8_magnitude_value(below + 1, spec) <= a) ++below;
  int chosen = below;
  if (fp8_magnitude_value(below, spec) != a) {
    const double down = a - fp8_magnitude_value(below, spec);
    const double up = fp8_magnitude_value(below + 1, spec) - a;
    if (up < down || (up == down && (below + 1) % 2 == 0)) chosen = below + 1;
  }
  if (chosen == beyond) return static_cast<uint8_t>(overflow);
  if (chosen == 0 && spec.fnuz) return 0x00;
  return static_cast<uint8_t>(sign | chosen);
}

inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

}  // namespace octet::test
