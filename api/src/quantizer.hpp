// A quantizer: the host-side scaling state of one tensor role.
#pragma once

#include <octet/octet.h>

#include <memory>
#include <vector>

#include "recipe.hpp"

namespace octet::core {

struct QuantizerState {
  std::shared_ptr<const RecipeState> recipe;       // null: follows autocast
  std::shared_ptr<const RecipeState> last_recipe;  // the one last quantized with
  int32_t role = OCTET_ROLE_INPUT;
  float scale = 1.0f;
  float scale_inv = 1.0f;
  // Ring buffer of amaxes; `current` is this step's slot. Length 1 for
  // recipes without a history.
  std::vector<float> history = std::vector<float>(1, 0.0f);
  size_t current = 0;
  uint64_t update_count = 0;
  float observed_amax = 0.0f;
  uint64_t observed_saturated = 0;
  uint64_t observed_total = 0;

  // The recipe in effect: own, else last used (null if neither).
  const RecipeState* effective() const { return recipe ? recipe.get() : last_recipe.get(); }
  // Newest first: [0] = current step.
  std::vector<float> history_newest_first() const;
  // Makes the history `length` long (a new recipe of another length keeps
  // the newest entries).
  void resize_history(size_t length);
  void record(float amax);
};

// The delayed-scaling update of numerics 3.1 (computed on the host: a few
// floats per quantizer). Throws before changing anything if a callback fails.
void apply_scale_update(QuantizerState& q, const RecipeState& recipe);

// Current scaling (numerics 3.2): the scale from an amax.
float current_scale(float amax, float fp8_max, float epsilon, bool power_of_two);

}  // namespace octet::core

struct octet_quantizer {
  std::shared_ptr<octet::core::QuantizerState> state;
};
