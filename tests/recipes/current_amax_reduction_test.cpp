// Current scaling with reduce_amax (docs/recipes.md, "Current scaling across
// processes"): before each quantize the tensor's amax is all-reduced (MAX)
// through the context's communicator, so every process quantizes with the
// scale of the global amax. A test communicator stands in for the other
// processes (each call takes the max with what "they" saw, and is logged);
// tests/mpi runs the same with real processes. Expectations come from
// numerics.md 14.1 and an exhaustive FP8 encoder (recipe_test_helpers), on the
// device path (reference, counting) and the host path (counting_host, cpu),
// bit for bit.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <octet/octet.h>

#include <cfloat>
#include <cstddef>
#include <cmath>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "recipe_test_helpers.hpp"

namespace {

using namespace recipes_test;

// The other processes: each call replaces values[i] by max(values[i], the
// next of `others`), logging the count and the value it was given.
struct FakeWorld {
  explicit FakeWorld(std::vector<float> seen_elsewhere) : others(std::move(seen_elsewhere)) {}
  std::vector<float> others;
  size_t next = 0;
  std::vector<size_t> counts;
  std::vector<float> given;
  octet_status fail_with = OCTET_STATUS_SUCCESS;
};

octet_status fake_allreduce_max(float* values, size_t count, void* user_data) {
  auto* w = static_cast<FakeWorld*>(user_data);
  w->counts.push_back(count);
  if (w->fail_with != OCTET_STATUS_SUCCESS) return w->fail_with;
  for (size_t i = 0; i < count; ++i) {
    w->given.push_back(values[i]);
    const float other = w->others[w->next++ % w->others.size()];
    values[i] = std::fmax(values[i], other);
  }
  return OCTET_STATUS_SUCCESS;
}

void set_world(octet_context* ctx, FakeWorld* world) {
  octet_communicator c{};
  c.struct_size = sizeof(c);
  c.allreduce_max = fake_allreduce_max;
  c.user_data = world;
  ASSERT_EQ(octet_context_set_communicator(ctx, &c), OCTET_STATUS_SUCCESS) << octet_last_error_message();
}

Recipe make_current(int32_t format, int reduce, float eps = 0.0f, int pow2 = 0) {
  octet_current_scaling_options o;
  EXPECT_EQ(octet_current_scaling_options_init(&o), OCTET_STATUS_SUCCESS);
  EXPECT_EQ(o.reduce_amax, 0) << "reduce_amax defaults to 0";
  o.format = format;
  o.amax_epsilon = eps;
  o.power_of_two_scales = pow2;
  o.reduce_amax = reduce;
  octet_recipe* r = nullptr;
  EXPECT_EQ(octet_recipe_create_current(&o, &r), OCTET_STATUS_SUCCESS) << octet_last_error_message();
  return Recipe(r);
}

// numerics.md 14.1 from the amax.
float spec_scale(float amax, float fp8_max, float eps, bool pow2) {
  if (eps > amax) amax = eps;
  if (std::isinf(amax) || std::isnan(amax) || amax == 0.0f) return 1.0f;
  float scale = fp8_max / amax;
  if (std::isinf(scale)) scale = FLT_MAX;
  if (pow2) {
    uint32_t b;
    std::memcpy(&b, &scale, sizeof b);
    b &= 0xFF800000u;
    std::memcpy(&scale, &b, sizeof b);
  }
  return scale;
}

float local_amax(const std::vector<float>& x) {
  float a = 0.0f;
  for (float v : x)
    if (!std::isnan(v)) a = std::fmax(a, std::fabs(v));
  return a;
}

// The backends of both paths that this build has.
std::vector<std::string> backends() {
  std::vector<std::string> names{"reference"};
  if (load_backend("counting", OCTET_COUNTING_PLUGIN_PATH)) names.push_back("counting");
  if (load_backend("counting_host", OCTET_COUNTING_HOST_PLUGIN_PATH)) names.push_back("counting_host");
#ifdef OCTET_CPU_PLUGIN_PATH
  if (load_backend("cpu", OCTET_CPU_PLUGIN_PATH)) names.push_back("cpu");
#endif
  return names;
}

octet_quantizer_info info_of(const octet_quantizer* q) {
  octet_quantizer_info info{};
  info.struct_size = sizeof(info);
  EXPECT_EQ(octet_quantizer_get_info(q, &info), OCTET_STATUS_SUCCESS) << octet_last_error_message();
  return info;
}

uint32_t bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

TEST(CurrentAmaxReduction, TheScaleComesFromTheGlobalAmaxOnEveryPath) {
  const std::vector<float> x = random_values(32, 2.0f, 41);
  const float local = local_amax(x);
  // Other processes saw more, less, the same, inf (scale 1), and 0.
  const std::vector<float> others{4.0f * local, 0.5f * local, local, INFINITY, 0.0f, 1e-30f};
  for (const std::string& backend : backends()) {
    for (int32_t format : {int32_t(OCTET_FORMAT_E4M3), int32_t(OCTET_FORMAT_E5M2)}) {
      for (int pow2 : {0, 1}) {
        Recipe recipe = make_current(format, 1, 0.0f, pow2);
        Context ctx = make_context(backend.c_str());
        FakeWorld world(others);
        set_world(ctx.get(), &world);
        Quantizer q = make_quantizer(recipe.get(), OCTET_ROLE_INPUT);
        const int32_t dtype = format == OCTET_FORMAT_E4M3 ? OCTET_DTYPE_E4M3 : OCTET_DTYPE_E5M2;
        for (float other : others) {
          const std::string where = backend + " format " + std::to_string(format) + " pow2 " +
                                    std::to_string(pow2) + " other " + std::to_string(other);
          Tensor in = make_fp32(ctx.get(), 4, 8, x);
          Tensor out = make_tensor(ctx.get(), dtype, 4, 8, OCTET_USAGE_ROWWISE);
          ASSERT_EQ(octet_quantizer_quantize(ctx.get(), q.get(), in.get(), out.get(), nullptr, nullptr),
                    OCTET_STATUS_SUCCESS)
              << where << ": " << octet_last_error_message();
          const float global = std::fmax(local, other);
          const float scale = spec_scale(global, fp8_max(dtype), 0.0f, pow2 != 0);
          // The communicator got the local amax, once, with count 1.
          ASSERT_FALSE(world.given.empty()) << where;
          EXPECT_EQ(bits(world.given.back()), bits(local)) << where;
          EXPECT_EQ(world.counts.back(), 1u) << where;
          const std::vector<float> scalars = read_floats(out.get(), OCTET_COMPONENT_SCALE, 1);
          EXPECT_EQ(bits(scalars[0]), bits(scale)) << where;
          EXPECT_EQ(bits(read_floats(out.get(), OCTET_COMPONENT_SCALE_INV, 1)[0]), bits(1.0f / scale)) << where;
          // The tensor's AMAX is its own data's; the quantizer records the
          // amax behind its scale.
          EXPECT_EQ(bits(read_floats(out.get(), OCTET_COMPONENT_AMAX, 1)[0]), bits(local)) << where;
          const octet_quantizer_info info = info_of(q.get());
          EXPECT_EQ(bits(info.amax), bits(global)) << where;
          EXPECT_EQ(bits(info.scale), bits(scale)) << where;
          const std::vector<uint8_t> codes = read_bytes(out.get(), OCTET_COMPONENT_DATA, x.size());
          for (size_t i = 0; i < x.size(); ++i)
            ASSERT_EQ(codes[i], fp8_encode_sat(x[i] * scale, dtype)) << where << " element " << i;
        }
        EXPECT_EQ(world.counts.size(), others.size()) << backend << ": one call per quantize";
      }
    }
  }
}

TEST(CurrentAmaxReduction, OffByDefaultAndWithoutACommunicatorTheAmaxIsLocal) {
  const std::vector<float> x = random_values(16, 1.0f, 42);
  const float local = local_amax(x);
  for (const std::string& backend : backends()) {
    Context ctx = make_context(backend.c_str());
    Tensor in = make_fp32(ctx.get(), 2, 8, x);
    Tensor out = make_tensor(ctx.get(), OCTET_DTYPE_E4M3, 2, 8, OCTET_USAGE_ROWWISE);
    // reduce_amax 1 but no communicator: this process's amax.
    Recipe reducing = make_current(OCTET_FORMAT_E4M3, 1);
    Quantizer q1 = make_quantizer(reducing.get(), OCTET_ROLE_INPUT);
    ASSERT_EQ(octet_quantizer_quantize(ctx.get(), q1.get(), in.get(), out.get(), nullptr, nullptr),
              OCTET_STATUS_SUCCESS)
        << backend << ": " << octet_last_error_message();
    EXPECT_EQ(bits(info_of(q1.get()).scale), bits(spec_scale(local, 448.0f, 0.0f, false))) << backend;
    // A communicator but reduce_amax 0 (the default): never called.
    FakeWorld world({1000.0f});
    set_world(ctx.get(), &world);
    Recipe local_only = make_current(OCTET_FORMAT_E4M3, 0);
    Quantizer q0 = make_quantizer(local_only.get(), OCTET_ROLE_INPUT);
    ASSERT_EQ(octet_quantizer_quantize(ctx.get(), q0.get(), in.get(), out.get(), nullptr, nullptr),
              OCTET_STATUS_SUCCESS)
        << backend << ": " << octet_last_error_message();
    EXPECT_TRUE(world.counts.empty()) << backend;
    EXPECT_EQ(bits(info_of(q0.get()).amax), bits(local)) << backend;
    EXPECT_EQ(bits(info_of(q0.get()).scale), bits(spec_scale(local, 448.0f, 0.0f, false))) << backend;
  }
}

TEST(CurrentAmaxReduction, AFailingCommunicatorChangesNothingInTheQuantizer) {
  Recipe delayed;
  {
    octet_delayed_scaling_options o;
    ASSERT_EQ(octet_delayed_scaling_options_init(&o), OCTET_STATUS_SUCCESS);
    o.amax_history_len = 4;
    o.format = OCTET_FORMAT_E4M3;
    o.reduce_amax = 0;
    octet_recipe* r = nullptr;
    ASSERT_EQ(octet_recipe_create_delayed(&o, &r), OCTET_STATUS_SUCCESS);
    delayed.reset(r);
  }
  Recipe current = make_current(OCTET_FORMAT_E4M3, 1);
  for (const std::string& backend : backends()) {
    Context ctx = make_context(backend.c_str());
    // A quantizer that follows autocast: a step under delayed scaling gives
    // it a 4-long history and a scale.
    Quantizer q = make_quantizer(nullptr, OCTET_ROLE_INPUT);
    Tensor in = make_fp32(ctx.get(), 1, 4, {1.0f, -3.0f, 2.0f, 0.5f});
    Tensor out = make_tensor(ctx.get(), OCTET_DTYPE_E4M3, 1, 4, OCTET_USAGE_ROWWISE);
    ASSERT_EQ(octet_autocast_begin(ctx.get(), delayed.get()), OCTET_STATUS_SUCCESS);
    ASSERT_EQ(octet_quantizer_quantize(ctx.get(), q.get(), in.get(), out.get(), nullptr, nullptr),
              OCTET_STATUS_SUCCESS)
        << backend << ": " << octet_last_error_message();
    ASSERT_EQ(octet_autocast_end(ctx.get()), OCTET_STATUS_SUCCESS) << octet_last_error_message();
    const std::vector<uint8_t> before = save(q.get());
    ASSERT_EQ(info_of(q.get()).amax_history_len, 4u) << backend;
    // Then a current-scaling step whose communicator fails.
    FakeWorld world({0.0f});
    world.fail_with = OCTET_STATUS_BACKEND_ERROR;
    set_world(ctx.get(), &world);
    ASSERT_EQ(octet_autocast_begin(ctx.get(), current.get()), OCTET_STATUS_SUCCESS);
    const std::vector<uint8_t> codes_before = read_bytes(out.get(), OCTET_COMPONENT_DATA, 4);
    std::vector<float> scalars_before;
    for (int32_t c : {OCTET_COMPONENT_SCALE, OCTET_COMPONENT_SCALE_INV, OCTET_COMPONENT_AMAX})
      scalars_before.push_back(read_floats(out.get(), c, 1)[0]);
    EXPECT_EQ(octet_quantizer_quantize(ctx.get(), q.get(), in.get(), out.get(), nullptr, nullptr),
              OCTET_STATUS_BACKEND_ERROR)
        << backend;
    // The output is untouched (octet.h's rule for failures).
    EXPECT_EQ(read_bytes(out.get(), OCTET_COMPONENT_DATA, 4), codes_before) << backend;
    std::vector<float> scalars_after;
    for (int32_t c : {OCTET_COMPONENT_SCALE, OCTET_COMPONENT_SCALE_INV, OCTET_COMPONENT_AMAX})
      scalars_after.push_back(read_floats(out.get(), c, 1)[0]);
    EXPECT_EQ(scalars_after, scalars_before) << backend;
    const std::string message = octet_last_error_message();
    EXPECT_NE(message.find("allreduce_max"), std::string::npos) << message;
    EXPECT_NE(message.find("OCTET_STATUS_BACKEND_ERROR"), std::string::npos) << message;
    EXPECT_EQ(world.counts.size(), 1u) << backend;
    ASSERT_EQ(octet_autocast_end(ctx.get()), OCTET_STATUS_SUCCESS) << octet_last_error_message();
    // Same history length, values, scale and recipe kind: the checkpoint
    // bytes are the same.
    EXPECT_EQ(save(q.get()), before) << backend;
  }
}

// On the device path a reduced quantize costs one copy to the host (the
// amax for the communicator) and nothing else.
TEST(CurrentAmaxReduction, OneCopyToTheHostPerQuantizeOnTheDevicePath) {
  ASSERT_TRUE(load_backend("counting", OCTET_COUNTING_PLUGIN_PATH)) << octet_last_error_message();
  Recipe recipe = make_current(OCTET_FORMAT_E4M3, 1);
  Context ctx = make_context("counting");
  FakeWorld world({8.0f});
  set_world(ctx.get(), &world);
  Quantizer q = make_quantizer(recipe.get(), OCTET_ROLE_INPUT);
  Tensor in = make_fp32(ctx.get(), 1, 4, {1.0f, -3.0f, 2.0f, 0.5f});
  Tensor out = make_tensor(ctx.get(), OCTET_DTYPE_E4M3, 1, 4, OCTET_USAGE_ROWWISE);
  void* handle = dlopen(OCTET_COUNTING_PLUGIN_PATH, RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(handle, nullptr);
  using Fn = void (*)(uint64_t*, uint64_t*);
  auto copies = reinterpret_cast<Fn>(dlsym(handle, "octet_test_counting_copies"));
  ASSERT_NE(copies, nullptr);
  uint64_t to0 = 0, from0 = 0, to1 = 0, from1 = 0;
  // The first quantize makes the state resident; count from the second.
  ASSERT_EQ(octet_quantizer_quantize(ctx.get(), q.get(), in.get(), out.get(), nullptr, nullptr),
            OCTET_STATUS_SUCCESS);
  copies(&to0, &from0);
  for (int i = 0; i < 3; ++i)
    ASSERT_EQ(octet_quantizer_quantize(ctx.get(), q.get(), in.get(), out.get(), nullptr, nullptr),
              OCTET_STATUS_SUCCESS)
        << octet_last_error_message();
  copies(&to1, &from1);
  dlclose(handle);
  EXPECT_EQ(to1 - to0, 3u);
  EXPECT_EQ(bits(info_of(q.get()).amax), bits(8.0f));
}

// Every parameter of `layer` set to seeded values of about 1 (FP32): a
// layer's parameters are not initialised by create.
void fill_parameters(octet_layer* layer, uint32_t seed) {
  size_t count = 0;
  ASSERT_EQ(octet_layer_parameter_count(layer, &count), OCTET_STATUS_SUCCESS);
  for (size_t i = 0; i < count; ++i) {
    octet_tensor* p = nullptr;
    ASSERT_EQ(octet_layer_get_parameter(layer, i, &p), OCTET_STATUS_SUCCESS);
    octet_tensor_info info{};
    info.struct_size = sizeof(info);
    ASSERT_EQ(octet_tensor_get_info(p, &info), OCTET_STATUS_SUCCESS);
    size_t n = 1;
    for (int32_t d = 0; d < info.ndim; ++d) n *= size_t(info.shape[d]);
    const std::vector<float> v = random_values(n, 1.0f, seed + uint32_t(i));
    ASSERT_EQ(octet_tensor_copy_from_host(p, OCTET_COMPONENT_DATA, v.data(), n * sizeof(float)), OCTET_STATUS_SUCCESS)
        << octet_last_error_message();
  }
}

// The layers quantize through the same path: a Linear's input quantizer
// under a reducing current recipe holds the global amax after a forward.
TEST(CurrentAmaxReduction, LayersReduceTheirQuantizersAmaxes) {
  Recipe recipe = make_current(OCTET_FORMAT_HYBRID, 1);
  for (const std::string& backend : backends()) {
    Context ctx = make_context(backend.c_str());
    FakeWorld world({1000.0f, 2000.0f});  // "elsewhere": 1000 for the input, 2000 for the weight
    set_world(ctx.get(), &world);
    octet_linear_options lo;
    ASSERT_EQ(octet_linear_options_init(&lo), OCTET_STATUS_SUCCESS);
    lo.in_features = 8;
    lo.out_features = 4;
    lo.recipe = recipe.get();
    octet_layer* raw = nullptr;
    ASSERT_EQ(octet_layer_create_linear(ctx.get(), &lo, &raw), OCTET_STATUS_SUCCESS) << octet_last_error_message();
    std::unique_ptr<octet_layer, void (*)(octet_layer*)> layer(raw, octet_layer_destroy);
    fill_parameters(layer.get(), 7);
    Tensor x = make_fp32(ctx.get(), 2, 8, random_values(16, 1.0f, 43));
    Tensor y = make_tensor(ctx.get(), OCTET_DTYPE_FP32, 2, 4);
    ASSERT_EQ(octet_layer_forward(layer.get(), x.get(), y.get(), 0, nullptr), OCTET_STATUS_SUCCESS)
        << backend << ": " << octet_last_error_message();
    // Input and weight quantized: their amaxes in one call of count 2,
    // the input's first, each the tensor's own amax.
    EXPECT_EQ(world.counts, (std::vector<size_t>{2u})) << backend;
    ASSERT_EQ(world.given.size(), 2u) << backend;
    EXPECT_EQ(bits(world.given[0]), bits(local_amax(read_floats(x.get(), OCTET_COMPONENT_DATA, 16)))) << backend;
    octet_tensor* w = nullptr;
    ASSERT_EQ(octet_layer_get_parameter(layer.get(), 0, &w), OCTET_STATUS_SUCCESS);
    EXPECT_EQ(bits(world.given[1]), bits(local_amax(read_floats(w, OCTET_COMPONENT_DATA, 32)))) << backend;
    octet_quantizer* input_q = nullptr;
    ASSERT_EQ(octet_layer_get_quantizer(layer.get(), 0, OCTET_ROLE_INPUT, &input_q), OCTET_STATUS_SUCCESS);
    EXPECT_EQ(info_of(input_q).amax, 1000.0f) << backend;
    EXPECT_EQ(info_of(input_q).scale, spec_scale(1000.0f, 448.0f, 0.0f, false)) << backend;
    // The weight's quantizer got the second reduced value, not the first.
    octet_quantizer* weight_q = nullptr;
    ASSERT_EQ(octet_layer_get_quantizer(layer.get(), 0, OCTET_ROLE_WEIGHT, &weight_q), OCTET_STATUS_SUCCESS);
    EXPECT_EQ(info_of(weight_q).amax, 2000.0f) << backend;
  }
}

// One batched call per step where the recipe allows: a LayerNormMLP's
// forward reduces FC1's input and both weights in one call (count 3), then
// FC2's input (count 1); its backward FC2's dy, then FC1's dh (each needs
// the previous result). The values each quantizer records are the reduced
// ones given back in the order sent.
TEST(CurrentAmaxReduction, LayerForwardBatchesItsAmaxesIntoOneCall) {
  Recipe recipe = make_current(OCTET_FORMAT_HYBRID, 1);
  for (const std::string& backend : backends()) {
    Context ctx = make_context(backend.c_str());
    // "Elsewhere": 100, 200, 300, 400, ... so each reduced value tells
    // which position of which call it came from.
    std::vector<float> others;
    for (int i = 1; i <= 16; ++i) others.push_back(100.0f * float(i));
    FakeWorld world(others);
    set_world(ctx.get(), &world);
    octet_linear_options lo;
    ASSERT_EQ(octet_linear_options_init(&lo), OCTET_STATUS_SUCCESS);
    lo.in_features = 8;
    lo.recipe = recipe.get();
    octet_layernorm_mlp_options mo;
    ASSERT_EQ(octet_layernorm_mlp_options_init(&mo), OCTET_STATUS_SUCCESS);
    mo.linear = &lo;
    mo.ffn_features = 16;
    octet_layer* raw = nullptr;
    ASSERT_EQ(octet_layer_create_layernorm_mlp(ctx.get(), &mo, &raw), OCTET_STATUS_SUCCESS)
        << octet_last_error_message();
    std::unique_ptr<octet_layer, void (*)(octet_layer*)> layer(raw, octet_layer_destroy);
    fill_parameters(layer.get(), 17);
    Tensor x = make_fp32(ctx.get(), 4, 8, random_values(32, 1.0f, 44));
    Tensor y = make_tensor(ctx.get(), OCTET_DTYPE_FP32, 4, 8);
    octet_saved* saved = nullptr;
    ASSERT_EQ(octet_layer_forward(layer.get(), x.get(), y.get(), 1, &saved), OCTET_STATUS_SUCCESS)
        << backend << ": " << octet_last_error_message();
    EXPECT_EQ(world.counts, (std::vector<size_t>{3u, 1u})) << backend << ": forward";
    auto amax_of = [&](int linear, int32_t role) {
      octet_quantizer* q = nullptr;
      EXPECT_EQ(octet_layer_get_quantizer(layer.get(), size_t(linear), role, &q), OCTET_STATUS_SUCCESS);
      return info_of(q).amax;
    };
    EXPECT_EQ(amax_of(0, OCTET_ROLE_INPUT), 100.0f) << backend;
    EXPECT_EQ(amax_of(0, OCTET_ROLE_WEIGHT), 200.0f) << backend;
    EXPECT_EQ(amax_of(1, OCTET_ROLE_WEIGHT), 300.0f) << backend;
    EXPECT_EQ(amax_of(1, OCTET_ROLE_INPUT), 400.0f) << backend;
    Tensor dy = make_fp32(ctx.get(), 4, 8, random_values(32, 1.0f, 45));
    Tensor dx = make_tensor(ctx.get(), OCTET_DTYPE_FP32, 4, 8);
    ASSERT_EQ(octet_layer_backward(layer.get(), &saved, dy.get(), dx.get(), 0), OCTET_STATUS_SUCCESS)
        << backend << ": " << octet_last_error_message();
    EXPECT_EQ(world.counts, (std::vector<size_t>{3u, 1u, 1u, 1u})) << backend << ": backward";
    EXPECT_EQ(amax_of(1, OCTET_ROLE_GRADIENT), 500.0f) << backend;
    EXPECT_EQ(amax_of(0, OCTET_ROLE_GRADIENT), 600.0f) << backend;
  }
}

// A Linear with weight_cache quantizes its weight once per step: the next
// forward of the step reduces the input alone.
TEST(CurrentAmaxReduction, ACachedWeightIsNotReducedAgain) {
  Recipe recipe = make_current(OCTET_FORMAT_HYBRID, 1);
  for (const std::string& backend : backends()) {
    Context ctx = make_context(backend.c_str());
    FakeWorld world({0.0f});
    set_world(ctx.get(), &world);
    octet_linear_options lo;
    ASSERT_EQ(octet_linear_options_init(&lo), OCTET_STATUS_SUCCESS);
    lo.in_features = 8;
    lo.out_features = 4;
    lo.recipe = recipe.get();
    lo.weight_cache = 1;
    octet_layer* raw = nullptr;
    ASSERT_EQ(octet_layer_create_linear(ctx.get(), &lo, &raw), OCTET_STATUS_SUCCESS) << octet_last_error_message();
    std::unique_ptr<octet_layer, void (*)(octet_layer*)> layer(raw, octet_layer_destroy);
    fill_parameters(layer.get(), 27);
    Tensor x = make_fp32(ctx.get(), 2, 8, random_values(16, 1.0f, 46));
    Tensor y = make_tensor(ctx.get(), OCTET_DTYPE_FP32, 2, 4);
    for (int i = 0; i < 2; ++i)
      ASSERT_EQ(octet_layer_forward(layer.get(), x.get(), y.get(), 0, nullptr), OCTET_STATUS_SUCCESS)
          << backend << ": " << octet_last_error_message();
    EXPECT_EQ(world.counts, (std::vector<size_t>{2u, 1u})) << backend;
  }
}

}  // namespace

namespace {

TEST(CurrentAmaxReduction, OptionsInitNeverOverrunsAnOlderCallersStructAndBadFlagsAreRefused) {
  // A binary built against ABI 1.1-1.4 calls the unsized symbol with the
  // older struct (it ends before reduce_amax): the bytes after it stay.
  const size_t old_size = offsetof(octet_current_scaling_options, reduce_amax);
  unsigned char buffer[sizeof(octet_current_scaling_options) + 16];
  std::memset(buffer, 0xAB, sizeof buffer);
  auto* o = reinterpret_cast<octet_current_scaling_options*>(buffer);
  ASSERT_EQ((octet_current_scaling_options_init)(o), OCTET_STATUS_SUCCESS);
  EXPECT_EQ(o->struct_size, old_size);
  EXPECT_EQ(o->format, OCTET_FORMAT_HYBRID);
  for (size_t i = old_size; i < sizeof buffer; ++i) EXPECT_EQ(buffer[i], 0xAB) << "byte " << i;
  // Such a struct creates a recipe without reduction (the default).
  octet_recipe* r = nullptr;
  ASSERT_EQ(octet_recipe_create_current(o, &r), OCTET_STATUS_SUCCESS) << octet_last_error_message();
  octet_recipe_destroy(r);
  // The sized form writes what it is told, at most the library's struct.
  ASSERT_EQ(octet_current_scaling_options_init_sized(o, sizeof buffer), OCTET_STATUS_SUCCESS);
  EXPECT_EQ(o->struct_size, sizeof(octet_current_scaling_options));
  EXPECT_EQ(o->reduce_amax, 0);
  for (size_t i = sizeof(octet_current_scaling_options); i < sizeof buffer; ++i) EXPECT_EQ(buffer[i], 0xAB);
  EXPECT_EQ(octet_current_scaling_options_init_sized(o, 4), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(octet_current_scaling_options_init_sized(nullptr, sizeof *o), OCTET_STATUS_INVALID_ARGUMENT);
  // reduce_amax is a flag.
  octet_current_scaling_options bad;
  ASSERT_EQ(octet_current_scaling_options_init(&bad), OCTET_STATUS_SUCCESS);
  bad.reduce_amax = 2;
  EXPECT_EQ(octet_recipe_create_current(&bad, &r), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(octet_last_error_message()).find("options->reduce_amax (2) must be 0 or 1"),
            std::string::npos)
      << octet_last_error_message();
}

}  // namespace
