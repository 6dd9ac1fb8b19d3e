// One training run of `octet demo` per precision: context, recipe, model,
// data, training loop, timing and memory peaks.
#pragma once

#include <octet/octet.h>

#include <cstdint>
#include <string>
#include <vector>

#include "demo/model.hpp"

namespace octet_cli {
namespace demo {

enum class RecipeKind { None, Delayed, Current, Static, Mxfp8, Block, Rowwise, Nvfp4 };

struct Precision {
  std::string name;      // "fp32", "bf16", "fp8-delayed", ...
  int32_t params_dtype;  // OCTET_DTYPE_FP32 or OCTET_DTYPE_BF16
  RecipeKind recipe;
};

// Every precision the demo knows, in table order.
const std::vector<Precision>& all_precisions();

struct DemoConfig {
  std::string backend = "reference";
  int64_t steps = 150;
  ModelShape shape;
  uint64_t seed = 1;
  float learning_rate = 3e-3f;
  bool interactive = false;  // progress bar redrawn in place
};

enum class Outcome { Ok, Unsupported, Error };

struct RunResult {
  Precision precision;
  Outcome outcome = Outcome::Error;
  std::string message;         // unsupported/error: the library's message
  std::string note;            // e.g. the static scale chosen
  std::vector<double> losses;  // one per step
  double final_loss = 0.0;     // mean of the last 10 steps
  bool diverged = false;       // a non-finite loss
  double ms_per_step = 0.0;
  octet_memory_stats memory{};  // peaks over the training steps
};

RunResult run_precision(const Precision& precision, const DemoConfig& config);

// One batch of synthetic data ([shape.batch] rows): x ~ N(0, 1), target =
// teacher(x). Every run draws its batches from Rng(seed + 1) in step order.
void make_batch(Rng& rng, const Teacher& teacher, const ModelShape& shape, std::vector<float>& x,
                std::vector<float>& target);

}  // namespace demo
}  // namespace octet_cli
