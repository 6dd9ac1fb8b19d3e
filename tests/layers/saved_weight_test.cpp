// octet_layer_set_saved_weight: a lent weight that moved between forward and
// backward (FSDP's free and gather again) is read where it is now. The
// expectations are the same step with the weight left in place: gradients
// and quantizer state bit for bit; the forward's memory is overwritten
// before the backward, so a backward that still read it would differ.
#include <cstring>

#include "layer_test_helpers.hpp"

namespace layers_test {
namespace {

struct Step {
  Vec dx, dw, db, scales;
};

struct Case {
  int32_t profile = OCTET_PROFILE_NATIVE;
  bool fp8 = false;
  int32_t minimize = 0;
};

constexpr int64_t kRows = 6, kIn = 8, kOut = 5;

// One forward + backward with a lent weight. moved: after the forward the
// lent tensor is overwritten (as freed memory is) and a copy of its values,
// elsewhere, is given to the saved handle. relend = false leaves it out (the
// negative control).
Step run_step(const Case& s, bool moved, bool relend = true) {
  Step out;
  octet_context* ctx = make_context("reference", s.profile);
  octet_recipe* recipe = nullptr;
  if (s.fp8) {
    EXPECT_OK(octet_recipe_create_current(nullptr, &recipe));
  }
  octet_linear_options o;
  octet_linear_options_init(&o);
  o.in_features = kIn;
  o.out_features = kOut;
  o.recipe = recipe;
  o.minimize_memory = s.minimize;
  o.skip_weight_allocation = 1;
  octet_layer* layer = nullptr;
  EXPECT_OK(octet_layer_create_linear(ctx, &o, &layer));
  const Vec w = random_vec(size_t(kOut * kIn), 2, 0.5);
  octet::Tensor first = make_tensor(ctx, OCTET_DTYPE_FP32, kOut, kIn);
  octet::Tensor second = make_tensor(ctx, OCTET_DTYPE_FP32, kOut, kIn);
  upload(first.get(), w);
  upload(param(layer, "bias"), random_vec(size_t(kOut), 3, 0.25));
  EXPECT_OK(octet_layer_set_weight(layer, 0, first.get()));
  octet::Tensor x = make_tensor(ctx, OCTET_DTYPE_FP32, kRows, kIn);
  octet::Tensor y = make_tensor(ctx, OCTET_DTYPE_FP32, kRows, kOut);
  octet::Tensor dy = make_tensor(ctx, OCTET_DTYPE_FP32, kRows, kOut);
  octet::Tensor dx = make_tensor(ctx, OCTET_DTYPE_FP32, kRows, kIn);
  upload(x.get(), random_vec(size_t(kRows * kIn), 1, 2.0));
  upload(dy.get(), random_vec(size_t(kRows * kOut), 4, 0.1));
  octet_saved* saved = nullptr;
  EXPECT_OK(octet_layer_forward(layer, x.get(), y.get(), 1, &saved));
  if (moved) {
    upload(second.get(), w);
    upload(first.get(), Vec(w.size(), -7.0));  // what the freed memory holds now
    if (relend) {
      EXPECT_OK(octet_layer_set_saved_weight(layer, saved, 0, second.get()));
    }
  }
  EXPECT_OK(octet_layer_backward(layer, &saved, dy.get(), dx.get(), 0));
  out.dx = download(dx.get());
  out.dw = download(grad(layer, "weight"));
  out.db = download(grad(layer, "bias"));
  for (int32_t role : {OCTET_ROLE_INPUT, OCTET_ROLE_WEIGHT, OCTET_ROLE_GRADIENT}) {
    octet_quantizer* q = nullptr;
    EXPECT_OK(octet_layer_get_quantizer(layer, 0, role, &q));
    octet_quantizer_info info{};
    info.struct_size = sizeof(info);
    EXPECT_OK(octet_quantizer_get_info(q, &info));
    out.scales.push_back(info.scale);
  }
  for (octet::Tensor* t : {&first, &second, &x, &y, &dy, &dx}) *t = octet::Tensor();
  octet_layer_destroy(layer);
  octet_recipe_destroy(recipe);
  octet_context_destroy(ctx);
  return out;
}

void expect_same_step(const Step& got, const Step& want, const std::string& what) {
  expect_identical(got.dx, want.dx, what + ": dx");
  expect_identical(got.dw, want.dw, what + ": dW");
  expect_identical(got.db, want.db, what + ": db");
  expect_identical(got.scales, want.scales, what + ": quantizer scales");
}

TEST(SavedWeight, MovedWeightGivesTheUndisturbedStep) {
  const Case setups[] = {
      {OCTET_PROFILE_NATIVE, false, 0},        {OCTET_PROFILE_HOPPER_LIKE, true, 0},
      {OCTET_PROFILE_BLACKWELL_LIKE, true, 0}, {OCTET_PROFILE_HOPPER_LIKE, true, 1},
      {OCTET_PROFILE_BLACKWELL_LIKE, true, 1},
  };
  for (const Case& s : setups) {
    const std::string what = std::string(s.fp8 ? "current scaling" : "high precision") + ", profile " +
                             std::to_string(s.profile) + (s.minimize ? ", minimize_memory" : "");
    expect_same_step(run_step(s, true), run_step(s, false), what);
  }
}

// Without the call the backward reads the overwritten memory: the check
// above is one that can fail.
TEST(SavedWeight, WithoutItTheBackwardReadsTheOldMemory) {
  const Case s{};
  const Step stale = run_step(s, true, false);
  const Step want = run_step(s, false);
  bool differs = false;
  for (size_t i = 0; i < want.dx.size(); ++i) differs = differs || stale.dx[i] != want.dx[i];
  EXPECT_TRUE(differs) << "dx did not depend on the lent weight's memory";
}

void expect_error(octet_status got, const char* fragment) {
  EXPECT_EQ(got, OCTET_STATUS_INVALID_ARGUMENT) << octet_last_error_message();
  EXPECT_NE(std::strstr(octet_last_error_message(), fragment), nullptr)
      << "message: " << octet_last_error_message() << "\nexpected to contain: " << fragment;
}

TEST(SavedWeight, BadArgumentsNameTheRule) {
  octet_context* ctx = make_context("reference", OCTET_PROFILE_NATIVE);
  octet_linear_options o;
  octet_linear_options_init(&o);
  o.in_features = kIn;
  o.out_features = kOut;
  o.skip_weight_allocation = 1;
  octet_layer* layer = nullptr;
  octet_layer* other = nullptr;
  OK(octet_layer_create_linear(ctx, &o, &layer));
  OK(octet_layer_create_linear(ctx, &o, &other));
  octet::Tensor w = make_tensor(ctx, OCTET_DTYPE_FP32, kOut, kIn);
  octet::Tensor w_bf16 = make_tensor(ctx, OCTET_DTYPE_BF16, kOut, kIn);
  octet::Tensor w_wide = make_tensor(ctx, OCTET_DTYPE_FP32, kOut, kIn + 1);
  octet::Tensor x = make_tensor(ctx, OCTET_DTYPE_FP32, kRows, kIn);
  octet::Tensor y = make_tensor(ctx, OCTET_DTYPE_FP32, kRows, kOut);
  upload(w.get(), random_vec(size_t(kOut * kIn), 2, 0.5));
  upload(x.get(), random_vec(size_t(kRows * kIn), 1, 2.0));
  OK(octet_layer_set_weight(layer, 0, w.get()));
  OK(octet_layer_set_weight(other, 0, w.get()));
  octet_saved* saved = nullptr;
  octet_saved* theirs = nullptr;
  octet_saved* inference = nullptr;
  OK(octet_layer_forward(layer, x.get(), y.get(), 1, &saved));
  OK(octet_layer_forward(other, x.get(), y.get(), 1, &theirs));
  OK(octet_layer_forward(layer, x.get(), y.get(), 0, &inference));

  expect_error(octet_layer_set_saved_weight(layer, nullptr, 0, w.get()), "argument 'saved' is NULL");
  expect_error(octet_layer_set_saved_weight(layer, theirs, 0, w.get()), "another layer");
  expect_error(octet_layer_set_saved_weight(layer, inference, 0, w.get()), "inference forward");
  expect_error(octet_layer_set_saved_weight(layer, saved, 1, w.get()), "is not a weight matrix");
  expect_error(octet_layer_set_saved_weight(layer, saved, 2, w.get()), "argument 'index' (2)");
  expect_error(octet_layer_set_saved_weight(layer, saved, 0, nullptr), "weight");
  expect_error(octet_layer_set_saved_weight(layer, saved, 0, w_bf16.get()), "must be a plain fp32 tensor (it is bf16)");
  expect_error(octet_layer_set_saved_weight(layer, saved, 0, w_wide.get()), "has shape");

  octet_saved_destroy(saved);
  octet_saved_destroy(theirs);
  octet_saved_destroy(inference);
  for (octet::Tensor* t : {&w, &w_bf16, &w_wide, &x, &y}) *t = octet::Tensor();
  octet_layer_destroy(layer);
  octet_layer_destroy(other);
  octet_context_destroy(ctx);
}

// A layer that allocates its own weights has none lent to replace; a
// forward on an FP8 weight given with set_weight has no matrix to replace.
TEST(SavedWeight, NothingToReplaceIsRefused) {
  octet_context* ctx = make_context("reference", OCTET_PROFILE_HOPPER_LIKE);
  octet_recipe* recipe = nullptr;
  OK(octet_recipe_create_current(nullptr, &recipe));
  octet_linear_options o;
  octet_linear_options_init(&o);
  o.in_features = kIn;
  o.out_features = kOut;
  o.recipe = recipe;
  octet_layer* owning = nullptr;
  OK(octet_layer_create_linear(ctx, &o, &owning));
  o.skip_weight_allocation = 1;
  octet_layer* given = nullptr;
  OK(octet_layer_create_linear(ctx, &o, &given));
  octet::Tensor w = make_tensor(ctx, OCTET_DTYPE_FP32, kOut, kIn);
  octet::Tensor x = make_tensor(ctx, OCTET_DTYPE_FP32, kRows, kIn);
  octet::Tensor y = make_tensor(ctx, OCTET_DTYPE_FP32, kRows, kOut);
  upload(w.get(), random_vec(size_t(kOut * kIn), 2, 0.5));
  upload(x.get(), random_vec(size_t(kRows * kIn), 1, 2.0));
  upload(param(owning, "weight"), random_vec(size_t(kOut * kIn), 2, 0.5));
  octet::Tensor codes = octet::Tensor::create(ctx, OCTET_DTYPE_E4M3, {kOut, kIn}, OCTET_USAGE_ROWWISE);
  OK(octet_quantize(ctx, w.get(), codes.get(), nullptr));
  OK(octet_layer_set_weight(given, 0, codes.get()));
  octet_saved* mine = nullptr;
  octet_saved* on_codes = nullptr;
  OK(octet_layer_forward(owning, x.get(), y.get(), 1, &mine));
  OK(octet_layer_forward(given, x.get(), y.get(), 1, &on_codes));
  expect_error(octet_layer_set_saved_weight(owning, mine, 0, w.get()), "skip_weight_allocation = 1");
  expect_error(octet_layer_set_saved_weight(given, on_codes, 0, w.get()), "ran on an FP8 weight");
  octet_saved_destroy(mine);
  octet_saved_destroy(on_codes);
  for (octet::Tensor* t : {&w, &x, &y, &codes}) *t = octet::Tensor();
  octet_layer_destroy(owning);
  octet_layer_destroy(given);
  octet_recipe_destroy(recipe);
  octet_context_destroy(ctx);
}

}  // namespace
}  // namespace layers_test
