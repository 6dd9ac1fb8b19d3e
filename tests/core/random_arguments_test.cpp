// Bad input gets a status and a message, never a crash: thousands of calls
// with arguments drawn at random from valid and invalid values (dtypes,
// shapes, usages, scaling modes, option fields and struct sizes, tensors of
// any kind paired with any other, NaN and inf scalars) on every backend.
// Each call must return a documented status; a failure must leave a message
// naming what is wrong. Under .ci/sanitize the same calls also prove that no
// path reads or writes out of bounds. The draws are seeded: a failure names
// the iteration, which reproduces; OCTET_RANDOM_ARGUMENTS_SEED=N draws others.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "test_helpers.hpp"

namespace octet_test {
namespace {

constexpr int kIterations = 4000;

struct Draw {
  std::mt19937_64 rng;
  explicit Draw(uint64_t seed) : rng(seed) {}
  template <typename T>
  T pick(const std::vector<T>& v) {
    return v[size_t(rng() % v.size())];
  }
  bool coin() { return rng() % 2 == 0; }
  // Usually one of `usual`, one time in `odds` one of `wild`.
  template <typename T>
  T mostly(const std::vector<T>& usual, const std::vector<T>& wild, unsigned odds = 12) {
    return rng() % odds == 0 ? pick(wild) : pick(usual);
  }
};

const std::vector<int32_t> kDtypes = {0, 1, 2, 3, 10, 12, 14, -1, 4, 11, 99};
const std::vector<int64_t> kDims = {1, 2, 3, 5, 8, 33, 64, 130, 0, -1, -7, std::numeric_limits<int64_t>::max(),
                                    int64_t(1) << 33};
const std::vector<uint32_t> kUsages = {0, 1, 2, 3, 4, 7, 0x80000000u};
const std::vector<int32_t> kModes = {0, 1, 2, 4, 8, 3, 16, -1};
const std::vector<float> kScalars = {1.0f, 0.5f, -2.0f, 0.0f, 448.0f, 1e30f, std::numeric_limits<float>::infinity(),
                                     std::numeric_limits<float>::quiet_NaN(), 1e-40f};

bool known_status(octet_status s) { return s >= OCTET_STATUS_SUCCESS && s <= OCTET_STATUS_INTERNAL; }

// A failure must not be INTERNAL (that would be a bug in Octet) and must say why.
void expect_reported(octet_status s, const std::string& call, int iteration) {
  ASSERT_TRUE(known_status(s)) << call << " returned " << s << " (iteration " << iteration << ")";
  if (s == OCTET_STATUS_SUCCESS) return;
  EXPECT_NE(s, OCTET_STATUS_INTERNAL) << call << ": " << octet_last_error_message() << " (iteration " << iteration
                                      << ")";
  EXPECT_GT(std::strlen(octet_last_error_message()), 10u)
      << call << " failed with " << octet_status_name(s) << " but no message (iteration " << iteration << ")";
}

// A small tensor drawn at random, valid most of the time (so that the
// operations run far enough to reach their deeper checks) and invalid in
// every field otherwise; null when the draw was refused, as it must be.
TensorPtr random_tensor(octet_context* ctx, Draw& d, int iteration, int64_t rows, int64_t cols) {
  const bool wild = d.rng() % 8 == 0;
  octet_tensor_desc desc{};
  desc.struct_size = wild ? d.pick<size_t>({0, 4, sizeof(desc), sizeof(desc) + 64}) : sizeof(desc);
  desc.dtype = wild ? d.pick(kDtypes) : d.pick<int32_t>({1, 2, 3, 10, 12, 10, 12});
  desc.ndim = 2;
  const bool transposed = d.rng() % 4 == 0;
  desc.shape[0] = transposed ? cols : rows;
  desc.shape[1] = transposed ? rows : cols;
  if (d.rng() % 6 == 0) desc.shape[1] = d.pick<int64_t>({1, 3, 16});  // a mismatch
  const bool fp8 = desc.dtype == OCTET_DTYPE_E4M3 || desc.dtype == OCTET_DTYPE_E5M2;
  desc.usages = wild ? d.pick(kUsages) : (fp8 ? d.pick<uint32_t>({0, 1, 2, 3, 3}) : 0u);
  desc.scaling_mode = wild ? d.pick(kModes) : (desc.usages != 0 ? d.pick<int32_t>({1, 1, 1, 2, 4, 8}) : 0);
  octet_tensor* t = nullptr;
  const octet_status s = octet_tensor_create(ctx, &desc, &t);
  expect_reported(s, "octet_tensor_create", iteration);
  if (s != OCTET_STATUS_SUCCESS) {
    EXPECT_EQ(t, nullptr) << "a failed create wrote its output (iteration " << iteration << ")";
    return TensorPtr();
  }
  return TensorPtr::adopt(t);
}

// A plain tensor, or null where the shape is refused (no expectation).
TensorPtr try_tensor(octet_context* ctx, int32_t dtype, int64_t rows, int64_t cols) {
  octet_tensor_desc desc{};
  desc.struct_size = sizeof(desc);
  desc.dtype = dtype;
  desc.ndim = 2;
  desc.shape[0] = rows;
  desc.shape[1] = cols;
  octet_tensor* t = nullptr;
  return octet_tensor_create(ctx, &desc, &t) == OCTET_STATUS_SUCCESS ? TensorPtr::adopt(t) : TensorPtr();
}

class RandomArguments : public BackendTest {};

TEST_P(RandomArguments, EveryCallReturnsAStatusWithAMessage) {
  ContextPtr ctx = make_context(backend(), OCTET_PROFILE_NATIVE);
  ASSERT_TRUE(ctx) << octet_last_error_message();
  // OCTET_RANDOM_ARGUMENTS_SEED explores other draws.
  const char* seed_text = std::getenv("OCTET_RANDOM_ARGUMENTS_SEED");
  Draw d(seed_text != nullptr ? std::strtoull(seed_text, nullptr, 10) : 20261122u);
  int created = 0, refused = 0, succeeded = 0, failed = 0;
  for (int it = 0; it < kIterations; ++it) {
    // Tensor descriptions: anything (large shapes included; they must be
    // refused or, if they fit, allocated lazily and freed).
    if (it % 3 == 0) {
      octet_tensor_desc desc{};
      desc.struct_size = sizeof(desc);
      desc.dtype = d.pick(kDtypes);
      desc.ndim = d.pick<int32_t>({1, 2, 3, 0, -1, 9});
      for (int32_t i = 0; i < 8; ++i) desc.shape[i] = d.pick(kDims);
      // A valid description of more than 2^26 elements (that does not
      // overflow) could legitimately allocate gigabytes: make it a refusal.
      // Overflowing ones stay: they must be refused.
      if (desc.ndim >= 1 && desc.ndim <= 8) {
        long double product = 1;
        bool negative = false;
        for (int32_t i = 0; i < desc.ndim; ++i) {
          negative = negative || desc.shape[i] < 0;
          product *= (long double)desc.shape[i];
        }
        if (!negative && product > (long double)(int64_t(1) << 26) && product < 9.0e18L) desc.shape[0] = -1;
      }
      desc.usages = d.pick(kUsages);
      desc.scaling_mode = d.pick(kModes);
      octet_tensor* t = nullptr;
      const octet_status s = octet_tensor_create(ctx.get(), &desc, &t);
      expect_reported(s, "octet_tensor_create", it);
      ++(s == OCTET_STATUS_SUCCESS ? created : refused);
      octet_tensor_destroy(t);
      continue;
    }
    // Operations on small tensors of random kinds, paired at random.
    const int64_t rows = d.pick<int64_t>({1, 5, 32, 33, 64, 130}), cols = d.pick<int64_t>({1, 2, 32, 40, 128});
    TensorPtr a = random_tensor(ctx.get(), d, it, rows, cols);
    TensorPtr b = random_tensor(ctx.get(), d, it, rows, cols);
    TensorPtr c = random_tensor(ctx.get(), d, it, rows, cols);
    if (!a || !b || !c) continue;
    // Scalars of quantized tensors: random values, NaN and inf included.
    const float scale = d.pick(kScalars);
    octet_tensor_copy_from_host(c.get(), OCTET_COMPONENT_SCALE, &scale, sizeof scale);
    octet_status s = OCTET_STATUS_SUCCESS;
    std::string call;
    switch (d.rng() % 6) {
      case 0:
        call = "octet_convert";
        s = octet_convert(ctx.get(), a.get(), c.get(), d.pick<int32_t>({0, 1, 2}));
        break;
      case 1: {
        call = "octet_quantize";
        octet_quantize_options o{};
        o.struct_size = d.pick<size_t>({sizeof(o), sizeof(o), 0, 2, sizeof(o) + 32});
        o.usages = d.pick(kUsages);
        o.saturate = d.pick<int32_t>({0, 1, 2, -1});
        s = octet_quantize(ctx.get(), a.get(), c.get(), d.coin() ? &o : nullptr);
        break;
      }
      case 2:
        call = "octet_dequantize";
        s = octet_dequantize(ctx.get(), a.get(), c.get());
        break;
      case 3: {
        call = "octet_amax";
        float amax = 0.0f;
        s = octet_amax(ctx.get(), a.get(), d.coin() ? &amax : nullptr);
        break;
      }
      default: {
        call = "octet_gemm";
        octet_gemm_options o;
        octet_gemm_options_init(&o);
        o.trans_a = d.pick<int32_t>({0, 1, 2});
        o.trans_b = d.pick<int32_t>({0, 1, -1});
        o.alpha = d.pick(kScalars);
        o.beta = d.pick<float>({0.0f, 0.0f, 1.0f, std::numeric_limits<float>::quiet_NaN()});
        o.epilogue = d.pick<int32_t>({0, 0, 1, 7});
        o.fast_accumulation = d.pick<int32_t>({0, 1, 3});
        o.saturate_output = d.pick<int32_t>({0, 1, 5});
        TensorPtr bias = d.coin() ? random_tensor(ctx.get(), d, it, 1, rows) : TensorPtr();
        o.bias = bias.get();
        s = octet_gemm(ctx.get(), a.get(), b.get(), c.get(), &o);
        break;
      }
    }
    expect_reported(s, call, it);
    ++(s == OCTET_STATUS_SUCCESS ? succeeded : failed);
    if (HasFatalFailure()) return;
  }
  // The draws reach both sides of the checks.
  const std::string counts = "created " + std::to_string(created) + ", refused " + std::to_string(refused) +
                             ", operations succeeded " + std::to_string(succeeded) + ", failed " +
                             std::to_string(failed);
  EXPECT_GT(created, 10) << counts;
  EXPECT_GT(refused, 500) << counts;
  EXPECT_GT(succeeded, 100) << counts;
  EXPECT_GT(failed, 100) << counts;
}

struct RecipeDel {
  void operator()(octet_recipe* r) const { octet_recipe_destroy(r); }
};
struct LayerDel {
  void operator()(octet_layer* l) const { octet_layer_destroy(l); }
};

// A recipe of a random kind with random option values (null if refused).
std::unique_ptr<octet_recipe, RecipeDel> random_recipe(Draw& d, int iteration) {
  octet_recipe* r = nullptr;
  octet_status s = OCTET_STATUS_SUCCESS;
  const int32_t format = d.mostly<int32_t>({0, 2}, {1, 3, -1});
  switch (d.rng() % 5) {
    case 0: {
      octet_delayed_scaling_options o;
      octet_delayed_scaling_options_init(&o);
      o.margin = d.mostly<int32_t>({0, 1}, {200, -1});
      o.interval = d.mostly<int32_t>({1, 2}, {0});
      o.format = format;
      o.amax_history_len = d.mostly<int32_t>({1, 4}, {0, -5, 1 << 24});
      o.amax_compute_algo = d.mostly<int32_t>({0, 1}, {2, 9});
      o.power_of_two_scales = d.mostly<int32_t>({0, 1}, {2});
      o.reduce_amax = d.mostly<int32_t>({0, 1}, {7});
      s = octet_recipe_create_delayed(&o, &r);
      break;
    }
    case 1: {
      octet_current_scaling_options o;
      octet_current_scaling_options_init(&o);
      o.format = format;
      o.amax_epsilon = d.mostly<float>({0.0f, 1e-3f}, {-1.0f, std::numeric_limits<float>::quiet_NaN()});
      o.power_of_two_scales = d.mostly<int32_t>({0, 1}, {3});
      o.reduce_amax = d.mostly<int32_t>({0, 1}, {-1});
      s = octet_recipe_create_current(&o, &r);
      break;
    }
    case 2: {
      octet_static_scaling_options o;
      octet_static_scaling_options_init(&o);
      o.format = format;
      o.scale = d.mostly<float>({1.0f, 16.0f}, kScalars);
      o.observe = d.mostly<int32_t>({0, 1}, {4});
      s = octet_recipe_create_static(&o, &r);
      break;
    }
    case 3: {
      octet_mxfp8_options o;
      octet_mxfp8_options_init(&o);
      o.format = format;
      o.rounding = d.mostly<int32_t>({0, 1}, {2});
      s = octet_recipe_create_mxfp8(&o, &r);
      break;
    }
    default: {
      octet_block_scaling_options o;
      octet_block_scaling_options_init(&o);
      o.format = format;
      o.amax_epsilon = d.mostly<float>({0.0f, 1e-6f}, {-2.0f});
      o.power_of_two_scales = d.mostly<int32_t>({0, 1}, {9});
      s = octet_recipe_create_block(&o, &r);
      break;
    }
  }
  expect_reported(s, "octet_recipe_create_*", iteration);
  return std::unique_ptr<octet_recipe, RecipeDel>(s == OCTET_STATUS_SUCCESS ? r : nullptr);
}

TEST_P(RandomArguments, LayersWithRandomOptionsRecipesAndTensors) {
  ContextPtr ctx = make_context(backend(), OCTET_PROFILE_NATIVE);
  ASSERT_TRUE(ctx) << octet_last_error_message();
  const char* seed_text = std::getenv("OCTET_RANDOM_ARGUMENTS_SEED");
  Draw d(seed_text != nullptr ? std::strtoull(seed_text, nullptr, 10) + 1 : 20261123u);
  int created = 0, trained = 0;
  for (int it = 0; it < 400; ++it) {
    auto recipe = d.coin() ? random_recipe(d, it) : nullptr;
    octet_linear_options lo;
    octet_linear_options_init(&lo);
    const int64_t features = d.pick<int64_t>({8, 32, 40});
    lo.in_features = d.rng() % 10 == 0 ? d.pick<int64_t>({0, -3}) : features;
    lo.out_features = d.rng() % 10 == 0 ? d.pick<int64_t>({0, int64_t(1) << 62}) : d.pick<int64_t>({8, 16});
    lo.bias = d.mostly<int32_t>({0, 1}, {2, -1});
    lo.params_dtype = d.mostly<int32_t>({1, 2}, {3, 10, 0});
    lo.weight_storage = d.mostly<int32_t>({0}, {1, 5});
    lo.recipe = recipe.get();
    lo.save_original_input = d.mostly<int32_t>({0, 0, 1}, {3});
    lo.minimize_memory = d.mostly<int32_t>({0, 1}, {-1});
    lo.weight_cache = d.mostly<int32_t>({0, 1}, {2});
    lo.skip_weight_allocation = d.mostly<int32_t>({0}, {1});
    octet_layer* raw = nullptr;
    octet_status s = OCTET_STATUS_SUCCESS;
    const int kind = int(d.rng() % 3);
    if (kind == 0) {
      s = octet_layer_create_linear(ctx.get(), &lo, &raw);
    } else if (kind == 1) {
      octet_layernorm_linear_options o;
      octet_layernorm_linear_options_init(&o);
      lo.save_original_input = d.mostly<int32_t>({0}, {1});  // refused here
      o.linear = d.rng() % 16 == 0 ? nullptr : &lo;
      o.norm = d.mostly<int32_t>({0, 1}, {2});
      o.epsilon = d.mostly<float>({1e-5f, 1e-3f}, {0.0f, -1.0f, std::numeric_limits<float>::infinity()});
      s = octet_layer_create_layernorm_linear(ctx.get(), &o, &raw);
    } else {
      octet_layernorm_mlp_options o;
      octet_layernorm_mlp_options_init(&o);
      lo.save_original_input = d.mostly<int32_t>({0}, {1});
      o.linear = &lo;
      o.ffn_features = d.mostly<int64_t>({8, 24}, {0, -1});
      o.norm = d.mostly<int32_t>({0, 1}, {5});
      o.epsilon = d.mostly<float>({1e-5f}, {std::numeric_limits<float>::quiet_NaN()});
      o.activation = d.mostly<int32_t>({0, 1}, {2});
      s = octet_layer_create_layernorm_mlp(ctx.get(), &o, &raw);
    }
    expect_reported(s, "octet_layer_create_*", it);
    if (s != OCTET_STATUS_SUCCESS) {
      EXPECT_EQ(raw, nullptr) << "a failed create wrote its output (iteration " << it << ")";
      continue;
    }
    ++created;
    std::unique_ptr<octet_layer, LayerDel> layer(raw);
    const int64_t rows = d.pick<int64_t>({1, 3, 16});
    const int64_t in_cols = d.rng() % 8 == 0 ? features + 1 : features;
    const int32_t dt = d.rng() % 8 == 0 ? int32_t(OCTET_DTYPE_FP16) : lo.params_dtype;
    TensorPtr x = try_tensor(ctx.get(), dt, rows, in_cols);
    TensorPtr y = try_tensor(ctx.get(), dt, rows, kind == 2 ? features : lo.out_features);
    if (!x || !y) continue;
    std::vector<uint8_t> zeros(size_t(rows * in_cols) * 4, 0);
    octet_tensor_info info{};
    info.struct_size = sizeof(info);
    octet_tensor_get_info(x.get(), &info);
    octet_tensor_copy_from_host(x.get(), OCTET_COMPONENT_DATA, zeros.data(), size_t(info.rowwise_bytes));
    if (recipe && d.coin()) octet_autocast_begin(ctx.get(), recipe.get());
    octet_saved* saved = nullptr;
    const int32_t training = d.pick<int32_t>({1, 1, 0});
    s = octet_layer_forward(layer.get(), x.get(), y.get(), training, d.rng() % 10 == 0 ? nullptr : &saved);
    expect_reported(s, "octet_layer_forward", it);
    if (s == OCTET_STATUS_SUCCESS && saved != nullptr) {
      TensorPtr dx = d.coin() ? try_tensor(ctx.get(), dt, rows, in_cols) : TensorPtr();
      s = octet_layer_backward(layer.get(), &saved, y.get(), dx.get(), d.pick<int32_t>({0, 1, 2}));
      expect_reported(s, "octet_layer_backward", it);
      if (s == OCTET_STATUS_SUCCESS) ++trained;
    }
    octet_saved_destroy(saved);
    int32_t depth = 0;
    octet_autocast_get_state(ctx.get(), &depth, nullptr);
    if (depth > 0) expect_reported(octet_autocast_end(ctx.get()), "octet_autocast_end", it);
    if (HasFatalFailure()) return;
  }
  EXPECT_GT(created, 50) << "layers created " << created;
  EXPECT_GT(trained, 20) << "training steps " << trained;
}

OCTET_INSTANTIATE_FOR_BACKENDS(RandomArguments);

}  // namespace
}  // namespace octet_test
