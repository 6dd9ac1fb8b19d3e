// E8M0 scale codec against frexp-based expectations computed in double.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "fp8_spec.hpp"
#include "octet_reference/codecs.hpp"

namespace octet::test {
namespace {

uint8_t expected_e8m0(float x, bool round_up) {
  if (std::isnan(x) || x <= 0.0f) return 0xFF;  // -0 and +0 included
  if (std::isinf(x)) return 0xFE;
  int exponent_plus_one;
  const double fraction = std::frexp(static_cast<double>(x), &exponent_plus_one);
  int exponent = exponent_plus_one - 1;  // floor(log2 x), fraction in [0.5, 1)
  if (round_up && fraction != 0.5) exponent += 1;
  const int code = exponent + 127;
  if (code < 0) return 0x00;
  if (code > 0xFE) return 0xFE;
  return static_cast<uint8_t>(code);
}

std::vector<float> e8m0_inputs() {
  std::vector<float> inputs = {0.0f, -0.0f, -1.0f, -FLT_TRUE_MIN, -FLT_MAX, FLT_TRUE_MIN,
                               FLT_MIN, FLT_MAX, 3.0f, 0.75f, 448.0f, 57344.0f,
                               std::numeric_limits<float>::infinity(),
                               -std::numeric_limits<float>::infinity(),
                               std::numeric_limits<float>::quiet_NaN(),
                               -std::numeric_limits<float>::quiet_NaN(),
                               bits_float(0x7F800001u)};
  for (int e = -149; e <= 127; ++e) {
    const float p = std::ldexp(1.0f, e);
    inputs.push_back(p);
    inputs.push_back(std::nextafter(p, 0.0f));
    inputs.push_back(std::nextafter(p, FLT_MAX));
    inputs.push_back(p * 1.5f);
  }
  std::mt19937 rng(7);
  for (int i = 0; i < 100000; ++i) inputs.push_back(bits_float(rng()));
  return inputs;
}

TEST(E8m0Codec, EncodesWithBothRoundings) {
  for (float x : e8m0_inputs()) {
    EXPECT_EQ(ref::e8m0_encode(x, true), expected_e8m0(x, true)) << std::hexfloat << x;
    EXPECT_EQ(ref::e8m0_encode(x, false), expected_e8m0(x, false)) << std::hexfloat << x;
  }
}

TEST(E8m0Codec, ExtremesAndSpecials) {
  EXPECT_EQ(ref::e8m0_encode(std::ldexp(1.0f, -127), false), 0x00);
  EXPECT_EQ(ref::e8m0_encode(std::ldexp(1.0f, -130), true), 0x00);  // below 2^-127
  EXPECT_EQ(ref::e8m0_encode(std::ldexp(1.0f, 127), true), 0xFE);
  EXPECT_EQ(ref::e8m0_encode(FLT_MAX, true), 0xFE);  // 2^128 saturates
  EXPECT_EQ(ref::e8m0_encode(FLT_MAX, false), 0xFE);
  EXPECT_EQ(ref::e8m0_encode(1.0f, true), 127);
  EXPECT_EQ(ref::e8m0_encode(1.0f, false), 127);
  EXPECT_EQ(ref::e8m0_encode(0.0f, true), 0xFF);
  EXPECT_EQ(ref::e8m0_encode(-2.0f, false), 0xFF);
}

TEST(E8m0Codec, DecodesEveryCode) {
  for (int code = 0; code < 256; ++code) {
    const float decoded = ref::e8m0_decode(static_cast<uint8_t>(code));
    if (code == 0xFF) {
      EXPECT_TRUE(std::isnan(decoded));
    } else {
      EXPECT_EQ(static_cast<double>(decoded), std::ldexp(1.0, code - 127)) << code;
      EXPECT_EQ(ref::e8m0_encode(decoded, true), code);
      EXPECT_EQ(ref::e8m0_encode(decoded, false), code);
    }
  }
}

}  // namespace
}  // namespace octet::test
