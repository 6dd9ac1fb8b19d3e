// NaN results (numerics.md "NaN results"): octet_math.h's FP32 operations
// against a table written from the rule (the first NaN operand in argument
// order, quieted; else the default NaN 0xFFC00000). Every expected value
// below is a literal read off the rule, not computed with the host's own
// arithmetic, so the test holds on any host. Where such a NaN reaches a
// backend's encoded outputs: tests/backend_suite/nan_rules_kernel_test.cpp.
#include <gtest/gtest.h>

#include <octet/octet_math.h>

#include <cstdint>
#include <vector>

#include "fp32_bits.hpp"
#include "fp8_spec.hpp"

namespace octet::test {
namespace {

enum class Op { Add, Sub, Mul, Div };

const char* name_of(Op op) {
  switch (op) {
    case Op::Add: return "add";
    case Op::Sub: return "sub";
    case Op::Mul: return "mul";
    default: return "div";
  }
}

uint32_t apply(Op op, uint32_t a, uint32_t b) {
  switch (op) {
    case Op::Add: return float_bits(octet_math_add(bits_float(a), bits_float(b)));
    case Op::Sub: return float_bits(octet_math_sub(bits_float(a), bits_float(b)));
    case Op::Mul: return float_bits(octet_math_mul(bits_float(a), bits_float(b)));
    default: return float_bits(octet_math_div(bits_float(a), bits_float(b)));
  }
}

struct BinaryCase {
  uint32_t a, b, expected;
};

// NaN operands: the same answer for every operation.
const BinaryCase kNanOperandCases[] = {
    {kQuietPos, kOne, kQuietPos},                              // NaN first
    {kQuietNeg, kOne, kQuietNeg},
    {kOne, kQuietPos, kQuietPos},                              // NaN second
    {kOne, kQuietNeg, kQuietNeg},
    {kQuietPos, kQuietNeg, kQuietPos},                         // both: the first, whatever its sign
    {kQuietNeg, kQuietPos, kQuietNeg},
    {kSignallingPos, kOne, kSignallingPosQuieted},             // signalling: quieted, payload kept
    {kTwo, kSignallingNeg, kSignallingNegQuieted},
    {kQuietNeg, kSignallingPos, kQuietNeg},                    // a signalling second does not win
    {kSignallingPos, kQuietNeg, kSignallingPosQuieted},
    {kSignallingNeg, kSignallingPos, kSignallingNegQuieted},
    {kQuietPos, kInf, kQuietPos},                              // NaN with infinities and zeros
    {kMinusInf, kQuietPos, kQuietPos},
    {kZero, kQuietNeg, kQuietNeg},
    {kMinusZero, kSignallingPos, kSignallingPosQuieted},
};

TEST(NanRules, NanOperandsGiveTheFirstNanQuieted) {
  for (Op op : {Op::Add, Op::Sub, Op::Mul, Op::Div}) {
    for (const BinaryCase& c : kNanOperandCases) {
      EXPECT_EQ(apply(op, c.a, c.b), c.expected)
          << std::hex << name_of(op) << "(0x" << c.a << ", 0x" << c.b << ")";
    }
  }
}

TEST(NanRules, InvalidOperationsGiveTheDefaultNan) {
  const struct {
    Op op;
    uint32_t a, b;
  } cases[] = {
      {Op::Add, kInf, kMinusInf}, {Op::Add, kMinusInf, kInf},     // inf - inf
      {Op::Sub, kInf, kInf},      {Op::Sub, kMinusInf, kMinusInf},
      {Op::Mul, kZero, kInf},     {Op::Mul, kInf, kMinusZero},    // 0 * inf, any signs
      {Op::Mul, kMinusZero, kMinusInf},
      {Op::Div, kZero, kZero},    {Op::Div, kMinusZero, kZero},   // 0 / 0
      {Op::Div, kInf, kInf},      {Op::Div, kMinusInf, kInf},     // inf / inf
  };
  for (const auto& c : cases) {
    EXPECT_EQ(apply(c.op, c.a, c.b), kDefaultNan) << std::hex << name_of(c.op) << "(0x" << c.a << ", 0x" << c.b << ")";
  }
}

TEST(NanRules, OtherResultsAreIeeeRoundToNearest) {
  const struct {
    Op op;
    uint32_t a, b, expected;
  } cases[] = {
      {Op::Add, kOne, kTwo, kThree},
      {Op::Add, 0x3F800000u, 0x33800000u, 0x3F800000u},  // 1 + 2^-24: a tie, to even (1)
      {Op::Add, 0x3F800001u, 0x33800000u, 0x3F800002u},  // (1 + 2^-23) + 2^-24: a tie, to even
      {Op::Add, kInf, kOne, kInf},
      {Op::Add, kZero, kMinusZero, kZero},
      {Op::Sub, kOne, kThree, 0xC0000000u},              // -2
      {Op::Sub, kInf, kMinusInf, kInf},
      {Op::Mul, kMinusOne, kZero, kMinusZero},
      {Op::Mul, kInf, kMinusOne, kMinusInf},
      {Op::Mul, 0x3F800001u, 0x3F800001u, 0x3F800002u},  // (1 + 2^-23)^2, rounded
      {Op::Div, kOne, kZero, kInf},
      {Op::Div, kOne, kMinusZero, kMinusInf},
      {Op::Div, kOne, kThree, 0x3EAAAAABu},              // 1/3
      {Op::Div, kThree, kInf, kZero},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(apply(c.op, c.a, c.b), c.expected) << std::hex << name_of(c.op) << "(0x" << c.a << ", 0x" << c.b << ")";
  }
}

TEST(NanRules, SquareRoot) {
  const struct {
    uint32_t a, expected;
  } cases[] = {
      {0x40800000u, kTwo},                             // sqrt(4) = 2
      {kTwo, 0x3FB504F3u},                             // sqrt(2), rounded
      {kMinusZero, kMinusZero},
      {kInf, kInf},
      {kMinusOne, kDefaultNan},                        // invalid
      {kMinusInf, kDefaultNan},
      {0x80000001u, kDefaultNan},                      // the smallest negative subnormal
      {kQuietPos, kQuietPos},                          // NaN operand, quieted
      {kQuietNeg, kQuietNeg},
      {kSignallingPos, kSignallingPosQuieted},
      {kSignallingNeg, kSignallingNegQuieted},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(float_bits(octet_math_sqrtf(bits_float(c.a))), c.expected) << std::hex << "sqrt(0x" << c.a << ")";
  }
}

}  // namespace
}  // namespace octet::test
