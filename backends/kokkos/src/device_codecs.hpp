// Exact scalar codecs (docs/numerics.md sections 1-5; OCP and FNUZ FP8) and the FP32
// arithmetic with defined NaN results, written so that they compile for any
// Kokkos execution space: every function is KOKKOS_INLINE_FUNCTION, uses
// integer operations on the IEEE bits (no table, no libm, no std:: call
// that exists only on the host) and rounds exactly as the reference does.
// tests/kokkos_backend/device_codecs_test.cpp compares every function here
// with the reference's codecs (every FP8 (OCP and FNUZ), BF16, FP16 and
// E8M0 code, every rounding boundary, and, opt-in, all 2^32 FP32 inputs of
// the encoders).
#pragma once

#include <Kokkos_Core.hpp>
#include <octet/octet_backend.h>
#include <octet/octet_math.h>

#include <cstdint>
#include <cstring>

namespace octet_kokkos {

KOKKOS_INLINE_FUNCTION uint32_t bits_of(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}
KOKKOS_INLINE_FUNCTION float float_of(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

KOKKOS_INLINE_FUNCTION bool is_nan(float x) { return (bits_of(x) & 0x7FFFFFFFu) > 0x7F800000u; }
KOKKOS_INLINE_FUNCTION bool is_inf(float x) { return (bits_of(x) & 0x7FFFFFFFu) == 0x7F800000u; }
KOKKOS_INLINE_FUNCTION bool is_finite(float x) { return (bits_of(x) & 0x7FFFFFFFu) < 0x7F800000u; }
KOKKOS_INLINE_FUNCTION bool sign_bit(float x) { return (bits_of(x) >> 31) != 0; }
KOKKOS_INLINE_FUNCTION float abs_of(float x) { return float_of(bits_of(x) & 0x7FFFFFFFu); }
KOKKOS_INLINE_FUNCTION bool is_signalling(float x) {
  const uint32_t u = bits_of(x);
  return (u & 0x7FFFFFFFu) > 0x7F800000u && (u & 0x00400000u) == 0;
}

// The FP32 operations of numerics.md section 13 (octet_math.h: one IEEE
// operation each, NaN results defined). octet_math.h marks them
// __host__ __device__ under nvcc, so these wrappers are device code for
// Kokkos' CUDA backend too.
KOKKOS_INLINE_FUNCTION float add(float a, float b) { return octet_math_add(a, b); }
KOKKOS_INLINE_FUNCTION float sub(float a, float b) { return octet_math_sub(a, b); }
KOKKOS_INLINE_FUNCTION float mul(float a, float b) { return octet_math_mul(a, b); }
KOKKOS_INLINE_FUNCTION float div(float a, float b) { return octet_math_div(a, b); }
KOKKOS_INLINE_FUNCTION float sqrt_of(float a) { return octet_math_sqrtf(a); }
KOKKOS_INLINE_FUNCTION float tanh_of(float a) { return octet_math_tanhf(a); }
KOKKOS_INLINE_FUNCTION float exp_of(float a) { return octet_math_expf(a); }

// glibc's fmaxf, which the reference's std::fmax is on its host: the larger
// operand (x when they compare equal, so fmax(-0, +0) is -0), the other
// operand when one is a quiet NaN, and x + y (a quiet NaN) when either is
// signalling.
KOKKOS_INLINE_FUNCTION float fmax_of(float x, float y) {
  if (!is_nan(x) && !is_nan(y)) return x >= y ? x : y;
  if (is_signalling(x) || is_signalling(y)) return add(x, y);
  return is_nan(y) ? x : y;
}

// floor(log2 |x|) of a finite non-zero x (std::ilogb).
KOKKOS_INLINE_FUNCTION int ilogb_of(float x) {
  const uint32_t a = bits_of(x) & 0x7FFFFFFFu;
  const uint32_t e = a >> 23;
  if (e != 0) return static_cast<int>(e) - 127;
  int p = 22;
  while (p > 0 && ((a >> p) & 1u) == 0) --p;
  return p - 149;
}

// x * 2^n rounded once to FP32 (std::ldexp for float), for finite x and
// |n| <= 300: exact in binary64, then one rounding.
KOKKOS_INLINE_FUNCTION float ldexp_of(float x, int n) {
  double scale = 1.0;
  const double step = n >= 0 ? 2.0 : 0.5;
  for (int i = 0; i < (n >= 0 ? n : -n); ++i) scale *= step;
  return static_cast<float>(static_cast<double>(x) * scale);
}

// ---- narrow binary formats (E4M3, E5M2, FP16, BF16) ----

struct NarrowFormat {
  int mantissa_bits;
  int exponent_bias;
  uint32_t max_finite_code;
};

KOKKOS_INLINE_FUNCTION NarrowFormat e4m3_format() { return NarrowFormat{3, 7, 0x7Eu}; }
KOKKOS_INLINE_FUNCTION NarrowFormat e5m2_format() { return NarrowFormat{2, 15, 0x7Bu}; }
KOKKOS_INLINE_FUNCTION NarrowFormat fp16_format() { return NarrowFormat{10, 15, 0x7BFFu}; }
KOKKOS_INLINE_FUNCTION NarrowFormat bf16_format() { return NarrowFormat{7, 127, 0x7F7Fu}; }

// The finite FP32 magnitude `a` (bits, sign cleared) rounded to the nearest
// value of `f`, ties to even, exponent unbounded above; returns the magnitude
// code (a code above max_finite_code means overflow). The reference's
// round_to_narrow_code, step for step.
KOKKOS_INLINE_FUNCTION uint32_t round_to_narrow_code(uint32_t a, NarrowFormat f) {
  const uint32_t exponent_field = a >> 23;
  const uint32_t fraction = a & 0x007FFFFFu;
  const uint32_t significand = exponent_field == 0 ? fraction : (fraction | 0x00800000u);
  if (significand == 0) return 0;
  const int exponent = static_cast<int>(exponent_field == 0 ? 1u : exponent_field) - 127 - 23;
  int width = 0;
  for (uint32_t s = significand; s != 0; s >>= 1) ++width;
  const int leading = exponent + width - 1;
  const int min_normal = 1 - f.exponent_bias;
  int quantum = (leading > min_normal ? leading : min_normal) - f.mantissa_bits;
  uint32_t units;
  if (exponent >= quantum) {
    units = significand << (exponent - quantum);
  } else {
    const int shift = quantum - exponent;
    if (shift >= 26) return 0;
    const uint32_t kept = significand >> shift;
    const uint32_t remainder = significand & ((1u << shift) - 1u);
    const uint32_t half = 1u << (shift - 1);
    units = (remainder > half || (remainder == half && (kept & 1u) != 0)) ? kept + 1 : kept;
  }
  if (units == 0) return 0;
  if ((units >> (f.mantissa_bits + 1)) != 0) {
    units >>= 1;
    ++quantum;
  }
  const uint32_t implicit_one = 1u << f.mantissa_bits;
  if (units < implicit_one) return units;
  const int biased = quantum + f.mantissa_bits + f.exponent_bias;
  if (biased >= (1 << 20)) return 0xFFFFFFFFu;  // far beyond any format here
  return (static_cast<uint32_t>(biased) << f.mantissa_bits) | (units - implicit_one);
}

// FP32 value of a finite magnitude code; exact.
KOKKOS_INLINE_FUNCTION float narrow_code_to_float(uint32_t code, NarrowFormat f) {
  const int m = f.mantissa_bits;
  const uint32_t exponent_field = code >> m;
  const uint32_t mantissa = code & ((1u << m) - 1u);
  if (exponent_field == 0) {
    if (mantissa == 0) return 0.0f;
    // mantissa * 2^(1 - bias - m), normalised: leading bit p.
    int p = m - 1;
    while (((mantissa >> p) & 1u) == 0) --p;
    const int e = p + 1 - f.exponent_bias - m;  // exponent of the leading bit
    if (e >= -126) {
      return float_of((static_cast<uint32_t>(e + 127) << 23) |
                      ((mantissa - (1u << p)) << (23 - p)));
    }
    // An FP32 subnormal (BF16's subnormals): mantissa * 2^(e0), e0 = 1 - bias - m.
    return float_of(mantissa << (149 + 1 - f.exponent_bias - m));
  }
  const uint32_t fp32_exponent = exponent_field - static_cast<uint32_t>(f.exponent_bias) + 127u;
  return float_of((fp32_exponent << 23) | (mantissa << (23 - m)));
}

// ---- FP8: OCP E4M3 / E5M2 and FNUZ E4M3FNUZ / E5M2FNUZ ----

KOKKOS_INLINE_FUNCTION bool is_fnuz_dtype(int32_t dtype) {
  return dtype == OCTET_DTYPE_E4M3FNUZ || dtype == OCTET_DTYPE_E5M2FNUZ;
}
// E4M3 and E4M3FNUZ (3 mantissa bits); the other FP8 dtypes have 2.
KOKKOS_INLINE_FUNCTION bool is_e4m3_family(int32_t dtype) {
  return dtype == OCTET_DTYPE_E4M3 || dtype == OCTET_DTYPE_E4M3FNUZ;
}

// The rounding format of an FP8 dtype (numerics.md section 1): FNUZ has a
// bias one larger and its top code 0x7F finite.
KOKKOS_INLINE_FUNCTION NarrowFormat fp8_format(int32_t dtype) {
  switch (dtype) {
    case OCTET_DTYPE_E4M3FNUZ:
      return NarrowFormat{3, 8, 0x7Fu};  // 240
    case OCTET_DTYPE_E5M2FNUZ:
      return NarrowFormat{2, 16, 0x7Fu};  // 57344
    case OCTET_DTYPE_E5M2:
      return e5m2_format();
    default:
      return e4m3_format();
  }
}

// The FNUZ formats' one NaN: the code negative zero would have.
constexpr uint8_t kFnuzNan = 0x80u;

// FP32 -> FP8 (numerics.md sections 1 and 2); `dtype` one of the four FP8 dtypes.
//  - OCP: NaN keeps its sign; overflow and +-inf give +-max (saturate) or
//    NaN (E4M3) / +-inf (E5M2); a zero keeps its sign.
//  - FNUZ: NaN gives 0x80; overflow and +-inf give +-max (saturate) or 0x80;
//    a zero is 0x00 whatever its sign.
KOKKOS_INLINE_FUNCTION uint8_t fp8_encode(float value, int32_t dtype, bool saturate) {
  const uint32_t bits = bits_of(value);
  const uint8_t sign = static_cast<uint8_t>((bits & 0x80000000u) >> 24);
  const uint32_t magnitude = bits & 0x7FFFFFFFu;
  const NarrowFormat f = fp8_format(dtype);
  if (is_fnuz_dtype(dtype)) {
    if (magnitude > 0x7F800000u) return kFnuzNan;
    const uint8_t overflow = saturate ? static_cast<uint8_t>(sign | f.max_finite_code) : kFnuzNan;
    if (magnitude == 0x7F800000u) return overflow;
    const uint32_t code = round_to_narrow_code(magnitude, f);
    if (code > f.max_finite_code) return overflow;
    if (code == 0) return 0x00;
    return static_cast<uint8_t>(sign | code);
  }
  if (magnitude > 0x7F800000u) return static_cast<uint8_t>(sign | 0x7Fu);
  const bool e4m3 = dtype == OCTET_DTYPE_E4M3;
  const uint8_t overflow = saturate ? static_cast<uint8_t>(f.max_finite_code)
                                    : static_cast<uint8_t>(e4m3 ? 0x7Fu : 0x7Cu);
  if (magnitude == 0x7F800000u) return static_cast<uint8_t>(sign | overflow);
  const uint32_t code = round_to_narrow_code(magnitude, f);
  if (code > f.max_finite_code) return static_cast<uint8_t>(sign | overflow);
  return static_cast<uint8_t>(sign | code);
}

// FP8 -> FP32 (numerics.md sections 1 and 3). FNUZ 0x80 is the positive
// quiet NaN 0x7FC00000 (the code has no sign to keep).
KOKKOS_INLINE_FUNCTION float fp8_decode(uint8_t code, int32_t dtype) {
  if (is_fnuz_dtype(dtype) && code == kFnuzNan) return float_of(0x7FC00000u);
  const uint32_t sign = static_cast<uint32_t>(code & 0x80u) << 24;
  const uint32_t magnitude = code & 0x7Fu;
  const NarrowFormat f = fp8_format(dtype);
  if (magnitude > f.max_finite_code) {  // OCP only: every FNUZ magnitude is finite
    const bool infinity = dtype == OCTET_DTYPE_E5M2 && magnitude == 0x7Cu;
    return float_of(sign | 0x7F800000u | (infinity ? 0u : 0x00400000u));
  }
  return float_of(sign | bits_of(narrow_code_to_float(magnitude, f)));
}

// Whether the non-saturating encoding `unclamped` of a non-NaN value
// overflowed (the reference's StatisticsCounter): E4M3 gave NaN, E5M2
// infinity, FNUZ its NaN.
KOKKOS_INLINE_FUNCTION bool fp8_overflowed(uint8_t unclamped, int32_t dtype) {
  if (is_fnuz_dtype(dtype)) return unclamped == kFnuzNan;
  const uint8_t magnitude = unclamped & 0x7Fu;
  return dtype == OCTET_DTYPE_E4M3 ? magnitude == 0x7Fu : magnitude >= 0x7Cu;
}

KOKKOS_INLINE_FUNCTION uint16_t bf16_encode(float value) {
  const uint32_t bits = bits_of(value);
  const uint16_t sign = static_cast<uint16_t>((bits & 0x80000000u) >> 16);
  const uint32_t magnitude = bits & 0x7FFFFFFFu;
  if (magnitude > 0x7F800000u) {
    return static_cast<uint16_t>(sign | 0x7F80u | 0x0040u | ((magnitude & 0x007FFFFFu) >> 16));
  }
  if (magnitude == 0x7F800000u) return static_cast<uint16_t>(sign | 0x7F80u);
  const uint32_t code = round_to_narrow_code(magnitude, bf16_format());
  return static_cast<uint16_t>(sign | (code > 0x7F7Fu ? 0x7F80u : code));
}

KOKKOS_INLINE_FUNCTION float bf16_decode(uint16_t code) {
  uint32_t bits = static_cast<uint32_t>(code) << 16;
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) bits |= 0x00400000u;
  return float_of(bits);
}

KOKKOS_INLINE_FUNCTION uint16_t fp16_encode(float value) {
  const uint32_t bits = bits_of(value);
  const uint16_t sign = static_cast<uint16_t>((bits & 0x80000000u) >> 16);
  const uint32_t magnitude = bits & 0x7FFFFFFFu;
  if (magnitude > 0x7F800000u) {
    return static_cast<uint16_t>(sign | 0x7C00u | 0x0200u | ((magnitude & 0x007FFFFFu) >> 13));
  }
  if (magnitude == 0x7F800000u) return static_cast<uint16_t>(sign | 0x7C00u);
  const uint32_t code = round_to_narrow_code(magnitude, fp16_format());
  return static_cast<uint16_t>(sign | (code > 0x7BFFu ? 0x7C00u : code));
}

KOKKOS_INLINE_FUNCTION float fp16_decode(uint16_t code) {
  const uint32_t sign = static_cast<uint32_t>(code & 0x8000u) << 16;
  const uint32_t magnitude = code & 0x7FFFu;
  if (magnitude >= 0x7C00u) {
    const uint32_t payload = static_cast<uint32_t>(magnitude & 0x03FFu) << 13;
    if (payload == 0) return float_of(sign | 0x7F800000u);
    return float_of(sign | 0x7F800000u | 0x00400000u | payload);
  }
  return float_of(sign | bits_of(narrow_code_to_float(magnitude, fp16_format())));
}

// E8M0 (numerics.md section 5): exponent rounded up (round_up) or down,
// clamped to 0x00..0xFE; NaN, zero and negatives give 0xFF.
KOKKOS_INLINE_FUNCTION uint8_t e8m0_encode(float value, bool round_up) {
  const uint32_t bits = bits_of(value);
  const uint32_t magnitude = bits & 0x7FFFFFFFu;
  if (magnitude > 0x7F800000u || magnitude == 0 || (bits & 0x80000000u) != 0) return 0xFF;
  if (magnitude == 0x7F800000u) return 0xFE;
  const uint32_t exponent_field = magnitude >> 23;
  const uint32_t fraction = magnitude & 0x007FFFFFu;
  int floor_log2;
  bool power_of_two;
  if (exponent_field != 0) {
    floor_log2 = static_cast<int>(exponent_field) - 127;
    power_of_two = fraction == 0;
  } else {
    int leading = 31;
    while ((fraction >> leading) == 0) --leading;
    floor_log2 = leading - 149;
    power_of_two = (fraction & (fraction - 1u)) == 0;
  }
  const int code = ((round_up && !power_of_two) ? floor_log2 + 1 : floor_log2) + 127;
  if (code < 0) return 0x00;
  if (code > 0xFE) return 0xFE;
  return static_cast<uint8_t>(code);
}

KOKKOS_INLINE_FUNCTION float e8m0_decode(uint8_t code) {
  if (code == 0xFF) return float_of(0x7FC00000u);
  if (code == 0) return float_of(0x00400000u);  // 2^-127, an FP32 subnormal
  return float_of(static_cast<uint32_t>(code) << 23);
}

// Largest finite value: 448 (E4M3), 240 (E4M3FNUZ), 57344 (E5M2, E5M2FNUZ).
KOKKOS_INLINE_FUNCTION float fp8_max_of(int32_t dtype) {
  return dtype == OCTET_DTYPE_E4M3 ? 448.0f : dtype == OCTET_DTYPE_E4M3FNUZ ? 240.0f : 57344.0f;
}

// Element access by octet_dtype on raw bytes (`index` in elements): widen
// to FP32 (FP8 and E8M0 as the values of their codes), narrow from FP32
// (FP8 with `saturate`, E8M0 with CEIL).
KOKKOS_INLINE_FUNCTION float load_element(const unsigned char* base, int32_t dtype, int64_t index) {
  switch (dtype) {
    case OCTET_DTYPE_FP32: {
      float v;
      memcpy(&v, base + index * 4, 4);
      return v;
    }
    case OCTET_DTYPE_BF16:
    case OCTET_DTYPE_FP16: {
      uint16_t h;
      memcpy(&h, base + index * 2, 2);
      return dtype == OCTET_DTYPE_BF16 ? bf16_decode(h) : fp16_decode(h);
    }
    case OCTET_DTYPE_E4M3:
    case OCTET_DTYPE_E5M2:
    case OCTET_DTYPE_E4M3FNUZ:
    case OCTET_DTYPE_E5M2FNUZ:
      return fp8_decode(base[index], dtype);
    case OCTET_DTYPE_E8M0: return e8m0_decode(base[index]);
    default: return 0.0f;
  }
}

KOKKOS_INLINE_FUNCTION void store_element(unsigned char* base, int32_t dtype, int64_t index, float value,
                                          bool saturate) {
  switch (dtype) {
    case OCTET_DTYPE_FP32: memcpy(base + index * 4, &value, 4); return;
    case OCTET_DTYPE_BF16:
    case OCTET_DTYPE_FP16: {
      const uint16_t h = dtype == OCTET_DTYPE_BF16 ? bf16_encode(value) : fp16_encode(value);
      memcpy(base + index * 2, &h, 2);
      return;
    }
    case OCTET_DTYPE_E4M3:
    case OCTET_DTYPE_E5M2:
    case OCTET_DTYPE_E4M3FNUZ:
    case OCTET_DTYPE_E5M2FNUZ:
      base[index] = fp8_encode(value, dtype, saturate);
      return;
    case OCTET_DTYPE_E8M0: base[index] = e8m0_encode(value, true); return;
    default: return;
  }
}

}  // namespace octet_kokkos
