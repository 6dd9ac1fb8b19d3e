// Quantizers: quantize through the recipe, record amaxes, update scales.
#include "quantizer.hpp"

#include <cmath>
#include <cstring>

#include "autocast.hpp"
#include "backend_info.hpp"
#include "dtype.hpp"
#include "error.hpp"
#include "tensor.hpp"

namespace octet::core {
namespace {

QuantizerState& quantizer_arg(octet_quantizer* q) {
  require(q != nullptr, "argument 'quantizer' is NULL");
  return *q->state;
}

// The recipe for one quantize call: the quantizer's own, else the innermost
// autocast scope's.
std::shared_ptr<const RecipeState> recipe_for_call(const QuantizerState& q, const ContextState& ctx) {
  if (q.recipe) return q.recipe;
  auto r = autocast_recipe(ctx);
  require(r != nullptr,
          "the quantizer was created without a recipe and no autocast scope is open on the context: open one with "
          "octet_autocast_begin or give the quantizer a recipe");
  return r;
}

void require_output_format(const RecipeState& r, int32_t role, const TensorState& out) {
  const octet_dtype dtype = r.dtype_for(role);
  const int32_t mode = r.scaling_mode_for(role);
  require(out.dtype == dtype, "tensor 'output' is ", dtype_name(out.dtype), " but ", recipe_kind_name(r.kind),
          " with this format stores this role in ", dtype_name(dtype), " (see octet_recipe_tensor_format)");
  require(out.scaling_mode == mode, "tensor 'output' has scaling mode ", scaling_mode_name(out.scaling_mode), " but ",
          recipe_kind_name(r.kind), " quantizes this role with ", scaling_mode_name(mode),
          " (see octet_recipe_tensor_format)");
}

float amax_on_backend(const std::shared_ptr<ContextState>& context, const TensorState& in) {
  const ContextState& ctx = *context;
  require_entry(ctx, ctx.api().amax != nullptr, "amax");
  Buffer result(context, sizeof(float), OCTET_MEMORY_WORKSPACE);
  octet_matrix_view view = in.rowwise_view();
  call_backend(ctx, "amax", [&] { return ctx.api().amax(ctx.handle, &view, static_cast<float*>(result.data())); });
  float value = 0.0f;
  result.copy_to_host(&value, sizeof(value));
  return value;
}

}  // namespace
}  // namespace octet::core

using namespace octet::core;

