// FP8 E4M3/E5M2 decode and encode against the spec oracle (fp8_spec.hpp).
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

using ref::Fp8Format;

struct FormatCase {
  Fp8Format format;
  const Fp8Spec* spec;
};

void PrintTo(const FormatCase& c, std::ostream* os) { *os << c.spec->name; }

class Fp8Codec : public ::testing::TestWithParam<FormatCase> {};

std::string print_format(const ::testing::TestParamInfo<FormatCase>& info) {
  return info.param.spec->name;
}

TEST_P(Fp8Codec, DecodesEveryCodeAsTheSpecDefines) {
  const auto [format, spec] = GetParam();
  for (int code = 0; code < 256; ++code) {
    const float decoded = ref::fp8_decode(static_cast<uint8_t>(code), format);
    const bool negative = (code & 0x80) != 0;
    SCOPED_TRACE(::testing::Message() << spec->name << " code 0x" << std::hex << code);
    EXPECT_EQ(std::signbit(decoded), negative);
    switch (fp8_kind(code, *spec)) {
      case Fp8Kind::NaN:  // the FP32 quiet NaN, sign kept (docs/numerics.md section 3)
        EXPECT_EQ(float_bits(decoded) & 0x7FFFFFFFu, 0x7FC00000u);
        break;
      case Fp8Kind::Infinity: EXPECT_TRUE(std::isinf(decoded)); break;
      case Fp8Kind::Finite: {
        const double magnitude = fp8_magnitude_value(code & 0x7F, *spec);
        EXPECT_EQ(static_cast<double>(decoded), negative ? -magnitude : magnitude);
        break;
      }
    }
  }
}

TEST_P(Fp8Codec, MaxIsTheLargestFiniteValue) {
  const auto [format, spec] = GetParam();
  EXPECT_EQ(static_cast<double>(ref::fp8_max(format)),
            fp8_magnitude_value(spec->max_finite_magnitude, *spec));
}

// FP32 inputs at, between and a few ulps around every representable value
// and every midpoint, of both signs.
std::vector<float> inputs_around_every_value(const Fp8Spec& spec) {
  std::vector<double> anchors;
  const int beyond = spec.max_finite_magnitude + 1;
  for (int code = 0; code <= beyond + 1; ++code) {
    const double v = fp8_magnitude_value(code, spec);
    anchors.push_back(v);
    anchors.push_back((v + fp8_magnitude_value(code + 1, spec)) / 2);
  }
  // Below the smallest subnormal: half of it is a tie with zero.
  anchors.push_back(fp8_magnitude_value(1, spec) / 2);
  anchors.push_back(fp8_magnitude_value(1, spec) / 4);
  std::vector<float> inputs;
  for (double anchor : anchors) {
    const float center = static_cast<float>(anchor);
    EXPECT_EQ(static_cast<double>(center), anchor) << "anchor must be exact in FP32";
    for (float sign : {1.0f, -1.0f}) {
      float up = center, down = center;
      inputs.push_back(sign * center);
      for (int step = 1; step <= 4; ++step) {
        up = std::nextafter(up, std::numeric_limits<float>::infinity());
        down = std::nextafter(down, -std::numeric_limits<float>::infinity());
        inputs.push_back(sign * up);
        inputs.push_back(sign * down);
      }
    }
  }
  for (float extreme : {0.0f, FLT_TRUE_MIN, FLT_MIN, FLT_MAX, 1e30f, 65504.0f, 1.0f}) {
    inputs.push_back(extreme);
    inputs.push_back(-extreme);
  }
  return inputs;
}

TEST_P(Fp8Codec, EncodesValuesAndMidpointsToNearestEven) {
  const auto [format, spec] = GetParam();
  for (bool saturate : {true, false}) {
    for (float x : inputs_around_every_value(*spec)) {
      ASSERT_EQ(ref::fp8_encode(x, format, saturate), fp8_expected_encode(x, *spec, saturate))
          << spec->name << " x=" << std::hexfloat << x << " saturate=" << saturate;
    }
  }
}

TEST_P(Fp8Codec, EncodesRandomFp32BitPatterns) {
  const auto [format, spec] = GetParam();
  std::mt19937 rng(1234);
  for (int i = 0; i < 200000; ++i) {
    // Half the draws from the whole FP32 space, half near the FP8 range.
    uint32_t bits = rng();
    if (i % 2 == 1) bits = (bits & 0x807FFFFFu) | ((100u + rng() % 50u) << 23);
    const float x = bits_float(bits);
    const bool saturate = (i % 4) < 2;
    ASSERT_EQ(ref::fp8_encode(x, format, saturate), fp8_expected_encode(x, *spec, saturate))
        << spec->name << " bits=0x" << std::hex << bits << " saturate=" << saturate;
  }
}

