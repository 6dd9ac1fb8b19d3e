#include "demo/distributed_run.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>

#include "demo/progress.hpp"

namespace octet_cli {
namespace demo {

bool runs_distributed(const Precision& p) {
  return p.recipe == RecipeKind::None || p.recipe == RecipeKind::Current || p.recipe == RecipeKind::Delayed;
}

namespace {

struct RecipeDeleter {
  void operator()(octet_recipe* r) const { octet_recipe_destroy(r); }
};
using RecipePtr = std::unique_ptr<octet_recipe, RecipeDeleter>;

// FP8 recipes all-reduce their amaxes, so every rank quantizes with the same
// scales (and the shards of a weight with one scale).
RecipePtr make_distributed_recipe(RecipeKind kind) {
  octet_recipe* r = nullptr;
  if (kind == RecipeKind::Current) {
    octet_current_scaling_options o;
    octet::check(octet_current_scaling_options_init(&o));
    o.reduce_amax = 1;
    octet::check(octet_recipe_create_current(&o, &r));
  } else if (kind == RecipeKind::Delayed) {
    octet_delayed_scaling_options o;
    octet::check(octet_delayed_scaling_options_init(&o));
    o.reduce_amax = 1;
    octet::check(octet_recipe_create_delayed(&o, &r));
  }
  return RecipePtr(r);
}

// One weight matrix's shard on this rank.
struct Shard {
  ParameterInfo param;
  size_t linear = 0;  // the GEMM-bearing sub-layer that uses it
  int64_t rows = 0;   // rows of the shard (param.rows / ranks)
  std::vector<float> master, m, v;
  octet::Tensor values;    // [rows, cols]: params_dtype, or FP32 to quantize
  octet::Tensor codes;     // FP8: the shard's codes
  octet::Tensor gathered;  // FP8: [param.rows, cols], given to the layer
  octet::Tensor grad;      // [rows, cols] params_dtype: the reduced gradient
};

octet_communication_stats stats_of(octet::Context& ctx) {
  octet_communication_stats s{};
  s.struct_size = sizeof s;
  octet::check(octet_context_get_communication_stats(ctx.get(), &s));
  return s;
}

uint64_t sent(const octet_communication_stats& before, const octet_communication_stats& after, int32_t kind) {
  return after.bytes_sent[kind] - before.bytes_sent[kind];
}

// A double as two floats (hi + lo holds it to about 48 bits), for the
// gathers of losses.
void split(double v, float* out) {
  out[0] = static_cast<float>(v);
  out[1] = static_cast<float>(v - static_cast<double>(out[0]));
}
double join(const float* in) { return static_cast<double>(in[0]) + static_cast<double>(in[1]); }

// Every rank's value of `v`, gathered in rank order.
std::vector<double> gather_doubles(octet::Context& ctx, int ranks, double v) {
  octet::Tensor mine = octet::Tensor::create(ctx, OCTET_DTYPE_FP32, {1, 2});
  octet::Tensor all = octet::Tensor::create(ctx, OCTET_DTYPE_FP32, {ranks, 2});
  float pair[2];
  split(v, pair);
  octet::check(octet_tensor_copy_from_host(mine.get(), OCTET_COMPONENT_DATA, pair, sizeof pair));
  octet::check(octet_allgather(ctx.get(), mine.get(), all.get()));
  std::vector<float> pairs(static_cast<size_t>(2 * ranks));
  octet::check(octet_tensor_copy_to_host(all.get(), OCTET_COMPONENT_DATA, pairs.data(), pairs.size() * 4));
  std::vector<double> out;
  for (int r = 0; r < ranks; ++r) out.push_back(join(&pairs[static_cast<size_t>(2 * r)]));
  return out;
}

std::string text(double v) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

}  // namespace

DistributedResult run_distributed(const Precision& precision, const DemoConfig& config, MpiWorld& world,
                                  const InjectedFailure& failure, bool sharded) {
  DistributedResult result;
  result.precision = precision;
  const int rank = world.rank(), ranks = world.size();
  // Rank 0 shows the progress.
  std::unique_ptr<Progress> progress;
  if (rank == 0) progress = std::make_unique<Progress>(precision.name, config.steps, config.interactive);
  try {
    octet::Context context(config.backend);
    octet::check(octet_context_set_communicator(context.get(), world.communicator()));
    const Teacher teacher =
        Teacher::create(config.shape.hidden, 2 * config.shape.hidden, config.shape.out, config.seed + 2);
    RecipePtr recipe = make_distributed_recipe(precision.recipe);
    const bool fp8 = recipe != nullptr;
    const int32_t dtype = precision.params_dtype;
    Model model(context, config.shape, dtype, config.seed, /*given_weights=*/fp8 && sharded);

    std::vector<Shard> shards;
    for (const ParameterInfo& p : model.parameters()) {
      if (!p.matrix() || !sharded) continue;
      if (p.rows % ranks != 0)
        throw std::invalid_argument("parameter '" + p.name + "' has " + std::to_string(p.rows) +
                                    " rows, which do not split over " + std::to_string(ranks) +
                                    " ranks (choose --hidden and the rank count so that they do)");
      Shard s;
      s.param = p;
      s.linear = p.name == "fc2_weight" ? 1 : 0;
      s.rows = p.rows / ranks;
      const size_t n = static_cast<size_t>(s.rows * p.cols);
      const auto first = p.master->begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(rank) * n);
      s.master.assign(first, first + static_cast<std::ptrdiff_t>(n));
      s.m.assign(n, 0.0f);
      s.v.assign(n, 0.0f);
      s.values = octet::Tensor::create(context, fp8 ? OCTET_DTYPE_FP32 : dtype, {s.rows, p.cols});
      s.grad = octet::Tensor::create(context, dtype, {s.rows, p.cols});
      if (fp8) {
        s.codes = octet::Tensor::create(context, OCTET_DTYPE_E4M3, {s.rows, p.cols}, OCTET_USAGE_ROWWISE);
        s.gathered = octet::Tensor::create(context, OCTET_DTYPE_E4M3, {p.rows, p.cols}, OCTET_USAGE_ROWWISE);
        octet::check(octet_layer_set_weight(p.layer, p.index, s.gathered.get()));
      }
      shards.push_back(std::move(s));
    }

    // The global batch's rows of this rank.
    ModelShape global = config.shape;
    global.batch = config.shape.batch * ranks;
    const size_t xs = static_cast<size_t>(config.shape.batch * config.shape.hidden);
    const size_t ts = static_cast<size_t>(config.shape.batch * config.shape.out);
    Adam adam;
    adam.lr = config.learning_rate;
    Rng data(config.seed + 1);
    std::vector<float> gx, gt;
    std::vector<double> step_seconds;
    octet_communication_stats gather_start{}, gather_end{};

    // Before the forward, inside the autocast scope: every weight gathered.
    auto gather = [&] {
      gather_start = stats_of(context);
      for (Shard& s : shards) {
        if (!fp8) {
          upload_floats(s.values.get(), dtype, s.master);
          octet_tensor* full = nullptr;
          octet::check(octet_layer_get_parameter(s.param.layer, s.param.index, &full));
          octet::check(octet_allgather(context.get(), s.values.get(), full));
          continue;
        }
        // FP8: the shard through the layer's weight quantizer (one scale
        // for all shards: the recipe all-reduces the amax, current scaling
        // before it takes the scale, delayed at each step's end), then its
        // codes gathered into the tensor the layer runs on as it is.
        upload_floats(s.values.get(), OCTET_DTYPE_FP32, s.master);
        octet_quantizer* q = nullptr;
        octet::check(octet_layer_get_quantizer(s.param.layer, s.linear, OCTET_ROLE_WEIGHT, &q));
        octet::check(octet_quantizer_quantize(context.get(), q, s.values.get(), s.codes.get(), nullptr, nullptr));
        octet::check(octet_allgather(context.get(), s.codes.get(), s.gathered.get()));
      }
      gather_end = stats_of(context);
    };

    for (int64_t step = 1; step <= config.steps; ++step) {
      make_batch(data, teacher, global, gx, gt);
      const std::vector<float> x(gx.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(rank) * xs),
                                 gx.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(rank + 1) * xs));
      const std::vector<float> t(gt.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(rank) * ts),
                                 gt.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(rank + 1) * ts));
      if (rank == failure.rank && step == failure.step) {
        if (failure.exit) {
          std::fprintf(stderr, "octet: demo: rank %d: %s: step %lld: injected failure: exiting\n", rank,
                       precision.name.c_str(), static_cast<long long>(step));
          std::fflush(stderr);
          std::_Exit(3);
        }
        throw std::runtime_error("step " + std::to_string(step) +
                                 ": injected failure (--inject-failure): this rank leaves the step before its "
                                 "first collective");
      }
      const auto start = std::chrono::steady_clock::now();
      const octet_communication_stats step_start = stats_of(context);
      const double local = model.forward_backward(x, t, recipe.get(), gather, 1.0f / static_cast<float>(ranks));
      const octet_communication_stats reduce_start = stats_of(context);
      // Weight gradients: this rank's shard of the sum over ranks (each
      // rank's loss gradient carries the 1 / ranks of the global mean).
      for (Shard& s : shards) {
        octet_tensor* g = nullptr;
        octet::check(octet_layer_get_gradient(s.param.layer, s.param.index, &g));
        octet::check(octet_reduce_scatter(context.get(), g, s.grad.get(), OCTET_REDUCE_SUM));
        const std::vector<float> grad = download_floats(s.grad.get(), dtype, s.master.size());
        adam.update(s.master, grad, s.m, s.v, step);
      }
      // Vectors (and without sharding every parameter): replicated, their
      // gradients summed on every rank.
      for (const ParameterInfo& p : model.parameters()) {
        if (p.matrix() && sharded) continue;
        octet_tensor* g = nullptr;
        octet::check(octet_layer_get_gradient(p.layer, p.index, &g));
        octet::check(octet_allreduce(context.get(), g, g, OCTET_REDUCE_SUM));
      }
      model.apply_optimizer(adam, step, /*skip_matrices=*/sharded);
      const octet_communication_stats reduce_end = stats_of(context);
      step_seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());

      // The global loss (the mean of the ranks' means: the ranks' batches
      // are the same size), computed alike on every rank from the same
      // gathered numbers, then checked equal on every rank.
      const std::vector<double> locals = gather_doubles(context, ranks, local);
      double sum = 0.0;
      for (double l : locals) sum += l;
      // Held as the two floats the check gathers (about 48 bits).
      float pair[2];
      split(sum / ranks, pair);
      const double loss = join(pair);
      const std::vector<double> seen = gather_doubles(context, ranks, loss);
      for (int r = 0; r < ranks; ++r)
        if (!(seen[static_cast<size_t>(r)] == loss) && !(std::isnan(loss) && std::isnan(seen[static_cast<size_t>(r)])))
          throw std::runtime_error("step " + std::to_string(step) + ": rank " + std::to_string(r) + " has loss " +
                                   text(seen[static_cast<size_t>(r)]) + " but rank " + std::to_string(rank) + " has " +
                                   text(loss));
      result.gather_bytes = sent(gather_start, gather_end, OCTET_COLLECTIVE_ALLGATHER);
      result.gather_amax_bytes = sent(gather_start, gather_end, OCTET_COLLECTIVE_AMAX);
      result.step_amax_bytes = sent(step_start, reduce_end, OCTET_COLLECTIVE_AMAX) - result.gather_amax_bytes;
      result.reduce_scatter_bytes = sent(reduce_start, reduce_end, OCTET_COLLECTIVE_REDUCE_SCATTER);
      result.allreduce_bytes = sent(reduce_start, reduce_end, OCTET_COLLECTIVE_ALLREDUCE);
      result.losses.push_back(loss);
      if (progress) progress->update(step, loss);
      if (!std::isfinite(loss)) {
        result.diverged = true;
        break;
      }
    }
    result.ms_per_step = 1e3 * median(step_seconds);
    result.final_loss = tail_mean(result.losses, 10);
    result.outcome = Outcome::Ok;
    if (progress) progress->finish(result.diverged ? "diverged (non-finite loss)" : "done");
  } catch (const octet::Error& e) {
    result.outcome = Outcome::Error;
    result.message = e.message();
    const std::string mpi = world.last_error();
    if (!mpi.empty()) result.message += " [" + mpi + "]";
    if (progress) progress->finish("error");
  } catch (const std::exception& e) {
    result.outcome = Outcome::Error;
    result.message = e.what();
    if (progress) progress->finish("error");
  }
  return result;
}

}  // namespace demo
}  // namespace octet_cli
