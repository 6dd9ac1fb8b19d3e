// Memory scenarios of docs/layers.md: a 1024 x 1024 Linear with BF16
// parameters and a 1024 x 1024 BF16 input, on the hopper-like profile (and
// what the blackwell-like profile saves).
#include <cstdio>

#include "layer_test_helpers.hpp"

namespace layers_test {
namespace {

constexpr uint64_t MiB = 1024 * 1024;
constexpr uint64_t kScalars = 12;  // scale, scale_inv, amax of a quantized tensor
// A delayed-scaling quantizer's state in the context's memory (the
// reference keeps it there): scale, scale_inv and the default 1024-entry
// amax history, counted under QUANTIZED_COPIES.
constexpr uint64_t kDelayedState = (2 + 1024) * sizeof(float);
// The copy of the scale a per-tensor FP8 operand was quantized with, kept
// (SAVED_ACTIVATIONS) to quantize the original input again in backward.
constexpr uint64_t kKeptScale = sizeof(float);
constexpr int64_t N = 1024;

struct Scenario {
  int32_t profile = OCTET_PROFILE_HOPPER_LIKE;
  octet_recipe* recipe = nullptr;
  int32_t storage = OCTET_WEIGHTS_HIGH_PRECISION;
  int32_t save_original = 0;
  bool training = true;
};

struct Numbers {
  uint64_t after_forward = 0, peak = 0;
  uint64_t by_category[OCTET_MEMORY_CATEGORY_COUNT] = {};
};

// Forward with a caller input destroyed afterwards ("del inp"), or, with
// residual = true, kept for the residual addition, then a backward.
Numbers run(const Scenario& s, bool residual) {
  Numbers n;
  octet_context* ctx = make_context("reference", s.profile);
  octet_linear_options o;
  octet_linear_options_init(&o);
  o.in_features = N;
  o.out_features = N;
  o.bias = 0;
  o.params_dtype = OCTET_DTYPE_BF16;
  o.recipe = s.recipe;
  o.weight_storage = s.storage;
  o.save_original_input = s.save_original;
  octet_layer* layer = nullptr;
  EXPECT_OK(octet_layer_create_linear(ctx, &o, &layer));
  const Vec w = random_vec(size_t(N * N), 1, 0.05);
  if (s.storage == OCTET_WEIGHTS_FP8_ONLY) {
    octet::Tensor hp = make_tensor(ctx, OCTET_DTYPE_BF16, N, N);
    upload(hp.get(), w);
    EXPECT_OK(octet_layer_load_weight(layer, 0, hp.get()));
  } else {
    upload(param(layer, "weight"), w);
  }
  octet::Tensor x = make_tensor(ctx, OCTET_DTYPE_BF16, N, N);
  upload(x.get(), random_vec(size_t(N * N), 2));
  octet::Tensor y = make_tensor(ctx, OCTET_DTYPE_BF16, N, N);
  octet_saved* saved = nullptr;
  EXPECT_OK(octet_layer_forward(layer, x.get(), y.get(), s.training ? 1 : 0, s.training ? &saved : nullptr));
  n.after_forward = current_total(ctx);  // residual: the caller's x still counted
  if (!residual) {
    x = octet::Tensor();  // destroyed
    n.after_forward = current_total(ctx);
    for (int32_t c = 0; c < OCTET_MEMORY_CATEGORY_COUNT; ++c) n.by_category[c] = current_of(ctx, c);
  } else {
    octet::Tensor dy = make_tensor(ctx, OCTET_DTYPE_BF16, N, N);
    upload(dy.get(), random_vec(size_t(N * N), 3, 0.01));
    octet::Tensor dx = make_tensor(ctx, OCTET_DTYPE_BF16, N, N);
    EXPECT_OK(octet_layer_backward(layer, &saved, dy.get(), dx.get(), 0));
    dy = octet::Tensor();  // dy, then dx
  }
  n.peak = peak_total(ctx);
  octet_saved_destroy(saved);
  x = octet::Tensor();
  y = octet::Tensor();
  octet_layer_destroy(layer);
  octet_context_destroy(ctx);
  return n;
}

TEST(MemoryScenarios, HighPrecisionForwardKeepsSixMiB) {
  Numbers n = run(Scenario{}, false);
  EXPECT_EQ(n.after_forward, 6 * MiB);
  EXPECT_EQ(n.by_category[OCTET_MEMORY_PARAMETERS], 2 * MiB);          // BF16 weight
  EXPECT_EQ(n.by_category[OCTET_MEMORY_SAVED_ACTIVATIONS], 2 * MiB);   // the input, kept by the layer
  EXPECT_EQ(n.by_category[OCTET_MEMORY_USER_TENSORS], 2 * MiB);        // the output
  EXPECT_EQ(n.by_category[OCTET_MEMORY_QUANTIZED_COPIES], 0u);
  EXPECT_EQ(n.by_category[OCTET_MEMORY_WORKSPACE], 0u);
}

TEST(MemoryScenarios, Fp8ForwardWithBf16WeightsKeepsSixMiBPlusScales) {
  Scenario s;
  ASSERT_EQ(octet_recipe_create_delayed(nullptr, &s.recipe), OCTET_STATUS_SUCCESS);
  Numbers n = run(s, false);
  // The input's and the weight's quantizers hold state; the gradient's not yet.
  EXPECT_EQ(n.after_forward, 6 * MiB + 2 * kScalars + 2 * kDelayedState);
  EXPECT_EQ(n.by_category[OCTET_MEMORY_PARAMETERS], 2 * MiB);
  EXPECT_EQ(n.by_category[OCTET_MEMORY_QUANTIZED_COPIES], 1 * MiB + kScalars + 2 * kDelayedState);  // FP8 weight
  EXPECT_EQ(n.by_category[OCTET_MEMORY_SAVED_ACTIVATIONS], 1 * MiB + kScalars);   // FP8 input, columnwise
  EXPECT_EQ(n.by_category[OCTET_MEMORY_USER_TENSORS], 2 * MiB);
  octet_recipe_destroy(s.recipe);
}

TEST(MemoryScenarios, Fp8InferenceWithFp8WeightsKeepsThreeMiBPlusScales) {
  Scenario s;
  ASSERT_EQ(octet_recipe_create_delayed(nullptr, &s.recipe), OCTET_STATUS_SUCCESS);
  s.storage = OCTET_WEIGHTS_FP8_ONLY;
  s.training = false;
  Numbers n = run(s, false);
  EXPECT_EQ(n.after_forward, 3 * MiB + kScalars + 2 * kDelayedState);  // input and weight quantizers
  EXPECT_EQ(n.by_category[OCTET_MEMORY_PARAMETERS], 1 * MiB + kScalars);
  EXPECT_EQ(n.by_category[OCTET_MEMORY_USER_TENSORS], 2 * MiB);
  EXPECT_EQ(n.by_category[OCTET_MEMORY_SAVED_ACTIVATIONS], 0u);
  octet_recipe_destroy(s.recipe);
}

TEST(MemoryScenarios, SaveOriginalInputKeepsOneQuantizedCopyLessBetweenForwardAndBackward) {
  Scenario s;
  ASSERT_EQ(octet_recipe_create_current(nullptr, &s.recipe), OCTET_STATUS_SUCCESS);
  Numbers quantized = run(s, true);
  s.save_original = 1;
  Numbers original = run(s, true);
  std::printf("residual block: after forward save_original_input=0 %llu B, =1 %llu B; peak %llu B, %llu B\n",
              (unsigned long long)quantized.after_forward, (unsigned long long)original.after_forward,
              (unsigned long long)quantized.peak, (unsigned long long)original.peak);
  // Between forward and backward (what a deep network accumulates) the
  // option keeps no FP8 copy of x: the caller's x serves instead.
  // The option keeps instead the scale x was quantized with, to quantize
  // it again in backward with the same one.
  EXPECT_EQ(quantized.after_forward - original.after_forward, 1 * MiB + kScalars - kKeptScale);
  // Over the 10 MiB of parameters and caller tensors, the step peaks in
  // dgrad without the option (x's saved copy, dy's two copies, W's saved
  // transposed copy: 4 MiB) and in wgrad with it (x quantized again, dy's
  // transposed copy, the 2 MiB weight gradient): the same MiB, and one
  // tensor's scalars more without it (less the kept scale).
  EXPECT_EQ(quantized.peak - original.peak, kScalars - kKeptScale);
  octet_recipe_destroy(s.recipe);
}

TEST(MemoryScenarios, BlackwellLikeKeepsTheSameAfterForwardButPeaksLower) {
  Scenario s;
  ASSERT_EQ(octet_recipe_create_delayed(nullptr, &s.recipe), OCTET_STATUS_SUCCESS);
  Numbers hopper = run(s, false);
  Numbers hopper_step = run(s, true);
  s.profile = OCTET_PROFILE_BLACKWELL_LIKE;
  Numbers blackwell = run(s, false);
  Numbers blackwell_step = run(s, true);
  std::printf("forward peak: hopper-like %llu B, blackwell-like %llu B; training step peak: %llu B vs %llu B\n",
              (unsigned long long)hopper.peak, (unsigned long long)blackwell.peak,
              (unsigned long long)hopper_step.peak, (unsigned long long)blackwell_step.peak);
  // After forward both keep one FP8 copy of x and of W (hopper-like: the
  // transposed ones, which its TN-only wgrad and dgrad read).
  EXPECT_EQ(hopper.after_forward, blackwell.after_forward);
  // Forward: hopper-like writes x's and W's rowwise and transposed copies in
  // one fused pass each, so it holds both copies of each for a while.
  EXPECT_EQ(hopper.peak - blackwell.peak, 2 * MiB);
  // Training step, over the 10 MiB of parameters and caller tensors:
  // hopper-like peaks in dgrad (x's saved copy, dy's two copies, W's saved
  // transposed copy, no workspace: 4 MiB and three tensors' scalars);
  // blackwell-like holds one copy of dy there and peaks in wgrad (x, dy and
  // the 2 MiB weight gradient: 4 MiB and two tensors' scalars). Both hold
  // the three quantizers' states (input, weight, gradient).
  EXPECT_EQ(hopper_step.peak, 14 * MiB + 3 * kScalars + 3 * kDelayedState);
  EXPECT_EQ(blackwell_step.peak, 14 * MiB + 2 * kScalars + 3 * kDelayedState);
  octet_recipe_destroy(s.recipe);
}

}  // namespace
}  // namespace layers_test
