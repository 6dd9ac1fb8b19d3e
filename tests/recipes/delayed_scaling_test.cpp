// Delayed scaling traces: an amax sequence goes in, the scale sequence that
// comes out is compared with a plain re-implementation of numerics.md 14.2
// written here, for every combination of the options.
#include <cfloat>
#include <cmath>
#include <deque>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "recipe_test_helpers.hpp"

namespace recipes_test {
namespace {

struct Options {
  int algo;  // OCTET_AMAX_MOST_RECENT or OCTET_AMAX_MAX
  int history;
  int interval;
  int margin;
  int power_of_two;
  int format;  // E4M3 or HYBRID
};

// The spec, step by step, for one role.
class ModelDelayed {
 public:
  ModelDelayed(const Options& o, float fp8_max) : o_(o), fp8_max_(fp8_max), window_(size_t(o.history), 0.0f) {}
  void record(float amax) {
    if (!std::isnan(amax) && (amax > window_[0] || std::isnan(window_[0]))) window_[0] = std::max(window_[0], amax);
  }
  void update() {
    float amax = 0.0f;
    if (o_.algo == OCTET_AMAX_MOST_RECENT) {
      amax = window_[0];
    } else {
      for (float a : window_)
        if (a > amax) amax = a;  // NaN never enters the window
    }
    ++steps_;
    if (steps_ % o_.interval == 0 && std::isfinite(amax) && amax > 0.0f) {
      if (o_.power_of_two) {
        const float ratio = fp8_max_ / amax;
        int e;
        if (std::isinf(ratio)) {
          e = 127;
        } else {
          e = int(std::floor(std::log2(double(ratio))));
        }
        scale_ = float(std::pow(2.0, double(e - o_.margin)));
      } else {
        const float scaled_max = float(double(fp8_max_) / std::pow(2.0, o_.margin));
        scale_ = scaled_max / amax;
        if (std::isinf(scale_)) scale_ = FLT_MAX;
      }
    }
    window_.pop_back();
    window_.push_front(0.0f);
  }
  float scale() const { return scale_; }
  const std::deque<float>& window() const { return window_; }

