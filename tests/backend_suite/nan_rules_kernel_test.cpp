// NaN results (numerics.md "NaN results") where such a NaN reaches a
// backend's encoded outputs: FP8 codes and scale_inv from quantize, FP32 and
// BF16 from dequantize, a layer norm of inf - inf, GELU's backward. Every
// expected value is a literal read off the rule, not computed with the
// host's own arithmetic, so the test holds on any host. The rule itself, on
// octet_math.h's FP32 operations, is tests/reference/nan_rules_test.cpp.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "backend_table.hpp"
#include "fp32_bits.hpp"
#include "fp8_spec.hpp"
#include "test_matrix.hpp"

namespace octet::test {
namespace {

class NanRulesKernels : public BackendTableTest {
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

TEST_P(NanRulesKernels, QuantizeCodesFollowTheRule) {
  OCTET_REQUIRE_ENTRY(quantize);
  const struct {
    uint32_t x, scale;
    uint8_t code;  // E4M3 and E5M2 alike: a NaN keeps its sign (0x7F / 0xFF)
  } cases[] = {
      {kInf, kZero, 0xFF},                                          // inf * 0: default NaN, negative
      {kMinusInf, kZero, 0xFF},      {kZero, kInf, 0xFF},           // 0 * inf
      {kMinusZero, kMinusInf, 0xFF}, {kOne, kQuietPos, 0x7F},       // a NaN scale's sign
      {kOne, kQuietNeg, 0xFF},       {kQuietPos, kQuietNeg, 0x7F},  // both NaN: x's (x * scale, x first)
      {kQuietNeg, kQuietPos, 0xFF},  {kSignallingPos, kQuietNeg, 0x7F},
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

TEST_P(NanRulesKernels, ScaleInvOfANanScaleIsThatNanQuieted) {
  OCTET_REQUIRE_ENTRY(quantize);
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

TEST_P(NanRulesKernels, DequantizeKeepsTheDecodedNanFirst) {
  OCTET_REQUIRE_ENTRY(dequantize);
  // decode(q) * scale_inv: the E4M3 NaN codes decode to 0x7FC00000 and
  // 0xFFC00000, which win over a NaN scale_inv of the other sign.
  const struct {
    uint8_t code;
    uint32_t scale_inv, fp32, bf16;
  } cases[] = {
      {0x7F, kQuietNeg, 0x7FC00000u, 0x7FC0u},
      {0xFF, kQuietPos, 0xFFC00000u, 0xFFC0u},
      {0x38, kQuietNeg, kQuietNeg, 0xFFC5u},  // 1.0 * NaN: the scale's, payload's top bits kept in BF16
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
TEST_P(NanRulesKernels, LayerNormOfInfMinusInfQuantizesToNegativeNan) {
  OCTET_REQUIRE_ENTRY(norm_forward);
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
TEST_P(NanRulesKernels, GeluBackwardNans) {
  OCTET_REQUIRE_ENTRY(activation_backward);
  const struct {
    uint32_t x, dy;
    uint16_t dx_bf16;
  } cases[] = {
      {kInf, kOne, 0xFFC0u},       // 0 * inf inside gelu'
      {kInf, kQuietPos, 0x7FC1u},  // both NaN: dy's (dy first)
      {kQuietNeg, kOne, 0xFFC5u},  // x's NaN through gelu'
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

OCTET_BACKEND_SUITE(NanRulesKernels);

}  // namespace
}  // namespace octet::test
