/* Exact codecs by integer arithmetic on the FP32 bit pattern: no libm, no
 * dependence on the FPU rounding mode, identical results on every host. */
#include "template_codecs.h"

#include <string.h>

#include <octet/octet_types.h>

static uint32_t bits_of(float value) {
  uint32_t bits;
  memcpy(&bits, &value, sizeof bits);
  return bits;
}

static float float_of(uint32_t bits) {
  float value;
  memcpy(&value, &bits, sizeof value);
  return value;
}

/* Rounds a finite, non-negative FP32 (given by its bits) to the grid of a
 * binary format with man_bits mantissa bits and exponent bias `bias`, to
 * nearest even, with the exponent unbounded above. Returns the magnitude
 * code (exponent field << man_bits | mantissa), which exceeds the format's
 * largest finite code when the value overflows. */
static uint32_t round_to_format(uint32_t abs_bits, int man_bits, int bias) {
  const uint32_t exponent_field = abs_bits >> 23;
  const int min_exponent = 1 - bias;
  /* value = significand * 2^(exponent - 23) */
  const int exponent = exponent_field == 0 ? -126 : (int)exponent_field - 127;
  const uint32_t significand =
      (abs_bits & 0x7FFFFFu) | (exponent_field == 0 ? 0u : 0x800000u);
  /* Below the format's smallest normal exponent the spacing stays that of
   * the first normal binade: that is what makes subnormals. */
  int grid_exponent = exponent > min_exponent ? exponent : min_exponent;
  const int shift = 23 + grid_exponent - man_bits - exponent; /* >= 23 - man_bits > 0 */
  uint32_t steps; /* the value in units of 2^(grid_exponent - man_bits) */
  if (shift > 24) {
    steps = 0; /* significand < 2^24: less than half a unit */
  } else {
    const uint32_t remainder = significand & ((1u << shift) - 1u);
    const uint32_t half = 1u << (shift - 1);
    steps = significand >> shift;
    if (remainder > half || (remainder == half && (steps & 1u))) steps += 1;
  }
  if (steps < (1u << man_bits)) return steps; /* zero or subnormal: exponent field 0 */
  if (steps >= (2u << man_bits)) {            /* rounding carried into the next binade */
    steps >>= 1;                              /* exact: steps was 2^(man_bits+1) */
    grid_exponent += 1;
  }
  return ((uint32_t)(grid_exponent + bias) << man_bits) | (steps - (1u << man_bits));
}

/* Value of a finite magnitude code of a binary format, as FP32 (exact: every
 * FP8 and FP16 value is an FP32 value). */
static float finite_value(uint32_t magnitude, int man_bits, int bias) {
  const uint32_t exponent_field = magnitude >> man_bits;
  const uint32_t mantissa = magnitude & ((1u << man_bits) - 1u);
  if (exponent_field == 0) {
    /* mantissa * 2^(1 - bias - man_bits); that power of two is an FP32 normal */
    const float unit = float_of((uint32_t)(127 + 1 - bias - man_bits) << 23);
    return (float)mantissa * unit;
  }
  return float_of(((exponent_field - (uint32_t)bias + 127u) << 23) |
                  (mantissa << (23 - man_bits)));
}

static float with_sign(float magnitude, int negative) {
  return negative ? float_of(bits_of(magnitude) | 0x80000000u) : magnitude;
}

static float quiet_nan(int negative) { return float_of((negative ? 0x80000000u : 0u) | 0x7FC00000u); }

uint8_t template_fp8_encode(float value, int32_t dtype, int saturate) {
  const int e4m3 = dtype == OCTET_DTYPE_E4M3;
  const int man_bits = e4m3 ? 3 : 2;
  const int bias = e4m3 ? 7 : 15;
  const uint32_t max_finite = e4m3 ? 0x7Eu : 0x7Bu;
  const uint32_t bits = bits_of(value);
  const uint8_t sign = (uint8_t)((bits >> 24) & 0x80u);
  const uint32_t abs_bits = bits & 0x7FFFFFFFu;
  uint32_t magnitude;
  if (abs_bits > 0x7F800000u) return (uint8_t)(sign | 0x7Fu); /* NaN in both formats */
  magnitude = abs_bits == 0x7F800000u ? max_finite + 1u : round_to_format(abs_bits, man_bits, bias);
  if (magnitude <= max_finite) return (uint8_t)(sign | magnitude);
  if (saturate) return (uint8_t)(sign | max_finite);
  return (uint8_t)(sign | (e4m3 ? 0x7Fu : 0x7Cu)); /* E4M3 has no inf: NaN */
}

float template_fp8_decode(uint8_t code, int32_t dtype) {
  const int negative = (code & 0x80u) != 0;
  const uint32_t magnitude = code & 0x7Fu;
  if (dtype == OCTET_DTYPE_E4M3) {
    if (magnitude == 0x7Fu) return quiet_nan(negative);
    return with_sign(finite_value(magnitude, 3, 7), negative);
  }
  if (magnitude == 0x7Cu) return with_sign(float_of(0x7F800000u), negative);
  if (magnitude > 0x7Cu) return quiet_nan(negative);
  return with_sign(finite_value(magnitude, 2, 15), negative);
}

uint16_t template_bf16_encode(float value) {
  const uint32_t bits = bits_of(value);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)((bits >> 16) | 0x0040u);
  /* Adding just under half a unit, plus the kept LSB, rounds to nearest even;
   * a carry out of the largest finite value lands on inf, as it must. */
  return (uint16_t)((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
}

float template_bf16_decode(uint16_t code) {
  uint32_t bits = (uint32_t)code << 16;
  /* A signalling NaN comes out quiet, as the contract asks of every NaN. */
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) bits |= 0x00400000u;
  return float_of(bits);
}

uint16_t template_fp16_encode(float value) {
  const uint32_t bits = bits_of(value);
  const uint16_t sign = (uint16_t)((bits >> 16) & 0x8000u);
  const uint32_t abs_bits = bits & 0x7FFFFFFFu;
  uint32_t magnitude;
  if (abs_bits > 0x7F800000u) {
    /* Quiet NaN that keeps the leading payload bits (as bf16 does). */
    return (uint16_t)(sign | 0x7E00u | ((abs_bits & 0x7FFFFFu) >> 13));
  }
  if (abs_bits == 0x7F800000u) return (uint16_t)(sign | 0x7C00u);
  magnitude = round_to_format(abs_bits, 10, 15);
  if (magnitude > 0x7BFFu) return (uint16_t)(sign | 0x7C00u);
  return (uint16_t)(sign | magnitude);
}

float template_fp16_decode(uint16_t code) {
  const int negative = (code & 0x8000u) != 0;
  const uint32_t magnitude = code & 0x7FFFu;
  if ((magnitude >> 10) == 0x1Fu) {
    const uint32_t payload = (magnitude & 0x3FFu) << 13;
    if (payload == 0) return with_sign(float_of(0x7F800000u), negative);
    return float_of((negative ? 0x80000000u : 0u) | 0x7FC00000u | payload);
  }
  return with_sign(finite_value(magnitude, 10, 15), negative);
}
