// Exact codecs for device code (docs/numerics.md sections 2-5), written with
// integer arithmetic on FP32 bit patterns: no dependence on rounding modes or
// fast-math, so every kernel that narrows a value gives the reference's bits.
// All functions are __host__ __device__ so the same code can be checked on the
// host.
//
// One exception, for speed: on SM 8.9 and later, fp8_encode/fp8_encode2 take
// the hardware's FP32 -> FP8 conversion (cvt.rn.satfinite.{e4m3,e5m2}x2.f32,
// two values per instruction) for the values where its result is the
// definition's, and fp8_encode_exact for the rest (fp8_from_satfinite). The
// integer encoder costs ~35 instructions a value, which would make the fused
// cast+transpose compute-bound on an H100/H200 (budget at full HBM bandwidth:
// ~40 instructions per BF16 element in, two codes out). Building with
// OCTET_CUDA_SOFTWARE_FP8 defined keeps the integer encoder everywhere.
#pragma once

#include <cstdint>

#include <octet/octet_types.h>

#if defined(__CUDACC__)
#define OCTET_CUDA_HD __host__ __device__ __forceinline__
#else
#define OCTET_CUDA_HD inline
#endif

namespace octet_cuda {

OCTET_CUDA_HD uint32_t bits_of(float v) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(v);
#else
  uint32_t b;
  __builtin_memcpy(&b, &v, sizeof b);
  return b;
#endif
}

OCTET_CUDA_HD float float_of(uint32_t b) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(b);
#else
  float v;
  __builtin_memcpy(&v, &b, sizeof v);
  return v;
#endif
}

// Magnitude code of the finite, non-negative FP32 `abs_bits` on the grid of a
// binary format with `man_bits` mantissa bits and exponent bias `bias`,
// rounded to nearest even with the exponent unbounded above (values below the
// smallest normal keep the first binade's spacing: subnormals). The result
// exceeds the format's largest finite code when the value overflows.
OCTET_CUDA_HD uint32_t round_magnitude(uint32_t abs_bits, int man_bits, int bias) {
  const uint32_t exp_field = abs_bits >> 23;
  const int exponent = exp_field == 0 ? -126 : static_cast<int>(exp_field) - 127;
  const uint32_t significand = (abs_bits & 0x7FFFFFu) | (exp_field == 0 ? 0u : 0x800000u);
  const int min_exponent = 1 - bias;
  int grid = exponent > min_exponent ? exponent : min_exponent;
  // value = significand * 2^(exponent - 23); unit = 2^(grid - man_bits)
  const int shift = 23 - man_bits + grid - exponent;  // > 0
  uint32_t units;
  if (shift > 24) {
    units = 0u;  // below half a unit (significand < 2^24)
  } else {
    const uint32_t rest = significand & ((1u << shift) - 1u);
    const uint32_t half = 1u << (shift - 1);
    units = significand >> shift;
    if (rest > half || (rest == half && (units & 1u) != 0u)) ++units;
  }
  if (units < (1u << man_bits)) return units;  // zero or subnormal
  if (units >= (2u << man_bits)) {              // carried into the next binade
    units >>= 1;
    ++grid;
  }
  return (static_cast<uint32_t>(grid + bias) << man_bits) | (units - (1u << man_bits));
}

// FP32 -> E4M3 / E5M2 (numerics.md 2), the definition in integer arithmetic.
OCTET_CUDA_HD uint8_t fp8_encode_exact(float value, bool e4m3, bool saturate) {
  const uint32_t bits = bits_of(value);
  const uint32_t sign = (bits >> 24) & 0x80u;
  const uint32_t abs_bits = bits & 0x7FFFFFFFu;
  const uint32_t max_finite = e4m3 ? 0x7Eu : 0x7Bu;
  if (abs_bits > 0x7F800000u) return static_cast<uint8_t>(sign | 0x7Fu);  // NaN
  const uint32_t magnitude = abs_bits == 0x7F800000u
                                 ? max_finite + 1u
                                 : round_magnitude(abs_bits, e4m3 ? 3 : 2, e4m3 ? 7 : 15);
  if (magnitude <= max_finite) return static_cast<uint8_t>(sign | magnitude);
  if (saturate) return static_cast<uint8_t>(sign | max_finite);
  return static_cast<uint8_t>(sign | (e4m3 ? 0x7Fu : 0x7Cu));
}

// The definition's code for `value`, given `satfinite_code`: what a
// round-to-nearest-even conversion that clamps finite overflow and infinities
// to the largest finite magnitude (sign kept) gives for it; its code for a NaN
// input may be any code. Where that conversion and the definition agree (every
// non-NaN value when saturating; every value the clamp did not reach when not)
// the code is kept; NaN inputs (the definition keeps the sign: sign | 0x7F)
// and possibly clamped values without saturation (the definition gives NaN in
// E4M3, infinity in E5M2, or a value that rounds down to the largest finite)
// take the integer encoder. Both branches are rare in real data.
#if defined(__CUDA_ARCH__)
// Out of line: inlined at every call site, the rare path would multiply the
// code size of the unrolled kernels. `inline` (linkage only; __noinline__
// still keeps it a call): the header is in several translation units, and a
// plain external definition is an ODR violation that nvlink rejects under
// -rdc=true ("Multiple definition of ...fp8_encode_exact_out_of_line...").
inline __device__ __noinline__ uint8_t fp8_encode_exact_out_of_line(float value, bool e4m3, bool saturate) {
  return fp8_encode_exact(value, e4m3, saturate);
}
#endif

