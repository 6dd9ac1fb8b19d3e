// The FP4 recipes (numerics.md 15.5): tensor formats per role, option
// checks, the quantizer's stream counter (quantize n draws streams 2n and
// 2n + 1, which octet_quantize with the same seed and offset reproduces),
// checkpoints that resume the stream, the transform on the input role's
// columnwise copy, and a Linear layer trained one step under each recipe.
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "recipe_test_helpers.hpp"

namespace recipes_test {
namespace {

std::string last_error() { return octet_last_error_message(); }

Recipe make_nvfp4(int32_t weight_2d = 1, int32_t sr = 1, int32_t rht = 1, uint64_t seed = 77) {
  octet_nvfp4_options o{};
  EXPECT_EQ(octet_nvfp4_options_init(&o), OCTET_STATUS_SUCCESS);
  EXPECT_EQ(o.weight_2d, 1);
  EXPECT_EQ(o.stochastic_rounding, 1);
  EXPECT_EQ(o.hadamard_transform, 1);
  o.weight_2d = weight_2d;
  o.stochastic_rounding = sr;
  o.hadamard_transform = rht;
  o.seed = seed;
  octet_recipe* r = nullptr;
  EXPECT_EQ(octet_recipe_create_nvfp4(&o, &r), OCTET_STATUS_SUCCESS) << last_error();
  return Recipe(r);
}

TEST(Fp4Recipes, TensorFormatsPerRole) {
  struct Want {
    int32_t input, weight, gradient;
  };
  Recipe nv = make_nvfp4(), nv1d = make_nvfp4(0);
  octet_mxfp4_options mo{};
  ASSERT_EQ(octet_mxfp4_options_init(&mo), OCTET_STATUS_SUCCESS);
  octet_recipe* mx_raw = nullptr;
  ASSERT_EQ(octet_recipe_create_mxfp4(&mo, &mx_raw), OCTET_STATUS_SUCCESS) << last_error();
  Recipe mx(mx_raw);
  const std::pair<const octet_recipe*, Want> cases[] = {
      {nv.get(), {OCTET_SCALING_NVFP4_1X16, OCTET_SCALING_NVFP4_16X16, OCTET_SCALING_NVFP4_1X16}},
      {nv1d.get(), {OCTET_SCALING_NVFP4_1X16, OCTET_SCALING_NVFP4_1X16, OCTET_SCALING_NVFP4_1X16}},
      {mx.get(), {OCTET_SCALING_MXFP4_1X32, OCTET_SCALING_MXFP4_1X32, OCTET_SCALING_MXFP4_1X32}}};
  for (const auto& c : cases) {
    const int32_t want[3] = {c.second.input, c.second.weight, c.second.gradient};
    for (int32_t role : {OCTET_ROLE_INPUT, OCTET_ROLE_WEIGHT, OCTET_ROLE_GRADIENT}) {
      int32_t dtype = 0, mode = 0;
      ASSERT_EQ(octet_recipe_tensor_format(c.first, role, &dtype, &mode), OCTET_STATUS_SUCCESS);
      EXPECT_EQ(dtype, OCTET_DTYPE_E2M1);
      EXPECT_EQ(mode, want[role]) << role;
    }
  }
  octet_recipe_info info{};
  info.struct_size = sizeof(info);
  ASSERT_EQ(octet_recipe_get_info(nv.get(), &info), OCTET_STATUS_SUCCESS);
  EXPECT_EQ(info.kind, OCTET_RECIPE_NVFP4);
  EXPECT_EQ(info.format, -1);
}

TEST(Fp4Recipes, BadOptionsAreNamed) {
  octet_nvfp4_options o{};
  ASSERT_EQ(octet_nvfp4_options_init(&o), OCTET_STATUS_SUCCESS);
  o.weight_2d = 2;
  octet_recipe* r = nullptr;
  EXPECT_EQ(octet_recipe_create_nvfp4(&o, &r), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("weight_2d"), std::string::npos) << last_error();
  octet_mxfp4_options m{};
  ASSERT_EQ(octet_mxfp4_options_init(&m), OCTET_STATUS_SUCCESS);
  m.rounding = 7;
  EXPECT_EQ(octet_recipe_create_mxfp4(&m, &r), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("rounding"), std::string::npos) << last_error();
  EXPECT_EQ(r, nullptr);
}

// The gradient quantizer's n-th quantize equals octet_quantize with
// stochastic rounding, the recipe's seed and offset 2n; a checkpoint taken
// after quantize 1 resumes at quantize 2 with the same bits.
TEST(Fp4Recipes, StreamCounterAndCheckpoints) {
  Context ctx = make_context();
  Recipe nv = make_nvfp4(1, 1, 1, 0xABCDEF);
  Quantizer q = make_quantizer(nv.get(), OCTET_ROLE_GRADIENT);
  const int64_t rows = 32, cols = 48;
  const size_t bytes = size_t(rows * cols) / 2;
  Tensor x = make_fp32(ctx.get(), rows, cols, random_values(size_t(rows * cols), 1.0f, 9));
  auto fresh = [&] {
    return make_tensor(ctx.get(), OCTET_DTYPE_E2M1, rows, cols, OCTET_USAGE_BOTH, OCTET_SCALING_NVFP4_1X16);
  };
  auto direct = [&](uint64_t offset, int32_t rht) {
    Tensor t = fresh();
    octet_quantize_options o{};
    EXPECT_EQ(octet_quantize_options_init(&o), OCTET_STATUS_SUCCESS);
    o.stochastic_rounding = 1;
    o.hadamard_transform = rht;
    o.seed = 0xABCDEF;
    o.offset = offset;
    EXPECT_EQ(octet_quantize(ctx.get(), x.get(), t.get(), &o), OCTET_STATUS_SUCCESS) << last_error();
    return t;
  };
  std::vector<std::vector<uint8_t>> rowwise, columnwise;
  std::vector<uint8_t> checkpoint;
  for (int n = 0; n < 3; ++n) {
    Tensor t = fresh();
    ASSERT_EQ(octet_quantizer_quantize(ctx.get(), q.get(), x.get(), t.get(), nullptr, nullptr), OCTET_STATUS_SUCCESS)
        << last_error();
    rowwise.push_back(read_bytes(t.get(), OCTET_COMPONENT_DATA, bytes));
    columnwise.push_back(read_bytes(t.get(), OCTET_COMPONENT_COLUMNWISE_DATA, bytes));
    Tensor d = direct(2 * uint64_t(n), 1);
    EXPECT_EQ(rowwise.back(), read_bytes(d.get(), OCTET_COMPONENT_DATA, bytes)) << n;
    EXPECT_EQ(columnwise.back(), read_bytes(d.get(), OCTET_COMPONENT_COLUMNWISE_DATA, bytes)) << n;
    if (n == 1) checkpoint = save(q.get());
  }
  EXPECT_NE(rowwise[0], rowwise[1]) << "each quantize draws its own stream";
  Quantizer resumed = make_quantizer(nv.get(), OCTET_ROLE_GRADIENT);
  ASSERT_EQ(octet_quantizer_load(resumed.get(), checkpoint.data(), checkpoint.size()), OCTET_STATUS_SUCCESS)
      << last_error();
  Tensor t = fresh();
  ASSERT_EQ(octet_quantizer_quantize(ctx.get(), resumed.get(), x.get(), t.get(), nullptr, nullptr),
            OCTET_STATUS_SUCCESS)
      << last_error();
  EXPECT_EQ(read_bytes(t.get(), OCTET_COMPONENT_DATA, bytes), rowwise[2]);
  EXPECT_EQ(read_bytes(t.get(), OCTET_COMPONENT_COLUMNWISE_DATA, bytes), columnwise[2]);
  // The quantizer decides the FP4 options itself.
  octet_quantize_options o{};
  ASSERT_EQ(octet_quantize_options_init(&o), OCTET_STATUS_SUCCESS);
  o.stochastic_rounding = 1;
  EXPECT_EQ(octet_quantizer_quantize(ctx.get(), q.get(), x.get(), t.get(), &o, nullptr), OCTET_STATUS_INVALID_ARGUMENT);
}

// Input role: no stochastic rounding; the columnwise copy transformed (its
// 48 rows are a multiple of 16), the rowwise one not.
TEST(Fp4Recipes, InputRoleTransformsTheColumnwiseCopy) {
  Context ctx = make_context();
  Recipe nv = make_nvfp4(1, 1, 1, 5);
  Quantizer q = make_quantizer(nv.get(), OCTET_ROLE_INPUT);
  const int64_t rows = 48, cols = 32;
  const size_t bytes = size_t(rows * cols) / 2;
  Tensor x = make_fp32(ctx.get(), rows, cols, random_values(size_t(rows * cols), 1.0f, 10));
  Tensor t = make_tensor(ctx.get(), OCTET_DTYPE_E2M1, rows, cols, OCTET_USAGE_BOTH, OCTET_SCALING_NVFP4_1X16);
  ASSERT_EQ(octet_quantizer_quantize(ctx.get(), q.get(), x.get(), t.get(), nullptr, nullptr), OCTET_STATUS_SUCCESS)
      << last_error();
  Tensor d = make_tensor(ctx.get(), OCTET_DTYPE_E2M1, rows, cols, OCTET_USAGE_BOTH, OCTET_SCALING_NVFP4_1X16);
  octet_quantize_options o{};
  ASSERT_EQ(octet_quantize_options_init(&o), OCTET_STATUS_SUCCESS);
  o.hadamard_transform = 1;
  o.seed = 5;
  ASSERT_EQ(octet_quantize(ctx.get(), x.get(), d.get(), &o), OCTET_STATUS_SUCCESS) << last_error();
  EXPECT_EQ(read_bytes(t.get(), OCTET_COMPONENT_DATA, bytes), read_bytes(d.get(), OCTET_COMPONENT_DATA, bytes));
  EXPECT_EQ(read_bytes(t.get(), OCTET_COMPONENT_COLUMNWISE_DATA, bytes),
            read_bytes(d.get(), OCTET_COMPONENT_COLUMNWISE_DATA, bytes));
  Tensor plain = make_tensor(ctx.get(), OCTET_DTYPE_E2M1, rows, cols, OCTET_USAGE_BOTH, OCTET_SCALING_NVFP4_1X16);
  ASSERT_EQ(octet_quantize(ctx.get(), x.get(), plain.get(), nullptr), OCTET_STATUS_SUCCESS) << last_error();
  EXPECT_NE(read_bytes(t.get(), OCTET_COMPONENT_COLUMNWISE_DATA, bytes),
            read_bytes(plain.get(), OCTET_COMPONENT_COLUMNWISE_DATA, bytes));
}

// One forward and backward of a Linear under each FP4 recipe: y, dx and dW
// near the FP32 results (FP4 keeps one mantissa bit: a loose, relative
// tolerance on the whole matrix).
TEST(Fp4Recipes, LinearLayerTrainsUnderEachRecipe) {
  const int64_t rows = 32, in = 64, out = 48;
  const std::vector<float> xv = random_values(size_t(rows * in), 1.0f, 1),
                           wv = random_values(size_t(out * in), 0.5f, 2),
                           dyv = random_values(size_t(rows * out), 0.1f, 3);
  octet_mxfp4_options mo{};
  ASSERT_EQ(octet_mxfp4_options_init(&mo), OCTET_STATUS_SUCCESS);
  mo.stochastic_rounding = 1;
  octet_recipe* mx_raw = nullptr;
  ASSERT_EQ(octet_recipe_create_mxfp4(&mo, &mx_raw), OCTET_STATUS_SUCCESS);
  Recipe mx(mx_raw), nv = make_nvfp4();
  auto run = [&](const octet_recipe* recipe, std::vector<float>* y, std::vector<float>* dx, std::vector<float>* dw) {
    Context ctx = make_context();
    octet_linear_options o;
    ASSERT_EQ(octet_linear_options_init(&o), OCTET_STATUS_SUCCESS);
    o.in_features = in;
    o.out_features = out;
    o.bias = 0;
    o.recipe = recipe;
    octet_layer* layer = nullptr;
    ASSERT_EQ(octet_layer_create_linear(ctx.get(), &o, &layer), OCTET_STATUS_SUCCESS) << last_error();
    octet_tensor* w = nullptr;
    size_t index = 0;
    ASSERT_EQ(octet_layer_find_parameter(layer, "weight", &index), OCTET_STATUS_SUCCESS);
    ASSERT_EQ(octet_layer_get_parameter(layer, index, &w), OCTET_STATUS_SUCCESS);
    ASSERT_EQ(octet_tensor_copy_from_host(w, OCTET_COMPONENT_DATA, wv.data(), wv.size() * 4), OCTET_STATUS_SUCCESS);
    Tensor x = make_fp32(ctx.get(), rows, in, xv), dy = make_fp32(ctx.get(), rows, out, dyv);
    Tensor yt = make_tensor(ctx.get(), OCTET_DTYPE_FP32, rows, out),
           dxt = make_tensor(ctx.get(), OCTET_DTYPE_FP32, rows, in);
    octet_saved* saved = nullptr;
    ASSERT_EQ(octet_layer_forward(layer, x.get(), yt.get(), 1, &saved), OCTET_STATUS_SUCCESS) << last_error();
    ASSERT_EQ(octet_layer_backward(layer, &saved, dy.get(), dxt.get(), 0), OCTET_STATUS_SUCCESS) << last_error();
    octet_tensor* g = nullptr;
    ASSERT_EQ(octet_layer_get_gradient(layer, index, &g), OCTET_STATUS_SUCCESS) << last_error();
    *y = read_floats(yt.get(), OCTET_COMPONENT_DATA, size_t(rows * out));
    *dx = read_floats(dxt.get(), OCTET_COMPONENT_DATA, size_t(rows * in));
    *dw = read_floats(g, OCTET_COMPONENT_DATA, size_t(out * in));
    octet_layer_destroy(layer);
  };
  std::vector<float> y0, dx0, dw0;
  run(nullptr, &y0, &dx0, &dw0);
  auto relative_error = [](const std::vector<float>& a, const std::vector<float>& b) {
    double num = 0, den = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      num += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
      den += double(b[i]) * b[i];
    }
    return std::sqrt(num / den);
  };
  for (const octet_recipe* recipe : {mx.get(), nv.get()}) {
    std::vector<float> y, dx, dw;
    run(recipe, &y, &dx, &dw);
    ASSERT_EQ(y.size(), y0.size());
    EXPECT_LT(relative_error(y, y0), 0.25);
    EXPECT_LT(relative_error(dx, dx0), 0.25);
    EXPECT_LT(relative_error(dw, dw0), 0.25);
    EXPECT_GT(relative_error(y, y0), 0.0) << "FP4 rounds";
  }
}

}  // namespace
}  // namespace recipes_test
