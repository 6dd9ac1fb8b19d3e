// octet_math.h (the tanhf/expf every backend uses for GELU and SwiGLU)
// against long double libm on a sweep of the FP32 line: each result must be
// within one unit in the last place of the correctly rounded value, and
// different from it only next to a rounding midpoint (rarely).
#include <octet/octet_math.h>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>

namespace {

float from_bits(uint32_t b) {
  float v;
  std::memcpy(&v, &b, sizeof v);
  return v;
}
uint32_t bits(float v) {
  uint32_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

// Distance in units in the last place between two finite floats of the same sign.
int64_t ulps_apart(float a, float b) {
  auto ordered = [](float v) {
    const int64_t b = int64_t(bits(v) & 0x7FFFFFFFu);
    return (bits(v) >> 31) ? -b : b;
  };
  return std::llabs(ordered(a) - ordered(b));
}

struct SweepResult {
  uint64_t checked = 0;
  uint64_t off_by_one = 0;
};

// Every 16-bit high half with several low halves, plus a prime-stride
// sweep: about 1.5M inputs per call, positive and negative.
SweepResult sweep(const std::function<float(float)>& fn, const std::function<long double(long double)>& truth) {
  SweepResult result;
  auto check = [&](uint32_t pattern) {
    const float x = from_bits(pattern);
    if (std::isnan(x)) return;
    const float expected = static_cast<float>(truth(static_cast<long double>(x)));
    const float got = fn(x);
    ++result.checked;
    if (bits(got) == bits(expected)) return;
    ASSERT_FALSE(std::isnan(got)) << std::hex << "x bits 0x" << pattern;
    ASSERT_LE(ulps_apart(got, expected), 1) << std::hex << "x bits 0x" << pattern << " got 0x" << bits(got)
                                            << " expected 0x" << bits(expected);
    ++result.off_by_one;
  };
  const uint32_t lows[] = {0x0000u, 0x0001u, 0x5555u, 0x8000u, 0xAAAAu, 0xFFFFu};
  for (uint32_t high = 0; high <= 0xFFFFu; ++high)
    for (uint32_t low : lows) check((high << 16) | low);
  for (uint64_t b = 0; b <= 0xFFFFFFFFull; b += 4801u) check(uint32_t(b));
  return result;
}

TEST(OctetMath, TanhfIsFaithfulAndNearlyAlwaysCorrectlyRounded) {
  SweepResult r = sweep(octet_math_tanhf, [](long double x) { return std::tanh(x); });
  EXPECT_GT(r.checked, 1000000u);
  EXPECT_LT(double(r.off_by_one) / double(r.checked), 1e-5) << r.off_by_one << " of " << r.checked;
}

TEST(OctetMath, ExpfIsFaithfulAndNearlyAlwaysCorrectlyRounded) {
  SweepResult r = sweep(octet_math_expf, [](long double x) { return std::exp(x); });
  EXPECT_GT(r.checked, 1000000u);
  EXPECT_LT(double(r.off_by_one) / double(r.checked), 1e-5) << r.off_by_one << " of " << r.checked;
}

TEST(OctetMath, SpecialValues) {
  const float inf = from_bits(0x7F800000u);
  EXPECT_EQ(bits(octet_math_tanhf(0.0f)), 0x00000000u);
  EXPECT_EQ(bits(octet_math_tanhf(-0.0f)), 0x80000000u);
  EXPECT_EQ(octet_math_tanhf(inf), 1.0f);
  EXPECT_EQ(octet_math_tanhf(-inf), -1.0f);
  EXPECT_EQ(octet_math_tanhf(9.5f), 1.0f);
  EXPECT_EQ(octet_math_tanhf(-20.0f), -1.0f);
  // The smallest subnormal: tanh x = x.
  EXPECT_EQ(bits(octet_math_tanhf(from_bits(1u))), 1u);
  EXPECT_EQ(octet_math_expf(0.0f), 1.0f);
  EXPECT_EQ(octet_math_expf(-0.0f), 1.0f);
  EXPECT_EQ(octet_math_expf(inf), inf);
  EXPECT_EQ(bits(octet_math_expf(-inf)), 0u);
  EXPECT_EQ(octet_math_expf(88.8f), inf);
  EXPECT_EQ(bits(octet_math_expf(-104.5f)), 0u);
  EXPECT_EQ(bits(octet_math_expf(-103.0f)), 0x00000001u);  // e^-103 ~ 1.9e-45: the smallest subnormal
  EXPECT_EQ(octet_math_expf(1.0f), 2.71828175f);
  // NaN inputs come back quieted, sign and payload kept.
  for (uint32_t nan : {0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0xFF812345u}) {
    EXPECT_EQ(bits(octet_math_tanhf(from_bits(nan))), nan | 0x00400000u) << std::hex << nan;
    EXPECT_EQ(bits(octet_math_expf(from_bits(nan))), nan | 0x00400000u) << std::hex << nan;
  }
}

TEST(OctetMath, TanhIsOdd) {
  for (uint32_t b = 0; b < 0x7F800000u; b += 65521u) {
    const float x = from_bits(b);
    EXPECT_EQ(bits(octet_math_tanhf(-x)), bits(octet_math_tanhf(x)) | 0x80000000u) << std::hex << b;
  }
}

}  // namespace