OCTET_CUDA_HD uint8_t fp8_from_satfinite(uint8_t satfinite_code, float value, bool e4m3, bool saturate) {
  const uint32_t max_finite = e4m3 ? 0x7Eu : 0x7Bu;
  const bool nan = (bits_of(value) & 0x7FFFFFFFu) > 0x7F800000u;
  if (nan || (!saturate && (satfinite_code & 0x7Fu) >= max_finite)) {
#if defined(__CUDA_ARCH__)
    return fp8_encode_exact_out_of_line(value, e4m3, saturate);
#else
    return fp8_encode_exact(value, e4m3, saturate);
#endif
  }
  return satfinite_code;
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890 && !defined(OCTET_CUDA_SOFTWARE_FP8)
#define OCTET_CUDA_HARDWARE_FP8 1
// The hardware conversion of two values: `low` in bits 0-7, `high` in 8-15.
// (PTX: the first source operand goes to the upper half of the result.)
__device__ __forceinline__ uint16_t fp8x2_satfinite(float low, float high, bool e4m3) {
  uint16_t codes;
  if (e4m3)
    asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(codes) : "f"(high), "f"(low));
  else
    asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;" : "=h"(codes) : "f"(high), "f"(low));
  return codes;
}
#endif

// FP32 -> E4M3 / E5M2 (numerics.md 2): fp8_encode_exact's bits, by the
// hardware where the device has the conversion.
OCTET_CUDA_HD uint8_t fp8_encode(float value, bool e4m3, bool saturate) {
#if defined(OCTET_CUDA_HARDWARE_FP8)
  return fp8_from_satfinite(static_cast<uint8_t>(fp8x2_satfinite(value, 0.0f, e4m3)), value, e4m3, saturate);
#else
  return fp8_encode_exact(value, e4m3, saturate);
#endif
}

// Two values at once: fp8_encode(low) in bits 0-7, fp8_encode(high) in 8-15.
OCTET_CUDA_HD uint16_t fp8_encode2(float low, float high, bool e4m3, bool saturate) {
#if defined(OCTET_CUDA_HARDWARE_FP8)
  const uint16_t codes = fp8x2_satfinite(low, high, e4m3);
  return static_cast<uint16_t>(fp8_from_satfinite(static_cast<uint8_t>(codes & 0xFFu), low, e4m3, saturate) |
                               (fp8_from_satfinite(static_cast<uint8_t>(codes >> 8), high, e4m3, saturate) << 8));
#else
  return static_cast<uint16_t>(fp8_encode_exact(low, e4m3, saturate) |
                               (fp8_encode_exact(high, e4m3, saturate) << 8));
#endif
}

// Finite magnitude code -> FP32 (exact).
OCTET_CUDA_HD float finite_magnitude_value(uint32_t magnitude, int man_bits, int bias) {
  const uint32_t exp_field = magnitude >> man_bits;
  const uint32_t mantissa = magnitude & ((1u << man_bits) - 1u);
  if (exp_field == 0u) {
    // mantissa * 2^(1 - bias - man_bits): a product of an integer < 2^10 and
    // a power of two that is an FP32 normal, exact.
    return static_cast<float>(mantissa) * float_of(static_cast<uint32_t>(127 + 1 - bias - man_bits) << 23);
  }
  return float_of(((exp_field - static_cast<uint32_t>(bias) + 127u) << 23) | (mantissa << (23 - man_bits)));
}

OCTET_CUDA_HD float with_sign(float magnitude, bool negative) {
  return negative ? float_of(bits_of(magnitude) | 0x80000000u) : magnitude;
}

OCTET_CUDA_HD float quiet_nan(bool negative) { return float_of((negative ? 0x80000000u : 0u) | 0x7FC00000u); }

// E4M3 / E5M2 -> FP32 (numerics.md 3).
OCTET_CUDA_HD float fp8_decode(uint8_t code, bool e4m3) {
  const bool negative = (code & 0x80u) != 0u;
  const uint32_t magnitude = code & 0x7Fu;
  if (e4m3) {
    if (magnitude == 0x7Fu) return quiet_nan(negative);
    return with_sign(finite_magnitude_value(magnitude, 3, 7), negative);
  }
  if (magnitude == 0x7Cu) return with_sign(float_of(0x7F800000u), negative);
  if (magnitude > 0x7Cu) return quiet_nan(negative);
  return with_sign(finite_magnitude_value(magnitude, 2, 15), negative);
}

