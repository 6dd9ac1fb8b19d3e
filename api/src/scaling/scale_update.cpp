// The scale update of delayed scaling (numerics.md 14.2) and the current
// scaling rule (14.1) on the host fields of a quantizer, and the dispatch of
// the update to the backend's delayed_scaling_update (plugin ABI 1.3) when
// the state is resident there: apply_scale_update is the rule that kernel
// reproduces bit for bit, and the host path of every other backend. Its FP32
// operations are octet_math.h's, as in that kernel (defined NaN results).
#include "scaling/scale_update.hpp"

#include <octet/octet_math.h>

#include <cfloat>
#include <cmath>
#include <cstring>

#include "runtime/error.hpp"

namespace octet::core {

float current_scale(float amax, float fp8_max, float epsilon, bool power_of_two) {
  amax = std::fmax(amax, epsilon);
  if (std::isnan(amax) || std::isinf(amax) || amax == 0.0f) return 1.0f;
  float scale = octet_math_div(fp8_max, amax);
  if (std::isinf(scale)) scale = FLT_MAX;
  if (power_of_two) {
    uint32_t bits;
    std::memcpy(&bits, &scale, sizeof bits);
    bits &= 0xFF800000u;
    std::memcpy(&scale, &bits, sizeof bits);
  }
  return scale;
}

void apply_scale_update(QuantizerState& q, const RecipeState& recipe) {
  if (recipe.kind != OCTET_RECIPE_DELAYED) return;  // the others keep no history to act on
  const octet_delayed_scaling_options& o = recipe.delayed;
  q.resize_history(size_t(o.amax_history_len));

  // The built-in rules read the ring in place (the max ignores NaN and its
  // order, so it needs no newest-first copy); only a callback gets one.
  float amax = 0.0f;
  switch (o.amax_compute_algo) {
    case OCTET_AMAX_MOST_RECENT:
      amax = q.history[q.current];
      break;
    case OCTET_AMAX_MAX:
      for (float a : q.history) amax = a > amax ? a : amax;  // std::fmax without its call: a NaN is skipped
      break;
    default: {
      const std::vector<float> newest = q.history_newest_first();
      octet_status s = o.amax_compute_callback(newest.data(), newest.size(), &amax, o.amax_compute_user_data);
      if (s != OCTET_STATUS_SUCCESS)
        fail(s, "the recipe's amax_compute_callback returned ", octet_status_name(s), "; the scale is unchanged");
    }
  }

  float scale = q.scale;
  const uint64_t count = q.update_count + 1;
  if (count % uint64_t(o.interval) == 0) {
    const float fp8_max = fp8_max_of(recipe.dtype_for(q.role));
    if (o.scale_compute_callback != nullptr) {
      float computed = scale;
      octet_status s =
          o.scale_compute_callback(amax, q.scale, fp8_max, o.margin, &computed, o.scale_compute_user_data);
      if (s != OCTET_STATUS_SUCCESS)
        fail(s, "the recipe's scale_compute_callback returned ", octet_status_name(s), "; the scale is unchanged");
      require(std::isfinite(computed) && computed > 0.0f, "the recipe's scale_compute_callback gave scale ", computed,
              ", which is not finite and > 0; the scale is unchanged");
      scale = computed;
    } else if (std::isfinite(amax) && amax > 0.0f) {
      float candidate;
      if (o.power_of_two_scales) {
        const float ratio = octet_math_div(fp8_max, amax);
        const int exponent = std::isinf(ratio) ? 127 : std::ilogb(ratio);
        candidate = std::ldexp(1.0f, exponent - o.margin);
      } else {
        candidate = octet_math_div(std::ldexp(fp8_max, -o.margin), amax);
        if (std::isinf(candidate)) candidate = FLT_MAX;
      }
      if (candidate > 0.0f) scale = candidate;  // an underflow to 0 keeps the old scale
    }
  }
  // Commit: nothing above changed the state.
  q.update_count = count;
  q.scale = scale;
  q.scale_inv = octet_math_div(1.0f, scale);
  q.current = (q.current + 1) % q.history.size();
  q.history[q.current] = 0.0f;
}

bool update_needs_host(const RecipeState& recipe) {
  return recipe.kind == OCTET_RECIPE_DELAYED && (recipe.delayed.amax_compute_algo == OCTET_AMAX_CALLBACK ||
                                                 recipe.delayed.scale_compute_callback != nullptr);
}

void update_scale(QuantizerState& q, const RecipeState& recipe) {
  if (recipe.kind != OCTET_RECIPE_DELAYED) return;
  const octet_delayed_scaling_options& o = recipe.delayed;
  if (!q.resident || update_needs_host(recipe)) {
    // Host path; a resident state with a user callback comes to the host
    // for the update and goes back (apply_scale_update throws before
    // changing anything, so a failing callback uploads nothing).
    sync_host(q);
    apply_scale_update(q, recipe);
    push_host_write(q);
    return;
  }
  resize_history_anywhere(q, size_t(o.amax_history_len));
  const ContextState& ctx = *q.resident->ctx;
  const uint64_t count = q.update_count + 1;
  octet_delayed_scaling_update_args a{};
  a.struct_size = sizeof(a);
  a.state = static_cast<float*>(q.resident->state.data());
  a.history_len = uint32_t(q.history.size());
  a.current = uint32_t(q.current);
  // The recipe's OCTET_AMAX_* in the plugin ABI's own terms (callbacks never get here).
  a.amax_compute_algo =
      o.amax_compute_algo == OCTET_AMAX_MOST_RECENT ? OCTET_HISTORY_AMAX_MOST_RECENT : OCTET_HISTORY_AMAX_MAX;
  a.recompute = count % uint64_t(o.interval) == 0 ? 1 : 0;
  a.margin = o.margin;
  a.power_of_two = o.power_of_two_scales != 0 ? 1 : 0;
  a.fp8_max = fp8_max_of(recipe.dtype_for(q.role));
  call_backend(ctx, "delayed_scaling_update", [&] { return ctx.api().delayed_scaling_update(ctx.handle, &a); });
  q.update_count = count;
  q.current = (q.current + 1) % q.history.size();
  q.host_current = false;
}

}  // namespace octet::core
