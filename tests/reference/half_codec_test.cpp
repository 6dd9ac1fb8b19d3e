// BF16 and FP16 codecs against independent implementations (element_oracle.hpp):
// a double-based rounding for BF16, the compiler's _Float16 for FP16.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "element_oracle.hpp"
#include "octet_reference/codecs.hpp"

namespace octet::test {
namespace {

// Random FP32 patterns, every special pattern, and inputs a few ulps around
// every value and every midpoint of a 16-bit format whose value of code c
// is `value_of(c)` (finite codes 0..max_code).
template <typename ValueOf>
std::vector<float> inputs_for(int max_code, ValueOf value_of) {
  std::vector<float> inputs;
  for (int code = 0; code <= max_code; code += 1) {
    const double v = value_of(code);
    const double next = code < max_code ? value_of(code + 1) : v * 2;
    for (double anchor : {v, (v + next) / 2}) {
      float up = static_cast<float>(anchor), down = up;
      for (int step = 0; step <= 3; ++step) {
        inputs.push_back(up);
        inputs.push_back(-down);
        up = std::nextafter(up, std::numeric_limits<float>::infinity());
        down = std::nextafter(down, 0.0f);
      }
    }
  }
  std::mt19937 rng(42);
  for (int i = 0; i < 300000; ++i) inputs.push_back(bits_float(rng()));
  for (float special : {0.0f, FLT_TRUE_MIN, FLT_MIN, FLT_MAX, 65504.0f, 65520.0f,
                        std::numeric_limits<float>::infinity()}) {
    inputs.push_back(special);
    inputs.push_back(-special);
  }
  return inputs;
}

void expect_quiet_nan_with_sign(uint16_t code, uint16_t exponent_mask, uint16_t quiet_bit,
                                bool negative) {
  EXPECT_EQ(code & exponent_mask, exponent_mask);
  EXPECT_NE(code & quiet_bit, 0);
  EXPECT_EQ((code & 0x8000) != 0, negative);
}

const std::vector<uint32_t> kNanPatterns = {0x7F800001u, 0x7FC00000u, 0x7FFFFFFFu,
                                            0x7F80FFFFu, 0xFF800001u, 0xFFC00000u,
                                            0xFFFFFFFFu, 0x7FA00000u};

TEST(Bf16Codec, EncodesLikeDoubleRoundingToNearestEven) {
  const auto value_of = [](int code) {
    return static_cast<double>(bits_float(static_cast<uint32_t>(code) << 16));
  };
  for (float x : inputs_for(0x7F7F, value_of)) {
    if (std::isnan(x)) continue;
    ASSERT_EQ(ref::bf16_encode(x), oracle_bf16_encode(x)) << std::hexfloat << x;
  }
}

TEST(Bf16Codec, NanStaysQuietNanWithSign) {
  for (uint32_t bits : kNanPatterns) {
    expect_quiet_nan_with_sign(ref::bf16_encode(bits_float(bits)), 0x7F80, 0x0040,
                               (bits >> 31) != 0);
  }
}

TEST(Bf16Codec, DecodesEveryCode) {
  for (uint32_t code = 0; code < 65536; ++code) {
    const float decoded = ref::bf16_decode(static_cast<uint16_t>(code));
    const float widened = bits_float(code << 16);
    if (std::isnan(widened)) {
      EXPECT_TRUE(std::isnan(decoded));
      EXPECT_EQ(std::signbit(decoded), std::signbit(widened));
    } else {
      EXPECT_EQ(float_bits(decoded), code << 16) << code;
    }
  }
}

TEST(Fp16Codec, EncodesLikeTheCompilersFloat16) {
  const auto value_of = [](int code) {
    return static_cast<double>(oracle_fp16_decode(static_cast<uint16_t>(code)));
  };
  for (float x : inputs_for(0x7BFF, value_of)) {
    if (std::isnan(x)) continue;
    ASSERT_EQ(ref::fp16_encode(x), oracle_fp16_encode(x)) << std::hexfloat << x;
  }
}

TEST(Fp16Codec, OverflowGivesInfinity) {
  EXPECT_EQ(ref::fp16_encode(65504.0f), 0x7BFF);
  EXPECT_EQ(ref::fp16_encode(std::nextafter(65520.0f, 0.0f)), 0x7BFF);
  EXPECT_EQ(ref::fp16_encode(65520.0f), 0x7C00);  // the midpoint ties to the even code
  EXPECT_EQ(ref::fp16_encode(-1e20f), 0xFC00);
}

TEST(Fp16Codec, NanStaysQuietNanWithSign) {
  for (uint32_t bits : kNanPatterns) {
    expect_quiet_nan_with_sign(ref::fp16_encode(bits_float(bits)), 0x7C00, 0x0200,
                               (bits >> 31) != 0);
  }
}

TEST(Fp16Codec, DecodesEveryCodeLikeTheCompiler) {
  for (uint32_t code = 0; code < 65536; ++code) {
    const float decoded = ref::fp16_decode(static_cast<uint16_t>(code));
    const float expected = oracle_fp16_decode(static_cast<uint16_t>(code));
    if (std::isnan(expected)) {
      EXPECT_TRUE(std::isnan(decoded)) << code;
      EXPECT_EQ(std::signbit(decoded), std::signbit(expected)) << code;
    } else {
      EXPECT_EQ(float_bits(decoded), float_bits(expected)) << code;
    }
  }
}

TEST(Fp16Codec, RoundTripsEveryNonNanCode) {
  for (uint32_t code = 0; code < 65536; ++code) {
    const float decoded = ref::fp16_decode(static_cast<uint16_t>(code));
    if (std::isnan(decoded)) continue;
    EXPECT_EQ(ref::fp16_encode(decoded), code);
    const float bf = ref::bf16_decode(static_cast<uint16_t>(code));
    if (!std::isnan(bf)) {
      EXPECT_EQ(ref::bf16_encode(bf), code);
    }
  }
}

}  // namespace
}  // namespace octet::test
