// Single-value and group rules of the FP4 modes (numerics.md section 15).
#include "fp4_math.hpp"

#include <octet/octet_math.h>

#include <cmath>
#include <cstdint>

#include "octet_reference/codecs.hpp"

namespace octet::ref {
namespace {

// The E2M1 magnitudes, code = index.
constexpr float kE2M1Magnitudes[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};

}  // namespace

uint8_t e2m1_encode_stochastic(float y, uint32_t r) {
  const uint8_t sign = std::signbit(y) ? 0x8 : 0x0;
  const float a = std::fabs(y);
  if (a >= 6.0f) return static_cast<uint8_t>(sign | 0x7);  // saturated, infinity included
  int lo = 0;
  while (lo < 7 && kE2M1Magnitudes[lo + 1] <= a) ++lo;
  // a < 6, so lo <= 6 and hi exists. a - lo is exact (lo = 0, or lo >= a / 2),
  // and the division by the spacing (a power of two) is exact too.
  const float spacing = kE2M1Magnitudes[lo + 1] - kE2M1Magnitudes[lo];
  const float fraction = (a - kE2M1Magnitudes[lo]) / spacing;  // in [0, 1)
  // floor(fraction * 2^32): fraction * 2^32 is exact in double, < 2^32.
  const uint64_t threshold = static_cast<uint64_t>(std::floor(std::ldexp(static_cast<double>(fraction), 32)));
  const int magnitude = static_cast<uint64_t>(r) < threshold ? lo + 1 : lo;
  return static_cast<uint8_t>(sign | magnitude);
}

void hadamard16(float* values, uint32_t sign_mask) {
  float in[16];
  for (int j = 0; j < 16; ++j) in[j] = values[j];
  for (int i = 0; i < 16; ++i) {
    float sum = 0.0f;
    for (int j = 0; j < 16; ++j) {
      const bool negate = ((__builtin_popcount(static_cast<unsigned>(i & j)) + ((sign_mask >> j) & 1u)) & 1u) != 0;
      sum = octet_math_add(sum, negate ? -in[j] : in[j]);
    }
    values[i] = octet_math_mul(sum, 0.25f);
  }
}

float nvfp4_tensor_scale(float finite_amax) {
  const float g = octet_math_div(finite_amax, 2688.0f);  // 6 * 448
  return g == 0.0f ? 1.0f : g;
}

uint8_t nvfp4_block_scale_code(float block_amax, float g) {
  return fp8_encode(octet_math_div(octet_math_div(block_amax, 6.0f), g), Fp8Format::E4M3, true);
}

uint8_t mxfp4_block_scale_code(float block_amax, int32_t rounding) {
  if (block_amax == 0.0f) return 0x00;
  if (rounding == 0) {  // RCEIL: E8M0-CEIL(amax / 6)
    const float quotient = octet_math_div(block_amax, 6.0f);
    return quotient == 0.0f ? 0x00 : e8m0_encode(quotient, true);
  }
  // FLOOR (OCP MX): 2^(floor(log2 amax) - 2), emax of E2M1 being 2.
  const int code = std::ilogb(block_amax) - 2 + 127;
  if (code < 0) return 0x00;
  if (code > 0xFE) return 0xFE;
  return static_cast<uint8_t>(code);
}

}  // namespace octet::ref