TEST_P(Fp8Codec, RoundTripsEveryCode) {
  const auto [format, spec] = GetParam();
  for (int code = 0; code < 256; ++code) {
    const uint8_t c = static_cast<uint8_t>(code);
    const float decoded = ref::fp8_decode(c, format);
    const uint8_t sign = c & 0x80;
    switch (fp8_kind(code, *spec)) {
      case Fp8Kind::Finite:
        EXPECT_EQ(ref::fp8_encode(decoded, format, true), c);
        EXPECT_EQ(ref::fp8_encode(decoded, format, false), c);
        break;
      case Fp8Kind::Infinity:  // inf saturates to max normal unless non-saturating
        EXPECT_EQ(ref::fp8_encode(decoded, format, false), c);
        EXPECT_EQ(ref::fp8_encode(decoded, format, true), sign | spec->max_finite_magnitude);
        break;
      case Fp8Kind::NaN:  // every NaN comes back as the one NaN code with its sign
        EXPECT_EQ(ref::fp8_encode(decoded, format, true), sign | 0x7F);
        EXPECT_EQ(ref::fp8_encode(decoded, format, false), sign | 0x7F);
        break;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(BothFormats, Fp8Codec,
                         ::testing::Values(FormatCase{Fp8Format::E4M3, &kE4M3Spec},
                                           FormatCase{Fp8Format::E5M2, &kE5M2Spec}),
                         print_format);

// The cases numerics.md names explicitly.
TEST(Fp8NamedCases, E4M3OverflowStartsAbove464) {
  EXPECT_EQ(ref::fp8_encode(464.0f, Fp8Format::E4M3, false), 0x7E);  // tie to 448 (even)
  EXPECT_EQ(ref::fp8_encode(std::nextafter(464.0f, 1e9f), Fp8Format::E4M3, false), 0x7F);
  EXPECT_EQ(ref::fp8_encode(-std::nextafter(464.0f, 1e9f), Fp8Format::E4M3, false), 0xFF);
  EXPECT_EQ(ref::fp8_encode(std::nextafter(464.0f, 1e9f), Fp8Format::E4M3, true), 0x7E);
  EXPECT_EQ(ref::fp8_encode(1e6f, Fp8Format::E4M3, true), 0x7E);
}

TEST(Fp8NamedCases, E5M2OverflowsFrom61440) {
  EXPECT_EQ(ref::fp8_encode(61440.0f, Fp8Format::E5M2, false), 0x7C);
  EXPECT_EQ(ref::fp8_encode(-61440.0f, Fp8Format::E5M2, false), 0xFC);
  EXPECT_EQ(ref::fp8_encode(std::nextafter(61440.0f, 0.0f), Fp8Format::E5M2, false), 0x7B);
  EXPECT_EQ(ref::fp8_encode(61440.0f, Fp8Format::E5M2, true), 0x7B);
}

TEST(Fp8NamedCases, SubnormalNormalBoundaryTieGoesToEvenCode) {
  EXPECT_EQ(ref::fp8_encode(7.5f * std::ldexp(1.0f, -9), Fp8Format::E4M3, true), 0x08);
  EXPECT_EQ(ref::fp8_encode(3.5f * std::ldexp(1.0f, -16), Fp8Format::E5M2, true), 0x04);
}

TEST(Fp8NamedCases, ZeroKeepsItsSign) {
  for (Fp8Format f : {Fp8Format::E4M3, Fp8Format::E5M2}) {
    EXPECT_EQ(ref::fp8_encode(0.0f, f, true), 0x00);
    EXPECT_EQ(ref::fp8_encode(-0.0f, f, true), 0x80);
    EXPECT_EQ(ref::fp8_encode(-FLT_TRUE_MIN, f, false), 0x80);  // rounds to -0
  }
}

TEST(Fp8NamedCases, NanOfAnyPayloadKeepsOnlyItsSign) {
  for (uint32_t payload : {0x1u, 0x400000u, 0x3FFFFFu, 0x7FFFFFu, 0x12345u}) {
    for (Fp8Format f : {Fp8Format::E4M3, Fp8Format::E5M2}) {
      for (bool saturate : {true, false}) {
        EXPECT_EQ(ref::fp8_encode(bits_float(0x7F800000u | payload), f, saturate), 0x7F);
        EXPECT_EQ(ref::fp8_encode(bits_float(0xFF800000u | payload), f, saturate), 0xFF);
      }
    }
  }
}

TEST(Fp8NamedCases, InfinityFollowsTheOverflowRule) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(ref::fp8_encode(inf, Fp8Format::E4M3, true), 0x7E);
  EXPECT_EQ(ref::fp8_encode(-inf, Fp8Format::E4M3, true), 0xFE);
  EXPECT_EQ(ref::fp8_encode(inf, Fp8Format::E4M3, false), 0x7F);
  EXPECT_EQ(ref::fp8_encode(-inf, Fp8Format::E4M3, false), 0xFF);
  EXPECT_EQ(ref::fp8_encode(inf, Fp8Format::E5M2, true), 0x7B);
  EXPECT_EQ(ref::fp8_encode(-inf, Fp8Format::E5M2, true), 0xFB);
  EXPECT_EQ(ref::fp8_encode(inf, Fp8Format::E5M2, false), 0x7C);
  EXPECT_EQ(ref::fp8_encode(-inf, Fp8Format::E5M2, false), 0xFC);
}

}  // namespace
}  // namespace octet::test
