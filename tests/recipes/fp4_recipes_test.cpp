// The FP4 recipes (numerics.md 15.5): tensor formats per role, option
// checks, the quantizer's stream counter (quantize n draws streams 2n and
// 2n + 1, which octet_quantize with the same seed and offset reproduces),
// checkpoints that resume the stream (a quantizer's, NVFP4 and MXFP4, and
// a whole layer's), the transform on the input role's columnwise copy, a
// Linear layer trained one step under each recipe, and the FP4 recipes
// refused on a backend that declares no FP4.
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

Recipe make_mxfp4(int32_t rounding = OCTET_MX_ROUND_RCEIL, int32_t sr = 1, uint64_t seed = 77) {
  octet_mxfp4_options o{};
  EXPECT_EQ(octet_mxfp4_options_init(&o), OCTET_STATUS_SUCCESS);
  o.rounding = rounding;
  o.stochastic_rounding = sr;
  o.seed = seed;
  octet_recipe* r = nullptr;
  EXPECT_EQ(octet_recipe_create_mxfp4(&o, &r), OCTET_STATUS_SUCCESS) << last_error();
  return Recipe(r);
}

// The block scales of a tensor's two copies, as bytes (E8M0 codes for
// MXFP4, E4M3 codes for NVFP4), sized from the tensor's info.
std::vector<uint8_t> scale_bytes(const octet_tensor* t, int32_t component) {
  octet_tensor_info info{};
  info.struct_size = sizeof(info);
  EXPECT_EQ(octet_tensor_get_info(t, &info), OCTET_STATUS_SUCCESS) << last_error();
  const uint64_t n =
      component == OCTET_COMPONENT_ROWWISE_SCALE_INV ? info.rowwise_scale_inv_bytes : info.columnwise_scale_inv_bytes;
  EXPECT_GT(n, 0u);
  return read_bytes(t, component, size_t(n));
}

