// Quantizers: quantize through the recipe and record the amax; the
// octet_quantizer_* entry points.
#include "scaling/quantizer.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "ops/quantize.hpp"
#include "runtime/communicator.hpp"
#include "runtime/error.hpp"
#include "runtime/versioned_struct.hpp"
#include "scaling/autocast_scope.hpp"
#include "scaling/scale_update.hpp"
#include "tensor/dtype.hpp"
#include "tensor/tensor.hpp"

namespace octet::core {
namespace {

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

float allreduce_amax(const ContextState& ctx, float amax) {
  communicator_allreduce_max(ctx, &amax, 1, "nothing was quantized and the quantizer is unchanged");
  return amax;
}

}  // namespace

bool reduces_amax(const ContextState& ctx, const RecipeState& r) {
  return r.kind == OCTET_RECIPE_CURRENT && r.current.reduce_amax != 0 && has_communicator(ctx);
}

std::vector<float> reduce_amaxes(const std::shared_ptr<ContextState>& ctx, const RecipeState& r,
                                 const std::vector<const TensorState*>& inputs) {
  if (!reduces_amax(*ctx, r) || inputs.empty()) return {};
  std::vector<float> amaxes;
  amaxes.reserve(inputs.size());
  for (const TensorState* in : inputs) amaxes.push_back(amax_on_backend(ctx, *in));
  communicator_allreduce_max(*ctx, amaxes.data(), amaxes.size(),
                             "nothing was quantized and the quantizers are unchanged");
  return amaxes;
}

UsedScale quantizer_prepare(const std::shared_ptr<ContextState>& context, QuantizerState& q, const RecipeState& r,
                            const TensorState& in, TensorState& out, const float* reduced_amax) {
  const ContextState& ctx = *context;
  UsedScale used;
  if (device_path(ctx, r)) {
    used.on_device = true;
    if (!r.per_tensor()) return used;  // block recipes: scales per block, from the data
    if (r.kind == OCTET_RECIPE_STATIC) {
      out.scalars.copy_from_host(&r.fixed.scale, sizeof(float), sizeof(float) * kScale);
      return used;
    }
    if (r.kind == OCTET_RECIPE_DELAYED) {
      // [scale, scale_inv] into the tensor's SCALE, SCALE_INV: from the
      // state when it is resident here (whatever its history length, which
      // the commit adjusts), else from the host.
      if (q.resident && q.resident->ctx.get() == context.get()) {
        copy_floats(ctx, static_cast<const float*>(q.resident->state.data()), out.scalar(kScale), 2);
      } else {
        sync_host(q);
        const float pair[2] = {q.scale, q.scale_inv};
        out.scalars.copy_from_host(pair, sizeof pair, sizeof(float) * kScale);
      }
      return used;
    }
    if (reduces_amax(ctx, r)) {
      // The one host round trip of this path (the communicator works on host
      // floats), done before `out` is touched: a failing communicator
      // leaves the output as it was.
      used.amax_reduced = true;
      used.reduced_amax = reduced_amax != nullptr ? *reduced_amax : allreduce_amax(ctx, amax_on_backend(context, in));
      out.scalars.copy_from_host(&used.reduced_amax, sizeof(float), sizeof(float) * kAmax);
    } else {
      require_entry(ctx, ctx.api().amax != nullptr, "amax");
      octet_matrix_view view = in.rowwise_view();
      call_backend(ctx, "amax", [&] { return ctx.api().amax(ctx.handle, &view, out.scalar(kAmax)); });
    }
    octet_scale_from_amax_args a{};
    a.struct_size = sizeof(a);
    a.amax = out.scalar(kAmax);
    a.fp8_max = fp8_max_of(out.dtype);
    a.epsilon = r.current.amax_epsilon;
    a.power_of_two = r.current.power_of_two_scales != 0 ? 1 : 0;
    a.scale_out = out.scalar(kScale);
    a.scale_inv_out = out.scalar(kScaleInv);
    call_backend(ctx, "scale_from_amax", [&] { return ctx.api().scale_from_amax(ctx.handle, &a); });
    return used;
  }
  release_to_host(q);
  if (!r.per_tensor()) return used;  // block recipes: scales per block, from the data
  used.host = q.scale;
  if (r.kind == OCTET_RECIPE_STATIC) used.host = r.fixed.scale;
  if (r.kind == OCTET_RECIPE_CURRENT) {
    float amax = 0.0f;
    if (reduces_amax(ctx, r)) {
      used.amax_reduced = true;
      used.reduced_amax = amax =
          reduced_amax != nullptr ? *reduced_amax : allreduce_amax(ctx, amax_on_backend(context, in));
    } else {
      amax = amax_on_backend(context, in);
    }
    used.host = current_scale(amax, fp8_max_of(out.dtype), r.current.amax_epsilon, r.current.power_of_two_scales != 0);
  }
  out.scalars.copy_from_host(&used.host, sizeof(float), sizeof(float) * kScale);
  return used;
}

void quantizer_commit(const std::shared_ptr<ContextState>& context, const std::shared_ptr<QuantizerState>& state,
                      const std::shared_ptr<const RecipeState>& recipe, const TensorState& out, const UsedScale& used,
                      const octet_quantize_stats* observed) {
  QuantizerState& q = *state;
  const RecipeState& r = *recipe;
  if (used.on_device) {
    const ContextState& ctx = *context;
    if (r.kind == OCTET_RECIPE_DELAYED) {
      make_resident(q, context, size_t(r.delayed.amax_history_len));
      float* slot = static_cast<float*>(q.resident->state.data()) + 2 + q.current;
      call_backend(ctx, "amax_record", [&] { return ctx.api().amax_record(ctx.handle, out.scalar(kAmax), slot); });
    } else if (r.per_tensor()) {
      // Current and static scaling keep no history: [scale, scale_inv, amax]
      // of the tensor is the state [scale, scale_inv, history[0]]; with a
      // reduced amax, that one is history[0].
      make_resident(q, context, 1);
      float* device_state = static_cast<float*>(q.resident->state.data());
      copy_floats(ctx, out.scalar(kScale), device_state, used.amax_reduced ? 2 : 3);
      if (used.amax_reduced) q.resident->state.copy_from_host(&used.reduced_amax, sizeof(float), sizeof(float) * 2);
    } else {
      // Block recipes: only the last tensor's amax (the per-tensor scale
      // stays as it was, as on the host path).
      make_resident(q, context, 1);
      copy_floats(ctx, out.scalar(kAmax), static_cast<float*>(q.resident->state.data()) + 2, 1);
    }
    q.host_current = false;
  } else {
    float amax = used.reduced_amax;
    if (!used.amax_reduced) out.scalars.copy_to_host(&amax, sizeof(amax), sizeof(float) * kAmax);
    if (r.kind == OCTET_RECIPE_DELAYED) {
      q.resize_history(size_t(r.delayed.amax_history_len));
      q.record(amax);
    } else {
      q.resize_history(1);
      q.history[q.current] = amax;  // no history: the last tensor's amax
    }
    if (r.per_tensor()) {
      q.scale = used.host;
      q.scale_inv = 1.0f / used.host;
    }
  }
  if (observed != nullptr) {
    q.observed_amax = std::fmax(q.observed_amax, observed->amax);
    q.observed_saturated += observed->saturated_count;
    q.observed_total += observed->total_count;
  }
  q.last_recipe = recipe;
  autocast_note_use(*context, state);
}

UsedScale quantize_through(const std::shared_ptr<ContextState>& ctx, const std::shared_ptr<QuantizerState>& q,
                           const std::shared_ptr<const RecipeState>& r, const TensorState& in, TensorState& out,
                           uint32_t usages, bool saturate, octet_quantize_stats* stats, const float* reduced_amax) {
  const bool observe = r->observes();
  octet_quantize_stats collected{};
  collected.struct_size = sizeof(collected);
  const UsedScale used = quantizer_prepare(ctx, *q, *r, in, out, reduced_amax);
  const Fp4Params fp4 = r->fp4_params(q->role, q->stream_offset, in.rows);
  quantize_into(ctx, in, out, usages, saturate, r->block_params(), (stats != nullptr || observe) ? &collected : nullptr,
                r->fp4() ? &fp4 : nullptr);
  if (r->fp4()) q->stream_offset += 2;
  // Committed only once the quantize succeeded.
  quantizer_commit(ctx, q, r, out, used, observe ? &collected : nullptr);
  if (stats != nullptr) *stats = collected;
  return used;
}

QuantizerState& quantizer_arg(const octet_quantizer* q, const char* name) {
  require_live_handle(q, HandleKind::Quantizer, name);
  if (q->state->resident) enter_context(*q->state->resident->ctx);
  return *q->state;
}

}  // namespace octet::core

