#include "demo/training_run.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>

#include "demo/progress.hpp"

namespace octet_cli {
namespace demo {

const std::vector<Precision>& all_precisions() {
  static const std::vector<Precision> list = {
      {"fp32", OCTET_DTYPE_FP32, RecipeKind::None},           {"bf16", OCTET_DTYPE_BF16, RecipeKind::None},
      {"fp8-delayed", OCTET_DTYPE_FP32, RecipeKind::Delayed}, {"fp8-current", OCTET_DTYPE_FP32, RecipeKind::Current},
      {"fp8-static", OCTET_DTYPE_FP32, RecipeKind::Static},   {"fp8-mxfp8", OCTET_DTYPE_FP32, RecipeKind::Mxfp8},
      {"fp8-block", OCTET_DTYPE_FP32, RecipeKind::Block},     {"fp8-rowwise", OCTET_DTYPE_FP32, RecipeKind::Rowwise},
      {"nvfp4", OCTET_DTYPE_FP32, RecipeKind::Nvfp4},
  };
  return list;
}

namespace {

struct RecipeDeleter {
  void operator()(octet_recipe* r) const { octet_recipe_destroy(r); }
};
using RecipePtr = std::unique_ptr<octet_recipe, RecipeDeleter>;

RecipePtr make_recipe(RecipeKind kind, float static_scale, int32_t observe) {
  octet_recipe* r = nullptr;
  switch (kind) {
    case RecipeKind::None:
      return nullptr;
    case RecipeKind::Delayed: {
      octet_delayed_scaling_options o;
      octet::check(octet_delayed_scaling_options_init(&o));
      octet::check(octet_recipe_create_delayed(&o, &r));
      break;
    }
    case RecipeKind::Current: {
      octet_current_scaling_options o;
      octet::check(octet_current_scaling_options_init(&o));
      octet::check(octet_recipe_create_current(&o, &r));
      break;
    }
    case RecipeKind::Static: {
      octet_static_scaling_options o;
      octet::check(octet_static_scaling_options_init(&o));
      o.scale = static_scale;
      o.observe = observe;
      octet::check(octet_recipe_create_static(&o, &r));
      break;
    }
    case RecipeKind::Mxfp8: {
      octet_mxfp8_options o;
      octet::check(octet_mxfp8_options_init(&o));
      octet::check(octet_recipe_create_mxfp8(&o, &r));
      break;
    }
    case RecipeKind::Block: {
      octet_block_scaling_options o;
      octet::check(octet_block_scaling_options_init(&o));
      octet::check(octet_recipe_create_block(&o, &r));
      break;
    }
    case RecipeKind::Rowwise: {
      octet_rowwise_scaling_options o;
      octet::check(octet_rowwise_scaling_options_init(&o));
      octet::check(octet_recipe_create_rowwise(&o, &r));
      break;
    }
    case RecipeKind::Nvfp4: {
      octet_nvfp4_options o;
      octet::check(octet_nvfp4_options_init(&o));
      octet::check(octet_recipe_create_nvfp4(&o, &r));
      break;
    }
  }
  return RecipePtr(r);
}

// Static scaling needs one scale for every role. Calibration: one
// forward/backward of the initial model on a calibration batch under a
// static recipe of scale 1; each layer quantizer then holds the amax of the
// tensor it quantized (octet_quantizer_info.amax). The scale gives the
// largest input/weight amax 2x headroom under E4M3's max (448) and the
// largest gradient amax 2x headroom under E5M2's (57344), rounded down to a
// power of two.
float calibrate_static_scale(octet::Context& context, const DemoConfig& config, const Teacher& teacher) {
  RecipePtr probe = make_recipe(RecipeKind::Static, 1.0f, 0);
  Model model(context, config.shape, OCTET_DTYPE_FP32, config.seed);
  Rng rng(config.seed ^ 0xCA11B2A7Eull);
  std::vector<float> x, t;
  make_batch(rng, teacher, config.shape, x, t);
  model.step(x, t, probe.get(), nullptr, 1);
  float amax_fwd = 0.0f, amax_grad = 0.0f;
  for (size_t l = 0; l < model.layer_count(); ++l)
    for (size_t k = 0; k < model.linear_count(l); ++k)
      for (int32_t role : {OCTET_ROLE_INPUT, OCTET_ROLE_WEIGHT, OCTET_ROLE_GRADIENT}) {
        octet_quantizer* q = nullptr;
        octet::check(octet_layer_get_quantizer(model.layer(l), k, role, &q));
        octet_quantizer_info info{};
        info.struct_size = sizeof info;
        octet::check(octet_quantizer_get_info(q, &info));
        if (!std::isfinite(info.amax)) continue;
        float& slot = role == OCTET_ROLE_GRADIENT ? amax_grad : amax_fwd;
        slot = std::max(slot, info.amax);
      }
  float scale = 1.0f;
  if (amax_fwd > 0.0f) scale = 448.0f / (2.0f * amax_fwd);
  if (amax_grad > 0.0f) scale = std::min(scale, 57344.0f / (2.0f * amax_grad));
  return std::exp2(std::floor(std::log2(scale)));
}

}  // namespace

void make_batch(Rng& rng, const Teacher& teacher, const ModelShape& shape, std::vector<float>& x,
                std::vector<float>& target) {
  x.resize(static_cast<size_t>(shape.batch * shape.hidden));
  for (float& v : x) v = rng.normal();
  target = teacher.forward(x, shape.batch);
}

RunResult run_precision(const Precision& precision, const DemoConfig& config) {
  RunResult result;
  result.precision = precision;
  Progress progress(precision.name, config.steps, config.interactive);
  try {
    octet::Context context(config.backend);
    const Teacher teacher =
        Teacher::create(config.shape.hidden, 2 * config.shape.hidden, config.shape.out, config.seed + 2);
    float static_scale = 1.0f;
    if (precision.recipe == RecipeKind::Static) {
      static_scale = calibrate_static_scale(context, config, teacher);
      char buf[96];
      std::snprintf(buf, sizeof buf, "static scale %g", static_scale);
      result.note = buf;
    }
    RecipePtr recipe = make_recipe(precision.recipe, static_scale, 0);
    octet::check(octet_context_reset_peak_memory(context.get()));

    Model model(context, config.shape, precision.params_dtype, config.seed);
    Adam adam;
    adam.lr = config.learning_rate;
    Rng data(config.seed + 1);
    std::vector<float> x, t;
    std::vector<double> step_seconds;
    for (int64_t s = 1; s <= config.steps; ++s) {
      make_batch(data, teacher, config.shape, x, t);
      const auto start = std::chrono::steady_clock::now();
      const double loss = model.step(x, t, recipe.get(), &adam, s);
      step_seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      result.losses.push_back(loss);
      progress.update(s, loss);
      if (!std::isfinite(loss)) {
        result.diverged = true;
        break;
      }
    }
    result.ms_per_step = 1e3 * median(step_seconds);
    result.final_loss = tail_mean(result.losses, 10);
    result.memory.struct_size = sizeof result.memory;
    octet::check(octet_context_get_memory_stats(context.get(), &result.memory));
    result.outcome = Outcome::Ok;
    progress.finish(result.diverged ? "diverged (non-finite loss)" : "done");
  } catch (const octet::Error& e) {
    result.outcome = e.status() == OCTET_STATUS_UNSUPPORTED ? Outcome::Unsupported : Outcome::Error;
    result.message = e.message();
    progress.finish(result.outcome == Outcome::Unsupported ? "unsupported" : "error");
  }
  return result;
}

}  // namespace demo
}  // namespace octet_cli
