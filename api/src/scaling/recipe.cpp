// Recipe creation: defaults, validation with messages naming the option,
// and the per-role facts (dtype, scaling mode) quantizers need.
#include "scaling/recipe.hpp"

#include <octet_reference/codecs.hpp>

#include <cmath>
#include <cstddef>

#include "runtime/context.hpp"
#include "runtime/error.hpp"
#include "runtime/versioned_struct.hpp"
#include "tensor/dtype.hpp"
#include "tensor/tensor.hpp"

namespace octet::core {
namespace {

octet_delayed_scaling_options delayed_defaults() {
  octet_delayed_scaling_options o{};
  o.struct_size = sizeof(o);
  o.margin = 0;
  o.interval = 1;
  o.format = OCTET_FORMAT_HYBRID;
  o.amax_history_len = 1024;
  o.amax_compute_algo = OCTET_AMAX_MAX;
  o.reduce_amax = 1;
  return o;
}
octet_current_scaling_options current_defaults() {
  octet_current_scaling_options o{};
  o.struct_size = sizeof(o);
  o.format = OCTET_FORMAT_HYBRID;
  return o;
}
octet_static_scaling_options static_defaults() {
  octet_static_scaling_options o{};
  o.struct_size = sizeof(o);
  o.format = OCTET_FORMAT_HYBRID;
  o.scale = 1.0f;
  return o;
}
octet_mxfp8_options mx_defaults() {
  octet_mxfp8_options o{};
  o.struct_size = sizeof(o);
  o.format = OCTET_FORMAT_E4M3;
  o.rounding = OCTET_MX_ROUND_RCEIL;
  return o;
}
octet_block_scaling_options block_defaults() {
  octet_block_scaling_options o{};
  o.struct_size = sizeof(o);
  o.format = OCTET_FORMAT_E4M3;
  return o;
}

octet_mxfp4_options mxfp4_defaults() {
  octet_mxfp4_options o{};
  o.struct_size = sizeof(o);
  o.rounding = OCTET_MX_ROUND_RCEIL;
  return o;
}
octet_nvfp4_options nvfp4_defaults() {
  octet_nvfp4_options o{};
  o.struct_size = sizeof(o);
  o.weight_2d = 1;
  o.stochastic_rounding = 1;
  o.hadamard_transform = 1;
  return o;
}
octet_rowwise_scaling_options rowwise_defaults() {
  octet_rowwise_scaling_options o{};
  o.struct_size = sizeof(o);
  o.format = OCTET_FORMAT_E4M3;
  o.amax_epsilon = 1e-12f;
  o.power_of_two_scales = 1;
  return o;
}

void require_format(int32_t format) {
  require(format >= OCTET_FORMAT_E4M3 && format <= OCTET_FORMAT_HYBRID_FNUZ, "options->format (", format,
          ") must be OCTET_FORMAT_E4M3, _E5M2, _HYBRID, _E4M3FNUZ, _E5M2FNUZ or _HYBRID_FNUZ");
}

void require_flag(int32_t value, const char* name) {
  require(value == 0 || value == 1, "options->", name, " (", value, ") must be 0 or 1");
}

void require_epsilon(float epsilon) {
  require(std::isfinite(epsilon) && epsilon >= 0.0f, "options->amax_epsilon (", epsilon,
          ") must be finite and >= 0");
}

void validate(const octet_delayed_scaling_options& o) {
  require(o.margin >= 0, "options->margin (", o.margin, ") must be >= 0: a margin divides the scale by 2^margin");
  require(o.margin <= 127, "options->margin (", o.margin, ") must be <= 127 (2^-margin must be an FP32 value)");
  require(o.interval >= 1, "options->interval (", o.interval, ") must be >= 1 (update every interval steps)");
  require_format(o.format);
  require(o.format != OCTET_FORMAT_E5M2 && o.format != OCTET_FORMAT_E5M2FNUZ, "options->format ",
          o.format == OCTET_FORMAT_E5M2 ? "OCTET_FORMAT_E5M2" : "OCTET_FORMAT_E5M2FNUZ",
          " is refused for delayed scaling: inputs and weights would be stored with 2 mantissa bits; use "
          "OCTET_FORMAT_HYBRID (E4M3 forward, E5M2 gradients) or OCTET_FORMAT_E4M3 (or their FNUZ twins)");
  require(o.amax_history_len >= 1, "options->amax_history_len (", o.amax_history_len,
          ") must be >= 1: the window holds at least the current step");
  require(o.amax_history_len <= (1 << 20), "options->amax_history_len (", o.amax_history_len,
          ") must be <= 1048576");
  require(o.amax_compute_algo == OCTET_AMAX_MOST_RECENT || o.amax_compute_algo == OCTET_AMAX_MAX ||
              o.amax_compute_algo == OCTET_AMAX_CALLBACK,
          "options->amax_compute_algo (", o.amax_compute_algo,
          ") must be OCTET_AMAX_MOST_RECENT, OCTET_AMAX_MAX or OCTET_AMAX_CALLBACK");
  require(o.amax_compute_algo != OCTET_AMAX_CALLBACK || o.amax_compute_callback != nullptr,
          "options->amax_compute_algo is OCTET_AMAX_CALLBACK but options->amax_compute_callback is NULL");
  require_flag(o.power_of_two_scales, "power_of_two_scales");
  require_flag(o.override_fprop, "override_fprop");
  require_flag(o.override_dgrad, "override_dgrad");
  require_flag(o.override_wgrad, "override_wgrad");
  require_flag(o.reduce_amax, "reduce_amax");
}

template <typename Fill>
void create(octet_recipe** recipe, Fill&& fill) {
  require(recipe != nullptr, "argument 'recipe' is NULL");
  auto state = std::make_shared<RecipeState>();
  fill(*state);
  *recipe = new octet_recipe{std::move(state)};
}

}  // namespace

float fp8_max_of(octet_dtype dtype) {
  octet::ref::Fp8Format format = octet::ref::Fp8Format::E4M3;
  octet::ref::fp8_format_of_dtype(dtype, &format);
  return octet::ref::fp8_max(format);
}

const char* recipe_kind_name(int32_t kind) {
  switch (kind) {
    case OCTET_RECIPE_DELAYED: return "delayed scaling";
    case OCTET_RECIPE_CURRENT: return "current scaling";
    case OCTET_RECIPE_STATIC: return "static scaling";
    case OCTET_RECIPE_MXFP8: return "MXFP8";
    case OCTET_RECIPE_BLOCK: return "float8 block scaling";
    case OCTET_RECIPE_MXFP4:
      return "MXFP4";
    case OCTET_RECIPE_NVFP4:
      return "NVFP4";
    case OCTET_RECIPE_ROWWISE:
      return "rowwise scaling";
    default: return "no recipe";
  }
}

void require_recipe_on_backend(const RecipeState& r, const ContextState& ctx, const char* where) {
  for (int32_t role : {OCTET_ROLE_INPUT, OCTET_ROLE_WEIGHT, OCTET_ROLE_GRADIENT}) {
    const octet_dtype dtype = r.dtype_for(role);
    const int32_t mode = r.scaling_mode_for(role);
    const char* role_name = role == OCTET_ROLE_INPUT ? "input" : role == OCTET_ROLE_WEIGHT ? "weight" : "gradient";
    if (!(ctx.caps.dtypes & OCTET_DTYPE_BIT(dtype)))
      fail(OCTET_STATUS_UNSUPPORTED, where, ": the ", recipe_kind_name(r.kind), " recipe stores its ", role_name,
           " role as ", dtype_name(dtype), ", a dtype backend '", ctx.backend->name,
           "' does not declare (its FP8 dtypes: ", fp8_dtype_list(ctx.caps.dtypes), ")");
    if (!(uint32_t(ctx.caps.scaling_modes) & uint32_t(mode)))
      fail(OCTET_STATUS_UNSUPPORTED, where, ": the ", recipe_kind_name(r.kind), " recipe scales its ", role_name,
           " role with ", scaling_mode_name(mode), ", a scaling mode backend '", ctx.backend->name,
           "' does not declare (it declares ", scaling_mode_list(ctx.caps.scaling_modes), ")");
  }
}

void require_role(int32_t role) {
  require(role == OCTET_ROLE_INPUT || role == OCTET_ROLE_WEIGHT || role == OCTET_ROLE_GRADIENT, "argument 'role' (",
          role, ") must be OCTET_ROLE_INPUT, OCTET_ROLE_WEIGHT or OCTET_ROLE_GRADIENT");
}

octet_dtype RecipeState::dtype_for(int32_t role) const {
  if (fp4()) return OCTET_DTYPE_E2M1;
  switch (format) {
    case OCTET_FORMAT_E4M3:
      return OCTET_DTYPE_E4M3;
    case OCTET_FORMAT_E5M2:
      return OCTET_DTYPE_E5M2;
    case OCTET_FORMAT_E4M3FNUZ:
      return OCTET_DTYPE_E4M3FNUZ;
    case OCTET_FORMAT_E5M2FNUZ:
      return OCTET_DTYPE_E5M2FNUZ;
    case OCTET_FORMAT_HYBRID_FNUZ:
      return role == OCTET_ROLE_GRADIENT ? OCTET_DTYPE_E5M2FNUZ : OCTET_DTYPE_E4M3FNUZ;
    default:
      return role == OCTET_ROLE_GRADIENT ? OCTET_DTYPE_E5M2 : OCTET_DTYPE_E4M3;  // HYBRID
  }
}

int32_t RecipeState::scaling_mode_for(int32_t role) const {
  if (kind == OCTET_RECIPE_MXFP8) return OCTET_SCALING_MXFP8_1X32;
  if (kind == OCTET_RECIPE_MXFP4) return OCTET_SCALING_MXFP4_1X32;
  if (kind == OCTET_RECIPE_NVFP4)
    return role == OCTET_ROLE_WEIGHT && nvfp4.weight_2d ? OCTET_SCALING_NVFP4_16X16 : OCTET_SCALING_NVFP4_1X16;
  if (kind == OCTET_RECIPE_BLOCK) return role == OCTET_ROLE_WEIGHT ? OCTET_SCALING_BLOCK_128X128 : OCTET_SCALING_BLOCK_1X128;
  if (kind == OCTET_RECIPE_ROWWISE) return OCTET_SCALING_PER_ROW;
  return OCTET_SCALING_PER_TENSOR;
}

BlockParams RecipeState::block_params() const {
  BlockParams p;
  if (kind == OCTET_RECIPE_MXFP8) p.e8m0_rounding = mx.rounding;
  if (kind == OCTET_RECIPE_BLOCK) {
    p.power_of_two = block.power_of_two_scales;
    p.amax_epsilon = block.amax_epsilon;
  }
  if (kind == OCTET_RECIPE_ROWWISE) {
    p.power_of_two = rowwise.power_of_two_scales;
    p.amax_epsilon = rowwise.amax_epsilon;
  }
  return p;
}

Fp4Params RecipeState::fp4_params(int32_t role, uint64_t offset, int64_t rows) const {
  Fp4Params p;
  p.offset = offset;
  if (kind == OCTET_RECIPE_MXFP4) {
    p.e8m0_rounding = mxfp4.rounding;
    p.stochastic_rounding = role == OCTET_ROLE_GRADIENT && mxfp4.stochastic_rounding != 0;
    p.seed = mxfp4.seed;
  } else if (kind == OCTET_RECIPE_NVFP4) {
    p.stochastic_rounding = role == OCTET_ROLE_GRADIENT && nvfp4.stochastic_rounding != 0;
    p.hadamard_transform = role != OCTET_ROLE_WEIGHT && nvfp4.hadamard_transform != 0 && rows % 16 == 0;
    p.seed = nvfp4.seed;
  }
  return p;
}

}  // namespace octet::core

