// NaN results (numerics.md "NaN results"): octet_math.h's FP32 operations
// against a table written from the rule (the first NaN operand in argument
// order, quieted; else the default NaN 0xFFC00000), and the reference
// backend's FP8/BF16/FP32 outputs where such a NaN reaches them. Every
// expected value below is a literal read off the rule, not computed with the
// host's own arithmetic, so the test holds on any host.
#include <gtest/gtest.h>

#include <octet/octet_math.h>

#include <cstdint>
#include <vector>

#include "backend_harness.hpp"
#include "fp8_spec.hpp"

namespace octet::test {
namespace {

constexpr uint32_t kOne = 0x3F800000u;       // 1
constexpr uint32_t kTwo = 0x40000000u;       // 2
constexpr uint32_t kThree = 0x40400000u;     // 3
constexpr uint32_t kMinusOne = 0xBF800000u;  // -1
constexpr uint32_t kZero = 0x00000000u;
constexpr uint32_t kMinusZero = 0x80000000u;
constexpr uint32_t kInf = 0x7F800000u;
constexpr uint32_t kMinusInf = 0xFF800000u;
constexpr uint32_t kDefaultNan = 0xFFC00000u;
// Quiet NaNs with payloads, one of each sign.
constexpr uint32_t kQuietPos = 0x7FC12345u;
constexpr uint32_t kQuietNeg = 0xFFC54321u;
// Signalling NaNs (quiet bit clear) and what quieting makes of them.
constexpr uint32_t kSignallingPos = 0x7F812345u, kSignallingPosQuieted = 0x7FC12345u;
constexpr uint32_t kSignallingNeg = 0xFF800001u, kSignallingNegQuieted = 0xFFC00001u;

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

// ---- the reference backend: NaNs that reach encoded outputs ----

class NanRulesReference : public ReferenceBackendTest {
 protected:
  // The E4M3 (saturating) code of x quantized at `scale`, and scale_inv.
  uint8_t quantize_one(uint32_t x, uint32_t scale, int32_t out_dtype, uint32_t* scale_inv_bits) {
    TestMatrix in(OCTET_DTYPE_FP32, 1, 1, 1);
    in.set_bits(0, 0, x);
    const float s = bits_float(scale);
    float scale_inv = 0.0f;
    uint8_t code = 0x5A;
    octet_quantize_args args{};
    args.struct_size = sizeof args;
    args.input = in.view();
    args.out_dtype = out_dtype;
    args.saturate = 1;
    args.scale = &s;
    args.scale_inv_out = &scale_inv;
    args.rowwise_out = &code;
    expect_success(api_->quantize(context_, &args));
    *scale_inv_bits = float_bits(scale_inv);
    return code;
  }
};

TEST_F(NanRulesReference, QuantizeCodesFollowTheRule) {
  const struct {
    uint32_t x, scale;
    uint8_t code;  // E4M3 and E5M2 alike: a NaN keeps its sign (0x7F / 0xFF)
  } cases[] = {
      {kInf, kZero, 0xFF},            // inf * 0: default NaN, negative
      {kMinusInf, kZero, 0xFF},
      {kZero, kInf, 0xFF},            // 0 * inf
      {kMinusZero, kMinusInf, 0xFF},
      {kOne, kQuietPos, 0x7F},        // a NaN scale's sign
      {kOne, kQuietNeg, 0xFF},
      {kQuietPos, kQuietNeg, 0x7F},   // both NaN: x's (x * scale, x first)
      {kQuietNeg, kQuietPos, 0xFF},
      {kSignallingPos, kQuietNeg, 0x7F},
      {kQuietNeg, kOne, 0xFF},
  };
  for (int32_t dtype : {OCTET_DTYPE_E4M3, OCTET_DTYPE_E5M2}) {
    for (const auto& c : cases) {
      uint32_t scale_inv = 0;
      EXPECT_EQ(quantize_one(c.x, c.scale, dtype, &scale_inv), c.code)
          << std::hex << "x 0x" << c.x << " scale 0x" << c.scale << " dtype " << dtype;
    }
  }
}

TEST_F(NanRulesReference, ScaleInvOfANanScaleIsThatNanQuieted) {
  const struct {
    uint32_t scale, scale_inv;
  } cases[] = {
      {kQuietNeg, kQuietNeg},
      {kSignallingPos, kSignallingPosQuieted},
      {kZero, kInf},
      {kMinusZero, kMinusInf},
  };
  for (const auto& c : cases) {
    uint32_t scale_inv = 0;
    quantize_one(kOne, c.scale, OCTET_DTYPE_E4M3, &scale_inv);
    EXPECT_EQ(scale_inv, c.scale_inv) << std::hex << "scale 0x" << c.scale;
  }
}

TEST_F(NanRulesReference, DequantizeKeepsTheDecodedNanFirst) {
  // decode(q) * scale_inv: the E4M3 NaN codes decode to 0x7FC00000 and
  // 0xFFC00000, which win over a NaN scale_inv of the other sign.
  const struct {
    uint8_t code;
    uint32_t scale_inv, fp32, bf16;
  } cases[] = {
      {0x7F, kQuietNeg, 0x7FC00000u, 0x7FC0u},
      {0xFF, kQuietPos, 0xFFC00000u, 0xFFC0u},
      {0x38, kQuietNeg, kQuietNeg, 0xFFC5u},   // 1.0 * NaN: the scale's, payload's top bits kept in BF16
      {0x38, kSignallingPos, kSignallingPosQuieted, 0x7FC1u},
  };
  for (int32_t out_dtype : {OCTET_DTYPE_FP32, OCTET_DTYPE_BF16}) {
    for (const auto& c : cases) {
      TestMatrix in(OCTET_DTYPE_E4M3, 1, 1, 1);
      in.set_bits(0, 0, c.code);
      TestMatrix out(out_dtype, 1, 1, 1);
      const float scale_inv = bits_float(c.scale_inv);
      octet_dequantize_args args{};
      args.struct_size = sizeof args;
      args.input = in.view();
      args.scale_inv = &scale_inv;
      args.output = out.view();
      expect_success(api_->dequantize(context_, &args));
      EXPECT_EQ(out.bits(0, 0), out_dtype == OCTET_DTYPE_FP32 ? c.fp32 : c.bf16)
          << std::hex << "code 0x" << unsigned(c.code) << " scale_inv 0x" << c.scale_inv;
    }
  }
}

// LayerNorm of a row [inf, -inf]: sum = inf + -inf is the default NaN, so the
// mean, every output and every fused code are negative NaNs, on any host.
TEST_F(NanRulesReference, LayerNormOfInfMinusInfQuantizesToNegativeNan) {
  TestMatrix x(OCTET_DTYPE_FP32, 1, 2, 2);
  x.set_bits(0, 0, kInf);
  x.set_bits(0, 1, kMinusInf);
  TestMatrix gamma(OCTET_DTYPE_FP32, 1, 2, 2);
  gamma.set_bits(0, 0, kOne);
  gamma.set_bits(0, 1, kOne);
  TestMatrix y(OCTET_DTYPE_FP32, 1, 2, 2);
  float mean = 0.0f, rstd = 0.0f, scale = 1.0f, scale_inv = 0.0f;
  std::vector<uint8_t> codes(2, 0x5A);
  octet_quantize_args q{};
  q.struct_size = sizeof q;
  q.out_dtype = OCTET_DTYPE_E4M3;
  q.saturate = 1;
  q.scale = &scale;
  q.scale_inv_out = &scale_inv;
  q.rowwise_out = codes.data();
  octet_norm_forward_args args{};
  args.struct_size = sizeof args;
  args.kind = OCTET_NORM_LAYERNORM;
  args.epsilon = 1e-5f;
  args.input = x.view();
  args.gamma = gamma.view();
  args.output = y.view();
  args.mean_out = &mean;
  args.rstd_out = &rstd;
  args.quantize = &q;
  expect_success(api_->norm_forward(context_, &args));
  EXPECT_EQ(float_bits(mean), kDefaultNan);
  EXPECT_EQ(float_bits(rstd), kDefaultNan);
  EXPECT_EQ(y.bits(0, 0), kDefaultNan);
  EXPECT_EQ(y.bits(0, 1), kDefaultNan);
  EXPECT_EQ(codes[0], 0xFF);
  EXPECT_EQ(codes[1], 0xFF);
}

// GELU backward at x = +inf: gelu'(inf) = 0.5 * (1 + 1) + (0.5 * inf * 0) * ...
// is the default NaN; dx = dy * gelu'(x) keeps dy's NaN when dy is one.
TEST_F(NanRulesReference, GeluBackwardNans) {
  const struct {
    uint32_t x, dy;
    uint16_t dx_bf16;
  } cases[] = {
      {kInf, kOne, 0xFFC0u},          // 0 * inf inside gelu'
      {kInf, kQuietPos, 0x7FC1u},     // both NaN: dy's (dy first)
      {kQuietNeg, kOne, 0xFFC5u},     // x's NaN through gelu'
      {kQuietNeg, kQuietPos, 0x7FC1u},
  };
  for (const auto& c : cases) {
    TestMatrix x(OCTET_DTYPE_FP32, 1, 1, 1), dy(OCTET_DTYPE_FP32, 1, 1, 1), dx(OCTET_DTYPE_BF16, 1, 1, 1);
    x.set_bits(0, 0, c.x);
    dy.set_bits(0, 0, c.dy);
    octet_activation_args args{};
    args.struct_size = sizeof args;
    args.kind = OCTET_ACTIVATION_GELU;
    args.input = x.view();
    args.grad_output = dy.view();
    args.grad_input = dx.view();
    expect_success(api_->activation_backward(context_, &args));
    EXPECT_EQ(dx.bits(0, 0), c.dx_bf16) << std::hex << "x 0x" << c.x << " dy 0x" << c.dy;
  }
}

}  // namespace
}  // namespace octet::test
