// Rows for the layers (ABI 1.3): Linear, LayerNormLinear (LayerNorm and
// RMSNorm) and LayerNormMLP (GELU and SwiGLU), one training step (forward,
// backward) in high precision and under every recipe kind, on the target and
// on the reference with the same parameters and data; the output, the input
// gradient and every parameter gradient must match bit for bit.
//
// Why bit for bit is a fair demand of a backend whose GEMMs sum in another
// order: the data make every dot product of every GEMM have at most one
// non-zero term. Weight matrices have at most one non-zero per row and per
// column (a scaled permutation), and the output gradient at most one
// non-zero row per column, which the backward keeps through the layer (the
// weight and bias gradients sum over rows). With per-tensor scales that are
// powers of two (the recipes below ask for them; MXFP8 scales are powers of
// two anyway), a one-term sum is exact in any order and any association of
// the scales, so what is left to compare is the rest of the layer: the fused
// quantize (codes, scales, transposed copies), the norm and activation
// kernels, bias epilogues and gradients, accumulation and the usages of
// docs/layers.md, "Precision", which numerics.md requires to be exact. The
// GEMMs' summation with dense data is the subject of the gemm rows.
//
// The plain reference is the oracle here, so it gets no layer rows; its
// layers are tested by tests/layers against independent implementations.
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "validate/row_families.hpp"