// The MXFP4 twin of StreamCounterAndCheckpoints: the gradient quantizer
// (stochastic rounding) draws streams 2n and 2n + 1 at its n-th quantize,
// which octet_quantize with the recipe's seed and those offsets
// reproduces; a checkpoint taken after quantize 1 loads into a new
// quantizer whose next quantize has quantize 2's codes and E8M0 scales.
TEST(Fp4Recipes, MxFp4StreamCounterAndCheckpoints) {
  Context ctx = make_context();
  const uint64_t seed = 0x1234567;
  Recipe mx = make_mxfp4(OCTET_MX_ROUND_RCEIL, 1, seed);
  Quantizer q = make_quantizer(mx.get(), OCTET_ROLE_GRADIENT);
  const int64_t rows = 32, cols = 80;  // a ragged last 1x32 block on each row
  const size_t bytes = size_t(rows * cols) / 2;
  Tensor x = make_fp32(ctx.get(), rows, cols, random_values(size_t(rows * cols), 1.0f, 19));
  auto fresh = [&] {
    return make_tensor(ctx.get(), OCTET_DTYPE_E2M1, rows, cols, OCTET_USAGE_BOTH, OCTET_SCALING_MXFP4_1X32);
  };
  struct Bits {
    std::vector<uint8_t> rowwise, columnwise, rowwise_scales, columnwise_scales;
    bool operator==(const Bits& o) const {
      return rowwise == o.rowwise && columnwise == o.columnwise && rowwise_scales == o.rowwise_scales &&
             columnwise_scales == o.columnwise_scales;
    }
  };
  auto bits = [&](const octet_tensor* t) {
    return Bits{read_bytes(t, OCTET_COMPONENT_DATA, bytes), read_bytes(t, OCTET_COMPONENT_COLUMNWISE_DATA, bytes),
                scale_bytes(t, OCTET_COMPONENT_ROWWISE_SCALE_INV),
                scale_bytes(t, OCTET_COMPONENT_COLUMNWISE_SCALE_INV)};
  };
  auto direct = [&](uint64_t offset) {
    Tensor t = fresh();
    octet_quantize_options o{};
    EXPECT_EQ(octet_quantize_options_init(&o), OCTET_STATUS_SUCCESS);
    o.stochastic_rounding = 1;
    o.seed = seed;
    o.offset = offset;
    EXPECT_EQ(octet_quantize(ctx.get(), x.get(), t.get(), &o), OCTET_STATUS_SUCCESS) << last_error();
    return bits(t.get());
  };
  std::vector<Bits> steps;
  std::vector<uint8_t> checkpoint;
  for (int n = 0; n < 3; ++n) {
    Tensor t = fresh();
    ASSERT_EQ(octet_quantizer_quantize(ctx.get(), q.get(), x.get(), t.get(), nullptr, nullptr), OCTET_STATUS_SUCCESS)
        << last_error();
    steps.push_back(bits(t.get()));
    EXPECT_TRUE(steps.back() == direct(2 * uint64_t(n))) << n;
    if (n == 1) checkpoint = save(q.get());
  }
  EXPECT_NE(steps[1].rowwise, steps[2].rowwise) << "each quantize draws its own stream";
  EXPECT_NE(steps[1].columnwise, steps[2].columnwise);
  // Stochastic rounding leaves the scales alone (numerics.md 15.1).
  EXPECT_EQ(steps[1].rowwise_scales, steps[2].rowwise_scales);

  Quantizer resumed = make_quantizer(mx.get(), OCTET_ROLE_GRADIENT);
  ASSERT_EQ(octet_quantizer_load(resumed.get(), checkpoint.data(), checkpoint.size()), OCTET_STATUS_SUCCESS)
      << last_error();
  EXPECT_EQ(save(resumed.get()), checkpoint) << "a loaded quantizer saves the same bytes";
  Tensor t = fresh();
  ASSERT_EQ(octet_quantizer_quantize(ctx.get(), resumed.get(), x.get(), t.get(), nullptr, nullptr),
            OCTET_STATUS_SUCCESS)
      << last_error();
  EXPECT_TRUE(bits(t.get()) == steps[2]);
  // Without the checkpoint a new quantizer starts again at stream 0.
  Quantizer restarted = make_quantizer(mx.get(), OCTET_ROLE_GRADIENT);
  Tensor u = fresh();
  ASSERT_EQ(octet_quantizer_quantize(ctx.get(), restarted.get(), x.get(), u.get(), nullptr, nullptr),
            OCTET_STATUS_SUCCESS)
      << last_error();
  EXPECT_TRUE(bits(u.get()) == steps[0]);
}

