// Training steps of the layers copy nothing to the host on a backend with
// the scaling entries (docs/recipes.md, "Where the scaling state lives"): on
// a GPU a copy to the host is a synchronisation that stalls the stream. The
// "counting" test plugin (the reference's table with counted copies) shows
// the copies; "counting_host" (the same without the scaling entries: the
// host path) must give the same bits, so the device path is checked for
// results as well as for copies. Every recipe kind and every layer kind.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <octet/octet.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "recipe_test_helpers.hpp"

namespace {

using namespace recipes_test;

struct LayerDel {
  void operator()(octet_layer* l) const { octet_layer_destroy(l); }
};
using Layer = std::unique_ptr<octet_layer, LayerDel>;

uint64_t copies_to_host() {
  void* handle = dlopen(OCTET_COUNTING_PLUGIN_PATH, RTLD_NOW | RTLD_NOLOAD);
  EXPECT_NE(handle, nullptr) << "the counting plugin is not loaded";
  if (handle == nullptr) return 0;
  using Fn = void (*)(uint64_t*, uint64_t*);
  auto fn = reinterpret_cast<Fn>(dlsym(handle, "octet_test_counting_copies"));
  uint64_t to = 0, from = 0;
  if (fn != nullptr) fn(&to, &from);
  dlclose(handle);
  return to;
}

enum class Kind { Delayed, Current, Static, StaticObserved, Mxfp8, Block };
const char* name_of(Kind k) {
  switch (k) {
    case Kind::Delayed: return "delayed";
    case Kind::Current: return "current";
    case Kind::Static: return "static";
    case Kind::StaticObserved: return "static+observe";
    case Kind::Mxfp8: return "mxfp8";
    case Kind::Block: return "block";
  }
  return "?";
}

Recipe make_recipe(Kind kind) {
  octet_recipe* r = nullptr;
  switch (kind) {
    case Kind::Delayed: {
      octet_delayed_scaling_options o;
      EXPECT_EQ(octet_delayed_scaling_options_init(&o), OCTET_STATUS_SUCCESS);
      o.amax_history_len = 4;
      EXPECT_EQ(octet_recipe_create_delayed(&o, &r), OCTET_STATUS_SUCCESS);
      break;
    }
    case Kind::Current: EXPECT_EQ(octet_recipe_create_current(nullptr, &r), OCTET_STATUS_SUCCESS); break;
    case Kind::Static:
    case Kind::StaticObserved: {
      octet_static_scaling_options o;
      EXPECT_EQ(octet_static_scaling_options_init(&o), OCTET_STATUS_SUCCESS);
      o.scale = 16.0f;
      o.observe = kind == Kind::StaticObserved ? 1 : 0;
      EXPECT_EQ(octet_recipe_create_static(&o, &r), OCTET_STATUS_SUCCESS);
      break;
    }
    case Kind::Mxfp8: EXPECT_EQ(octet_recipe_create_mxfp8(nullptr, &r), OCTET_STATUS_SUCCESS); break;
    case Kind::Block: EXPECT_EQ(octet_recipe_create_block(nullptr, &r), OCTET_STATUS_SUCCESS); break;
  }
  return Recipe(r);
}

constexpr int64_t kRows = 64, kHidden = 128, kFfn = 256;

Layer make_layer(octet_context* ctx, int which) {
  octet_linear_options lo;
  EXPECT_EQ(octet_linear_options_init(&lo), OCTET_STATUS_SUCCESS);
  lo.in_features = kHidden;
  lo.out_features = kHidden;
  octet_layer* raw = nullptr;
  if (which == 0) {
    EXPECT_EQ(octet_layer_create_linear(ctx, &lo, &raw), OCTET_STATUS_SUCCESS) << octet_last_error_message();
  } else if (which == 1) {
    octet_layernorm_linear_options o;
    EXPECT_EQ(octet_layernorm_linear_options_init(&o), OCTET_STATUS_SUCCESS);
    o.linear = &lo;
    EXPECT_EQ(octet_layer_create_layernorm_linear(ctx, &o, &raw), OCTET_STATUS_SUCCESS) << octet_last_error_message();
  } else {
    octet_layernorm_mlp_options o;
    EXPECT_EQ(octet_layernorm_mlp_options_init(&o), OCTET_STATUS_SUCCESS);
    o.linear = &lo;
    o.ffn_features = kFfn;
    EXPECT_EQ(octet_layer_create_layernorm_mlp(ctx, &o, &raw), OCTET_STATUS_SUCCESS) << octet_last_error_message();
  }
  Layer layer(raw);
  // Deterministic parameters (they start unspecified).
  size_t count = 0;
  EXPECT_EQ(octet_layer_parameter_count(raw, &count), OCTET_STATUS_SUCCESS);
  for (size_t i = 0; i < count; ++i) {
    octet_tensor* p = nullptr;
    EXPECT_EQ(octet_layer_get_parameter(raw, i, &p), OCTET_STATUS_SUCCESS);
    octet_tensor_info info{};
    info.struct_size = sizeof(info);
    EXPECT_EQ(octet_tensor_get_info(p, &info), OCTET_STATUS_SUCCESS);
    size_t n = 1;
    for (int32_t d = 0; d < info.ndim; ++d) n *= size_t(info.shape[d]);
    std::vector<float> v = random_values(n, 0.05f, uint32_t(100 + i));
    if (info.ndim == 1) std::fill(v.begin(), v.end(), 1.0f);  // norm weights, biases
    EXPECT_EQ(octet_tensor_copy_from_host(p, OCTET_COMPONENT_DATA, v.data(), n * sizeof(float)), OCTET_STATUS_SUCCESS);
  }
  return layer;
}

struct StepResult {
  uint64_t copies_in_last_step = 0;
  std::vector<float> y, dx, grads;  // compared as bits
  std::vector<uint8_t> quantizer_bytes;
};

// Three training steps (forward, backward, end of the autocast scope) with
// every tensor made beforehand; copies counted over the last step.
StepResult train(const char* backend, Kind kind, int which) {
  StepResult result;
  Recipe recipe = make_recipe(kind);
  Context ctx = make_context(backend);
  Layer layer = make_layer(ctx.get(), which);
  Tensor x = make_fp32(ctx.get(), kRows, kHidden, random_values(size_t(kRows * kHidden), 1.0f, 11));
  Tensor dy = make_fp32(ctx.get(), kRows, kHidden, random_values(size_t(kRows * kHidden), 0.01f, 12));
  Tensor y = make_tensor(ctx.get(), OCTET_DTYPE_FP32, kRows, kHidden);
  Tensor dx = make_tensor(ctx.get(), OCTET_DTYPE_FP32, kRows, kHidden);
  for (int step = 0; step < 3; ++step) {
    const uint64_t before = std::string(backend) == "counting" ? copies_to_host() : 0;
    EXPECT_EQ(octet_autocast_begin(ctx.get(), recipe.get()), OCTET_STATUS_SUCCESS);
    octet_saved* saved = nullptr;
    EXPECT_EQ(octet_layer_forward(layer.get(), x.get(), y.get(), 1, &saved), OCTET_STATUS_SUCCESS)
        << octet_last_error_message();
    EXPECT_EQ(octet_layer_backward(layer.get(), &saved, dy.get(), dx.get(), 0), OCTET_STATUS_SUCCESS)
        << octet_last_error_message();
    EXPECT_EQ(octet_autocast_end(ctx.get()), OCTET_STATUS_SUCCESS) << octet_last_error_message();
    if (std::string(backend) == "counting") result.copies_in_last_step = copies_to_host() - before;
  }
  result.y = read_floats(y.get(), OCTET_COMPONENT_DATA, size_t(kRows * kHidden));
  result.dx = read_floats(dx.get(), OCTET_COMPONENT_DATA, size_t(kRows * kHidden));
  size_t count = 0;
  EXPECT_EQ(octet_layer_parameter_count(layer.get(), &count), OCTET_STATUS_SUCCESS);
  for (size_t i = 0; i < count; ++i) {
    octet_tensor* g = nullptr;
    EXPECT_EQ(octet_layer_get_gradient(layer.get(), i, &g), OCTET_STATUS_SUCCESS);
    octet_tensor_info info{};
    info.struct_size = sizeof(info);
    EXPECT_EQ(octet_tensor_get_info(g, &info), OCTET_STATUS_SUCCESS);
    size_t n = 1;
    for (int32_t d = 0; d < info.ndim; ++d) n *= size_t(info.shape[d]);
    for (float v : read_floats(g, OCTET_COMPONENT_DATA, n)) result.grads.push_back(v);
  }
  for (size_t linear = 0; linear < (which == 2 ? 2u : 1u); ++linear) {
    for (int32_t role : {OCTET_ROLE_INPUT, OCTET_ROLE_WEIGHT, OCTET_ROLE_GRADIENT}) {
      octet_quantizer* q = nullptr;
      EXPECT_EQ(octet_layer_get_quantizer(layer.get(), linear, role, &q), OCTET_STATUS_SUCCESS);
      for (uint8_t b : save(q)) result.quantizer_bytes.push_back(b);
    }
  }
  return result;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(LayerHostCopies, NoCopyToTheHostInASteadyTrainingStepAndTheHostPathAgrees) {
  ASSERT_TRUE(load_backend("counting", OCTET_COUNTING_PLUGIN_PATH)) << octet_last_error_message();
  ASSERT_TRUE(load_backend("counting_host", OCTET_COUNTING_HOST_PLUGIN_PATH)) << octet_last_error_message();
  for (Kind kind : {Kind::Delayed, Kind::Current, Kind::Static, Kind::StaticObserved, Kind::Mxfp8, Kind::Block}) {
    for (int which = 0; which < 3; ++which) {
      const std::string where = std::string(name_of(kind)) + ", layer " + std::to_string(which);
      const StepResult device = train("counting", kind, which);
      if (kind == Kind::StaticObserved) {
        // The documented exception: observation statistics come to the host.
        EXPECT_GT(device.copies_in_last_step, 0u) << where;
      } else {
        EXPECT_EQ(device.copies_in_last_step, 0u) << where;
      }
      const StepResult host = train("counting_host", kind, which);
      EXPECT_TRUE(same_bits(device.y, host.y)) << where << ": output";
      EXPECT_TRUE(same_bits(device.dx, host.dx)) << where << ": grad_input";
      EXPECT_TRUE(same_bits(device.grads, host.grads)) << where << ": parameter gradients";
      EXPECT_EQ(device.quantizer_bytes, host.quantizer_bytes) << where << ": quantizer checkpoints";
    }
  }
}

}  // namespace
