// How a quantizer's scale is updated: delayed scaling's update from the
// amax history (on the host, or by the backend where the state is resident),
// and current scaling's scale from one amax.
#pragma once

#include "scaling/quantizer_state.hpp"
#include "scaling/recipe.hpp"

namespace octet::core {

// The delayed-scaling update of numerics.md 14.2 on the host fields. Throws
// before changing anything if a callback fails.
void apply_scale_update(QuantizerState& q, const RecipeState& recipe);
// Whether the update needs the host (a user callback).
bool update_needs_host(const RecipeState& recipe);
// The update wherever the state lives: on the device with
// delayed_scaling_update when resident and no callback is involved, else on
// the host (a resident state is downloaded, updated and uploaded).
void update_scale(QuantizerState& q, const RecipeState& recipe);

// Current scaling (numerics.md 14.1): the scale from an amax.
float current_scale(float amax, float fp8_max, float epsilon, bool power_of_two);

}  // namespace octet::core
