// Creating layers: option defaults and checks, the parameters and
// quantizers of each kind, and the entry points that create and destroy a
// layer.
#include <atomic>
#include <string>

#include "layers/layer_state.hpp"
#include "layers/layer_tensors.hpp"
#include "runtime/error.hpp"
#include "runtime/versioned_struct.hpp"

namespace octet::core {
namespace {

std::atomic<uint64_t> next_layer_id{1};

octet_linear_options linear_defaults() {
  octet_linear_options o{};
  o.struct_size = sizeof(o);
  o.bias = 1;
  o.params_dtype = OCTET_DTYPE_FP32;
  o.weight_storage = OCTET_WEIGHTS_HIGH_PRECISION;
  return o;
}

octet_layernorm_linear_options layernorm_linear_defaults() {
  octet_layernorm_linear_options o{};
  o.struct_size = sizeof(o);
  o.norm = OCTET_LAYER_LAYERNORM;
  o.epsilon = 1e-5f;
  return o;
}

octet_layernorm_mlp_options layernorm_mlp_defaults() {
  octet_layernorm_mlp_options o{};
  o.struct_size = sizeof(o);
  o.norm = OCTET_LAYER_LAYERNORM;
  o.epsilon = 1e-5f;
  o.activation = OCTET_LAYER_GELU;
  return o;
}

void require_flag(int32_t v, const char* name) {
  require(v == 0 || v == 1, "options->", name, " (", v, ") must be 0 or 1");
}

void check_linear_options(const octet_linear_options& o, const char* prefix) {
  require(o.in_features >= 1, prefix, "in_features (", o.in_features, ") must be >= 1");
  require(o.params_dtype == OCTET_DTYPE_FP32 || o.params_dtype == OCTET_DTYPE_BF16, prefix, "params_dtype (",
          o.params_dtype, ") must be OCTET_DTYPE_FP32 or OCTET_DTYPE_BF16");
  require(o.weight_storage == OCTET_WEIGHTS_HIGH_PRECISION || o.weight_storage == OCTET_WEIGHTS_FP8_ONLY, prefix,
          "weight_storage (", o.weight_storage, ") must be an octet_weight_storage");
  require_flag(o.bias, "bias");
  require_flag(o.save_original_input, "save_original_input");
  require_flag(o.minimize_memory, "minimize_memory");
  require_flag(o.weight_cache, "weight_cache");
  require_flag(o.skip_weight_allocation, "skip_weight_allocation");
  if (o.weight_storage == OCTET_WEIGHTS_FP8_ONLY) {
    require(o.recipe != nullptr, prefix, "recipe is NULL: FP8-only weights need the layer's recipe at creation");
    require(!o.skip_weight_allocation, prefix, "skip_weight_allocation cannot be combined with FP8-only weights");
  }
}

void add_param(LayerState& layer, const std::string& name, int32_t ndim, int64_t d0, int64_t d1, bool matrix) {
  Parameter param;
  param.name = name;
  param.ndim = ndim;
  param.shape[0] = d0;
  param.shape[1] = d1;
  octet_tensor_desc d = tensor_desc(layer.options.params_dtype, ndim, d0, d1);
  if (matrix && fp8_only(layer)) {
    d.dtype = layer.recipe->dtype_for(OCTET_ROLE_WEIGHT);
    d.usages = OCTET_USAGE_ROWWISE;
    d.scaling_mode = layer.recipe->scaling_mode_for(OCTET_ROLE_WEIGHT);
  }
  if (!(matrix && layer.options.skip_weight_allocation)) {
    param.value = make_tensor(layer.ctx, d, OCTET_MEMORY_PARAMETERS);
    param.value->state.recategorize(OCTET_MEMORY_PARAMETERS);  // FP8-only weights are the parameters
  }
  layer.params.push_back(std::move(param));
}

void add_linear(LayerState& layer, const std::string& prefix, int64_t in, int64_t out, const std::string& suffix = "") {
  LinearUnit linear;
  linear.in = in;
  linear.out = out;
  linear.weight = layer.params.size();
  add_param(layer, prefix + "weight" + suffix, 2, out, in, true);
  if (layer.options.bias) {
    linear.bias = int(layer.params.size());
    add_param(layer, prefix + "bias" + suffix, 1, out, 0, false);
  }
  for (int32_t role = 0; role < 3; ++role)
    linear.quantizers[size_t(role)] =
        std::shared_ptr<octet_quantizer>(new octet_quantizer{new_quantizer_state(role, layer.recipe)});
  layer.linears.push_back(std::move(linear));
}

void check_norm_options(int32_t norm, float epsilon) {
  require(norm == OCTET_LAYER_LAYERNORM || norm == OCTET_LAYER_RMSNORM, "options->norm (", norm,
          ") must be OCTET_LAYER_LAYERNORM or OCTET_LAYER_RMSNORM");
  require(epsilon >= 0.0f, "options->epsilon (", epsilon, ") must be >= 0");
}

// The normalisation over in_features and its parameters, which stay in
// params_dtype even with FP8-only weights.
void add_norm(LayerState& layer, int32_t norm, float epsilon) {
  layer.norm = norm;
  layer.epsilon = epsilon;
  layer.norm_weight = int(layer.params.size());
  add_param(layer, "norm_weight", 1, layer.options.in_features, 0, false);
  if (norm == OCTET_LAYER_LAYERNORM) {
    layer.norm_bias = int(layer.params.size());
    add_param(layer, "norm_bias", 1, layer.options.in_features, 0, false);
  }
}

std::unique_ptr<octet_layer> new_layer(octet_context* context, const octet_linear_options* linear, LayerKind kind,
                                       const char* prefix) {
  const ContextState& ctx = context_arg(context);
  require(linear != nullptr, "argument '", prefix, "' is NULL");
  octet_linear_options o = read_versioned(linear, linear_defaults(), prefix);
  check_linear_options(o, (std::string(prefix) + "->").c_str());
  auto made = std::make_unique<octet_layer>();
  LayerState& layer = made->state;
  layer.ctx = context->state;
  layer.id = next_layer_id++;
  layer.kind = kind;
  layer.options = o;
  if (o.recipe != nullptr) {
    require_live_handle(o.recipe, HandleKind::Recipe, (std::string(prefix) + "->recipe").c_str());
    layer.recipe = o.recipe->state;
    require_recipe_on_backend(*layer.recipe, ctx, (std::string(prefix) + "->recipe").c_str());
  }
  layer.options.recipe = nullptr;  // kept through layer.recipe
  return made;
}

octet_grouped_linear_options grouped_linear_defaults() {
  octet_grouped_linear_options o{};
  o.struct_size = sizeof(o);
  return o;
}

}  // namespace
}  // namespace octet::core

