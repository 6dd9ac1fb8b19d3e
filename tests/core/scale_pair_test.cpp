// A per-tensor quantized tensor's SCALE and SCALE_INV are one pair (docs/abi.md,
// "Scales written by the caller"): every public way of setting a scale leaves
// SCALE_INV = fl(1/SCALE), or SCALE = fl(1/SCALE_INV) for a SCALE_INV write,
// and dequantize follows it. The expected values come from a model written
// here: E4M3 and E5M2 codes decoded by their formula (OCP FP8: sign, biased
// exponent, mantissa; subnormals at exponent 0), times SCALE_INV as one
// FP32 multiplication.
#include <octet/octet.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "test_helpers.hpp"

namespace octet_test {
namespace {

// OCP FP8 (E4M3: 3 mantissa bits, bias 7; E5M2: 2, bias 15); finite codes only.
double fp8_value(uint8_t code, int32_t dtype) {
  const int mantissa_bits = dtype == OCTET_DTYPE_E4M3 ? 3 : 2;
  const int bias = dtype == OCTET_DTYPE_E4M3 ? 7 : 15;
  const int exponent = (code & 0x7F) >> mantissa_bits;
  const int mantissa = code & ((1 << mantissa_bits) - 1);
  const double magnitude = exponent == 0 ? std::ldexp(mantissa, 1 - bias - mantissa_bits)
                                         : std::ldexp((1 << mantissa_bits) + mantissa, exponent - bias - mantissa_bits);
  return (code & 0x80) ? -magnitude : magnitude;
}

// Finite codes of both formats: zero, subnormals, normals, the largest.
const std::vector<uint8_t> kE4m3Codes = {0x00, 0x01, 0x07, 0x08, 0x38, 0x3C, 0x40, 0x7E, 0x80, 0xB8, 0xFE};
const std::vector<uint8_t> kE5m2Codes = {0x00, 0x01, 0x03, 0x04, 0x3C, 0x40, 0x7B, 0x80, 0xBC, 0xFB};

struct Pair {
  float scale, scale_inv;
};

Pair pair_of(const octet_tensor* q) {
  return {read<float>(q, OCTET_COMPONENT_SCALE, 1)[0], read<float>(q, OCTET_COMPONENT_SCALE_INV, 1)[0]};
}

// A per-tensor quantized tensor holding `codes` (its scale pair untouched).
TensorPtr with_codes(octet_context* ctx, int32_t dtype, const std::vector<uint8_t>& codes) {
  TensorPtr q = make_tensor(ctx, dtype, {1, int64_t(codes.size())}, OCTET_USAGE_ROWWISE);
  EXPECT_EQ(octet_tensor_copy_from_host(q.get(), OCTET_COMPONENT_DATA, codes.data(), codes.size()),
            OCTET_STATUS_SUCCESS)
      << octet_last_error_message();
  return q;
}

// dequantize(q) against the model: each code's value times scale_inv.
void expect_dequantizes_with(octet_context* ctx, const octet_tensor* q, int32_t dtype,
                             const std::vector<uint8_t>& codes, float scale_inv, const std::string& where) {
  TensorPtr back = make_tensor(ctx, OCTET_DTYPE_FP32, {1, int64_t(codes.size())});
  ASSERT_EQ(octet_dequantize(ctx, q, back.get()), OCTET_STATUS_SUCCESS) << where << ": " << octet_last_error_message();
  const std::vector<float> got = read<float>(back.get(), OCTET_COMPONENT_DATA, codes.size());
  for (size_t i = 0; i < codes.size(); ++i) {
    const float want = static_cast<float>(fp8_value(codes[i], dtype)) * scale_inv;
    EXPECT_EQ(got[i], want) << where << ": code 0x" << std::hex << int(codes[i]);
  }
}

class ScalePair : public ::testing::TestWithParam<int32_t> {
 protected:
  int32_t dtype() const { return GetParam(); }
  const std::vector<uint8_t>& codes() const { return dtype() == OCTET_DTYPE_E4M3 ? kE4m3Codes : kE5m2Codes; }
};

// Scales whose reciprocal is exact and ones whose reciprocal rounds (7, 1.1, 3).
const float kScales[] = {0.5f, 2.0f, 64.0f, 7.0f, 1.1f, 3.0f, 1e-3f};

TEST_P(ScalePair, WritingScaleDerivesScaleInvAndDequantizeFollows) {
  ContextPtr ctx = make_context("reference", OCTET_PROFILE_NATIVE);
  ASSERT_TRUE(ctx);
  for (float s : kScales) {
    TensorPtr q = with_codes(ctx.get(), dtype(), codes());
    ASSERT_EQ(octet_tensor_copy_from_host(q.get(), OCTET_COMPONENT_SCALE, &s, 4), OCTET_STATUS_SUCCESS);
    const Pair p = pair_of(q.get());
    EXPECT_EQ(p.scale, s);
    EXPECT_EQ(p.scale_inv, 1.0f / s) << "SCALE " << s;
    expect_dequantizes_with(ctx.get(), q.get(), dtype(), codes(), 1.0f / s, "SCALE " + std::to_string(s));
  }
}

TEST_P(ScalePair, WritingScaleInvDerivesScale) {
  ContextPtr ctx = make_context("reference", OCTET_PROFILE_NATIVE);
  ASSERT_TRUE(ctx);
  for (float si : kScales) {
    TensorPtr q = with_codes(ctx.get(), dtype(), codes());
    ASSERT_EQ(octet_tensor_copy_from_host(q.get(), OCTET_COMPONENT_SCALE_INV, &si, 4), OCTET_STATUS_SUCCESS);
    const Pair p = pair_of(q.get());
    EXPECT_EQ(p.scale_inv, si);
    EXPECT_EQ(p.scale, 1.0f / si) << "SCALE_INV " << si;
    expect_dequantizes_with(ctx.get(), q.get(), dtype(), codes(), si, "SCALE_INV " + std::to_string(si));
  }
}

// The last write decides, whichever half it is; a refused write changes neither.
TEST_P(ScalePair, TheLastWriteDecidesARefusedOneChangesNothing) {
  ContextPtr ctx = make_context("reference", OCTET_PROFILE_NATIVE);
  ASSERT_TRUE(ctx);
  TensorPtr q = with_codes(ctx.get(), dtype(), codes());
  const float s = 4.0f, si = 0.125f, bad = 0.0f;
  ASSERT_EQ(octet_tensor_copy_from_host(q.get(), OCTET_COMPONENT_SCALE, &s, 4), OCTET_STATUS_SUCCESS);
  ASSERT_EQ(octet_tensor_copy_from_host(q.get(), OCTET_COMPONENT_SCALE_INV, &si, 4), OCTET_STATUS_SUCCESS);
  EXPECT_EQ(pair_of(q.get()).scale, 8.0f);
  expect_dequantizes_with(ctx.get(), q.get(), dtype(), codes(), 0.125f, "SCALE then SCALE_INV");
  ASSERT_EQ(octet_tensor_copy_from_host(q.get(), OCTET_COMPONENT_SCALE, &s, 4), OCTET_STATUS_SUCCESS);
  EXPECT_EQ(pair_of(q.get()).scale_inv, 0.25f);
  expect_dequantizes_with(ctx.get(), q.get(), dtype(), codes(), 0.25f, "SCALE_INV then SCALE");
  for (int32_t component : {OCTET_COMPONENT_SCALE, OCTET_COMPONENT_SCALE_INV}) {
    EXPECT_EQ(octet_tensor_copy_from_host(q.get(), component, &bad, 4), OCTET_STATUS_INVALID_ARGUMENT);
    const Pair p = pair_of(q.get());
    EXPECT_EQ(p.scale, 4.0f);
    EXPECT_EQ(p.scale_inv, 0.25f);
  }
}

// The C++ wrapper's set_scale is the same write.
TEST_P(ScalePair, CppWrapperSetScaleDerivesScaleInv) {
  octet::Context ctx("reference");
  octet::Tensor q = octet::Tensor::create(ctx, dtype(), {1, int64_t(codes().size())}, OCTET_USAGE_ROWWISE);
  q.copy_from_host(OCTET_COMPONENT_DATA, codes().data(), codes().size());
  q.set_scale(0.5f);
  EXPECT_EQ(q.scale_inv(), 2.0f);
  expect_dequantizes_with(ctx.get(), q.get(), dtype(), codes(), 2.0f, "octet::Tensor::set_scale");
}

// A quantize with a quantizer's scale writes the same pair as octet_quantizer_set_scale.
TEST_P(ScalePair, QuantizeWritesThePairOfTheQuantizersScale) {
  ContextPtr ctx = make_context("reference", OCTET_PROFILE_NATIVE);
  ASSERT_TRUE(ctx);
  const std::vector<float> x = {0.0f, 1.0f, -2.5f, 3.0f, 100.0f, -0.01f};
  for (float s : kScales) {
    TensorPtr q = quantized(ctx.get(), 1, int64_t(x.size()), x, dtype(), s, OCTET_USAGE_ROWWISE);
    ASSERT_TRUE(q);
    const Pair p = pair_of(q.get());
    EXPECT_EQ(p.scale, s);
    EXPECT_EQ(p.scale_inv, 1.0f / s);
    const std::vector<uint8_t> written = read<uint8_t>(q.get(), OCTET_COMPONENT_DATA, x.size());
    expect_dequantizes_with(ctx.get(), q.get(), dtype(), written, 1.0f / s, "quantize with scale " + std::to_string(s));
  }
}

INSTANTIATE_TEST_SUITE_P(OcpFormats, ScalePair, ::testing::Values(int32_t(OCTET_DTYPE_E4M3), int32_t(OCTET_DTYPE_E5M2)),
                         [](const ::testing::TestParamInfo<int32_t>& info) {
                           return std::string(info.param == OCTET_DTYPE_E4M3 ? "e4m3" : "e5m2");
                         });

}  // namespace
}  // namespace octet_test