// A Linear under each FP4 recipe (stochastic rounding on, the NVFP4
// transform on) trained two steps; its three quantizers saved after the
// first and loaded into a second layer with the same weight: that layer's
// step (the first it runs) gives the original's second step bit for bit.
// A third layer without the checkpoints gives other bits (its stream
// counters start at 0), so the comparison does see the counters.
TEST(Fp4Recipes, LayerCheckpointResumesTheNextStep) {
  const int64_t rows = 32, in = 64, out = 48;
  const std::vector<float> xv = random_values(size_t(rows * in), 1.0f, 31),
                           wv = random_values(size_t(out * in), 0.5f, 32),
                           dyv = random_values(size_t(rows * out), 0.1f, 33);
  Recipe mx = make_mxfp4(OCTET_MX_ROUND_RCEIL, 1, 4242), nv = make_nvfp4(1, 1, 1, 4343);
  struct Step {
    std::vector<float> y, dx, dw;
  };
  struct Layer {
    Context ctx;
    octet_layer* layer = nullptr;
    size_t index = 0;
    ~Layer() { octet_layer_destroy(layer); }
  };
  auto make_layer = [&](const octet_recipe* recipe, Layer& l) {
    l.ctx = make_context();
    octet_linear_options o;
    ASSERT_EQ(octet_linear_options_init(&o), OCTET_STATUS_SUCCESS);
    o.in_features = in;
    o.out_features = out;
    o.bias = 0;
    o.recipe = recipe;
    ASSERT_EQ(octet_layer_create_linear(l.ctx.get(), &o, &l.layer), OCTET_STATUS_SUCCESS) << last_error();
    ASSERT_EQ(octet_layer_find_parameter(l.layer, "weight", &l.index), OCTET_STATUS_SUCCESS);
    octet_tensor* w = nullptr;
    ASSERT_EQ(octet_layer_get_parameter(l.layer, l.index, &w), OCTET_STATUS_SUCCESS);
    ASSERT_EQ(octet_tensor_copy_from_host(w, OCTET_COMPONENT_DATA, wv.data(), wv.size() * 4), OCTET_STATUS_SUCCESS);
  };
  auto step = [&](Layer& l, Step* s) {
    Tensor x = make_fp32(l.ctx.get(), rows, in, xv), dy = make_fp32(l.ctx.get(), rows, out, dyv);
    Tensor yt = make_tensor(l.ctx.get(), OCTET_DTYPE_FP32, rows, out),
           dxt = make_tensor(l.ctx.get(), OCTET_DTYPE_FP32, rows, in);
    octet_saved* saved = nullptr;
    ASSERT_EQ(octet_layer_forward(l.layer, x.get(), yt.get(), 1, &saved), OCTET_STATUS_SUCCESS) << last_error();
    ASSERT_EQ(octet_layer_backward(l.layer, &saved, dy.get(), dxt.get(), 0), OCTET_STATUS_SUCCESS) << last_error();
    octet_tensor* g = nullptr;
    ASSERT_EQ(octet_layer_get_gradient(l.layer, l.index, &g), OCTET_STATUS_SUCCESS) << last_error();
    s->y = read_floats(yt.get(), OCTET_COMPONENT_DATA, size_t(rows * out));
    s->dx = read_floats(dxt.get(), OCTET_COMPONENT_DATA, size_t(rows * in));
    s->dw = read_floats(g, OCTET_COMPONENT_DATA, size_t(out * in));
  };
  const int32_t roles[] = {OCTET_ROLE_INPUT, OCTET_ROLE_WEIGHT, OCTET_ROLE_GRADIENT};
  for (const octet_recipe* recipe : {mx.get(), nv.get()}) {
    SCOPED_TRACE(recipe == mx.get() ? "mxfp4" : "nvfp4");
    Layer a, b, c;
    make_layer(recipe, a);
    make_layer(recipe, b);
    make_layer(recipe, c);
    ASSERT_FALSE(HasFatalFailure());
    Step first, second, resumed, restarted;
    step(a, &first);
    std::vector<std::vector<uint8_t>> checkpoints;
    for (int32_t role : roles) {
      octet_quantizer* q = nullptr;
      ASSERT_EQ(octet_layer_get_quantizer(a.layer, 0, role, &q), OCTET_STATUS_SUCCESS) << last_error();
      checkpoints.push_back(save(q));
    }
    step(a, &second);
    for (size_t i = 0; i < 3; ++i) {
      octet_quantizer* q = nullptr;
      ASSERT_EQ(octet_layer_get_quantizer(b.layer, 0, roles[i], &q), OCTET_STATUS_SUCCESS) << last_error();
      ASSERT_EQ(octet_quantizer_load(q, checkpoints[i].data(), checkpoints[i].size()), OCTET_STATUS_SUCCESS)
          << last_error();
    }
    step(b, &resumed);
    step(c, &restarted);
    ASSERT_FALSE(HasFatalFailure());
    // memcmp: bit for bit, signed zeros and NaNs included.
    auto same = [](const std::vector<float>& u, const std::vector<float>& v) {
      return u.size() == v.size() && std::memcmp(u.data(), v.data(), u.size() * sizeof(float)) == 0;
    };
    EXPECT_TRUE(same(resumed.y, second.y));
    EXPECT_TRUE(same(resumed.dx, second.dx));
    EXPECT_TRUE(same(resumed.dw, second.dw));
    EXPECT_TRUE(same(restarted.dw, first.dw)) << "a fresh layer repeats the first step";
    EXPECT_FALSE(same(second.dw, first.dw)) << "stochastic rounding draws new bits at each step";
  }
}