 private:
  Options o_;
  float fp8_max_;
  std::deque<float> window_;  // newest first
  float scale_ = 1.0f;
  long steps_ = 0;
};

Recipe make_delayed(const Options& o) {
  octet_delayed_scaling_options opt;
  EXPECT_EQ(octet_delayed_scaling_options_init(&opt), OCTET_STATUS_SUCCESS);
  opt.amax_compute_algo = o.algo;
  opt.amax_history_len = o.history;
  opt.interval = o.interval;
  opt.margin = o.margin;
  opt.power_of_two_scales = o.power_of_two;
  opt.format = o.format;
  octet_recipe* r = nullptr;
  EXPECT_EQ(octet_recipe_create_delayed(&opt, &r), OCTET_STATUS_SUCCESS) << octet_last_error_message();
  return Recipe(r);
}

// Amaxes of a few steps, with the awkward values: 0, inf, NaN, tiny, huge,
// and steps recording several tensors.
std::vector<std::vector<float>> amax_trace() {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  return {{3.0f},        {0.5f, 7.25f},     {0.0f},   {inf},   {nan},         {1e-3f},
          {2e4f, 1.0f},  {},                {1e-30f}, {3e38f}, {96.0f, nan}, {0.75f},
          {12.0f},       {5.0f},            {0.0f},   {200.0f}};
}

using Combo = std::tuple<int, int, int, int, int, int>;

class DelayedTrace : public ::testing::TestWithParam<Combo> {};

TEST_P(DelayedTrace, ScaleSequenceMatchesTheSpec) {
  auto [algo, history, interval, margin, pow2, format] = GetParam();
  Options o{algo, history, interval, margin, pow2, format};
  Recipe recipe = make_delayed(o);
  for (int role : {OCTET_ROLE_INPUT, OCTET_ROLE_WEIGHT, OCTET_ROLE_GRADIENT}) {
    const float fmax = (format == OCTET_FORMAT_HYBRID && role == OCTET_ROLE_GRADIENT) ? 57344.0f : 448.0f;
    ModelDelayed model(o, fmax);
    Quantizer q = make_quantizer(recipe.get(), role);
    int step = 0;
    for (const auto& amaxes : amax_trace()) {
      for (float a : amaxes) {
        ASSERT_EQ(octet_quantizer_record_amax(q.get(), a), OCTET_STATUS_SUCCESS);
        model.record(a);
      }
      ASSERT_EQ(octet_quantizer_update_scale(q.get()), OCTET_STATUS_SUCCESS) << octet_last_error_message();
      model.update();
      octet_quantizer_info info{};
      info.struct_size = sizeof(info);
      ASSERT_EQ(octet_quantizer_get_info(q.get(), &info), OCTET_STATUS_SUCCESS);
      EXPECT_EQ(info.scale, model.scale()) << "role " << role << " step " << step;
      EXPECT_EQ(info.scale_inv, 1.0f / model.scale()) << "role " << role << " step " << step;
      EXPECT_EQ(info.update_count, uint64_t(step + 1));
      std::vector<float> hist(size_t(o.history));
      ASSERT_EQ(octet_quantizer_get_amax_history(q.get(), hist.data(), hist.size()), OCTET_STATUS_SUCCESS);
      for (size_t i = 0; i < hist.size(); ++i)
        EXPECT_EQ(hist[i], model.window()[i]) << "history slot " << i << " step " << step;
      ++step;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllOptionCombinations, DelayedTrace,
                         ::testing::Combine(::testing::Values(int(OCTET_AMAX_MOST_RECENT), int(OCTET_AMAX_MAX)),
                                            ::testing::Values(1, 3, 5), ::testing::Values(1, 2, 3),
                                            ::testing::Values(0, 2), ::testing::Values(0, 1),
                                            ::testing::Values(int(OCTET_FORMAT_E4M3), int(OCTET_FORMAT_HYBRID))));

// Quantize through the quantizer: the stored scale is applied, the tensor's
// amax is recorded, the update uses it.
TEST(DelayedScaling, QuantizeRecordsAmaxAndUsesTheDelayedScale) {
  Context ctx = make_context();
  Options o{OCTET_AMAX_MAX, 4, 1, 1, 0, OCTET_FORMAT_HYBRID};
  Recipe recipe = make_delayed(o);
  Quantizer q = make_quantizer(recipe.get(), OCTET_ROLE_INPUT);
  ModelDelayed model(o, 448.0f);
  const int64_t rows = 3, cols = 5;
  for (int step = 0; step < 4; ++step) {
    std::vector<float> x = random_values(size_t(rows * cols), 1.0f + 10.0f * float(step), 40u + uint32_t(step));
    Tensor in = make_fp32(ctx.get(), rows, cols, x);
    Tensor out = make_tensor(ctx.get(), OCTET_DTYPE_E4M3, rows, cols, OCTET_USAGE_ROWWISE);
    ASSERT_EQ(octet_quantizer_quantize(ctx.get(), q.get(), in.get(), out.get(), nullptr, nullptr),
              OCTET_STATUS_SUCCESS)
        << octet_last_error_message();
    const float scale = model.scale();
    std::vector<uint8_t> codes = read_bytes(out.get(), OCTET_COMPONENT_DATA, x.size());
    float amax = 0.0f;
    for (size_t i = 0; i < x.size(); ++i) {
      EXPECT_EQ(codes[i], fp8_encode_sat(x[i] * scale, OCTET_DTYPE_E4M3)) << i;
      amax = std::max(amax, std::fabs(x[i]));
    }
    EXPECT_EQ(read_floats(out.get(), OCTET_COMPONENT_SCALE_INV, 1)[0], 1.0f / scale);
    model.record(amax);
    ASSERT_EQ(octet_quantizer_update_scale(q.get()), OCTET_STATUS_SUCCESS);
    model.update();
    octet_quantizer_info info{};
    info.struct_size = sizeof(info);
    ASSERT_EQ(octet_quantizer_get_info(q.get(), &info), OCTET_STATUS_SUCCESS);
    EXPECT_EQ(info.scale, model.scale()) << step;
  }
}

octet_status most_recent_halved(const float* history, size_t length, float* amax, void* user_data) {
  *static_cast<size_t*>(user_data) = length;
  *amax = history[0] * 2.0f;
  return OCTET_STATUS_SUCCESS;
}

octet_status fixed_scale(float amax, float old_scale, float fp8_max, int32_t margin, float* scale, void*) {
  *scale = old_scale + amax + fp8_max + float(margin);
  return OCTET_STATUS_SUCCESS;
}

octet_status failing_amax(const float*, size_t, float*, void*) { return OCTET_STATUS_BACKEND_ERROR; }

TEST(DelayedScaling, UserCallbacksReplaceTheRules) {
  octet_delayed_scaling_options opt;
  ASSERT_EQ(octet_delayed_scaling_options_init(&opt), OCTET_STATUS_SUCCESS);
  size_t seen_length = 0;
  opt.amax_history_len = 6;
  opt.amax_compute_algo = OCTET_AMAX_CALLBACK;
  opt.amax_compute_callback = most_recent_halved;
  opt.amax_compute_user_data = &seen_length;
  opt.scale_compute_callback = fixed_scale;
  opt.margin = 3;
  octet_recipe* r = nullptr;
  ASSERT_EQ(octet_recipe_create_delayed(&opt, &r), OCTET_STATUS_SUCCESS) << octet_last_error_message();
  Recipe recipe(r);
  Quantizer q = make_quantizer(recipe.get(), OCTET_ROLE_GRADIENT);
  ASSERT_EQ(octet_quantizer_record_amax(q.get(), 5.0f), OCTET_STATUS_SUCCESS);
  ASSERT_EQ(octet_quantizer_update_scale(q.get()), OCTET_STATUS_SUCCESS) << octet_last_error_message();
  octet_quantizer_info info{};
  info.struct_size = sizeof(info);
  ASSERT_EQ(octet_quantizer_get_info(q.get(), &info), OCTET_STATUS_SUCCESS);
  EXPECT_EQ(seen_length, 6u);
  EXPECT_EQ(info.scale, 1.0f + 10.0f + 57344.0f + 3.0f);  // HYBRID gradient: E5M2

  opt.amax_compute_callback = failing_amax;
  opt.scale_compute_callback = nullptr;
  ASSERT_EQ(octet_recipe_create_delayed(&opt, &r), OCTET_STATUS_SUCCESS);
  Recipe failing(r);
  Quantizer q2 = make_quantizer(failing.get(), OCTET_ROLE_INPUT);
  EXPECT_EQ(octet_quantizer_update_scale(q2.get()), OCTET_STATUS_BACKEND_ERROR);
  EXPECT_NE(std::string(octet_last_error_message()).find("amax_compute_callback"), std::string::npos);
}

struct SeenByCallbacks {
  std::vector<std::vector<float>> histories;
  std::vector<std::vector<float>> scale_args;  // amax, old_scale, fp8_max, margin
};

octet_status record_history(const float* history, size_t length, float* amax, void* user_data) {
  auto* seen = static_cast<SeenByCallbacks*>(user_data);
  seen->histories.emplace_back(history, history + length);
  *amax = history[length - 1];  // the oldest entry: not what MAX or MOST_RECENT would choose
  return OCTET_STATUS_SUCCESS;
}

octet_status record_scale_args(float amax, float old_scale, float fp8_max, int32_t margin, float* scale,
                               void* user_data) {
  auto* seen = static_cast<SeenByCallbacks*>(user_data);
  seen->scale_args.push_back({amax, old_scale, fp8_max, float(margin)});
  *scale = old_scale * 2.0f;
  return OCTET_STATUS_SUCCESS;
}

octet_status nan_scale(float, float, float, int32_t, float* scale, void*) {
  *scale = std::numeric_limits<float>::quiet_NaN();
  return OCTET_STATUS_SUCCESS;
}

TEST(DelayedScaling, CallbacksGetTheDocumentedArgumentsAtEveryIntervalAndFailuresChangeNothing) {
  // History newest first (history[0] = this step, 0 for steps not seen),
  // the amax callback runs at every update, the scale callback only when
  // the update count is a multiple of interval, with (amax, old scale,
  // fp8_max of the role's format, margin, user_data).
  SeenByCallbacks seen;
  octet_delayed_scaling_options opt;
  ASSERT_EQ(octet_delayed_scaling_options_init(&opt), OCTET_STATUS_SUCCESS);
  opt.amax_history_len = 3;
  opt.interval = 2;
  opt.margin = 2;
  opt.amax_compute_algo = OCTET_AMAX_CALLBACK;
  opt.amax_compute_callback = record_history;
  opt.amax_compute_user_data = &seen;
  opt.scale_compute_callback = record_scale_args;
  opt.scale_compute_user_data = &seen;
  octet_recipe* r = nullptr;
  ASSERT_EQ(octet_recipe_create_delayed(&opt, &r), OCTET_STATUS_SUCCESS) << octet_last_error_message();
  Recipe recipe(r);
  Quantizer q = make_quantizer(recipe.get(), OCTET_ROLE_GRADIENT);
  ASSERT_EQ(octet_quantizer_set_scale(q.get(), 3.0f), OCTET_STATUS_SUCCESS);
  const float amaxes[] = {5.0f, 7.0f, 2.0f, 9.0f};
  for (float a : amaxes) {
    ASSERT_EQ(octet_quantizer_record_amax(q.get(), a), OCTET_STATUS_SUCCESS);
    ASSERT_EQ(octet_quantizer_update_scale(q.get()), OCTET_STATUS_SUCCESS) << octet_last_error_message();
  }
  using V = std::vector<float>;
  ASSERT_EQ(seen.histories.size(), 4u);
  EXPECT_EQ(seen.histories[0], (V{5, 0, 0}));
  EXPECT_EQ(seen.histories[1], (V{7, 5, 0}));
  EXPECT_EQ(seen.histories[2], (V{2, 7, 5}));
  EXPECT_EQ(seen.histories[3], (V{9, 2, 7}));
  // Updates 2 and 4 recompute; the chosen amax is the oldest entry.
  ASSERT_EQ(seen.scale_args.size(), 2u);
  EXPECT_EQ(seen.scale_args[0], (V{0.0f, 3.0f, 57344.0f, 2.0f}));  // HYBRID gradient: E5M2
  EXPECT_EQ(seen.scale_args[1], (V{7.0f, 6.0f, 57344.0f, 2.0f}));
  octet_quantizer_info info{};
  info.struct_size = sizeof(info);
  ASSERT_EQ(octet_quantizer_get_info(q.get(), &info), OCTET_STATUS_SUCCESS);
  EXPECT_EQ(info.scale, 12.0f);
  EXPECT_EQ(info.update_count, 4u);

  // A non-finite scale from the callback is refused; nothing changes.
  opt.interval = 1;
  opt.scale_compute_callback = nan_scale;
  ASSERT_EQ(octet_recipe_create_delayed(&opt, &r), OCTET_STATUS_SUCCESS);
  Recipe bad(r);
  Quantizer q2 = make_quantizer(bad.get(), OCTET_ROLE_INPUT);
  ASSERT_EQ(octet_quantizer_record_amax(q2.get(), 4.0f), OCTET_STATUS_SUCCESS);
  EXPECT_EQ(octet_quantizer_update_scale(q2.get()), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(octet_last_error_message()).find("scale_compute_callback"), std::string::npos);
  ASSERT_EQ(octet_quantizer_get_info(q2.get(), &info), OCTET_STATUS_SUCCESS);
  EXPECT_EQ(info.scale, 1.0f);
  EXPECT_EQ(info.update_count, 0u);
  EXPECT_EQ(info.amax, 4.0f);  // the window did not advance
}

}  // namespace
}  // namespace recipes_test