using namespace octet::core;

extern "C" {

OCTET_API octet_status octet_delayed_scaling_options_init(octet_delayed_scaling_options* options) {
  return guarded("octet_delayed_scaling_options_init", [&] { init_options(options, delayed_defaults()); });
}
// The struct as users' ABI 1.1-1.4 callers know it: it ends where the 1.5 fields
// begin (after its tail padding, reserved_padding). The unsized symbol must
// never write past that.
constexpr size_t kCurrentOptionsSize14 = offsetof(octet_current_scaling_options, reduce_amax);

OCTET_API octet_status(octet_current_scaling_options_init)(octet_current_scaling_options* options) {
  return guarded("octet_current_scaling_options_init", [&] {
    require(options != nullptr, "argument 'options' is NULL");
    write_defaults(current_defaults(), options, kCurrentOptionsSize14);
  });
}
OCTET_API octet_status octet_current_scaling_options_init_sized(octet_current_scaling_options* options,
                                                                size_t struct_size) {
  return guarded("octet_current_scaling_options_init_sized",
                 [&] { init_sized(options, current_defaults(), struct_size); });
}
OCTET_API octet_status octet_static_scaling_options_init(octet_static_scaling_options* options) {
  return guarded("octet_static_scaling_options_init", [&] { init_options(options, static_defaults()); });
}
OCTET_API octet_status octet_mxfp8_options_init(octet_mxfp8_options* options) {
  return guarded("octet_mxfp8_options_init", [&] { init_options(options, mx_defaults()); });
}
OCTET_API octet_status octet_block_scaling_options_init(octet_block_scaling_options* options) {
  return guarded("octet_block_scaling_options_init", [&] { init_options(options, block_defaults()); });
}
OCTET_API octet_status octet_mxfp4_options_init(octet_mxfp4_options* options) {
  return guarded("octet_mxfp4_options_init", [&] { init_options(options, mxfp4_defaults()); });
}
OCTET_API octet_status octet_nvfp4_options_init(octet_nvfp4_options* options) {
  return guarded("octet_nvfp4_options_init", [&] { init_options(options, nvfp4_defaults()); });
}

OCTET_API octet_status octet_rowwise_scaling_options_init(octet_rowwise_scaling_options* options) {
  return guarded("octet_rowwise_scaling_options_init", [&] { init_options(options, rowwise_defaults()); });
}

OCTET_API octet_status octet_recipe_create_delayed(const octet_delayed_scaling_options* options, octet_recipe** recipe) {
  return guarded("octet_recipe_create_delayed", [&] {
    octet_delayed_scaling_options o = read_versioned(options, delayed_defaults(), "options");
    validate(o);
    create(recipe, [&](RecipeState& r) {
      r.kind = OCTET_RECIPE_DELAYED;
      r.format = o.format;
      r.delayed = o;
    });
  });
}

OCTET_API octet_status octet_recipe_create_current(const octet_current_scaling_options* options, octet_recipe** recipe) {
  return guarded("octet_recipe_create_current", [&] {
    octet_current_scaling_options o = read_versioned(options, current_defaults(), "options");
    require_format(o.format);
    require_epsilon(o.amax_epsilon);
    require_flag(o.power_of_two_scales, "power_of_two_scales");
    require_flag(o.reduce_amax, "reduce_amax");
    create(recipe, [&](RecipeState& r) {
      r.kind = OCTET_RECIPE_CURRENT;
      r.format = o.format;
      r.current = o;
    });
  });
}

OCTET_API octet_status octet_recipe_create_static(const octet_static_scaling_options* options, octet_recipe** recipe) {
  return guarded("octet_recipe_create_static", [&] {
    octet_static_scaling_options o = read_versioned(options, static_defaults(), "options");
    require_format(o.format);
    require(std::isfinite(o.scale) && o.scale > 0.0f, "options->scale (", o.scale, ") must be finite and > 0");
    require_flag(o.observe, "observe");
    create(recipe, [&](RecipeState& r) {
      r.kind = OCTET_RECIPE_STATIC;
      r.format = o.format;
      r.fixed = o;
    });
  });
}

OCTET_API octet_status octet_recipe_create_mxfp8(const octet_mxfp8_options* options, octet_recipe** recipe) {
  return guarded("octet_recipe_create_mxfp8", [&] {
    octet_mxfp8_options o = read_versioned(options, mx_defaults(), "options");
    require_format(o.format);
    require(o.format <= OCTET_FORMAT_HYBRID, "options->format (", o.format,
            ") is an FNUZ format; MXFP8 (OCP Microscaling) defines E4M3 and E5M2 elements only: use "
            "OCTET_FORMAT_E4M3, _E5M2 or _HYBRID");
    require(o.rounding == OCTET_MX_ROUND_RCEIL || o.rounding == OCTET_MX_ROUND_FLOOR, "options->rounding (",
            o.rounding, ") must be OCTET_MX_ROUND_RCEIL or OCTET_MX_ROUND_FLOOR");
    create(recipe, [&](RecipeState& r) {
      r.kind = OCTET_RECIPE_MXFP8;
      r.format = o.format;
      r.mx = o;
    });
  });
}

OCTET_API octet_status octet_recipe_create_block(const octet_block_scaling_options* options, octet_recipe** recipe) {
  return guarded("octet_recipe_create_block", [&] {
    octet_block_scaling_options o = read_versioned(options, block_defaults(), "options");
    require_format(o.format);
    require_epsilon(o.amax_epsilon);
    require_flag(o.power_of_two_scales, "power_of_two_scales");
    create(recipe, [&](RecipeState& r) {
      r.kind = OCTET_RECIPE_BLOCK;
      r.format = o.format;
      r.block = o;
    });
  });
}

OCTET_API octet_status octet_recipe_create_mxfp4(const octet_mxfp4_options* options, octet_recipe** recipe) {
  return guarded("octet_recipe_create_mxfp4", [&] {
    octet_mxfp4_options o = read_versioned(options, mxfp4_defaults(), "options");
    require(o.rounding == OCTET_MX_ROUND_RCEIL || o.rounding == OCTET_MX_ROUND_FLOOR, "options->rounding (", o.rounding,
            ") must be OCTET_MX_ROUND_RCEIL or OCTET_MX_ROUND_FLOOR");
    require_flag(o.stochastic_rounding, "stochastic_rounding");
    create(recipe, [&](RecipeState& r) {
      r.kind = OCTET_RECIPE_MXFP4;
      r.format = -1;  // E2M1 elements: no octet_fp8_format
      r.mxfp4 = o;
    });
  });
}

OCTET_API octet_status octet_recipe_create_nvfp4(const octet_nvfp4_options* options, octet_recipe** recipe) {
  return guarded("octet_recipe_create_nvfp4", [&] {
    octet_nvfp4_options o = read_versioned(options, nvfp4_defaults(), "options");
    require_flag(o.weight_2d, "weight_2d");
    require_flag(o.stochastic_rounding, "stochastic_rounding");
    require_flag(o.hadamard_transform, "hadamard_transform");
    require(o.reserved == 0, "options->reserved (", o.reserved, ") must be 0");
    create(recipe, [&](RecipeState& r) {
      r.kind = OCTET_RECIPE_NVFP4;
      r.format = -1;
      r.nvfp4 = o;
    });
  });
}

OCTET_API octet_status octet_recipe_create_rowwise(const octet_rowwise_scaling_options* options,
                                                   octet_recipe** recipe) {
  return guarded("octet_recipe_create_rowwise", [&] {
    octet_rowwise_scaling_options o = read_versioned(options, rowwise_defaults(), "options");
    require_format(o.format);
    require_epsilon(o.amax_epsilon);
    require_flag(o.power_of_two_scales, "power_of_two_scales");
    require_flag(o.high_precision_wgrad, "high_precision_wgrad");
    create(recipe, [&](RecipeState& r) {
      r.kind = OCTET_RECIPE_ROWWISE;
      r.format = o.format;
      r.rowwise = o;
    });
  });
}

OCTET_API void octet_recipe_destroy(octet_recipe* recipe) {
  if (recipe == nullptr) return;
  guarded("octet_recipe_destroy", [&] {
    require_live_handle(recipe, HandleKind::Recipe, "recipe");
    delete recipe;
  });
}

OCTET_API octet_status octet_recipe_get_info(const octet_recipe* recipe, octet_recipe_info* info) {
  return guarded("octet_recipe_get_info", [&] {
    require_live_handle(recipe, HandleKind::Recipe, "recipe");
    require_struct(info, info ? info->struct_size : 0, "info");
    const RecipeState& r = *recipe->state;
    octet_recipe_info out{};
    out.struct_size = sizeof(out);
    out.kind = r.kind;
    out.format = r.format;
    if (r.kind == OCTET_RECIPE_DELAYED) {
      out.override_fprop = r.delayed.override_fprop;
      out.override_dgrad = r.delayed.override_dgrad;
      out.override_wgrad = r.delayed.override_wgrad;
    }
    if (r.kind == OCTET_RECIPE_ROWWISE) out.override_wgrad = r.rowwise.high_precision_wgrad;
    write_versioned(out, info, "info");
  });
}

OCTET_API octet_status octet_recipe_tensor_format(const octet_recipe* recipe, int32_t role, int32_t* dtype,
                                                  int32_t* scaling_mode) {
  return guarded("octet_recipe_tensor_format", [&] {
    require_live_handle(recipe, HandleKind::Recipe, "recipe");
    require_role(role);
    require(dtype != nullptr, "argument 'dtype' is NULL");
    require(scaling_mode != nullptr, "argument 'scaling_mode' is NULL");
    *dtype = recipe->state->dtype_for(role);
    *scaling_mode = recipe->state->scaling_mode_for(role);
  });
}

}  // extern "C"