extern "C" {

OCTET_API octet_status octet_quantizer_create(const octet_recipe* recipe, int32_t role, octet_quantizer** quantizer) {
  return guarded("octet_quantizer_create", [&] {
    require(quantizer != nullptr, "argument 'quantizer' is NULL");
    require_role(role);
    auto q = std::make_shared<QuantizerState>();
    q->role = role;
    if (recipe != nullptr) {
      q->recipe = recipe->state;
      if (q->recipe->kind == OCTET_RECIPE_DELAYED) q->resize_history(size_t(q->recipe->delayed.amax_history_len));
      if (q->recipe->kind == OCTET_RECIPE_STATIC) {
        q->scale = q->recipe->fixed.scale;
        q->scale_inv = 1.0f / q->scale;
      }
    }
    *quantizer = new octet_quantizer{std::move(q)};
  });
}

OCTET_API void octet_quantizer_destroy(octet_quantizer* quantizer) { delete quantizer; }

OCTET_API octet_status octet_quantizer_quantize(octet_context* context, octet_quantizer* quantizer,
                                                const octet_tensor* input, octet_tensor* output,
                                                const octet_quantize_options* options, octet_quantize_stats* stats) {
  return guarded("octet_quantizer_quantize", [&] {
    require(context != nullptr, "argument 'context' is NULL");
    QuantizerState& q = quantizer_arg(quantizer);
    ContextState& ctx = *context->state;
    const TensorState& in = tensor_arg(input, ctx, "input");
    TensorState& out = tensor_arg(output, ctx, "output");
    if (stats != nullptr) require_struct(stats, stats->struct_size, "stats");
    octet_quantize_options o = read_quantize_options(options);
    uint32_t usages = check_quantize(ctx, in, out, o.usages);
    std::shared_ptr<const RecipeState> recipe = recipe_for_call(q, ctx);
    const RecipeState& r = *recipe;
    require_output_format(r, q.role, out);

    float scale = q.scale;
    if (r.kind == OCTET_RECIPE_STATIC) scale = r.fixed.scale;
    if (r.kind == OCTET_RECIPE_CURRENT)
      scale = current_scale(amax_on_backend(context->state, in), fp8_max_of(out.dtype), r.current.amax_epsilon,
                            r.current.power_of_two_scales != 0);
    if (r.per_tensor()) out.scalars.copy_from_host(&scale, sizeof(scale), sizeof(float) * kScale);

    const bool observe = r.kind == OCTET_RECIPE_STATIC && r.fixed.observe;
    octet_quantize_stats collected{};
    collected.struct_size = sizeof(collected);
    quantize_into(context->state, in, out, usages, o.saturate != 0, r.block_params(),
                  (stats != nullptr || observe) ? &collected : nullptr);

    // Commit the state only once the quantize succeeded.
    float amax = 0.0f;
    out.scalars.copy_to_host(&amax, sizeof(amax), sizeof(float) * kAmax);
    if (r.kind == OCTET_RECIPE_DELAYED) {
      q.resize_history(size_t(r.delayed.amax_history_len));
      q.record(amax);
    } else {
      q.resize_history(1);
      q.history[q.current] = amax;  // no history: the last tensor's amax
    }
    if (r.per_tensor()) {
      q.scale = scale;
      q.scale_inv = 1.0f / scale;
    }
    if (observe) {
      q.observed_amax = std::fmax(q.observed_amax, collected.amax);
      q.observed_saturated += collected.saturated_count;
      q.observed_total += collected.total_count;
    }
    q.last_recipe = recipe;
    autocast_note_use(ctx, quantizer->state);
    if (stats != nullptr) write_versioned(collected, stats, "stats");
  });
}

OCTET_API octet_status octet_quantizer_record_amax(octet_quantizer* quantizer, float amax) {
  return guarded("octet_quantizer_record_amax", [&] { quantizer_arg(quantizer).record(amax); });
}

OCTET_API octet_status octet_quantizer_update_scale(octet_quantizer* quantizer) {
  return guarded("octet_quantizer_update_scale", [&] {
    QuantizerState& q = quantizer_arg(quantizer);
    const RecipeState* r = q.effective();
    require(r != nullptr, "the quantizer has no recipe and was never used in an autocast scope: nothing to apply");
    apply_scale_update(q, *r);
  });
}

OCTET_API octet_status octet_quantizer_set_scale(octet_quantizer* quantizer, float scale) {
  return guarded("octet_quantizer_set_scale", [&] {
    QuantizerState& q = quantizer_arg(quantizer);
    require(std::isfinite(scale) && scale > 0.0f, "argument 'scale' (", scale, ") must be finite and > 0");
    q.scale = scale;
    q.scale_inv = 1.0f / scale;
  });
}

OCTET_API octet_status octet_quantizer_get_info(const octet_quantizer* quantizer, octet_quantizer_info* info) {
  return guarded("octet_quantizer_get_info", [&] {
    require(quantizer != nullptr, "argument 'quantizer' is NULL");
    require_struct(info, info ? info->struct_size : 0, "info");
    const QuantizerState& q = *quantizer->state;
    octet_quantizer_info out{};
    out.struct_size = sizeof(out);
    out.role = q.role;
    out.recipe_kind = q.effective() ? q.effective()->kind : -1;
    out.scale = q.scale;
    out.scale_inv = q.scale_inv;
    out.amax = q.history[q.current];
    out.amax_history_len = uint32_t(q.history.size());
    out.update_count = q.update_count;
    out.observed_amax = q.observed_amax;
    out.observed_saturated = q.observed_saturated;
    out.observed_total = q.observed_total;
    out.saturated_fraction = q.observed_total ? double(q.observed_saturated) / double(q.observed_total) : 0.0;
    write_versioned(out, info, "info");
  });
}

OCTET_API octet_status octet_quantizer_get_amax_history(const octet_quantizer* quantizer, float* out, size_t length) {
  return guarded("octet_quantizer_get_amax_history", [&] {
    require(quantizer != nullptr, "argument 'quantizer' is NULL");
    require(out != nullptr, "argument 'out' is NULL");
    const QuantizerState& q = *quantizer->state;
    require(length == q.history.size(), "argument 'length' (", length, ") must equal amax_history_len (",
            q.history.size(), ")");
    std::vector<float> newest = q.history_newest_first();
    std::memcpy(out, newest.data(), length * sizeof(float));
  });
}

}  // extern "C"
