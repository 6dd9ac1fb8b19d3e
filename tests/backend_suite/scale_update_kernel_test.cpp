// Plugin ABI 1.3 scaling kernels of the reference (scale_from_amax,
// delayed_scaling_update, amax_record) through its table, against rules
// re-derived here independently of the reference's code: quotients in
// binary64 then rounded once to FP32 (exact for one division of FP32
// values), exponents from frexp and powers of two from pow in binary64,
// so nothing shares ilogb/ldexp or the FP32 division with the kernels.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "backend_table.hpp"
#include "test_matrix.hpp"

namespace octet::test {
namespace {

uint32_t bits_of(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

float float_of(uint32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}

// One FP32 division, correctly rounded (binary64 holds 2*24+2 bits).
float divide(float a, float b) { return static_cast<float>(static_cast<double>(a) / static_cast<double>(b)); }

// numerics.md 14.1.
float oracle_current_scale(float amax, float fp8_max, float epsilon, bool power_of_two) {
  float a = std::isnan(amax) ? epsilon : (amax > epsilon ? amax : epsilon);
  if (std::isnan(a) || std::isinf(a) || a == 0.0f) return 1.0f;
  float scale = divide(fp8_max, a);
  if (std::isinf(scale)) scale = FLT_MAX;
  if (power_of_two) scale = float_of(bits_of(scale) & 0xFF800000u);
  return scale;
}

// 2^e rounded to FP32 (0 below half the smallest subnormal, inf above FLT_MAX).
float power_of_two_float(int e) { return static_cast<float>(std::pow(2.0, e)); }

// numerics.md 14.2 steps 1-5 on [scale, scale_inv, history...].
void oracle_update(std::vector<float>& state, uint32_t current, bool most_recent, bool recompute, int margin,
                   bool power_of_two, float fp8_max) {
  const size_t n = state.size() - 2;
  float amax = 0.0f;
  if (most_recent) {
    amax = state[2 + current];
  } else {
    for (size_t i = 0; i < n; ++i) {
      const float h = state[2 + i];
      if (!std::isnan(h) && h > amax) amax = h;
    }
  }
  float scale = state[0];
  if (recompute && std::isfinite(amax) && amax > 0.0f) {
    float candidate;
    if (power_of_two) {
      const float ratio = divide(fp8_max, amax);
      int e = 127;
      if (!std::isinf(ratio)) {
        int frexp_e = 0;
        std::frexp(static_cast<double>(ratio), &frexp_e);  // ratio = m * 2^frexp_e, m in [0.5, 1)
        e = frexp_e - 1;
      }
      candidate = power_of_two_float(e - margin);
    } else {
      const float scaled_max = static_cast<float>(static_cast<double>(fp8_max) * std::pow(2.0, -margin));
      candidate = divide(scaled_max, amax);
      if (std::isinf(candidate)) candidate = FLT_MAX;
    }
    if (candidate > 0.0f) scale = candidate;
  }
  state[0] = scale;
  state[1] = divide(1.0f, scale);
  state[2 + (current + 1) % n] = 0.0f;
}

const float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();

const std::vector<float>& special_amaxes() {
  static const std::vector<float> values = {0.0f,          1.0f,          448.0f,        57344.0f,
                                            0.5f,          3.0f,          1e-3f,         1e-30f,
                                            1e-38f,        1e-40f,        1e-45f,        FLT_MIN,
                                            FLT_MAX,       3e38f,         kInf,          kNaN,
                                            123.456f,      0.0009765625f, 2.9e-39f,      7.0f};
  return values;
}

class ScaleUpdateKernels : public BackendTableTest {};

TEST_P(ScaleUpdateKernels, ScaleFromAmaxFollowsTheCurrentScalingRule) {
  OCTET_REQUIRE_ENTRY(scale_from_amax);
  for (float fp8_max : {448.0f, 57344.0f})
    for (float epsilon : {0.0f, 1e-12f, 0.25f, 1000.0f})
      for (int p2 : {0, 1})
        for (float amax : special_amaxes()) {
          float scale = -7.0f, scale_inv = -7.0f;
          octet_scale_from_amax_args a{};
          a.struct_size = sizeof a;
          a.amax = &amax;
          a.fp8_max = fp8_max;
          a.epsilon = epsilon;
          a.power_of_two = p2;
          a.scale_out = &scale;
          a.scale_inv_out = &scale_inv;
          expect_success(api_->scale_from_amax(context_, &a));
          const float want = oracle_current_scale(amax, fp8_max, epsilon, p2 != 0);
          EXPECT_EQ(bits_of(scale), bits_of(want)) << "amax " << amax << " eps " << epsilon << " p2 " << p2;
          EXPECT_EQ(bits_of(scale_inv), bits_of(divide(1.0f, want))) << "amax " << amax;
          // scale_inv_out is optional; amax and scale_out may be the same float.
          float shared = amax;
          a.amax = &shared;
          a.scale_out = &shared;
          a.scale_inv_out = nullptr;
          expect_success(api_->scale_from_amax(context_, &a));
          EXPECT_EQ(bits_of(shared), bits_of(want));
        }
}

TEST_P(ScaleUpdateKernels, AmaxRecordKeepsTheMaxIgnoringNaN) {
  OCTET_REQUIRE_ENTRY(amax_record);
  for (float slot0 : special_amaxes())
    for (float amax : special_amaxes()) {
      float slot = slot0;
      expect_success(api_->amax_record(context_, &amax, &slot));
      const float want = std::isnan(amax) ? slot0 : std::isnan(slot0) ? amax : (amax > slot0 ? amax : slot0);
      EXPECT_EQ(bits_of(slot), bits_of(want)) << slot0 << " then " << amax;
    }
}

TEST_P(ScaleUpdateKernels, DelayedUpdateFollowsTheTransformerEngineRule) {
  OCTET_REQUIRE_ENTRY(delayed_scaling_update);
  std::mt19937 rng(1234);
  const std::vector<float>& specials = special_amaxes();
  std::uniform_int_distribution<size_t> pick(0, specials.size() - 1);
  std::uniform_real_distribution<float> log_scale(-40.0f, 40.0f);
  int cases = 0;
  for (uint32_t n : {1u, 2u, 5u, 16u, 1024u})
    for (int algo : {OCTET_HISTORY_AMAX_MOST_RECENT, OCTET_HISTORY_AMAX_MAX})
      for (int recompute : {0, 1})
        for (int margin : {0, 1, 3, 60, 127})
          for (int p2 : {0, 1})
            for (float fp8_max : {448.0f, 57344.0f})
              for (int trial = 0; trial < 6; ++trial) {
                std::vector<float> state(2 + n);
                state[0] = trial == 0 ? 1.0f : std::exp2(log_scale(rng));
                state[1] = divide(1.0f, state[0]);
                for (uint32_t i = 0; i < n; ++i)
                  state[2 + i] = (trial % 2) ? specials[pick(rng)] : std::exp2(log_scale(rng) * 3.0f);
                const uint32_t current = uint32_t(rng() % n);
                std::vector<float> got = state, want = state;
                octet_delayed_scaling_update_args a{};
                a.struct_size = sizeof a;
                a.state = got.data();
                a.history_len = n;
                a.current = current;
                a.amax_compute_algo = algo;
                a.recompute = recompute;
                a.margin = margin;
                a.power_of_two = p2;
                a.fp8_max = fp8_max;
                expect_success(api_->delayed_scaling_update(context_, &a));
                oracle_update(want, current, algo == OCTET_HISTORY_AMAX_MOST_RECENT, recompute != 0, margin, p2 != 0,
                              fp8_max);
                for (size_t i = 0; i < state.size(); ++i)
                  ASSERT_EQ(bits_of(got[i]), bits_of(want[i]))
                      << "float " << i << " n " << n << " algo " << algo << " recompute " << recompute << " margin "
                      << margin << " p2 " << p2 << " fp8_max " << fp8_max << " trial " << trial;
                ++cases;
              }
  EXPECT_GT(cases, 1000);
}

TEST_P(ScaleUpdateKernels, DelayedUpdateEdgeCases) {
  OCTET_REQUIRE_ENTRY(delayed_scaling_update);
  // Every amax in the window non-finite or 0: the scale stays, scale_inv is rewritten.
  std::vector<float> state = {2.0f, 123.0f, kNaN, kInf, 5.0f};
  octet_delayed_scaling_update_args a{};
  a.struct_size = sizeof a;
  a.state = state.data();
  a.history_len = 3;
  a.current = 1;
  a.amax_compute_algo = OCTET_HISTORY_AMAX_MOST_RECENT;
  a.recompute = 1;
  a.fp8_max = 448.0f;
  expect_success(api_->delayed_scaling_update(context_, &a));
  EXPECT_EQ(state[0], 2.0f);
  EXPECT_EQ(state[1], 0.5f);
  EXPECT_EQ(bits_of(state[4]), bits_of(0.0f));  // the next slot (2) is zeroed
  // A candidate that underflows to 0 keeps the old scale (power of two, margin 127, huge amax).
  state = {4.0f, 0.25f, FLT_MAX, 0.0f};
  a.history_len = 2;
  a.current = 0;
  a.amax_compute_algo = OCTET_HISTORY_AMAX_MAX;
  a.power_of_two = 1;
  a.margin = 127;
  expect_success(api_->delayed_scaling_update(context_, &a));
  EXPECT_EQ(state[0], 4.0f);
  // A subnormal amax: the ratio overflows, the Gaudi exponent is 127.
  state = {4.0f, 0.25f, 1e-45f, 0.0f};
  a.margin = 0;
  expect_success(api_->delayed_scaling_update(context_, &a));
  EXPECT_EQ(state[0], std::ldexp(1.0f, 127));
  // Without power_of_two the +inf candidate becomes FLT_MAX.
  state = {4.0f, 0.25f, 1e-45f, 0.0f};
  a.power_of_two = 0;
  expect_success(api_->delayed_scaling_update(context_, &a));
  EXPECT_EQ(state[0], FLT_MAX);
  // History length 1: the slot of the next step is this one.
  state = {1.0f, 1.0f, 2.0f};
  a.history_len = 1;
  expect_success(api_->delayed_scaling_update(context_, &a));
  EXPECT_EQ(state[0], 224.0f);
  EXPECT_EQ(state[2], 0.0f);
}

TEST_P(ScaleUpdateKernels, BadArgumentsReportAndWriteNothing) {
  OCTET_REQUIRE_ENTRY(amax_record);
  OCTET_REQUIRE_ENTRY(delayed_scaling_update);
  OCTET_REQUIRE_ENTRY(scale_from_amax);
  float amax = 2.0f, scale = -1.0f;
  octet_scale_from_amax_args s{};
  s.struct_size = sizeof s;
  s.amax = &amax;
  s.fp8_max = 448.0f;
  s.scale_out = &scale;
  expect_failure(api_->scale_from_amax(context_, nullptr), OCTET_STATUS_INVALID_ARGUMENT, {"scale_from_amax", "args"});
  octet_scale_from_amax_args bad = s;
  bad.struct_size = 8;
  expect_failure(api_->scale_from_amax(context_, &bad), OCTET_STATUS_INVALID_ARGUMENT, {"struct_size", "1.3"});
  bad = s;
  bad.amax = nullptr;
  expect_failure(api_->scale_from_amax(context_, &bad), OCTET_STATUS_INVALID_ARGUMENT, {"args->amax", "NULL"});
  bad = s;
  bad.scale_out = nullptr;
  expect_failure(api_->scale_from_amax(context_, &bad), OCTET_STATUS_INVALID_ARGUMENT, {"args->scale_out"});
  bad = s;
  bad.fp8_max = 0.0f;
  expect_failure(api_->scale_from_amax(context_, &bad), OCTET_STATUS_INVALID_ARGUMENT, {"args->fp8_max", "> 0"});
  bad = s;
  bad.fp8_max = kInf;
  expect_failure(api_->scale_from_amax(context_, &bad), OCTET_STATUS_INVALID_ARGUMENT, {"args->fp8_max", "finite"});
  bad = s;
  bad.epsilon = -1.0f;
  expect_failure(api_->scale_from_amax(context_, &bad), OCTET_STATUS_INVALID_ARGUMENT, {"args->epsilon", ">= 0"});
  bad = s;
  bad.epsilon = kNaN;
  expect_failure(api_->scale_from_amax(context_, &bad), OCTET_STATUS_INVALID_ARGUMENT, {"args->epsilon"});
  bad = s;
  bad.power_of_two = 2;
  expect_failure(api_->scale_from_amax(context_, &bad), OCTET_STATUS_INVALID_ARGUMENT, {"args->power_of_two", "0 or 1"});
  EXPECT_EQ(scale, -1.0f);
  expect_failure(api_->scale_from_amax(nullptr, &s), OCTET_STATUS_INVALID_ARGUMENT, {"context"});

  std::vector<float> state = {1.0f, 1.0f, 5.0f, 6.0f};
  const std::vector<float> before = state;
  octet_delayed_scaling_update_args u{};
  u.struct_size = sizeof u;
  u.state = state.data();
  u.history_len = 2;
  u.current = 0;
  u.amax_compute_algo = OCTET_HISTORY_AMAX_MAX;
  u.recompute = 1;
  u.fp8_max = 448.0f;
  auto expect_update_failure = [&](octet_delayed_scaling_update_args args, std::initializer_list<const char*> words) {
    expect_failure(api_->delayed_scaling_update(context_, &args), OCTET_STATUS_INVALID_ARGUMENT, words);
    EXPECT_EQ(state, before);
  };
  expect_failure(api_->delayed_scaling_update(context_, nullptr), OCTET_STATUS_INVALID_ARGUMENT, {"args"});
  octet_delayed_scaling_update_args b = u;
  b.struct_size = sizeof(size_t);
  expect_update_failure(b, {"args->struct_size", "octet_delayed_scaling_update_args"});
  b = u;
  b.state = nullptr;
  expect_update_failure(b, {"args->state", "NULL"});
  b = u;
  b.history_len = 0;
  expect_update_failure(b, {"args->history_len", ">= 1"});
  b = u;
  b.current = 2;
  expect_update_failure(b, {"args->current", "below args->history_len"});
  b = u;
  b.amax_compute_algo = 2;  // no such octet_history_amax (the recipe's callback value)
  expect_update_failure(b, {"args->amax_compute_algo", "callbacks run on the host"});
  b = u;
  b.recompute = -1;
  expect_update_failure(b, {"args->recompute", "0 or 1"});
  b = u;
  b.power_of_two = 5;
  expect_update_failure(b, {"args->power_of_two"});
  b = u;
  b.margin = -1;
  expect_update_failure(b, {"args->margin", "0..127"});
  b = u;
  b.margin = 128;
  expect_update_failure(b, {"args->margin"});
  b = u;
  b.fp8_max = kNaN;
  expect_update_failure(b, {"args->fp8_max"});

  float slot = 1.0f;
  expect_failure(api_->amax_record(context_, nullptr, &slot), OCTET_STATUS_INVALID_ARGUMENT, {"amax_record", "amax"});
  expect_failure(api_->amax_record(context_, &amax, nullptr), OCTET_STATUS_INVALID_ARGUMENT, {"amax_record", "slot"});
  EXPECT_EQ(slot, 1.0f);
}

TEST_P(ScaleUpdateKernels, TableHoldsTheEntries) {
  ASSERT_GE(api_->struct_size, offsetof(octet_backend_api, amax_record) + sizeof(api_->amax_record));
  EXPECT_NE(api_->scale_from_amax, nullptr);
  EXPECT_NE(api_->delayed_scaling_update, nullptr);
  EXPECT_NE(api_->amax_record, nullptr);
}

OCTET_BACKEND_SUITE(ScaleUpdateKernels);

}  // namespace
}  // namespace octet::test