using namespace octet::core;

extern "C" {

OCTET_API octet_status octet_quantizer_create(const octet_recipe* recipe, int32_t role, octet_quantizer** quantizer) {
  return guarded("octet_quantizer_create", [&] {
    require(quantizer != nullptr, "argument 'quantizer' is NULL");
    require_role(role);
    if (recipe != nullptr) require_live_handle(recipe, HandleKind::Recipe, "recipe");
    *quantizer = new octet_quantizer{new_quantizer_state(role, recipe != nullptr ? recipe->state : nullptr)};
  });
}

OCTET_API void octet_quantizer_destroy(octet_quantizer* quantizer) {
  if (quantizer == nullptr) return;
  std::shared_ptr<QuantizerState> keep;  // outlives the call's hold on a context
  guarded("octet_quantizer_destroy", [&] {
    quantizer_arg(quantizer);  // a destroyed quantizer is refused before anything is read
    keep = quantizer->state;
    delete quantizer;
  });
}

OCTET_API octet_status octet_quantizer_quantize(octet_context* context, octet_quantizer* quantizer,
                                                const octet_tensor* input, octet_tensor* output,
                                                const octet_quantize_options* options, octet_quantize_stats* stats) {
  return guarded("octet_quantizer_quantize", [&] {
    ContextState& ctx = context_arg(context);
    QuantizerState& q = quantizer_arg(quantizer);
    const TensorState& in = tensor_arg(input, ctx, "input");
    TensorState& out = tensor_arg(output, ctx, "output");
    if (stats != nullptr) require_struct(stats, stats->struct_size, "stats");
    octet_quantize_options o = read_quantize_options(options);
    uint32_t usages = check_quantize(ctx, in, out, o.usages);
    require(o.stochastic_rounding == 0 && o.hadamard_transform == 0,
            "options->stochastic_rounding and options->hadamard_transform must be 0 for a quantizer: its recipe "
            "decides them (octet_nvfp4_options, octet_mxfp4_options) and its stream counter gives the offset");
    std::shared_ptr<const RecipeState> recipe = recipe_for_call(q, ctx);
    require_output_format(*recipe, q.role, out);

    octet_quantize_stats collected{};
    collected.struct_size = sizeof(collected);
    quantize_through(context->state, quantizer->state, recipe, in, out, usages, o.saturate != 0,
                     stats != nullptr ? &collected : nullptr);
    if (stats != nullptr) write_versioned(collected, stats, "stats");
  });
}

OCTET_API octet_status octet_quantizer_record_amax(octet_quantizer* quantizer, float amax) {
  return guarded("octet_quantizer_record_amax", [&] {
    QuantizerState& q = quantizer_arg(quantizer);
    // An amax is a magnitude: a negative one is a caller's bug that would
    // otherwise vanish in the max (NaN is ignored, as in octet_amax).
    require(!(amax < 0.0f), "argument 'amax' (", amax, ") is negative: an amax is max |x|, >= 0 (NaN is ignored)");
    sync_host(q);
    q.record(amax);
    push_host_write(q);
  });
}

OCTET_API octet_status octet_quantizer_update_scale(octet_quantizer* quantizer) {
  return guarded("octet_quantizer_update_scale", [&] {
    QuantizerState& q = quantizer_arg(quantizer);
    const RecipeState* r = q.effective();
    require(r != nullptr, "the quantizer has no recipe and was never used in an autocast scope: nothing to apply");
    update_scale(q, *r);
  });
}

OCTET_API octet_status octet_quantizer_set_scale(octet_quantizer* quantizer, float scale) {
  return guarded("octet_quantizer_set_scale", [&] {
    QuantizerState& q = quantizer_arg(quantizer);
    require(scale_allowed(scale), "argument 'scale' (", scale,
            ") must be finite and > 0 with a finite reciprocal (scale_inv = 1/scale)");
    sync_host(q);
    q.scale = scale;
    q.scale_inv = 1.0f / scale;
    push_host_write(q);
  });
}

OCTET_API octet_status octet_quantizer_get_info(const octet_quantizer* quantizer, octet_quantizer_info* info) {
  return guarded("octet_quantizer_get_info", [&] {
    QuantizerState& q = quantizer_arg(quantizer);
    require_struct(info, info ? info->struct_size : 0, "info");
    sync_host(q);  // a host read: one copy when the device holds the newer state
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
    QuantizerState& q = quantizer_arg(quantizer);
    require(out != nullptr, "argument 'out' is NULL");
    require(length == q.history.size(), "argument 'length' (", length, ") must equal amax_history_len (",
            q.history.size(), ")");
    sync_host(q);
    std::vector<float> newest = q.history_newest_first();
    std::memcpy(out, newest.data(), length * sizeof(float));
  });
}

}  // extern "C"
