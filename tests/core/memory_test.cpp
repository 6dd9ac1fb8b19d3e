// The context's memory ledger: bytes by category, peaks, reset.
#include "test_helpers.hpp"

using namespace octet_test;

namespace {
octet_memory_stats stats_of(octet_context* ctx) {
  octet_memory_stats s{};
  s.struct_size = sizeof(s);
  EXPECT_EQ(octet_context_get_memory_stats(ctx, &s), OCTET_STATUS_SUCCESS) << octet_last_error_message();
  return s;
}
}  // namespace

TEST(Memory, TensorsAreCountedByCategoryWhileTheyLive) {
  for (int32_t profile : {OCTET_PROFILE_HOPPER_LIKE, OCTET_PROFILE_BLACKWELL_LIKE}) {
    ContextPtr ctx = make_context("reference", profile);
    const bool hopper = profile == OCTET_PROFILE_HOPPER_LIKE;
    octet_memory_stats empty = stats_of(ctx.get());
    EXPECT_EQ(empty.current_total, 0u);
    {
      TensorPtr x = make_tensor(ctx.get(), OCTET_DTYPE_BF16, {1024, 1024});
      TensorPtr q = make_tensor(ctx.get(), OCTET_DTYPE_E4M3, {1024, 1024}, OCTET_USAGE_BOTH);
      octet_memory_stats s = stats_of(ctx.get());
      const uint64_t mib = 1u << 20;
      EXPECT_EQ(s.current_bytes[OCTET_MEMORY_USER_TENSORS], 2 * mib);
      // One FP8 copy per stored usage plus scale, scale_inv and amax.
      EXPECT_EQ(s.current_bytes[OCTET_MEMORY_QUANTIZED_COPIES], (hopper ? 2 : 1) * mib + 3 * sizeof(float));
      EXPECT_EQ(s.current_total, s.current_bytes[OCTET_MEMORY_USER_TENSORS] + s.current_bytes[OCTET_MEMORY_QUANTIZED_COPIES]);
    }
    octet_memory_stats after = stats_of(ctx.get());
    EXPECT_EQ(after.current_total, 0u);
    EXPECT_EQ(after.peak_total, (hopper ? 4u : 3u) * (1u << 20) + 3 * sizeof(float));
    ASSERT_EQ(octet_context_reset_peak_memory(ctx.get()), OCTET_STATUS_SUCCESS);
    EXPECT_EQ(stats_of(ctx.get()).peak_total, 0u);
  }
}

TEST(Memory, WorkspaceIsReleasedAfterTheCall) {
  // A rowwise-only tensor used transposed on a TN-only profile needs a
  // transposed workspace copy inside the GEMM, and only there.
  ContextPtr ctx = make_context("reference", OCTET_PROFILE_HOPPER_LIKE);
  TensorPtr x = make_fp32(ctx.get(), 64, 32, random_values(64 * 32, 1.0f, 1));
  TensorPtr a = make_tensor(ctx.get(), OCTET_DTYPE_E4M3, {64, 32}, OCTET_USAGE_ROWWISE);
  ASSERT_EQ(octet_quantize(ctx.get(), x.get(), a.get(), nullptr), 0);
  TensorPtr d = make_tensor(ctx.get(), OCTET_DTYPE_FP32, {32, 32});
  ASSERT_EQ(octet_context_reset_peak_memory(ctx.get()), 0);
  octet_gemm_options o;
  ASSERT_EQ(octet_gemm_options_init(&o), 0);
  o.trans_a = 1;  // A' = A^T: [32, 64]
  o.trans_b = 1;  // B' = B^T
  ASSERT_EQ(octet_gemm(ctx.get(), a.get(), a.get(), d.get(), &o), 0) << octet_last_error_message();
  octet_memory_stats s = stats_of(ctx.get());
  EXPECT_EQ(s.current_bytes[OCTET_MEMORY_WORKSPACE], 0u);
  EXPECT_EQ(s.peak_bytes[OCTET_MEMORY_WORKSPACE], 2u * 64 * 32);  // both operands transposed
}

TEST(Memory, BadArguments) {
  ContextPtr ctx = make_context("reference", OCTET_PROFILE_NATIVE);
  EXPECT_EQ(octet_context_get_memory_stats(ctx.get(), nullptr), OCTET_STATUS_INVALID_ARGUMENT);
  octet_memory_stats s{};
  EXPECT_EQ(octet_context_get_memory_stats(ctx.get(), &s), OCTET_STATUS_INVALID_ARGUMENT);  // struct_size 0
  EXPECT_EQ(octet_context_get_memory_stats(nullptr, &s), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_STREQ(octet_memory_category_name(OCTET_MEMORY_SAVED_ACTIVATIONS), "saved activations");
  EXPECT_STREQ(octet_memory_category_name(99), "invalid");
}

// A delayed-scaling quantizer on the reference keeps its state (scale,
// scale_inv and the amax history, one float each) in the context's memory:
// counted under QUANTIZED_COPIES while it lives there, gone when the
// quantizer is destroyed.
TEST(Memory, QuantizerStateIsCountedInTheContextThatHoldsIt) {
  ContextPtr ctx = make_context("reference", OCTET_PROFILE_NATIVE);
  octet_delayed_scaling_options o;
  ASSERT_EQ(octet_delayed_scaling_options_init(&o), OCTET_STATUS_SUCCESS);
  o.amax_history_len = 16;
  octet_recipe* recipe = nullptr;
  ASSERT_EQ(octet_recipe_create_delayed(&o, &recipe), OCTET_STATUS_SUCCESS) << octet_last_error_message();
  octet_quantizer* quantizer = nullptr;
  ASSERT_EQ(octet_quantizer_create(recipe, OCTET_ROLE_INPUT, &quantizer), OCTET_STATUS_SUCCESS);
  int32_t dtype = 0, mode = 0;
  ASSERT_EQ(octet_recipe_tensor_format(recipe, OCTET_ROLE_INPUT, &dtype, &mode), OCTET_STATUS_SUCCESS);
  TensorPtr x = make_fp32(ctx.get(), 8, 16, random_values(8 * 16, 1.0f, 7));
  TensorPtr q = make_tensor(ctx.get(), dtype, {8, 16}, OCTET_USAGE_ROWWISE);
  const uint64_t tensors_only = stats_of(ctx.get()).current_bytes[OCTET_MEMORY_QUANTIZED_COPIES];
  ASSERT_EQ(octet_quantizer_quantize(ctx.get(), quantizer, x.get(), q.get(), nullptr, nullptr), OCTET_STATUS_SUCCESS)
      << octet_last_error_message();
  const uint64_t state_bytes = (2 + 16) * sizeof(float);
  octet_memory_stats with_state = stats_of(ctx.get());
  EXPECT_EQ(with_state.current_bytes[OCTET_MEMORY_QUANTIZED_COPIES], tensors_only + state_bytes);
  EXPECT_EQ(with_state.current_bytes[OCTET_MEMORY_WORKSPACE], 0u);
  octet_quantizer_destroy(quantizer);
  EXPECT_EQ(stats_of(ctx.get()).current_bytes[OCTET_MEMORY_QUANTIZED_COPIES], tensors_only);
  octet_recipe_destroy(recipe);
}
