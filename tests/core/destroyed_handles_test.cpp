// Destroyed handles (docs/abi.md, "Handles and lifetimes"): a call given a
// handle that was destroyed answers INVALID_ARGUMENT naming the argument, and
// destroying a handle twice is refused with a message, not a use-after-free
// (.ci/sanitize runs this file under AddressSanitizer).
#include <string>

#include "test_helpers.hpp"

namespace octet_test {
namespace {

using ::testing::HasSubstr;

std::string last() { return octet_last_error_message(); }

TEST(DestroyedHandles, TensorUsedAfterDestroyIsRefused) {
  ContextPtr ctx = make_context("reference", OCTET_PROFILE_NATIVE);
  ASSERT_TRUE(ctx);
  TensorPtr owned = make_tensor(ctx.get(), OCTET_DTYPE_FP32, {4, 4});
  TensorPtr out = make_tensor(ctx.get(), OCTET_DTYPE_E4M3, {4, 4}, OCTET_USAGE_ROWWISE);
  octet_tensor* t = owned.get();
  owned = TensorPtr();  // octet_tensor_destroy(t)
  octet_tensor_info info{};
  info.struct_size = sizeof(info);
  EXPECT_EQ(octet_tensor_get_info(t, &info), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(last(), HasSubstr("argument 'tensor'"));
  EXPECT_THAT(last(), HasSubstr("destroyed"));
  float v[16] = {};
  EXPECT_EQ(octet_tensor_copy_from_host(t, OCTET_COMPONENT_DATA, v, sizeof(v)), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(octet_quantize(ctx.get(), t, out.get(), nullptr), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(last(), HasSubstr("argument 'input'"));
  octet_tensor_destroy(t);  // twice: refused, not a use-after-free
  EXPECT_THAT(last(), HasSubstr("octet_tensor_destroy"));
  EXPECT_THAT(last(), HasSubstr("destroyed"));
}

TEST(DestroyedHandles, ContextRecipeQuantizerLayerAndSavedDestroyedTwiceAreRefused) {
  octet_context* ctx = make_context("reference", OCTET_PROFILE_NATIVE).release();
  ASSERT_NE(ctx, nullptr);
  octet_delayed_scaling_options o;
  ASSERT_EQ(octet_delayed_scaling_options_init(&o), OCTET_STATUS_SUCCESS);
  octet_recipe* recipe = nullptr;
  ASSERT_EQ(octet_recipe_create_delayed(&o, &recipe), OCTET_STATUS_SUCCESS);
  octet_quantizer* q = nullptr;
  ASSERT_EQ(octet_quantizer_create(recipe, OCTET_ROLE_INPUT, &q), OCTET_STATUS_SUCCESS);
  octet_linear_options lo;
  ASSERT_EQ(octet_linear_options_init(&lo), OCTET_STATUS_SUCCESS);
  lo.in_features = 32;
  lo.out_features = 32;
  octet_layer* layer = nullptr;
  ASSERT_EQ(octet_layer_create_linear(ctx, &lo, &layer), OCTET_STATUS_SUCCESS) << last();
  TensorPtr x = make_fp32(ctx, 16, 32, random_values(16 * 32, 1.0f, 3));
  TensorPtr y = make_tensor(ctx, OCTET_DTYPE_FP32, {16, 32});
  octet_saved* saved = nullptr;
  ASSERT_EQ(octet_layer_forward(layer, x.get(), y.get(), 1, &saved), OCTET_STATUS_SUCCESS) << last();

  octet_saved_destroy(saved);
  octet_saved_destroy(saved);
  EXPECT_THAT(last(), HasSubstr("octet_saved_destroy: argument 'saved'"));
  TensorPtr dy = make_tensor(ctx, OCTET_DTYPE_FP32, {16, 32});
  EXPECT_EQ(octet_layer_backward(layer, &saved, dy.get(), nullptr, 0), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(last(), HasSubstr("argument '*saved'"));

  octet_layer_destroy(layer);
  octet_layer_destroy(layer);
  EXPECT_THAT(last(), HasSubstr("octet_layer_destroy: argument 'layer'"));
  size_t count = 0;
  EXPECT_EQ(octet_layer_parameter_count(layer, &count), OCTET_STATUS_INVALID_ARGUMENT);

  octet_quantizer_destroy(q);
  octet_quantizer_destroy(q);
  EXPECT_THAT(last(), HasSubstr("octet_quantizer_destroy: argument 'quantizer'"));
  EXPECT_EQ(octet_quantizer_set_scale(q, 2.0f), OCTET_STATUS_INVALID_ARGUMENT);

  octet_recipe_destroy(recipe);
  octet_recipe_destroy(recipe);
  EXPECT_THAT(last(), HasSubstr("octet_recipe_destroy: argument 'recipe'"));
  EXPECT_EQ(octet_quantizer_create(recipe, OCTET_ROLE_INPUT, &q), OCTET_STATUS_INVALID_ARGUMENT);

  x = TensorPtr();
  y = TensorPtr();
  dy = TensorPtr();
  octet_context_destroy(ctx);
  octet_context_destroy(ctx);
  EXPECT_THAT(last(), HasSubstr("octet_context_destroy: argument 'context'"));
  octet_tensor_desc d{};
  d.struct_size = sizeof(d);
  d.dtype = OCTET_DTYPE_FP32;
  d.ndim = 1;
  d.shape[0] = 4;
  octet_tensor* t = nullptr;
  EXPECT_EQ(octet_tensor_create(ctx, &d, &t), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(t, nullptr);
}

// A handle of one kind passed where another is expected is refused too.
TEST(DestroyedHandles, HandleOfAnotherKindIsRefused) {
  ContextPtr ctx = make_context("reference", OCTET_PROFILE_NATIVE);
  ASSERT_TRUE(ctx);
  TensorPtr t = make_tensor(ctx.get(), OCTET_DTYPE_FP32, {4});
  octet_backend_info info{};
  info.struct_size = sizeof(info);
  EXPECT_EQ(octet_context_get_info(reinterpret_cast<octet_context*>(t.get()), &info), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(last(), HasSubstr("is not a live octet_context"));
}

}  // namespace
}  // namespace octet_test
