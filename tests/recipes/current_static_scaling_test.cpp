// Current scaling (numerics.md 14.1), static scaling with observation
// (docs/recipes.md, "Static scaling") and the statistics of a quantize call,
// against plain re-implementations.
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "recipe_test_helpers.hpp"

namespace recipes_test {
namespace {

const float kInf = std::numeric_limits<float>::infinity();
const float kNan = std::numeric_limits<float>::quiet_NaN();

float model_current_scale(const std::vector<float>& x, float fp8_max, float eps, bool pow2) {
  float amax = 0.0f;
  for (float v : x)
    if (!std::isnan(v) && std::fabs(v) > amax) amax = std::fabs(v);
  if (eps > amax) amax = eps;
  if (std::isinf(amax) || amax == 0.0f) return 1.0f;
  float scale = fp8_max / amax;
  if (std::isinf(scale)) scale = FLT_MAX;
  if (pow2) scale = float(std::pow(2.0, std::floor(std::log2(double(scale)))));  // round down to 2^k
  return scale;
}

struct ModelStats {
  uint64_t nan = 0, saturated = 0, flushed = 0;
  float amax = 0.0f;
};

// Thresholds of numerics section 2: the non-saturating conversion overflows
// for |y| > 464 (E4M3) or |y| >= 61440 (E5M2); a value flushes to zero when
// |y| <= half the smallest subnormal (ties go to the even code 0).
ModelStats model_stats(const std::vector<float>& x, float scale, int32_t dtype) {
  ModelStats s;
  const double overflow = dtype == OCTET_DTYPE_E4M3 ? 464.0 : 61440.0;
  const double flush = dtype == OCTET_DTYPE_E4M3 ? std::ldexp(1.0, -10) : std::ldexp(1.0, -17);
  for (float v : x) {
    if (std::isnan(v)) {
      ++s.nan;
      continue;
    }
    s.amax = std::max(s.amax, std::fabs(v));
    const float y = v * scale;
    const double ay = std::fabs(double(y));
    if (std::isinf(y) || (dtype == OCTET_DTYPE_E4M3 ? ay > overflow : ay >= overflow)) ++s.saturated;
    if (std::isfinite(v) && v != 0.0f && ay <= flush) ++s.flushed;
  }
  return s;
}

Recipe make_current(int32_t format, float eps, int pow2) {
  octet_current_scaling_options o;
  EXPECT_EQ(octet_current_scaling_options_init(&o), OCTET_STATUS_SUCCESS);
  o.format = format;
  o.amax_epsilon = eps;
  o.power_of_two_scales = pow2;
  octet_recipe* r = nullptr;
  EXPECT_EQ(octet_recipe_create_current(&o, &r), OCTET_STATUS_SUCCESS) << octet_last_error_message();
  return Recipe(r);
}

struct CurrentCase {
  std::string name;
  std::vector<float> x;
};

std::vector<CurrentCase> current_cases() {
  return {
      {"ordinary", random_values(24, 3.0f, 7)},
      {"all zero", std::vector<float>(24, 0.0f)},
      {"has inf", {1.0f, -kInf, 2.0f, 3.0f}},
      {"has NaN", {kNan, 0.25f, -0.5f, 7.0f}},
      {"all NaN", {kNan, kNan, kNan, kNan}},
      {"tiny", {1e-38f, -2e-39f, 0.0f, 1e-45f}},
      {"exact power of two", {-448.0f, 1.0f, 2.0f, 4.0f}},
      {"huge", {3e38f, -1e38f, 1.0f, 0.0f}},
  };
}

TEST(CurrentScaling, ScalesAndCodesMatchTheSpecForEdgeCases) {
  Context ctx = make_context();
  for (int32_t format : {int32_t(OCTET_FORMAT_E4M3), int32_t(OCTET_FORMAT_E5M2), int32_t(OCTET_FORMAT_HYBRID)}) {
    for (float eps : {0.0f, 1e-3f, 100.0f}) {
      for (int pow2 : {0, 1}) {
        Recipe recipe = make_current(format, eps, pow2);
        for (int32_t role : {OCTET_ROLE_INPUT, OCTET_ROLE_GRADIENT}) {
          int32_t dtype = 0, mode = 0;
          ASSERT_EQ(octet_recipe_tensor_format(recipe.get(), role, &dtype, &mode), OCTET_STATUS_SUCCESS);
          const int32_t expected_dtype =
              format == OCTET_FORMAT_E4M3 || (format == OCTET_FORMAT_HYBRID && role != OCTET_ROLE_GRADIENT)
                  ? OCTET_DTYPE_E4M3
                  : OCTET_DTYPE_E5M2;
          ASSERT_EQ(dtype, expected_dtype);
          ASSERT_EQ(mode, int32_t(OCTET_SCALING_PER_TENSOR));
          Quantizer q = make_quantizer(recipe.get(), role);
          for (const CurrentCase& c : current_cases()) {
            const int64_t cols = 4, rows = int64_t(c.x.size()) / cols;
            Tensor in = make_fp32(ctx.get(), rows, cols, c.x);
            Tensor out = make_tensor(ctx.get(), dtype, rows, cols, OCTET_USAGE_BOTH);
            octet_quantize_stats stats{};
            stats.struct_size = sizeof(stats);
            ASSERT_EQ(octet_quantizer_quantize(ctx.get(), q.get(), in.get(), out.get(), nullptr, &stats),
                      OCTET_STATUS_SUCCESS)
                << octet_last_error_message();
            const float scale = model_current_scale(c.x, fp8_max(dtype), eps, pow2 != 0);
            const std::string where = c.name + " format " + std::to_string(format) + " eps " +
                                      std::to_string(eps) + " pow2 " + std::to_string(pow2);
            EXPECT_EQ(read_floats(out.get(), OCTET_COMPONENT_SCALE, 1)[0], scale) << where;
            EXPECT_EQ(read_floats(out.get(), OCTET_COMPONENT_SCALE_INV, 1)[0], 1.0f / scale) << where;
            std::vector<uint8_t> codes = read_bytes(out.get(), OCTET_COMPONENT_DATA, c.x.size());
            for (size_t i = 0; i < c.x.size(); ++i)
              EXPECT_EQ(codes[i], fp8_encode_sat(c.x[i] * scale, dtype)) << where << " element " << i;
            ModelStats m = model_stats(c.x, scale, dtype);
            EXPECT_EQ(stats.nan_count, m.nan) << where;
            EXPECT_EQ(stats.saturated_count, m.saturated) << where;
            EXPECT_EQ(stats.flushed_count, m.flushed) << where;
            EXPECT_EQ(stats.total_count, c.x.size()) << where;
            EXPECT_EQ(stats.amax, m.amax) << where;
          }
        }
      }
    }
  }
}

TEST(QuantizeStatistics, CountsNanSaturationAndFlushForEachFormat) {
  Context ctx = make_context();
  // Values around each threshold, scaled by a non-trivial scale.
  std::vector<float> x = {kNan,    -kNan,  464.0f,  464.5f, -500.0f, kInf,   61440.0f, 61439.0f,
                          1e-3f,   -1e-3f, 2e-3f,   0.0f,   -0.0f,   1e-45f, 7.6e-6f,  1.53e-5f,
                          1.0f,    -2.0f,  3.0e5f,  -kInf,  0.5f,    0.25f,  100.0f,   1e-40f};
  for (int32_t dtype : {int32_t(OCTET_DTYPE_E4M3), int32_t(OCTET_DTYPE_E5M2)}) {
    for (float scale : {1.0f, 0.5f, 4.0f}) {
      Tensor in = make_fp32(ctx.get(), 4, 6, x);
      Tensor out = make_tensor(ctx.get(), dtype, 4, 6, OCTET_USAGE_ROWWISE);
      ASSERT_EQ(octet_tensor_copy_from_host(out.get(), OCTET_COMPONENT_SCALE, &scale, 4), OCTET_STATUS_SUCCESS);
      octet_quantize_stats stats{};
      stats.struct_size = sizeof(stats);
      ASSERT_EQ(octet_quantize_with_stats(ctx.get(), in.get(), out.get(), nullptr, &stats), OCTET_STATUS_SUCCESS)
          << octet_last_error_message();
      ModelStats m = model_stats(x, scale, dtype);
      EXPECT_EQ(stats.nan_count, m.nan) << dtype << " " << scale;
      EXPECT_EQ(stats.saturated_count, m.saturated) << dtype << " " << scale;
      EXPECT_EQ(stats.flushed_count, m.flushed) << dtype << " " << scale;
      EXPECT_EQ(stats.amax, m.amax);
      EXPECT_EQ(stats.total_count, x.size());
      EXPECT_GT(m.saturated + m.flushed + m.nan, 2u);  // the case exercises every counter
    }
  }
}

TEST(StaticScaling, ObservationReportsAmaxAndSaturatedFraction) {
  Context ctx = make_context();
  octet_static_scaling_options o;
  ASSERT_EQ(octet_static_scaling_options_init(&o), OCTET_STATUS_SUCCESS);
  EXPECT_EQ(o.scale, 1.0f);  // the documented default
  o.scale = 2.0f;
  o.observe = 1;
  o.format = OCTET_FORMAT_E4M3;
  octet_recipe* r = nullptr;
  ASSERT_EQ(octet_recipe_create_static(&o, &r), OCTET_STATUS_SUCCESS) << octet_last_error_message();
  Recipe recipe(r);
  Quantizer q = make_quantizer(recipe.get(), OCTET_ROLE_WEIGHT);
  uint64_t saturated = 0, total = 0;
  float amax = 0.0f;
  for (uint32_t call = 0; call < 3; ++call) {
    std::vector<float> x = random_values(60, 60.0f * float(call + 1), 100 + call);
    Tensor in = make_fp32(ctx.get(), 6, 10, x);
    Tensor out = make_tensor(ctx.get(), OCTET_DTYPE_E4M3, 6, 10, OCTET_USAGE_ROWWISE);
    ASSERT_EQ(octet_quantizer_quantize(ctx.get(), q.get(), in.get(), out.get(), nullptr, nullptr),
              OCTET_STATUS_SUCCESS)
        << octet_last_error_message();
    std::vector<uint8_t> codes = read_bytes(out.get(), OCTET_COMPONENT_DATA, x.size());
    for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(codes[i], fp8_encode_sat(x[i] * 2.0f, OCTET_DTYPE_E4M3));
    ModelStats m = model_stats(x, 2.0f, OCTET_DTYPE_E4M3);
    saturated += m.saturated;
    total += x.size();
    amax = std::max(amax, m.amax);
  }
  octet_quantizer_info info{};
  info.struct_size = sizeof(info);
  ASSERT_EQ(octet_quantizer_get_info(q.get(), &info), OCTET_STATUS_SUCCESS);
  EXPECT_GT(saturated, 0u);
  EXPECT_EQ(info.observed_saturated, saturated);
  EXPECT_EQ(info.observed_total, total);
  EXPECT_EQ(info.observed_amax, amax);
  EXPECT_DOUBLE_EQ(info.saturated_fraction, double(saturated) / double(total));
  EXPECT_EQ(info.scale, 2.0f);
  // The static scale never moves.
  ASSERT_EQ(octet_quantizer_update_scale(q.get()), OCTET_STATUS_SUCCESS);
  ASSERT_EQ(octet_quantizer_get_info(q.get(), &info), OCTET_STATUS_SUCCESS);
  EXPECT_EQ(info.scale, 2.0f);
}

}  // namespace
}  // namespace recipes_test
