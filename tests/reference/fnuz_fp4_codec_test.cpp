// The FNUZ FP8 formats (E4M3FNUZ, E5M2FNUZ) and FP4 E2M1 (numerics.md
// section 1), exhaustively: every code decoded against a formula written
// here, every rounding boundary between adjacent codes (the midpoint and its
// FP32 neighbours) encoded against a nearest-even search over those values,
// and a stride over all FP32 bit patterns. Nothing here calls the code under
// test to make an expectation.
#include <gtest/gtest.h>
#include <octet_reference/codecs.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

namespace {

using octet::ref::Fp8Format;

float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
uint32_t to_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// A format as its definition states it. magnitudes: the finite magnitude
// codes 0..max_code; beyond: the value the next code would have with an
// unbounded exponent (the overflow threshold's other side).
struct Spec {
  const char* name;
  Fp8Format format;
  int mantissa_bits;
  int bias;
  int max_code;      // largest magnitude code
  int sign_bit;      // 0x80 (FP8) or 0x8 (FP4)
  double max_value;  // stated by the format's definition
};

const Spec kE4M3Fnuz{"E4M3FNUZ", Fp8Format::E4M3FNUZ, 3, 8, 0x7F, 0x80, 240.0};
const Spec kE5M2Fnuz{"E5M2FNUZ", Fp8Format::E5M2FNUZ, 2, 16, 0x7F, 0x80, 57344.0};
const Spec kE2M1{"E2M1", Fp8Format::E2M1, 1, 1, 0x7, 0x8, 6.0};

// Value of a magnitude code: subnormal m * 2^(1 - bias - M), normal
// (1 + m / 2^M) * 2^(e - bias). Also used one code past the last.
double magnitude_value(int magnitude, const Spec& s) {
  const int e = magnitude >> s.mantissa_bits;
  const int m = magnitude & ((1 << s.mantissa_bits) - 1);
  if (e == 0) return std::ldexp(m, 1 - s.bias - s.mantissa_bits);
  return std::ldexp(1.0 + std::ldexp(m, -s.mantissa_bits), e - s.bias);
}

// E2M1's values as the OCP MX spec lists them, to check the formula too.
TEST(Fp4E2M1, TheFormulaGivesTheSpecTable) {
  const double table[8] = {0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0};
  for (int c = 0; c < 8; ++c) EXPECT_EQ(magnitude_value(c, kE2M1), table[c]) << c;
}

TEST(FnuzFormats, TheFormulaGivesTheStatedRange) {
  EXPECT_EQ(magnitude_value(0x7F, kE4M3Fnuz), 240.0);
  EXPECT_EQ(magnitude_value(0x08, kE4M3Fnuz), std::ldexp(1.0, -7));   // min normal
  EXPECT_EQ(magnitude_value(0x01, kE4M3Fnuz), std::ldexp(1.0, -10));  // min subnormal
  EXPECT_EQ(magnitude_value(0x7F, kE5M2Fnuz), 57344.0);
  EXPECT_EQ(magnitude_value(0x04, kE5M2Fnuz), std::ldexp(1.0, -15));
  EXPECT_EQ(magnitude_value(0x01, kE5M2Fnuz), std::ldexp(1.0, -17));
}

bool is_fnuz(const Spec& s) { return s.sign_bit == 0x80; }

// Expected decode: FNUZ 0x80 is NaN, every other code finite (0x80 has no
// negative zero to be); E2M1 has no special code.
void expect_decode(const Spec& s, int code) {
  const float got = octet::ref::fp8_decode(static_cast<uint8_t>(code), s.format);
  if (is_fnuz(s) && code == 0x80) {
    EXPECT_TRUE(std::isnan(got)) << s.name << " code " << code;
    return;
  }
  const bool negative = (code & s.sign_bit) != 0;
  const double magnitude = magnitude_value(code & s.max_code, s);
  const double expected = negative ? -magnitude : magnitude;
  EXPECT_EQ(static_cast<double>(got), expected) << s.name << " code " << code;
  EXPECT_EQ(std::signbit(got), negative) << s.name << " code " << code;
}

TEST(FnuzFp4Codecs, EveryCodeDecodesByTheFormula) {
  for (const Spec* s : {&kE4M3Fnuz, &kE5M2Fnuz})
    for (int code = 0; code < 256; ++code) expect_decode(*s, code);
  for (int code = 0; code < 16; ++code) expect_decode(kE2M1, code);
  EXPECT_EQ(octet::ref::fp8_max(Fp8Format::E4M3FNUZ), 240.0f);
  EXPECT_EQ(octet::ref::fp8_max(Fp8Format::E5M2FNUZ), 57344.0f);
  EXPECT_EQ(octet::ref::fp8_max(Fp8Format::E2M1), 6.0f);
}

constexpr int kNoCode = -1;

// The encoding rule of numerics.md section 1, by search: the nearest
// magnitude, ties to the even code, exponent unbounded above (so a value
// rounding past max_code overflows), then each format's rules.
int expected_encode(float x, const Spec& s, bool saturate) {
  const bool negative = std::signbit(x);
  const int sign = negative ? s.sign_bit : 0;
  const int fnuz_nan = 0x80;
  const int overflow = saturate ? (sign | s.max_code) : (is_fnuz(s) ? fnuz_nan : kNoCode);
  if (std::isnan(x)) return is_fnuz(s) ? fnuz_nan : kNoCode;
  if (std::isinf(x)) return overflow;
  const double a = std::fabs(static_cast<double>(x));
  const int beyond = s.max_code + 1;
  int below = 0;  // largest magnitude code whose value is <= a (beyond included)
  while (below < beyond && magnitude_value(below + 1, s) <= a) ++below;
  int chosen = below;
  if (below < beyond && magnitude_value(below, s) != a) {
    const double down = a - magnitude_value(below, s);
    const double up = magnitude_value(below + 1, s) - a;
    if (up < down || (up == down && (below + 1) % 2 == 0)) chosen = below + 1;
  }
  if (chosen >= beyond) return overflow;
  if (chosen == 0 && is_fnuz(s)) return 0x00;  // no negative zero
  return sign | chosen;
}

void expect_encode(float x, const Spec& s, bool saturate) {
  const int expected = expected_encode(x, s, saturate);
  const uint8_t got = octet::ref::fp8_encode(x, s.format, saturate);
  if (expected == kNoCode) {
    EXPECT_EQ(got, octet::ref::kE2M1NoCode) << s.name << " x=" << x << " saturate=" << saturate;
  } else {
    EXPECT_EQ(int(got), expected) << s.name << " x=" << x << " (bits 0x" << std::hex << to_bits(x)
                                  << ") saturate=" << saturate;
  }
}

std::vector<float> boundary_values(const Spec& s) {
  std::vector<float> values;
  const float inf = std::numeric_limits<float>::infinity();
  auto add_with_neighbours = [&](float v) {
    values.push_back(v);
    values.push_back(std::nextafter(v, 0.0f));
    values.push_back(std::nextafter(v, inf));
  };
  for (int c = 0; c <= s.max_code; ++c) {
    const double lo = magnitude_value(c, s), hi = magnitude_value(c + 1, s);
    add_with_neighbours(static_cast<float>(lo));
    add_with_neighbours(static_cast<float>((lo + hi) / 2));  // exact: a few bits wide
  }
  add_with_neighbours(static_cast<float>(magnitude_value(s.max_code + 1, s)));
  add_with_neighbours(static_cast<float>(magnitude_value(s.max_code + 1, s) * 2));
  values.push_back(std::numeric_limits<float>::denorm_min());
  values.push_back(std::numeric_limits<float>::min());
  values.push_back(std::numeric_limits<float>::max());
  values.push_back(inf);
  values.push_back(std::numeric_limits<float>::quiet_NaN());
  values.push_back(from_bits(0x7F800001u));  // signalling NaN
  const size_t n = values.size();
  for (size_t i = 0; i < n; ++i) values.push_back(-values[i]);
  return values;
}

TEST(FnuzFp4Codecs, EveryRoundingBoundaryEncodesToTheNearestEvenCode) {
  for (const Spec* s : {&kE4M3Fnuz, &kE5M2Fnuz, &kE2M1})
    for (float x : boundary_values(*s))
      for (bool saturate : {false, true}) expect_encode(x, *s, saturate);
}

TEST(FnuzFp4Codecs, AStrideOverEveryFp32BitPatternMatchesTheSearch) {
  // 65,521 is prime: the stride meets every exponent and many mantissas.
  for (const Spec* s : {&kE4M3Fnuz, &kE5M2Fnuz, &kE2M1})
    for (uint64_t bits = 0; bits <= 0xFFFFFFFFull; bits += 65521)
      for (bool saturate : {false, true}) expect_encode(from_bits(uint32_t(bits)), *s, saturate);
}

TEST(FnuzFp4Codecs, EveryCodeRoundTrips) {
  for (const Spec* s : {&kE4M3Fnuz, &kE5M2Fnuz}) {
    for (int code = 0; code < 256; ++code) {
      if (code == 0x80) continue;
      const float v = octet::ref::fp8_decode(uint8_t(code), s->format);
      EXPECT_EQ(int(octet::ref::fp8_encode(v, s->format, false)), code) << s->name;
    }
  }
  for (int code = 0; code < 16; ++code) {
    const float v = octet::ref::fp8_decode(uint8_t(code), Fp8Format::E2M1);
    EXPECT_EQ(int(octet::ref::fp8_encode(v, Fp8Format::E2M1, false)), code);
  }
}

TEST(FnuzFp4Codecs, TheSpecialRulesAsStated) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (Fp8Format f : {Fp8Format::E4M3FNUZ, Fp8Format::E5M2FNUZ}) {
    EXPECT_EQ(octet::ref::fp8_encode(nan, f, true), 0x80);
    EXPECT_EQ(octet::ref::fp8_encode(-nan, f, false), 0x80);
    EXPECT_EQ(octet::ref::fp8_encode(inf, f, false), 0x80);
    EXPECT_EQ(octet::ref::fp8_encode(-inf, f, false), 0x80);
    EXPECT_EQ(octet::ref::fp8_encode(inf, f, true), 0x7F);
    EXPECT_EQ(octet::ref::fp8_encode(-inf, f, true), 0xFF);
    EXPECT_EQ(octet::ref::fp8_encode(-0.0f, f, true), 0x00);
    EXPECT_EQ(octet::ref::fp8_encode(-1e-30f, f, false), 0x00);
  }
  EXPECT_EQ(octet::ref::fp8_encode(248.0f, Fp8Format::E4M3FNUZ, false), 0x80);  // tie rounds to 256
  EXPECT_EQ(octet::ref::fp8_encode(247.9f, Fp8Format::E4M3FNUZ, false), 0x7F);
  EXPECT_EQ(octet::ref::fp8_encode(61440.0f, Fp8Format::E5M2FNUZ, false), 0x80);
  EXPECT_EQ(octet::ref::fp8_encode(7.0f, Fp8Format::E2M1, false), octet::ref::kE2M1NoCode);
  EXPECT_EQ(octet::ref::fp8_encode(6.9f, Fp8Format::E2M1, false), 0x7);
  EXPECT_EQ(octet::ref::fp8_encode(-7.0f, Fp8Format::E2M1, true), 0xF);
  EXPECT_EQ(octet::ref::fp8_encode(nan, Fp8Format::E2M1, true), octet::ref::kE2M1NoCode);
  EXPECT_EQ(octet::ref::fp8_encode(-0.0f, Fp8Format::E2M1, false), 0x8);  // E2M1 keeps -0
  EXPECT_EQ(octet::ref::fp8_encode(0.25f, Fp8Format::E2M1, false), 0x0);  // tie to even 0
  EXPECT_EQ(octet::ref::fp8_encode(0.75f, Fp8Format::E2M1, false), 0x2);  // tie to even 1.0
  EXPECT_EQ(octet::ref::fp8_encode(5.0f, Fp8Format::E2M1, false), 0x6);   // tie to even 4
}

}  // namespace