namespace octet_cli {
namespace {

struct Deleter {
  void operator()(octet_recipe* r) const { octet_recipe_destroy(r); }
  void operator()(octet_layer* l) const { octet_layer_destroy(l); }
};
using RecipePtr = std::unique_ptr<octet_recipe, Deleter>;
using LayerPtr = std::unique_ptr<octet_layer, Deleter>;

// Ragged for 32- and 128-element blocks.
constexpr int64_t kTokens = 48, kHidden = 160;

enum class LayerKind { Linear, NormLinear, Mlp };

struct LayerCase {
  std::string name;
  LayerKind kind;
  int32_t norm = OCTET_LAYER_LAYERNORM;
  int32_t activation = OCTET_LAYER_GELU;
  int64_t ffn = kHidden;  // FC1 is [ffn, hidden] (GELU) or [2 ffn, hidden] (SwiGLU): square either way
};

const std::vector<LayerCase>& layer_cases() {
  static const std::vector<LayerCase> cases = {
      {"linear", LayerKind::Linear},
      {"layernorm_linear layernorm", LayerKind::NormLinear, OCTET_LAYER_LAYERNORM},
      {"layernorm_linear rmsnorm", LayerKind::NormLinear, OCTET_LAYER_RMSNORM},
      {"layernorm_mlp layernorm gelu", LayerKind::Mlp, OCTET_LAYER_LAYERNORM, OCTET_LAYER_GELU, kHidden},
      {"layernorm_mlp rmsnorm swiglu", LayerKind::Mlp, OCTET_LAYER_RMSNORM, OCTET_LAYER_SWIGLU, kHidden / 2},
  };
  return cases;
}

// The recipes, each with power-of-two scales; null: high precision.
struct RecipeCase {
  std::string name;
  std::function<octet_recipe*()> make;
};

const std::vector<RecipeCase>& recipe_cases() {
  static const std::vector<RecipeCase> cases = {
      {"high precision", [] { return static_cast<octet_recipe*>(nullptr); }},
      {"delayed",
       [] {
         octet_delayed_scaling_options o;
         octet::check(octet_delayed_scaling_options_init(&o));
         o.amax_history_len = 4;
         o.power_of_two_scales = 1;
         octet_recipe* r = nullptr;
         octet::check(octet_recipe_create_delayed(&o, &r));
         return r;
       }},
      {"current",
       [] {
         octet_current_scaling_options o;
         octet::check(octet_current_scaling_options_init(&o));
         o.power_of_two_scales = 1;
         octet_recipe* r = nullptr;
         octet::check(octet_recipe_create_current(&o, &r));
         return r;
       }},
      {"static",
       [] {
         octet_static_scaling_options o;
         octet::check(octet_static_scaling_options_init(&o));
         o.scale = 8.0f;
         octet_recipe* r = nullptr;
         octet::check(octet_recipe_create_static(&o, &r));
         return r;
       }},
      {"mxfp8",
       [] {
         octet_recipe* r = nullptr;
         octet::check(octet_recipe_create_mxfp8(nullptr, &r));
         return r;
       }},
      {"block",
       [] {
         octet_block_scaling_options o;
         octet::check(octet_block_scaling_options_init(&o));
         o.power_of_two_scales = 1;
         octet_recipe* r = nullptr;
         octet::check(octet_recipe_create_block(&o, &r));
         return r;
       }},
      {"rowwise",
       [] {
         octet_recipe* r = nullptr;
         octet::check(octet_recipe_create_rowwise(nullptr, &r));  // power-of-two scales by default
         return r;
       }},
  };
  return cases;
}

// A power of two in [2^-2, 2^2] with a sign, from an index.
float scaled_one(int64_t i) { return std::ldexp((i % 3 == 0) ? -1.0f : 1.0f, int(i % 5) - 2); }

// Values with at most 8 significant bits (exact in BF16 and in FP32 products).
std::vector<float> short_values(size_t n, std::mt19937_64& rng, float lo, float hi) {
  std::vector<float> v = uniform_floats(n, rng, lo, hi);
  for (float& x : v) x = octet_bf16_decode(octet_bf16_encode(x));
  return v;
}

// The values of a weight [rows, cols]: one non-zero per row and column at
// most. Square: a permutation; [hidden, ffn] with ffn < hidden: ffn rows
// (an injective map of the columns) hold one each.
std::vector<float> one_term_weight(int64_t rows, int64_t cols, int64_t multiplier, int64_t offset) {
  std::vector<float> w(size_t(rows * cols), 0.0f);
  if (rows == cols) {
    for (int64_t r = 0; r < rows; ++r) w[size_t(r * cols + (r * multiplier + offset) % cols)] = scaled_one(r);
  } else {
    for (int64_t c = 0; c < cols; ++c) w[size_t(((c * multiplier + offset) % rows) * cols + c)] = scaled_one(c);
  }
  return w;
}

int64_t element_count(const octet_tensor* t, std::vector<int64_t>* shape = nullptr) {
  octet_tensor_info info{};
  info.struct_size = sizeof(info);
  octet::check(octet_tensor_get_info(t, &info));
  int64_t n = 1;
  if (shape != nullptr) shape->clear();
  for (int32_t d = 0; d < info.ndim; ++d) {
    n *= info.shape[d];
    if (shape != nullptr) shape->push_back(info.shape[d]);
  }
  return n;
}

void fill(octet_tensor* t, octet_dtype dtype, const std::vector<int64_t>& shape, const std::vector<float>& values) {
  const HostArray a = encode_array(dtype, shape, values);
  octet::check(octet_tensor_copy_from_host(t, OCTET_COMPONENT_DATA, a.bytes.data(), a.bytes.size()));
}

HostArray read(const octet_tensor* t, octet_dtype dtype) {
  std::vector<int64_t> shape;
  element_count(t, &shape);
  HostArray a = make_array(dtype, shape);
  octet::check(octet_tensor_copy_to_host(t, OCTET_COMPONENT_DATA, a.bytes.data(), a.bytes.size()));
  return a;
}

octet::Tensor make_plain(octet::Context& ctx, octet_dtype dtype, int64_t rows, int64_t cols) {
  return octet::Tensor::create(ctx, dtype, {rows, cols});
}

struct StepOutputs {
  std::vector<std::string> names;  // "output", "grad_input", then the parameters' names
  std::vector<HostArray> values;
};

// One training step of `c` under `recipe` (null: high precision) on ctx.
StepOutputs train_step(octet::Context& ctx, const LayerCase& c, octet_recipe* recipe, octet_dtype params,
                       uint64_t seed) {
  octet_linear_options lo;
  octet::check(octet_linear_options_init(&lo));
  lo.in_features = kHidden;
  lo.out_features = kHidden;
  lo.bias = 1;
  lo.params_dtype = params;
  lo.recipe = recipe;
  octet_layer* raw = nullptr;
  if (c.kind == LayerKind::Linear) {
    octet::check(octet_layer_create_linear(ctx.get(), &lo, &raw));
  } else if (c.kind == LayerKind::NormLinear) {
    octet_layernorm_linear_options o;
    octet::check(octet_layernorm_linear_options_init(&o));
    o.linear = &lo;
    o.norm = c.norm;
    octet::check(octet_layer_create_layernorm_linear(ctx.get(), &o, &raw));
  } else {
    octet_layernorm_mlp_options o;
    octet::check(octet_layernorm_mlp_options_init(&o));
    o.linear = &lo;
    o.norm = c.norm;
    o.activation = c.activation;
    o.ffn_features = c.ffn;
    octet::check(octet_layer_create_layernorm_mlp(ctx.get(), &o, &raw));
  }
  LayerPtr layer(raw);

  // Parameters: one-term weights, short values elsewhere.
  std::mt19937_64 rng(seed);
  size_t count = 0;
  octet::check(octet_layer_parameter_count(layer.get(), &count));
  std::vector<std::string> names;
  int64_t weight_index = 0;
  for (size_t i = 0; i < count; ++i) {
    const char* name = nullptr;
    octet::check(octet_layer_parameter_name(layer.get(), i, &name));
    names.emplace_back(name);
    octet_tensor* p = nullptr;
    octet::check(octet_layer_get_parameter(layer.get(), i, &p));
    std::vector<int64_t> shape;
    const int64_t n = element_count(p, &shape);
    std::vector<float> values;
    if (shape.size() == 2) {
      values = one_term_weight(shape[0], shape[1], 7 + 4 * weight_index, 3 + weight_index);
      ++weight_index;
    } else if (names.back() == "norm_weight") {
      values = short_values(size_t(n), rng, 0.5f, 1.5f);
    } else {
      values = short_values(size_t(n), rng, -0.25f, 0.25f);
    }
    fill(p, params, shape, values);
  }

  octet::Tensor x = make_plain(ctx, params, kTokens, kHidden);
  octet::Tensor y = make_plain(ctx, params, kTokens, kHidden);
  octet::Tensor dy = make_plain(ctx, params, kTokens, kHidden);
  octet::Tensor dx = make_plain(ctx, params, kTokens, kHidden);
  fill(x.get(), params, {kTokens, kHidden}, short_values(size_t(kTokens * kHidden), rng, -3.0f, 3.0f));
  // One non-zero row per column of the output gradient.
  std::vector<float> g(size_t(kTokens * kHidden), 0.0f);
  const std::vector<float> g_values = short_values(size_t(kHidden), rng, -1.0f, 1.0f);
  for (int64_t j = 0; j < kHidden; ++j) g[size_t(((j * 5 + 1) % kTokens) * kHidden + j)] = g_values[size_t(j)];
  fill(dy.get(), params, {kTokens, kHidden}, g);

  octet_saved* saved = nullptr;
  octet::check(octet_layer_forward(layer.get(), x.get(), y.get(), 1, &saved));
  const octet_status s = octet_layer_backward(layer.get(), &saved, dy.get(), dx.get(), 0);
  octet_saved_destroy(saved);  // NULL once a backward ran; else still ours
  octet::check(s);

  StepOutputs out;
  out.names = {"output", "grad_input"};
  out.values.push_back(read(y.get(), params));
  out.values.push_back(read(dx.get(), params));
  for (size_t i = 0; i < count; ++i) {
    octet_tensor* grad = nullptr;
    octet::check(octet_layer_get_gradient(layer.get(), i, &grad));
    out.names.push_back("grad " + names[i]);
    out.values.push_back(read(grad, params));
  }
  return out;
}

void layer_row(const ValidationRun& run, const LayerCase& c, const RecipeCase& r, octet_dtype params) {
  const std::string name =
      "layer " + c.name + " " + r.name + (params == OCTET_DTYPE_BF16 ? " bf16" : "") + " fwd+bwd (one-term sums)";
  run.row(name, [&](RowCheck& check) {
    check.run_case(name, [&] {
      RecipePtr recipe(r.make());
      const StepOutputs want = train_step(*run.reference, c, recipe.get(), params, run.seed);
      const StepOutputs got = train_step(*run.context, c, recipe.get(), params, run.seed);
      for (size_t i = 0; i < want.values.size(); ++i) {
        const std::string difference = compare_arrays(got.values[i], want.values[i]);
        check.exact(difference.empty() ? "" : want.names[i] + ": " + difference);
      }
    });
  });
}

}  // namespace

void check_layers(const ValidationRun& run) {
  if (run.target.is_plain_reference()) return;  // the oracle (see the top of this file)
  for (const LayerCase& c : layer_cases())
    for (const RecipeCase& r : recipe_cases()) layer_row(run, c, r, OCTET_DTYPE_FP32);
  // BF16 parameters: the Linear under each recipe.
  for (const RecipeCase& r : recipe_cases()) layer_row(run, layer_cases()[0], r, OCTET_DTYPE_BF16);
}

}  // namespace octet_cli
