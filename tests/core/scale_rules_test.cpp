// Scales a caller writes (docs/abi.md, "Scales written by the caller"): a
// per-tensor SCALE or SCALE_INV must be finite and > 0 with a finite
// reciprocal, the rule of octet_quantizer_set_scale; an FP32 block grid
// entry must be finite and > 0; MXFP8's E8M0 codes are all allowed. Any other
// value is refused with INVALID_ARGUMENT naming the component and the rule,
// and the tensor keeps what it held, so no later quantize, dequantize or GEMM
// reads it.
#include <cmath>
#include <limits>
#include <string>

#include "test_helpers.hpp"

namespace octet_test {
namespace {

using ::testing::HasSubstr;

const float kBad[] = {0.0f, -0.0f, -1.0f, std::numeric_limits<float>::quiet_NaN(),
                      std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity()};
const float kTiny = 1e-40f;  // a subnormal whose reciprocal is inf: neither a SCALE nor a SCALE_INV

TEST(ScaleRules, PerTensorScaleAndScaleInvOutsideTheRuleAreRefused) {
  ContextPtr ctx = make_context("reference", OCTET_PROFILE_NATIVE);
  ASSERT_TRUE(ctx);
  const std::vector<float> v = {1.0f, -2.0f, 3.0f, 0.5f};
  TensorPtr x = make_fp32(ctx.get(), 2, 2, v);
  TensorPtr q = make_tensor(ctx.get(), OCTET_DTYPE_E4M3, {2, 2}, OCTET_USAGE_ROWWISE);
  TensorPtr back = make_tensor(ctx.get(), OCTET_DTYPE_FP32, {2, 2});
  TensorPtr d = make_tensor(ctx.get(), OCTET_DTYPE_FP32, {2, 2});
  for (int32_t component : {OCTET_COMPONENT_SCALE, OCTET_COMPONENT_SCALE_INV}) {
    for (float bad : kBad) {
      EXPECT_EQ(octet_tensor_copy_from_host(q.get(), component, &bad, sizeof(bad)), OCTET_STATUS_INVALID_ARGUMENT)
          << bad;
      const std::string m = octet_last_error_message();
      EXPECT_THAT(m, HasSubstr(component == OCTET_COMPONENT_SCALE ? "SCALE " : "SCALE_INV "));
      EXPECT_THAT(m, HasSubstr("finite and > 0"));
      EXPECT_THAT(m, HasSubstr("octet_quantizer_set_scale"));
    }
  }
  EXPECT_EQ(octet_tensor_copy_from_host(q.get(), OCTET_COMPONENT_SCALE, &kTiny, sizeof(kTiny)),
            OCTET_STATUS_INVALID_ARGUMENT);
  // The tensor kept its unit scale: quantize, dequantize and GEMM read it.
  EXPECT_EQ(read<float>(q.get(), OCTET_COMPONENT_SCALE, 1)[0], 1.0f);
  ASSERT_EQ(octet_quantize(ctx.get(), x.get(), q.get(), nullptr), OCTET_STATUS_SUCCESS) << octet_last_error_message();
  EXPECT_EQ(read<float>(q.get(), OCTET_COMPONENT_SCALE_INV, 1)[0], 1.0f);
  ASSERT_EQ(octet_dequantize(ctx.get(), q.get(), back.get()), OCTET_STATUS_SUCCESS);
  EXPECT_EQ(read<float>(back.get(), OCTET_COMPONENT_DATA, 4), v);
  ASSERT_EQ(octet_gemm(ctx.get(), q.get(), q.get(), d.get(), nullptr), OCTET_STATUS_SUCCESS);
  for (float r : read<float>(d.get(), OCTET_COMPONENT_DATA, 4)) EXPECT_TRUE(std::isfinite(r));
  // Allowed values still go through, the largest and smallest included; the
  // largest SCALE gives a subnormal SCALE_INV, which dequantize accepts.
  for (float good : {2.0f, std::numeric_limits<float>::min(), std::numeric_limits<float>::max()})
    EXPECT_EQ(octet_tensor_copy_from_host(q.get(), OCTET_COMPONENT_SCALE, &good, sizeof(good)), OCTET_STATUS_SUCCESS);
  ASSERT_EQ(octet_quantize(ctx.get(), x.get(), q.get(), nullptr), OCTET_STATUS_SUCCESS) << octet_last_error_message();
  EXPECT_EQ(read<float>(q.get(), OCTET_COMPONENT_SCALE_INV, 1)[0], 1.0f / std::numeric_limits<float>::max());
  EXPECT_EQ(octet_dequantize(ctx.get(), q.get(), back.get()), OCTET_STATUS_SUCCESS) << octet_last_error_message();
  // A SCALE_INV whose reciprocal (the SCALE the write derives) is infinite.
  EXPECT_EQ(octet_tensor_copy_from_host(q.get(), OCTET_COMPONENT_SCALE_INV, &kTiny, sizeof(kTiny)),
            OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(octet_last_error_message(), HasSubstr("whose reciprocal (the SCALE it implies) is not finite"));
  // The smallest SCALE_INV allowed: the subnormal just above 1/FLT_MAX
  // rounded (whose own reciprocal overflows).
  const float below = 1.0f / std::numeric_limits<float>::max();
  const float smallest_scale_inv = std::nextafter(below, 1.0f);
  ASSERT_FALSE(std::isfinite(1.0f / below));
  ASSERT_TRUE(std::isfinite(1.0f / smallest_scale_inv));
  EXPECT_EQ(octet_tensor_copy_from_host(q.get(), OCTET_COMPONENT_SCALE_INV, &below, 4), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(octet_tensor_copy_from_host(q.get(), OCTET_COMPONENT_SCALE_INV, &smallest_scale_inv, 4),
            OCTET_STATUS_SUCCESS);
}

TEST(ScaleRules, QuantizerSetScaleFollowsTheSameRule) {
  octet_quantizer* q = nullptr;
  ASSERT_EQ(octet_quantizer_create(nullptr, OCTET_ROLE_INPUT, &q), OCTET_STATUS_SUCCESS);
  for (float bad : kBad) EXPECT_EQ(octet_quantizer_set_scale(q, bad), OCTET_STATUS_INVALID_ARGUMENT) << bad;
  EXPECT_EQ(octet_quantizer_set_scale(q, kTiny), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(octet_quantizer_set_scale(q, 0.25f), OCTET_STATUS_SUCCESS);
  octet_quantizer_destroy(q);
}

TEST(ScaleRules, Fp32BlockGridEntriesFollowTheRuleE8m0CodesAreAllAllowed) {
  ContextPtr ctx = make_context("reference", OCTET_PROFILE_NATIVE);
  ASSERT_TRUE(ctx);
  TensorPtr block = make_tensor(ctx.get(), OCTET_DTYPE_E4M3, {2, 256}, OCTET_USAGE_ROWWISE, OCTET_SCALING_BLOCK_1X128);
  for (float bad : kBad) {
    float grid[4] = {1.0f, 2.0f, bad, 0.5f};
    EXPECT_EQ(octet_tensor_copy_from_host(block.get(), OCTET_COMPONENT_ROWWISE_SCALE_INV, grid, sizeof(grid)),
              OCTET_STATUS_INVALID_ARGUMENT)
        << bad;
    EXPECT_THAT(std::string(octet_last_error_message()), HasSubstr("entry 2"));
  }
  float good[4] = {1.0f, 2.0f, 4.0f, 0.5f};
  EXPECT_EQ(octet_tensor_copy_from_host(block.get(), OCTET_COMPONENT_ROWWISE_SCALE_INV, good, sizeof(good)),
            OCTET_STATUS_SUCCESS);

  TensorPtr mx = make_tensor(ctx.get(), OCTET_DTYPE_E4M3, {2, 256}, OCTET_USAGE_ROWWISE, OCTET_SCALING_MXFP8_1X32);
  std::vector<uint8_t> codes(16, 0xFF);  // the NaN code: every element of the block NaN (numerics.md 11)
  codes[0] = 0x00;
  EXPECT_EQ(octet_tensor_copy_from_host(mx.get(), OCTET_COMPONENT_ROWWISE_SCALE_INV, codes.data(), codes.size()),
            OCTET_STATUS_SUCCESS)
      << octet_last_error_message();
}

}  // namespace
}  // namespace octet_test