#ifdef OCTET_TEST_TEMPLATE_PLUGIN
// The template plugin declares OCP FP8 and per-tensor scaling only, no FP4:
// each FP4 recipe is refused with OCTET_STATUS_UNSUPPORTED (octet.h,
// octet_fp8_format: "naming the dtype and the backend") wherever it meets
// the backend: an autocast scope and a layer; an E2M1 tensor of either
// scaling mode (a quantizer's output) cannot be created there.
TEST(Fp4Capabilities, TemplatePluginRefusesFp4RecipesNamingTheDtypeAndBackend) {
  ASSERT_TRUE(load_backend("template", OCTET_TEST_TEMPLATE_PLUGIN));
  Context ctx = make_context("template");
  ASSERT_NE(ctx, nullptr) << last_error();
  octet_backend_info info{};
  info.struct_size = sizeof(info);
  ASSERT_EQ(octet_context_get_info(ctx.get(), &info), OCTET_STATUS_SUCCESS) << last_error();
  ASSERT_EQ(info.dtypes & OCTET_DTYPE_BIT(OCTET_DTYPE_E2M1), 0u) << "the premise: no FP4 declared";
  ASSERT_EQ(
      info.scaling_modes & uint32_t(OCTET_SCALING_MXFP4_1X32 | OCTET_SCALING_NVFP4_1X16 | OCTET_SCALING_NVFP4_16X16),
      0u);
  const auto refused = [](octet_status s, const std::string& where, const std::string& kind) {
    const std::string m = last_error();
    EXPECT_EQ(s, OCTET_STATUS_UNSUPPORTED) << where << ": " << m;
    EXPECT_NE(m.find("backend 'template'"), std::string::npos) << where << ": " << m;
    EXPECT_NE(m.find("e2m1"), std::string::npos) << where << ": " << m;
    EXPECT_NE(m.find(kind), std::string::npos) << where << ": " << m;
  };
  Recipe mx = make_mxfp4(), nv = make_nvfp4();
  for (const auto& [recipe, kind] :
       {std::make_pair(mx.get(), std::string("MXFP4")), std::make_pair(nv.get(), std::string("NVFP4"))}) {
    SCOPED_TRACE(kind);
    refused(octet_autocast_begin(ctx.get(), recipe), "octet_autocast_begin", kind);
    int32_t depth = -1;
    const octet_recipe* current = nullptr;
    ASSERT_EQ(octet_autocast_get_state(ctx.get(), &depth, &current), OCTET_STATUS_SUCCESS);
    EXPECT_EQ(depth, 0) << "a refused scope is not opened";

    octet_linear_options lo;
    ASSERT_EQ(octet_linear_options_init(&lo), OCTET_STATUS_SUCCESS);
    lo.in_features = 64;
    lo.out_features = 32;
    lo.recipe = recipe;
    octet_layer* layer = nullptr;
    refused(octet_layer_create_linear(ctx.get(), &lo, &layer), "octet_layer_create_linear", kind);
    EXPECT_EQ(layer, nullptr);
    octet_layer_destroy(layer);
  }
  // A quantizer's quantize meets the backend through its output, which
  // cannot be created as E2M1 there in either FP4 scaling mode.
  for (int32_t mode : {int32_t(OCTET_SCALING_MXFP4_1X32), int32_t(OCTET_SCALING_NVFP4_1X16)}) {
    octet_tensor_desc d{};
    d.struct_size = sizeof(d);
    d.dtype = OCTET_DTYPE_E2M1;
    d.ndim = 2;
    d.shape[0] = 32;
    d.shape[1] = 64;
    d.usages = OCTET_USAGE_ROWWISE;
    d.scaling_mode = mode;
    octet_tensor* t = nullptr;
    EXPECT_EQ(octet_tensor_create(ctx.get(), &d, &t), OCTET_STATUS_UNSUPPORTED);
    EXPECT_NE(last_error().find("template"), std::string::npos) << last_error();
    EXPECT_NE(last_error().find("e2m1"), std::string::npos) << last_error();
    EXPECT_EQ(t, nullptr);
  }
}
#endif

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
