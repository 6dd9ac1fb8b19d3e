// Linear: gradients in FP32 against double precision (analytic and finite
// differences), FP8 against a reference that quantizes per numerics.md,
// every option, profiles, bad arguments, and the cpu backend.
#include <cmath>
#include <cstring>

#include "layer_test_helpers.hpp"

namespace layers_test {
namespace {

struct Result {
  Vec y, dx, dw, db;
};

struct Config {
  const char* backend = "reference";
  int32_t profile = OCTET_PROFILE_NATIVE;
  int64_t rows = 6, in = 8, out = 5;
  int32_t dtype = OCTET_DTYPE_FP32;
  int32_t bias = 1;
  const octet_recipe* recipe = nullptr;
  int32_t save_original = 0, minimize = 0, cache = 0, skip = 0;
};

Vec data_x(const Config& s) { return random_vec(size_t(s.rows * s.in), 1, 2.0); }
Vec data_w(const Config& s) { return random_vec(size_t(s.out * s.in), 2, 0.5); }
Vec data_b(const Config& s) { return random_vec(size_t(s.out), 3, 0.25); }
Vec data_dy(const Config& s) { return random_vec(size_t(s.rows * s.out), 4, 0.1); }

// One forward + backward; empty result (and a skip message) on UNSUPPORTED.
Result run_linear(const Config& s, std::string* unsupported = nullptr) {
  Result r;
  octet_context* ctx = make_context(s.backend, s.profile);
  EXPECT_NE(ctx, nullptr) << octet_last_error_message();
  if (ctx == nullptr) return r;
  octet_linear_options o;
  octet_linear_options_init(&o);
  o.in_features = s.in;
  o.out_features = s.out;
  o.bias = s.bias;
  o.params_dtype = s.dtype;
  o.recipe = s.recipe;
  o.save_original_input = s.save_original;
  o.minimize_memory = s.minimize;
  o.weight_cache = s.cache;
  o.skip_weight_allocation = s.skip;
  octet_layer* layer = nullptr;
  EXPECT_EQ(octet_layer_create_linear(ctx, &o, &layer), OCTET_STATUS_SUCCESS) << octet_last_error_message();
  octet::Tensor w_user;
  if (s.skip) {
    w_user = make_tensor(ctx, s.dtype, s.out, s.in);
    upload(w_user.get(), data_w(s));
    EXPECT_OK(octet_layer_set_weight(layer, 0, w_user.get()));
  } else {
    upload(param(layer, "weight"), data_w(s));
  }
  if (s.bias) upload(param(layer, "bias"), data_b(s));
  octet::Tensor x = make_tensor(ctx, s.dtype, s.rows, s.in);
  octet::Tensor y = make_tensor(ctx, s.dtype, s.rows, s.out);
  octet::Tensor dy = make_tensor(ctx, s.dtype, s.rows, s.out);
  octet::Tensor dx = make_tensor(ctx, s.dtype, s.rows, s.in);
  upload(x.get(), data_x(s));
  upload(dy.get(), data_dy(s));
  octet_saved* saved = nullptr;
  EXPECT_OK(octet_layer_forward(layer, x.get(), y.get(), 1, &saved));
  octet_status st = octet_layer_backward(layer, &saved, dy.get(), dx.get(), 0);
  if (st == OCTET_STATUS_UNSUPPORTED && unsupported != nullptr) {
    *unsupported = octet_last_error_message();
  } else {
    EXPECT_EQ(st, OCTET_STATUS_SUCCESS) << octet_last_error_message();
    r.y = download(y.get());
    r.dx = download(dx.get());
    r.dw = download(grad(layer, "weight"));
    if (s.bias) r.db = download(grad(layer, "bias"));
  }
  octet_saved_destroy(saved);
  for (octet::Tensor* t : {&x, &y, &dy, &dx, &w_user}) *t = octet::Tensor();  // before the layer
  octet_layer_destroy(layer);
  octet_context_destroy(ctx);
  return r;
}

// Double-precision Linear on the rounded operands.
Result reference_linear(const Config& s, const Vec& x, const Vec& w, const Vec& b, const Vec& dy) {
  Result r;
  r.y = matmul_nt(x, w, s.rows, s.out, s.in);
  if (s.bias)
    for (int64_t i = 0; i < s.rows; ++i)
      for (int64_t j = 0; j < s.out; ++j) r.y[size_t(i * s.out + j)] += b[size_t(j)];
  r.dx = matmul_nt(dy, transpose(w, s.out, s.in), s.rows, s.in, s.out);
  r.dw = matmul_nt(transpose(dy, s.rows, s.out), transpose(x, s.rows, s.in), s.out, s.in, s.rows);
  r.db.assign(size_t(s.out), 0.0);
  for (int64_t i = 0; i < s.rows; ++i)
    for (int64_t j = 0; j < s.out; ++j) r.db[size_t(j)] += dy[size_t(i * s.out + j)];
  return r;
}

TEST(LinearHighPrecision, GradientsMatchDoubleReference) {
  for (int32_t bias : {0, 1}) {
    Config s;
    s.bias = bias;
    Result got = run_linear(s);
    Result want = reference_linear(s, rounded(data_x(s), s.dtype), rounded(data_w(s), s.dtype),
                                   rounded(data_b(s), s.dtype), rounded(data_dy(s), s.dtype));
    expect_close(got.y, want.y, 1e-5, 1e-6, "y");
    expect_close(got.dx, want.dx, 1e-5, 1e-7, "dx");
    expect_close(got.dw, want.dw, 1e-5, 1e-7, "dW");
    if (bias) expect_close(got.db, want.db, 1e-5, 1e-7, "db");
  }
}

TEST(LinearHighPrecision, Bf16ParametersMatchDoubleReferenceWithinBf16Rounding) {
  Config s;
  s.dtype = OCTET_DTYPE_BF16;
  Result got = run_linear(s);
  Result want = reference_linear(s, rounded(data_x(s), s.dtype), rounded(data_w(s), s.dtype),
                                 rounded(data_b(s), s.dtype), rounded(data_dy(s), s.dtype));
  expect_close(got.y, want.y, 1.0 / 128, 1e-3, "y");
  expect_close(got.dx, want.dx, 1.0 / 128, 1e-4, "dx");
  expect_close(got.dw, want.dw, 1.0 / 128, 1e-4, "dW");
  expect_close(got.db, want.db, 1.0 / 128, 1e-4, "db");
}

// L = sum(y * dy): dL/dx = the layer's dx, dL/dW = its dW, by central differences.
TEST(LinearHighPrecision, FiniteDifferences) {
  Config s;
  s.rows = 3;
  s.in = 4;
  s.out = 3;
  Result analytic = run_linear(s);
  const Vec x = data_x(s), w = data_w(s), b = data_b(s), dy = data_dy(s);
  auto loss = [&](const Vec& xx, const Vec& ww) {
    Result r = reference_linear(s, xx, ww, b, dy);
    double l = 0;
    for (size_t i = 0; i < r.y.size(); ++i) l += r.y[i] * dy[i];
    return l;
  };
  const double h = 1e-4;
  for (size_t i = 0; i < x.size(); ++i) {
    Vec p = x, m = x;
    p[i] += h;
    m[i] -= h;
    EXPECT_NEAR(analytic.dx[i], (loss(p, w) - loss(m, w)) / (2 * h), 1e-4) << "dx[" << i << "]";
  }
  for (size_t i = 0; i < w.size(); ++i) {
    Vec p = w, m = w;
    p[i] += h;
    m[i] -= h;
    EXPECT_NEAR(analytic.dw[i], (loss(x, p) - loss(x, m)) / (2 * h), 1e-4) << "dW[" << i << "]";
  }
}

octet_recipe* static_recipe(float scale) {
  octet_static_scaling_options o;
  octet_static_scaling_options_init(&o);
  o.scale = scale;
  o.format = OCTET_FORMAT_HYBRID;
  octet_recipe* r = nullptr;
  EXPECT_EQ(octet_recipe_create_static(&o, &r), OCTET_STATUS_SUCCESS) << octet_last_error_message();
  return r;
}

// FP8: operands quantized exactly as numerics.md says (q = fp8_sat(x * s),
// value = decode(q) / s; E4M3 for x and W, E5M2 for dy), then each GEMM
// within the section 8 bound.
TEST(LinearFp8, MatchesQuantizingReference) {
  octet_recipe* recipe = static_recipe(4.0f);
  for (int32_t profile : {OCTET_PROFILE_NATIVE, OCTET_PROFILE_HOPPER_LIKE, OCTET_PROFILE_BLACKWELL_LIKE}) {
    SCOPED_TRACE(profile);
    Config s;
    s.profile = profile;
    s.recipe = recipe;
    Result got = run_linear(s);
    const Vec xq = fp8_round_trip(data_x(s), OCTET_DTYPE_E4M3, 4.0);
    const Vec wq = fp8_round_trip(data_w(s), OCTET_DTYPE_E4M3, 4.0);
    const Vec dyq = fp8_round_trip(data_dy(s), OCTET_DTYPE_E5M2, 4.0);
    Result want = reference_linear(s, xq, wq, rounded(data_b(s), s.dtype), dyq);
    expect_within(got.y, want.y, gemm_bound(xq, wq, s.rows, s.out, s.in), "y");
    const Vec wt = transpose(wq, s.out, s.in);
    expect_within(got.dx, want.dx, gemm_bound(dyq, wt, s.rows, s.in, s.out), "dx");
    expect_within(got.dw, want.dw,
                  gemm_bound(transpose(dyq, s.rows, s.out), transpose(xq, s.rows, s.in), s.out, s.in, s.rows), "dW");
    // The bias gradient sums the high-precision dy.
    Result hp = reference_linear(s, xq, wq, data_b(s), rounded(data_dy(s), s.dtype));
    expect_close(got.db, hp.db, 1e-5, 1e-7, "db");
  }
  octet_recipe_destroy(recipe);
}

TEST(LinearFp8, HopperLikeAndBlackwellLikeAreBitIdentical) {
  octet_recipe* recipe = static_recipe(8.0f);
  for (octet_recipe* r : {recipe, static_cast<octet_recipe*>(nullptr)}) {
    Config a, b;
    a.recipe = b.recipe = r;
    a.profile = OCTET_PROFILE_HOPPER_LIKE;
    b.profile = OCTET_PROFILE_BLACKWELL_LIKE;
    Result ra = run_linear(a), rb = run_linear(b);
    expect_identical(ra.y, rb.y, "y");
    expect_identical(ra.dx, rb.dx, "dx");
    expect_identical(ra.dw, rb.dw, "dW");
    expect_identical(ra.db, rb.db, "db");
  }
  octet_recipe_destroy(recipe);
}

octet_recipe* current_recipe() {
  octet_recipe* r = nullptr;
  EXPECT_EQ(octet_recipe_create_current(nullptr, &r), OCTET_STATUS_SUCCESS);
  return r;
}

// Options that change what is kept, not what is computed.
TEST(LinearOptions, MemoryOptionsGiveIdenticalResults) {
  octet_recipe* recipe = current_recipe();
  for (int32_t profile : {OCTET_PROFILE_HOPPER_LIKE, OCTET_PROFILE_BLACKWELL_LIKE}) {
    Config base;
    base.profile = profile;
    base.recipe = recipe;
    base.dtype = OCTET_DTYPE_BF16;
    Result want = run_linear(base);
    for (int option = 0; option < 4; ++option) {
      SCOPED_TRACE(option);
      Config s = base;
      if (option == 0) s.save_original = 1;
      if (option == 1) s.minimize = 1;
      if (option == 2) s.cache = 1;
      if (option == 3) s.skip = 1;
      Result got = run_linear(s);
      expect_identical(got.y, want.y, "y");
      expect_identical(got.dx, want.dx, "dx");
      expect_identical(got.dw, want.dw, "dW");
      expect_identical(got.db, want.db, "db");
    }
  }
  octet_recipe_destroy(recipe);
}

// override_linear_precision: the overridden GEMM equals the high-precision
// layer's, the others the FP8 layer's.
TEST(LinearOptions, OverrideLinearPrecisionFromTheRecipe) {
  Config hp;
  Result high = run_linear(hp);
  octet_recipe* plain = nullptr;
  ASSERT_EQ(octet_recipe_create_delayed(nullptr, &plain), OCTET_STATUS_SUCCESS);
  Config f8;
  f8.recipe = plain;
  Result fp8 = run_linear(f8);
  for (int which = 0; which < 3; ++which) {
    octet_delayed_scaling_options o;
    octet_delayed_scaling_options_init(&o);
    o.override_fprop = which == 0;
    o.override_dgrad = which == 1;
    o.override_wgrad = which == 2;
    octet_recipe* r = nullptr;
    ASSERT_EQ(octet_recipe_create_delayed(&o, &r), OCTET_STATUS_SUCCESS);
    Config s;
    s.recipe = r;
    Result got = run_linear(s);
    expect_identical(got.y, which == 0 ? high.y : fp8.y, "y");
    expect_identical(got.dx, which == 1 ? high.dx : fp8.dx, "dx");
    expect_identical(got.dw, which == 2 ? high.dw : fp8.dw, "dW");
    octet_recipe_destroy(r);
  }
  octet_recipe_destroy(plain);
}

struct Rig {
  octet_context* ctx = nullptr;
  octet_layer* layer = nullptr;
  std::vector<octet::Tensor> tensors;
  explicit Rig(const octet_linear_options& o, int32_t profile = OCTET_PROFILE_NATIVE) {
    ctx = make_context("reference", profile);
    EXPECT_EQ(octet_layer_create_linear(ctx, &o, &layer), OCTET_STATUS_SUCCESS) << octet_last_error_message();
  }
  octet_tensor* tensor(int32_t dtype, int64_t rows, int64_t cols, const Vec* values = nullptr) {
    tensors.push_back(make_tensor(ctx, dtype, rows, cols));
    octet_tensor* t = tensors.back().get();
    if (values) upload(t, *values);
    return t;
  }
  ~Rig() {
    tensors.clear();  // before the layer, as they came
    octet_layer_destroy(layer);
    octet_context_destroy(ctx);
  }
};

octet_linear_options small_options(const octet_recipe* recipe = nullptr) {
  octet_linear_options o;
  octet_linear_options_init(&o);
  o.in_features = 8;
  o.out_features = 5;
  o.recipe = recipe;
  return o;
}

// Two micro-batches in flight, backward in reverse order, gradients
// accumulated: equal to the sum of separate runs; overwrite restarts.
TEST(LinearOptions, SeveralSavedHandlesAccumulateAndOverwrite) {
  octet_recipe* recipe = static_recipe(2.0f);
  octet_linear_options o = small_options(recipe);
  o.weight_cache = 1;
  Rig rig(o, OCTET_PROFILE_HOPPER_LIKE);
  upload(param(rig.layer, "weight"), random_vec(40, 7, 0.5));
  upload(param(rig.layer, "bias"), random_vec(5, 8));
  Vec xa = random_vec(48, 9), xb = random_vec(48, 10), dya = random_vec(30, 11), dyb = random_vec(30, 12);
  octet_tensor *x1 = rig.tensor(OCTET_DTYPE_FP32, 6, 8, &xa), *x2 = rig.tensor(OCTET_DTYPE_FP32, 6, 8, &xb);
  octet_tensor *y = rig.tensor(OCTET_DTYPE_FP32, 6, 5), *dx = rig.tensor(OCTET_DTYPE_FP32, 6, 8);
  octet_tensor *d1 = rig.tensor(OCTET_DTYPE_FP32, 6, 5, &dya), *d2 = rig.tensor(OCTET_DTYPE_FP32, 6, 5, &dyb);
  octet_saved *s1 = nullptr, *s2 = nullptr;
  // Separately.
  OK(octet_layer_forward(rig.layer, x1, y, 1, &s1));
  OK(octet_layer_backward(rig.layer, &s1, d1, dx, 0));
  EXPECT_EQ(s1, nullptr);
  Vec dw1 = download(grad(rig.layer, "weight")), db1 = download(grad(rig.layer, "bias"));
  OK(octet_layer_forward(rig.layer, x2, y, 1, &s2));
  OK(octet_layer_backward(rig.layer, &s2, d2, dx, 0));
  Vec dw2 = download(grad(rig.layer, "weight")), db2 = download(grad(rig.layer, "bias"));
  // In flight together, accumulated.
  OK(octet_layer_forward(rig.layer, x1, y, 1, &s1));
  OK(octet_layer_forward(rig.layer, x2, y, 1, &s2));
  OK(octet_layer_backward(rig.layer, &s2, d2, dx, 0));
  OK(octet_layer_backward(rig.layer, &s1, d1, dx, 1));
  Vec dw = download(grad(rig.layer, "weight")), db = download(grad(rig.layer, "bias"));
  for (size_t i = 0; i < dw.size(); ++i) EXPECT_EQ(float(dw[i]), float(dw2[i]) + float(dw1[i])) << i;
  for (size_t i = 0; i < db.size(); ++i) EXPECT_EQ(float(db[i]), float(db2[i]) + float(db1[i])) << i;
  // Overwrite.
  OK(octet_layer_forward(rig.layer, x1, y, 1, &s1));
  OK(octet_layer_backward(rig.layer, &s1, d1, dx, 0));
  expect_identical(download(grad(rig.layer, "weight")), dw1, "dW after overwrite");
  octet_recipe_destroy(recipe);
}

// The weight cache quantizes once per step: the weight quantizer records
// one amax for several micro-batches, and again after octet_layer_new_step.
TEST(LinearOptions, WeightCacheQuantizesOncePerStep) {
  octet_recipe* recipe = nullptr;
  ASSERT_EQ(octet_recipe_create_delayed(nullptr, &recipe), OCTET_STATUS_SUCCESS);
  octet_linear_options o = small_options(recipe);
  o.weight_cache = 1;
  Rig rig(o);
  upload(param(rig.layer, "weight"), random_vec(40, 7, 0.5));
  upload(param(rig.layer, "bias"), random_vec(5, 8));
  Vec xa = random_vec(48, 9);
  octet_tensor *x = rig.tensor(OCTET_DTYPE_FP32, 6, 8, &xa), *y = rig.tensor(OCTET_DTYPE_FP32, 6, 5);
  octet_quantizer* wq = nullptr;
  OK(octet_layer_get_quantizer(rig.layer, 0, OCTET_ROLE_WEIGHT, &wq));
  octet_quantizer* xq = nullptr;
  OK(octet_layer_get_quantizer(rig.layer, 0, OCTET_ROLE_INPUT, &xq));
  const Vec w0 = download(param(rig.layer, "weight"));
  OK(octet_layer_forward(rig.layer, x, y, 0, nullptr));
  // Change the weight without a new step: the cached copy is still used.
  upload(param(rig.layer, "weight"), random_vec(40, 70, 4.0));
  Vec before = download(y);
  OK(octet_layer_forward(rig.layer, x, y, 0, nullptr));
  expect_identical(download(y), before, "cached weight reused");
  octet_quantizer_info info{};
  info.struct_size = sizeof(info);
  OK(octet_quantizer_get_info(wq, &info));
  double amax0 = 0;
  for (double v : w0) amax0 = std::fmax(amax0, std::fabs(v));
  EXPECT_EQ(info.amax, float(amax0));  // recorded once, from the first weight
  OK(octet_layer_new_step(rig.layer));
  OK(octet_layer_forward(rig.layer, x, y, 0, nullptr));
  OK(octet_quantizer_get_info(wq, &info));
  EXPECT_GT(info.amax, float(amax0));  // quantized again: the new weight's amax
  octet_recipe_destroy(recipe);
}

// Autocast: a layer without a recipe follows the innermost scope; the
// scope's end updates the delayed scales of the quantizers it used.
TEST(LinearOptions, AutocastScopeSuppliesTheRecipe) {
  octet_recipe* recipe = static_recipe(4.0f);
  Config s;
  s.recipe = recipe;
  Result want = run_linear(s);
  octet_linear_options o = small_options();
  Rig rig(o);
  upload(param(rig.layer, "weight"), data_w(s));
  upload(param(rig.layer, "bias"), data_b(s));
  Vec xv = data_x(s), dyv = data_dy(s);
  octet_tensor *x = rig.tensor(OCTET_DTYPE_FP32, 6, 8, &xv), *y = rig.tensor(OCTET_DTYPE_FP32, 6, 5);
  octet_tensor *dy = rig.tensor(OCTET_DTYPE_FP32, 6, 5, &dyv), *dx = rig.tensor(OCTET_DTYPE_FP32, 6, 8);
  OK(octet_autocast_begin(rig.ctx, recipe));
  octet_saved* saved = nullptr;
  OK(octet_layer_forward(rig.layer, x, y, 1, &saved));
  OK(octet_layer_backward(rig.layer, &saved, dy, dx, 0));
  OK(octet_autocast_end(rig.ctx));
  expect_identical(download(y), want.y, "y");
  expect_identical(download(dx), want.dx, "dx");
  expect_identical(download(grad(rig.layer, "weight")), want.dw, "dW");
  // Outside the scope: high precision again.
  OK(octet_layer_forward(rig.layer, x, y, 0, nullptr));
  Config hp;
  expect_identical(download(y), run_linear(hp).y, "y outside the scope");
  octet_recipe_destroy(recipe);
}

// FP8-only weights: quantized at load, no high-precision copy, inference only;
// the output equals the FP8 layer's with the same weight codes.
TEST(LinearOptions, Fp8OnlyWeightsForInference) {
  octet_recipe* recipe = static_recipe(4.0f);
  Config s;
  s.recipe = recipe;
  Result want = run_linear(s);
  octet_linear_options o = small_options(recipe);
  o.weight_storage = OCTET_WEIGHTS_FP8_ONLY;
  Rig rig(o);
  Vec wv = data_w(s), bv = data_b(s), xv = data_x(s);
  octet_tensor* w = rig.tensor(OCTET_DTYPE_FP32, 5, 8, &wv);
  OK(octet_layer_load_weight(rig.layer, 0, w));
  upload(param(rig.layer, "bias"), bv);
  octet_tensor_info info{};
  info.struct_size = sizeof(info);
  OK(octet_tensor_get_info(param(rig.layer, "weight"), &info));
  EXPECT_EQ(info.dtype, OCTET_DTYPE_E4M3);
  octet_tensor *x = rig.tensor(OCTET_DTYPE_FP32, 6, 8, &xv), *y = rig.tensor(OCTET_DTYPE_FP32, 6, 5);
  OK(octet_layer_forward(rig.layer, x, y, 0, nullptr));
  expect_identical(download(y), want.y, "y");
  octet_saved* saved = nullptr;
  EXPECT_EQ(octet_layer_forward(rig.layer, x, y, 1, &saved), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(octet_last_error_message(), "training = 0"), nullptr) << octet_last_error_message();
  octet_tensor* g = nullptr;
  EXPECT_EQ(octet_layer_get_gradient(rig.layer, 0, &g), OCTET_STATUS_UNSUPPORTED);
  octet_recipe_destroy(recipe);
}

void expect_error(octet_status got, octet_status want, const char* fragment) {
  EXPECT_EQ(got, want) << octet_last_error_message();
  EXPECT_NE(std::strstr(octet_last_error_message(), fragment), nullptr)
      << "message: " << octet_last_error_message() << "\nexpected to contain: " << fragment;
}

TEST(LinearBadArguments, ClearMessages) {
  octet_linear_options o = small_options();
  Rig rig(o);
  Rig other(o);
  octet_tensor* x = rig.tensor(OCTET_DTYPE_FP32, 6, 8);
  octet_tensor* y = rig.tensor(OCTET_DTYPE_FP32, 6, 5);
  octet_tensor* dx = rig.tensor(OCTET_DTYPE_FP32, 6, 8);
  octet_tensor* wrong_shape = rig.tensor(OCTET_DTYPE_FP32, 6, 7);
  octet_tensor* wrong_rows = rig.tensor(OCTET_DTYPE_FP32, 4, 5);
  octet_tensor* wrong_dtype = rig.tensor(OCTET_DTYPE_BF16, 6, 8);
  octet_saved* saved = nullptr;
  expect_error(octet_layer_forward(rig.layer, wrong_shape, y, 1, &saved), OCTET_STATUS_INVALID_ARGUMENT,
               "last dimension must be 8");
  expect_error(octet_layer_forward(rig.layer, x, wrong_rows, 1, &saved), OCTET_STATUS_INVALID_ARGUMENT,
               "must hold 6 rows");
  expect_error(octet_layer_forward(rig.layer, wrong_dtype, y, 1, &saved), OCTET_STATUS_INVALID_ARGUMENT,
               "params_dtype is fp32");
  expect_error(octet_layer_forward(rig.layer, x, y, 1, nullptr), OCTET_STATUS_INVALID_ARGUMENT, "argument 'saved'");
  expect_error(octet_layer_forward(rig.layer, x, y, 2, &saved), OCTET_STATUS_INVALID_ARGUMENT, "'training'");
  expect_error(octet_layer_backward(rig.layer, &saved, y, dx, 0), OCTET_STATUS_INVALID_ARGUMENT,
               "pass the handle a training forward returned");
  expect_error(octet_layer_backward(rig.layer, nullptr, y, dx, 0), OCTET_STATUS_INVALID_ARGUMENT, "argument 'saved'");
  // A handle of another layer.
  octet_tensor* ox = other.tensor(OCTET_DTYPE_FP32, 6, 8);
  octet_tensor* oy = other.tensor(OCTET_DTYPE_FP32, 6, 5);
  octet_saved* foreign = nullptr;
  OK(octet_layer_forward(other.layer, ox, oy, 1, &foreign));
  expect_error(octet_layer_backward(rig.layer, &foreign, y, dx, 0), OCTET_STATUS_INVALID_ARGUMENT, "another layer");
  EXPECT_NE(foreign, nullptr);  // a refused handle is not consumed
  octet_saved_destroy(foreign);
  // An inference handle.
  octet_saved* inference = nullptr;
  OK(octet_layer_forward(rig.layer, x, y, 0, &inference));
  ASSERT_NE(inference, nullptr);
  expect_error(octet_layer_backward(rig.layer, &inference, y, dx, 0), OCTET_STATUS_INVALID_ARGUMENT,
               "inference forward");
  octet_saved_destroy(inference);
  // Gradient shapes.
  OK(octet_layer_forward(rig.layer, x, y, 1, &saved));
  expect_error(octet_layer_backward(rig.layer, &saved, wrong_rows, dx, 0), OCTET_STATUS_INVALID_ARGUMENT,
               "'grad_output'");
  expect_error(octet_layer_backward(rig.layer, &saved, y, wrong_shape, 0), OCTET_STATUS_INVALID_ARGUMENT,
               "'grad_input'");
  OK(octet_layer_backward(rig.layer, &saved, y, dx, 0));
  // Options.
  octet_layer* bad = nullptr;
  octet_linear_options b = small_options();
  b.in_features = 0;
  expect_error(octet_layer_create_linear(rig.ctx, &b, &bad), OCTET_STATUS_INVALID_ARGUMENT, "in_features");
  b = small_options();
  b.params_dtype = OCTET_DTYPE_E4M3;
  expect_error(octet_layer_create_linear(rig.ctx, &b, &bad), OCTET_STATUS_INVALID_ARGUMENT, "params_dtype");
  b = small_options();
  b.weight_storage = OCTET_WEIGHTS_FP8_ONLY;
  expect_error(octet_layer_create_linear(rig.ctx, &b, &bad), OCTET_STATUS_INVALID_ARGUMENT, "recipe is NULL");
  octet_recipe* mx = nullptr;
  ASSERT_EQ(octet_recipe_create_mxfp8(nullptr, &mx), OCTET_STATUS_SUCCESS);
  b = small_options(mx);
  b.weight_storage = OCTET_WEIGHTS_FP8_ONLY;
  b.skip_weight_allocation = 1;
  expect_error(octet_layer_create_linear(rig.ctx, &b, &bad), OCTET_STATUS_INVALID_ARGUMENT,
               "skip_weight_allocation cannot be combined");
  octet_recipe_destroy(mx);
  b = small_options();
  b.skip_weight_allocation = 1;
  ASSERT_EQ(octet_layer_create_linear(rig.ctx, &b, &bad), OCTET_STATUS_SUCCESS);
  expect_error(octet_layer_forward(bad, x, y, 0, nullptr), OCTET_STATUS_INVALID_ARGUMENT, "octet_layer_set_weight");
  octet_layer_destroy(bad);
  size_t index = 0;
  expect_error(octet_layer_find_parameter(rig.layer, "gamma", &index), OCTET_STATUS_NOT_FOUND, "'gamma'");
}

TEST(LinearParameters, NamesShapesAndCategories) {
  octet_linear_options o = small_options();
  Rig rig(o);
  size_t count = 0;
  OK(octet_layer_parameter_count(rig.layer, &count));
  ASSERT_EQ(count, 2u);
  const char* name = nullptr;
  OK(octet_layer_parameter_name(rig.layer, 0, &name));
  EXPECT_STREQ(name, "weight");
  OK(octet_layer_parameter_name(rig.layer, 1, &name));
  EXPECT_STREQ(name, "bias");
  EXPECT_EQ(current_of(rig.ctx, OCTET_MEMORY_PARAMETERS), (40u + 5u) * 4u);
  // Gradients asked for before any backward: zero, counted as parameters.
  Vec g = download(grad(rig.layer, "weight"));
  for (double v : g) EXPECT_EQ(v, 0.0);
  EXPECT_EQ(current_of(rig.ctx, OCTET_MEMORY_PARAMETERS), (40u + 5u + 40u) * 4u);
}

// The cpu plugin runs what it supports; a missing entry point is named.
TEST(LinearCpuBackend, SameResultsWhereSupported) {
#ifndef OCTET_TEST_CPU_PLUGIN
  GTEST_SKIP() << "the cpu plugin is not built (OCTET_WITH_ONEDNN=OFF)";
#else
  if (octet_backend_load(OCTET_TEST_CPU_PLUGIN) != OCTET_STATUS_SUCCESS) {
    // Already registered by an earlier test, or unavailable.
    octet_context* probe = make_context("cpu", OCTET_PROFILE_NATIVE);
    if (probe == nullptr) GTEST_SKIP() << "cpu plugin unavailable: " << octet_last_error_message();
    octet_context_destroy(probe);
  }
  octet_recipe* recipe = static_recipe(4.0f);
  for (const octet_recipe* r : {static_cast<const octet_recipe*>(nullptr), static_cast<const octet_recipe*>(recipe)})
    for (int32_t bias : {0, 1}) {
      SCOPED_TRACE(bias);
      Config s;
      s.backend = "cpu";
      s.bias = bias;
      s.recipe = r;
      std::string unsupported;
      Result got = run_linear(s, &unsupported);
      if (!unsupported.empty()) {
        EXPECT_NE(unsupported.find("bias_gradient"), std::string::npos) << unsupported;
        std::printf("[ SKIPPED  ] cpu backend: %s\n", unsupported.c_str());
        continue;
      }
      Config ref = s;
      ref.backend = "reference";
      Result want = run_linear(ref);
      if (r == nullptr) {
        expect_close(got.y, want.y, 1e-5, 1e-6, "y");
        expect_close(got.dx, want.dx, 1e-5, 1e-6, "dx");
        expect_close(got.dw, want.dw, 1e-5, 1e-6, "dW");
      } else {
        const Vec xq = fp8_round_trip(data_x(s), OCTET_DTYPE_E4M3, 4.0);
        const Vec wq = fp8_round_trip(data_w(s), OCTET_DTYPE_E4M3, 4.0);
        expect_within(got.y, want.y, gemm_bound(xq, wq, s.rows, s.out, s.in), "y");
      }
    }
  octet_recipe_destroy(recipe);
#endif
}

}  // namespace
}  // namespace layers_test