// BF16 (numerics.md 4): RNE; NaN keeps its sign and leading payload, quiet.
OCTET_CUDA_HD uint16_t bf16_encode(float value) {
  const uint32_t bits = bits_of(value);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((bits >> 16) | 0x0040u);
  return static_cast<uint16_t>((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
}

OCTET_CUDA_HD float bf16_decode(uint16_t code) {
  uint32_t bits = static_cast<uint32_t>(code) << 16;
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) bits |= 0x00400000u;  // quiet
  return float_of(bits);
}

OCTET_CUDA_HD uint16_t fp16_encode(float value) {
  const uint32_t bits = bits_of(value);
  const uint32_t sign = (bits >> 16) & 0x8000u;
  const uint32_t abs_bits = bits & 0x7FFFFFFFu;
  if (abs_bits > 0x7F800000u) return static_cast<uint16_t>(sign | 0x7E00u | ((abs_bits & 0x7FFFFFu) >> 13));
  if (abs_bits == 0x7F800000u) return static_cast<uint16_t>(sign | 0x7C00u);
  const uint32_t magnitude = round_magnitude(abs_bits, 10, 15);
  if (magnitude > 0x7BFFu) return static_cast<uint16_t>(sign | 0x7C00u);
  return static_cast<uint16_t>(sign | magnitude);
}

OCTET_CUDA_HD float fp16_decode(uint16_t code) {
  const bool negative = (code & 0x8000u) != 0u;
  const uint32_t magnitude = code & 0x7FFFu;
  if ((magnitude >> 10) == 0x1Fu) {
    const uint32_t payload = (magnitude & 0x3FFu) << 13;
    if (payload == 0u) return with_sign(float_of(0x7F800000u), negative);
    return float_of((negative ? 0x80000000u : 0u) | 0x7FC00000u | payload);
  }
  return with_sign(finite_magnitude_value(magnitude, 10, 15), negative);
}

// E8M0 (numerics.md 5). round_up: CEIL (convert's rule), else FLOOR.
OCTET_CUDA_HD uint8_t e8m0_encode(float value, bool round_up) {
  const uint32_t bits = bits_of(value);
  const uint32_t magnitude = bits & 0x7FFFFFFFu;
  if (magnitude > 0x7F800000u || magnitude == 0u || (bits & 0x80000000u) != 0u) return 0xFFu;
  if (magnitude == 0x7F800000u) return 0xFEu;
  const uint32_t exp_field = magnitude >> 23;
  const uint32_t fraction = magnitude & 0x7FFFFFu;
  int floor_log2;
  bool power_of_two;
  if (exp_field != 0u) {
    floor_log2 = static_cast<int>(exp_field) - 127;
    power_of_two = fraction == 0u;
  } else {
    int top = 22;  // fraction != 0 here
    while (((fraction >> top) & 1u) == 0u) --top;
    floor_log2 = top - 149;
    power_of_two = (fraction & (fraction - 1u)) == 0u;
  }
  const int code = ((round_up && !power_of_two) ? floor_log2 + 1 : floor_log2) + 127;
  if (code < 0) return 0x00u;
  if (code > 0xFE) return 0xFEu;
  return static_cast<uint8_t>(code);
}

OCTET_CUDA_HD float e8m0_decode(uint8_t code) {
  if (code == 0xFFu) return float_of(0x7FC00000u);
  if (code == 0u) return float_of(0x00400000u);  // 2^-127, an FP32 subnormal
  return float_of(static_cast<uint32_t>(code) << 23);
}

// Element access by dtype (element index, not bytes). FP32 moves as bits.
OCTET_CUDA_HD float load_as_float(const void* base, int32_t dtype, int64_t index) {
  switch (dtype) {
    case OCTET_DTYPE_FP32: return static_cast<const float*>(base)[index];
    case OCTET_DTYPE_BF16: return bf16_decode(static_cast<const uint16_t*>(base)[index]);
    case OCTET_DTYPE_FP16: return fp16_decode(static_cast<const uint16_t*>(base)[index]);
    case OCTET_DTYPE_E4M3: return fp8_decode(static_cast<const uint8_t*>(base)[index], true);
    case OCTET_DTYPE_E5M2: return fp8_decode(static_cast<const uint8_t*>(base)[index], false);
    default: return e8m0_decode(static_cast<const uint8_t*>(base)[index]);
  }
}

OCTET_CUDA_HD void store_from_float(void* base, int32_t dtype, int64_t index, float v, bool saturate) {
  switch (dtype) {
    case OCTET_DTYPE_FP32: static_cast<float*>(base)[index] = v; return;
    case OCTET_DTYPE_BF16: static_cast<uint16_t*>(base)[index] = bf16_encode(v); return;
    case OCTET_DTYPE_FP16: static_cast<uint16_t*>(base)[index] = fp16_encode(v); return;
    case OCTET_DTYPE_E4M3: static_cast<uint8_t*>(base)[index] = fp8_encode(v, true, saturate); return;
    case OCTET_DTYPE_E5M2: static_cast<uint8_t*>(base)[index] = fp8_encode(v, false, saturate); return;
    default: static_cast<uint8_t*>(base)[index] = e8m0_encode(v, true); return;
  }
}

}  // namespace octet_cuda