using namespace octet::core;

extern "C" {

OCTET_API octet_status octet_linear_options_init(octet_linear_options* options) {
  return guarded("octet_linear_options_init", [&] { init_options(options, linear_defaults()); });
}

OCTET_API octet_status octet_layernorm_linear_options_init(octet_layernorm_linear_options* options) {
  return guarded("octet_layernorm_linear_options_init", [&] { init_options(options, layernorm_linear_defaults()); });
}

OCTET_API octet_status octet_layernorm_mlp_options_init(octet_layernorm_mlp_options* options) {
  return guarded("octet_layernorm_mlp_options_init", [&] { init_options(options, layernorm_mlp_defaults()); });
}

OCTET_API octet_status octet_layer_create_linear(octet_context* context, const octet_linear_options* options,
                                                 octet_layer** layer) {
  return guarded("octet_layer_create_linear", [&] {
    require(layer != nullptr, "argument 'layer' is NULL");
    auto made = new_layer(context, options, LayerKind::Linear, "options");
    LayerState& state = made->state;
    require(state.options.out_features >= 1, "options->out_features (", state.options.out_features, ") must be >= 1");
    add_linear(state, "", state.options.in_features, state.options.out_features);
    *layer = made.release();
  });
}

OCTET_API octet_status octet_layer_create_layernorm_linear(octet_context* context,
                                                           const octet_layernorm_linear_options* options,
                                                           octet_layer** layer) {
  return guarded("octet_layer_create_layernorm_linear", [&] {
    require(layer != nullptr, "argument 'layer' is NULL");
    octet_layernorm_linear_options o = read_versioned(options, layernorm_linear_defaults(), "options");
    check_norm_options(o.norm, o.epsilon);
    auto made = new_layer(context, o.linear, LayerKind::LayerNormLinear, "options->linear");
    LayerState& state = made->state;
    require(state.options.out_features >= 1, "options->linear->out_features (", state.options.out_features,
            ") must be >= 1");
    require(!state.options.save_original_input,
            "options->linear->save_original_input applies to Linear only (a LayerNormLinear's GEMM input is its own "
            "normalisation output)");
    add_norm(state, o.norm, o.epsilon);
    add_linear(state, "", state.options.in_features, state.options.out_features);
    *layer = made.release();
  });
}

OCTET_API octet_status octet_layer_create_layernorm_mlp(octet_context* context,
                                                        const octet_layernorm_mlp_options* options,
                                                        octet_layer** layer) {
  return guarded("octet_layer_create_layernorm_mlp", [&] {
    require(layer != nullptr, "argument 'layer' is NULL");
    octet_layernorm_mlp_options o = read_versioned(options, layernorm_mlp_defaults(), "options");
    check_norm_options(o.norm, o.epsilon);
    require(o.activation == OCTET_LAYER_GELU || o.activation == OCTET_LAYER_SWIGLU, "options->activation (",
            o.activation, ") must be OCTET_LAYER_GELU or OCTET_LAYER_SWIGLU");
    require(o.ffn_features >= 1, "options->ffn_features (", o.ffn_features, ") must be >= 1");
    auto made = new_layer(context, o.linear, LayerKind::LayerNormMlp, "options->linear");
    LayerState& state = made->state;
    require(!state.options.save_original_input,
            "options->linear->save_original_input applies to Linear only (the MLP's GEMM inputs are its own "
            "intermediate tensors)");
    state.activation = o.activation;
    state.ffn = o.ffn_features;
    const int64_t hidden = state.options.in_features;
    add_norm(state, o.norm, o.epsilon);
    add_linear(state, "fc1_", hidden, state.activation == OCTET_LAYER_SWIGLU ? 2 * state.ffn : state.ffn);
    add_linear(state, "fc2_", state.ffn, hidden);
    *layer = made.release();
  });
}

OCTET_API octet_status octet_grouped_linear_options_init(octet_grouped_linear_options* options) {
  return guarded("octet_grouped_linear_options_init", [&] { init_options(options, grouped_linear_defaults()); });
}

OCTET_API octet_status octet_layer_create_grouped_linear(octet_context* context,
                                                         const octet_grouped_linear_options* options,
                                                         octet_layer** layer) {
  return guarded("octet_layer_create_grouped_linear", [&] {
    require(layer != nullptr, "argument 'layer' is NULL");
    octet_grouped_linear_options o = read_versioned(options, grouped_linear_defaults(), "options");
    require(o.num_groups >= 1 && o.num_groups <= 65536, "options->num_groups (", o.num_groups,
            ") must be in [1, 65536]");
    require_flag(o.shared_quantizers, "shared_quantizers");
    auto made = new_layer(context, o.linear, LayerKind::GroupedLinear, "options->linear");
    LayerState& state = made->state;
    require(state.options.out_features >= 1, "options->linear->out_features (", state.options.out_features,
            ") must be >= 1");
    require(!state.options.save_original_input,
            "options->linear->save_original_input does not apply to a GroupedLinear (each expert keeps its own "
            "rows of the input); set it to 0");
    state.shared_quantizers = o.shared_quantizers != 0;
    for (int64_t g = 0; g < o.num_groups; ++g) {
      add_linear(state, "", state.options.in_features, state.options.out_features, std::to_string(g));
      if (state.shared_quantizers && g > 0) state.linears.back().quantizers = state.linears.front().quantizers;
    }
    *layer = made.release();
  });
}

OCTET_API void octet_layer_destroy(octet_layer* layer) {
  if (layer == nullptr) return;
  std::shared_ptr<ContextState> keep;  // outlives the call's hold on the context
  guarded("octet_layer_destroy", [&] {
    keep = layer_arg(layer).ctx;
    delete layer;
  });
}

}  // extern "C"
