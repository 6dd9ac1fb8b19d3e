// `octet demo`: trains a small model built from Octet layers in FP32, BF16
// and FP8 with each recipe on one backend, prints a table (final loss, gap to
// FP32, time per step, peak memory by category) and writes the loss curves
// as an SVG plot. See docs/demo.md.
#include <octet/octet.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <utility>
#include <vector>

#include "commands.hpp"
#include "demo/distributed_run.hpp"
#include "demo/loss_plot_svg.hpp"
#include "demo/progress.hpp"
#include "demo/training_run.hpp"

namespace octet_cli {

namespace {

using demo::Outcome;
using demo::RunResult;

// FP8 with delayed or current scaling must end within this much of FP32's
// final loss (the "within a few percent").
constexpr double kMaxGapPercent = 5.0;

struct DemoOptions {
  demo::DemoConfig config;
  std::string plot = "octet-demo-loss.svg";
  std::string losses;                   // --losses: every step's loss ("" none)
  std::vector<std::string> precisions;  // empty: all
  bool distributed = false;
  bool sharded = true;  // --sharding rows (default) or none
  double timeout_seconds = 60.0;
  demo::InjectedFailure failure;
};

bool parse_int(const std::string& value, long long min, long long max, long long* out) {
  if (value.empty() || value[0] == '-' || value[0] == '+') return false;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(value.c_str(), &end, 10);
  if (*end != '\0' || v < static_cast<unsigned long long>(min) || v > static_cast<unsigned long long>(max))
    return false;
  *out = static_cast<long long>(v);
  return true;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t p = s.find(sep, start);
    out.push_back(s.substr(start, p == std::string::npos ? std::string::npos : p - start));
    if (p == std::string::npos) break;
    start = p + 1;
  }
  return out;
}

int parse(const std::vector<std::string>& args, DemoOptions* o) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      print_help();
      return -1;
    }
    if (a == "--distributed") {
      o->distributed = true;
      continue;
    }
    if (a != "--backend" && a != "--steps" && a != "--batch" && a != "--hidden" && a != "--seed" && a != "--plot" &&
        a != "--precisions" && a != "--losses" && a != "--timeout" && a != "--inject-failure" && a != "--sharding")
      return usage_error("demo: unknown argument '" + a + "'");
    if (i + 1 >= args.size()) return usage_error(a + " needs a value");
    const std::string& value = args[++i];
    long long n = 0;
    if (a == "--sharding") {
      if (value != "rows" && value != "none")
        return usage_error("--sharding needs 'rows' (FSDP-style shards) or 'none' (replicated) (got '" + value + "')");
      o->sharded = value == "rows";
    } else if (a == "--losses") {
      if (value.empty()) return usage_error("--losses needs a file name");
      o->losses = value;
    } else if (a == "--timeout") {
      char* end = nullptr;
      const double t = std::strtod(value.c_str(), &end);
      if (value.empty() || *end != '\0' || !std::isfinite(t) || t < 0 || t > 86400)
        return usage_error("--timeout needs a number of seconds from 0 (none) to 86400 (got '" + value + "')");
      o->timeout_seconds = t;
    } else if (a == "--inject-failure") {
      // RANK:STEP[:exit], for the tests (docs/distributed.md).
      const std::vector<std::string> f = split(value, ':');
      long long r = 0, st = 0;
      if (f.size() < 2 || f.size() > 3 || !parse_int(f[0], 0, 1 << 20, &r) || !parse_int(f[1], 1, 1000000, &st) ||
          (f.size() == 3 && f[2] != "exit" && f[2] != "hang"))
        return usage_error("--inject-failure needs RANK:STEP[:hang|exit] (got '" + value + "')");
      o->failure.rank = static_cast<int>(r);
      o->failure.step = st;
      o->failure.exit = f.size() == 3 && f[2] == "exit";
    } else if (a == "--backend") {
      o->config.backend = value;
    } else if (a == "--plot") {
      if (value.empty()) return usage_error("--plot needs a file name");
      o->plot = value;
    } else if (a == "--precisions") {
      for (const std::string& p : split(value, ',')) {
        const auto& all = demo::all_precisions();
        if (std::none_of(all.begin(), all.end(), [&](const auto& q) { return q.name == p; })) {
          std::string known;
          for (const auto& q : all) known += (known.empty() ? "" : ",") + q.name;
          return usage_error("--precisions: unknown precision '" + p + "' (known: " + known + ")");
        }
        o->precisions.push_back(p);
      }
    } else if (a == "--seed") {
      if (!parse_int(value, 0, (1ll << 62), &n))
        return usage_error("--seed needs an integer from 0 to 4611686018427387904 (got '" + value + "')");
      o->config.seed = static_cast<uint64_t>(n);
    } else if (a == "--steps") {
      if (!parse_int(value, 10, 1000000, &n))
        return usage_error("--steps needs an integer from 10 to 1000000 (got '" + value + "')");
      o->config.steps = n;
    } else if (a == "--batch") {
      if (!parse_int(value, 1, 65536, &n))
        return usage_error("--batch needs an integer from 1 to 65536 (got '" + value + "')");
      o->config.shape.batch = n;
    } else {  // --hidden
      if (!parse_int(value, 2, 16384, &n))
        return usage_error("--hidden needs an integer from 2 to 16384 (got '" + value + "')");
      o->config.shape.hidden = n;
      o->config.shape.ffn = 2 * n;
    }
  }
  return kExitOk;
}

// Whether the plot can be written at `path`, checked before training: an
// existing file must be a writable regular file; a new one must be creatable
// (it is created and removed again). Empty on success, else the system's reason.
std::string plot_path_problem(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return std::strerror(EISDIR);
    if (access(path.c_str(), W_OK) != 0) return std::strerror(errno);
    return "";
  }
  if (errno != ENOENT) return std::strerror(errno);
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0666);
  if (fd < 0) return std::strerror(errno);
  close(fd);
  unlink(path.c_str());
  return "";
}

std::string pad(const std::string& s, size_t width) {
  return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
}
std::string lpad(const std::string& s, size_t width) {
  return s.size() >= width ? s : std::string(width - s.size(), ' ') + s;
}
std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}
std::string kib(uint64_t bytes) { return fmt("%.1f", static_cast<double>(bytes) / 1024.0); }

double gap_percent(const RunResult& r, const RunResult* fp32) {
  return 100.0 * (r.final_loss - fp32->final_loss) / fp32->final_loss;
}

void print_table(const std::vector<RunResult>& results, const RunResult* fp32) {
  std::printf("%s  %s  %s  %s  %s  %s  %s  %s  %s\n", pad("precision", 12).c_str(), lpad("final loss", 11).c_str(),
              lpad("vs fp32", 8).c_str(), lpad("ms/step", 8).c_str(), lpad("params", 8).c_str(),
              lpad("fp8 copies", 10).c_str(), lpad("saved act", 9).c_str(), lpad("workspace", 9).c_str(),
              lpad("peak total", 10).c_str());
  for (const RunResult& r : results) {
    std::string line = pad(r.precision.name, 12) + "  ";
    if (r.outcome == Outcome::Unsupported) {
      line += "unsupported: " + r.message;
    } else if (r.outcome == Outcome::Error) {
      line += "error: " + r.message;
    } else {
      const octet_memory_stats& m = r.memory;
      std::string gap = "-";
      if (r.diverged)
        gap = "diverged";
      else if (fp32 && &r != fp32)
        gap = fmt("%+.2f%%", gap_percent(r, fp32));
      line += lpad(r.diverged ? "nan" : fmt("%.5f", r.final_loss), 11) + "  " + lpad(gap, 8) + "  " +
              lpad(fmt("%.1f", r.ms_per_step), 8) + "  " + lpad(kib(m.peak_bytes[OCTET_MEMORY_PARAMETERS]), 8) + "  " +
              lpad(kib(m.peak_bytes[OCTET_MEMORY_QUANTIZED_COPIES]), 10) + "  " +
              lpad(kib(m.peak_bytes[OCTET_MEMORY_SAVED_ACTIVATIONS]), 9) + "  " +
              lpad(kib(m.peak_bytes[OCTET_MEMORY_WORKSPACE]), 9) + "  " + lpad(kib(m.peak_total), 10);
      if (!r.note.empty()) line += "  (" + r.note + ")";
    }
    std::printf("%s\n", line.c_str());
  }
}

// Every step's loss of every run, one line each: "precision step loss".
bool write_losses(const std::string& path, const std::vector<std::pair<std::string, std::vector<double>>>& runs) {
  std::string out = "# octet demo: precision step loss\n";
  char buf[96];
  for (const auto& run : runs)
    for (size_t i = 0; i < run.second.size(); ++i) {
      std::snprintf(buf, sizeof buf, " %zu %.17g\n", i + 1, run.second[i]);
      out += run.first + buf;
    }
  errno = 0;
  if (demo::write_text_file(path, out)) return true;
  std::fprintf(stderr, "octet: demo: cannot write the losses to '%s': %s\n", path.c_str(),
               errno != 0 ? std::strerror(errno) : "the write failed");
  return false;
}

std::string bytes_text(uint64_t b) { return std::to_string(static_cast<unsigned long long>(b)); }

// Whether every rank says ok (one all-reduce MAX of "not ok" on a context of
// the backend): a check one rank makes (the plot's path) stops them all.
bool all_ranks_ok(const std::string& backend, demo::MpiWorld& world, bool ok) {
  octet::Context ctx(backend);
  octet::check(octet_context_set_communicator(ctx.get(), world.communicator()));
  octet::Tensor flag = octet::Tensor::create(ctx, OCTET_DTYPE_FP32, {1});
  const float bad = ok ? 0.0f : 1.0f;
  octet::check(octet_tensor_copy_from_host(flag.get(), OCTET_COMPONENT_DATA, &bad, sizeof bad));
  octet::check(octet_allreduce(ctx.get(), flag.get(), flag.get(), OCTET_REDUCE_MAX));
  float any = 0.0f;
  octet::check(octet_tensor_copy_to_host(flag.get(), OCTET_COMPONENT_DATA, &any, sizeof any));
  return any == 0.0f;
}

// `octet demo --distributed` (docs/distributed.md): every rank runs this.
int run_distributed_demo(DemoOptions& options, const std::vector<demo::Precision>& chosen) {
  demo::MpiWorld world;
  std::string error;
  if (!world.open(&error)) {
    std::fprintf(stderr, "octet: demo: %s\n", error.c_str());
    return kExitFailure;
  }
  if (!world.set_timeout(options.timeout_seconds, &error)) {
    std::fprintf(stderr, "octet: demo: %s\n", error.c_str());
    world.close(false);
    return kExitFailure;
  }
  const int rank = world.rank(), ranks = world.size();
  const bool root = rank == 0;
  std::string plot_problem;
  if (root) plot_problem = plot_path_problem(options.plot);
  if (!all_ranks_ok(options.config.backend, world, plot_problem.empty())) {
    if (root)
      std::fprintf(stderr, "octet: demo: cannot write the plot to '%s': %s\n", options.plot.c_str(),
                   plot_problem.c_str());
    world.close(false);
    return kExitFailure;
  }
  const demo::ModelShape& s = options.config.shape;
  options.config.interactive = root && demo::Progress::stderr_is_terminal();
  if (root) {
    std::printf(
        "octet demo --distributed: %d ranks, backend %s, %lld steps, batch %lld per rank (%lld in all), "
        "model 2 x (x + LayerNormMLP %lld->%lld->%lld, GELU) + Linear %lld->%lld, Adam lr %g, seed %llu; "
        "%s; collectives time out after %g s\n\n",
        ranks, options.config.backend.c_str(), static_cast<long long>(options.config.steps),
        static_cast<long long>(s.batch), static_cast<long long>(s.batch * ranks), static_cast<long long>(s.hidden),
        static_cast<long long>(s.ffn), static_cast<long long>(s.hidden), static_cast<long long>(s.hidden),
        static_cast<long long>(s.out), static_cast<double>(options.config.learning_rate),
        static_cast<unsigned long long>(options.config.seed),
        options.sharded ? "weight matrices sharded by rows over the ranks, vectors replicated"
                        : "every parameter replicated (--sharding none), gradients all-reduced",
        options.timeout_seconds);
    std::fflush(stdout);
  }
  std::vector<demo::DistributedResult> results;
  for (const auto& p : chosen) {
    results.push_back(demo::run_distributed(p, options.config, world, options.failure, options.sharded));
    const demo::DistributedResult& r = results.back();
    if (r.outcome == Outcome::Ok) continue;
    // Every rank reports its own error. A collective may be in flight: no
    // MPI_Finalize. The rank of an injected hang takes no part for longer
    // than the others wait; the others give the rest a moment to report
    // before mpirun ends the job.
    std::fprintf(stderr, "octet: demo: rank %d: %s: error: %s\n", rank, p.name.c_str(), r.message.c_str());
    std::fflush(stderr);
    const bool hung = rank == options.failure.rank;
    const double linger = hung ? options.timeout_seconds + 5.0 : 2.0;
    timespec ts{static_cast<time_t>(linger), static_cast<long>((linger - std::floor(linger)) * 1e9)};
    nanosleep(&ts, nullptr);
    world.close(true);
    return kExitFailure;
  }

  std::vector<std::string> failures;
  const demo::DistributedResult* fp32 = nullptr;
  for (const auto& r : results)
    if (r.precision.name == "fp32" && !r.diverged && r.final_loss > 0) fp32 = &r;
  for (const auto& r : results) {
    if (r.diverged) failures.push_back(r.precision.name + " diverged (non-finite loss)");
    const bool checked = r.precision.name == "fp8-delayed" || r.precision.name == "fp8-current";
    if (checked && fp32 && !r.diverged) {
      const double gap = 100.0 * (r.final_loss - fp32->final_loss) / fp32->final_loss;
      if (gap > kMaxGapPercent)
        failures.push_back(r.precision.name + " ended " + fmt("%.2f", gap) + "% above fp32's final loss (limit " +
                           fmt("%.0f", kMaxGapPercent) + "%)");
    }
  }
  if (root) {
    std::printf("\n%s  %s  %s  %s  %s  %s  %s  %s\n", pad("precision", 12).c_str(), lpad("final loss", 11).c_str(),
                lpad("vs fp32", 8).c_str(), lpad("ms/step", 8).c_str(), lpad("all-gather", 10).c_str(),
                lpad("scale amax", 10).c_str(), lpad("reduce-scatter", 14).c_str(), lpad("all-reduce", 10).c_str());
    for (const auto& r : results) {
      std::string gap = "-";
      if (r.diverged)
        gap = "diverged";
      else if (fp32 && &r != fp32)
        gap = fmt("%+.2f%%", 100.0 * (r.final_loss - fp32->final_loss) / fp32->final_loss);
      std::printf("%s  %s  %s  %s  %s  %s  %s  %s\n", pad(r.precision.name, 12).c_str(),
                  lpad(r.diverged ? "nan" : fmt("%.5f", r.final_loss), 11).c_str(), lpad(gap, 8).c_str(),
                  lpad(fmt("%.1f", r.ms_per_step), 8).c_str(), lpad(bytes_text(r.gather_bytes), 10).c_str(),
                  lpad(bytes_text(r.gather_amax_bytes), 10).c_str(),
                  lpad(bytes_text(r.reduce_scatter_bytes), 14).c_str(),
                  lpad(bytes_text(r.allreduce_bytes), 10).c_str());
    }
    std::printf(
        "\nbytes: sent by each rank per step (octet_context_get_communication_stats): all-gather of the "
        "weights, the amax all-reduce agreeing on their scale, reduce-scatter of the weight gradients, "
        "all-reduce of the vectors' gradients\n");
    const demo::DistributedResult* by_dtype[3] = {nullptr, nullptr, nullptr};  // fp32, bf16, fp8
    for (const auto& r : results) {
      const int k = r.precision.recipe != demo::RecipeKind::None ? 2 : r.precision.params_dtype == OCTET_DTYPE_BF16;
      if (!by_dtype[k]) by_dtype[k] = &r;
    }
    std::string line = "weight all-gather per step and rank:";
    const char* names[3] = {"FP32", "BF16", "FP8"};
    for (int k = 0; k < 3; ++k) {
      if (!by_dtype[k]) continue;
      line += std::string(" ") + names[k] + " " + bytes_text(by_dtype[k]->gather_bytes) + " B (" +
              by_dtype[k]->precision.name + ")";
      if (by_dtype[0] && k > 0)
        line += fmt(" = %.2f x FP32",
                    static_cast<double>(by_dtype[k]->gather_bytes) / static_cast<double>(by_dtype[0]->gather_bytes));
      line += k < 2 ? ";" : "";
    }
    if (!options.sharded) line = "no weight all-gathers (--sharding none): every gradient all-reduced";
    std::printf("%s\n", line.c_str());
    std::printf(
        "losses: equal on all %d ranks at every step (each rank's loss of the global batch all-gathered "
        "and compared)\n",
        ranks);
    std::vector<demo::Series> series;
    std::vector<std::pair<std::string, std::vector<double>>> runs;
    for (const auto& r : results) {
      series.push_back({r.precision.name, r.losses});
      runs.emplace_back(r.precision.name, r.losses);
    }
    errno = 0;
    const std::string title = "octet demo --distributed: training loss on " + std::to_string(ranks) + " ranks";
    if (!demo::write_text_file(options.plot, demo::loss_plot_svg(series, title)))
      failures.push_back("cannot write the plot to '" + options.plot + "'");
    else
      std::printf("loss curves: %s\n", options.plot.c_str());
    if (!options.losses.empty() && !write_losses(options.losses, runs))
      failures.push_back("cannot write the losses to '" + options.losses + "'");
    for (const std::string& f : failures) std::fprintf(stderr, "octet: demo: %s\n", f.c_str());
    std::printf(failures.empty() ? "PASS: every rank agreed on every loss; FP8 within %.0f%% of FP32\n" : "FAIL\n",
                kMaxGapPercent);
  }
  world.close(false);
  // The verdict is rank 0's (the others agree on the losses; files are rank 0's).
  return root && !failures.empty() ? kExitFailure : kExitOk;
}

}  // namespace

int run_demo(const std::vector<std::string>& args) {
  DemoOptions options;
  if (const int rc = parse(args, &options); rc != kExitOk) return rc < 0 ? kExitOk : rc;
  if (!options.distributed) {
    for (const std::string& a : args)
      if (a == "--timeout" || a == "--inject-failure" || a == "--sharding")
        return usage_error("demo: " + a + " needs --distributed");
  }

  const auto backends = octet::backends();
  const auto it =
      std::find_if(backends.begin(), backends.end(), [&](const auto& b) { return b.name == options.config.backend; });
  if (it == backends.end()) {
    std::string known;
    for (const auto& b : backends) known += (known.empty() ? "" : ", ") + b.name;
    return usage_error("demo: no backend named '" + options.config.backend + "' (registered: " + known + ")");
  }
  if (!it->available) {
    std::fprintf(stderr, "octet: backend '%s' is unavailable: %s\n", it->name.c_str(), it->unavailable_reason.c_str());
    return kExitFailure;
  }

  if (options.distributed) {
    std::vector<demo::Precision> chosen;
    for (const auto& p : demo::all_precisions()) {
      const bool named =
          std::find(options.precisions.begin(), options.precisions.end(), p.name) != options.precisions.end();
      if (named && !demo::runs_distributed(p))
        return usage_error("demo --distributed: precision '" + p.name +
                           "' is not run distributed (fp32, bf16, fp8-delayed and fp8-current are: per-tensor "
                           "scales, whose FP8 codes gather with one scale)");
      if ((options.precisions.empty() && demo::runs_distributed(p)) || named) chosen.push_back(p);
    }
    return run_distributed_demo(options, chosen);
  }

  if (const std::string problem = plot_path_problem(options.plot); !problem.empty()) {
    std::fprintf(stderr, "octet: demo: cannot write the plot to '%s': %s\n", options.plot.c_str(), problem.c_str());
    return kExitFailure;
  }

  std::vector<demo::Precision> chosen;
  for (const auto& p : demo::all_precisions())
    if (options.precisions.empty() ||
        std::find(options.precisions.begin(), options.precisions.end(), p.name) != options.precisions.end())
      chosen.push_back(p);

  const demo::ModelShape& s = options.config.shape;
  options.config.interactive = demo::Progress::stderr_is_terminal();
  std::printf(
      "octet demo: backend %s, %lld steps, batch %lld, model 2 x (x + LayerNormMLP %lld->%lld->%lld, "
      "GELU) + Linear %lld->%lld, Adam lr %g, seed %llu\n\n",
      options.config.backend.c_str(), static_cast<long long>(options.config.steps), static_cast<long long>(s.batch),
      static_cast<long long>(s.hidden), static_cast<long long>(s.ffn), static_cast<long long>(s.hidden),
      static_cast<long long>(s.hidden), static_cast<long long>(s.out),
      static_cast<double>(options.config.learning_rate), static_cast<unsigned long long>(options.config.seed));
  std::fflush(stdout);

  std::vector<RunResult> results;
  for (const auto& p : chosen) results.push_back(demo::run_precision(p, options.config));

  const RunResult* fp32 = nullptr;
  for (const RunResult& r : results)
    if (r.precision.name == "fp32" && r.outcome == Outcome::Ok && !r.diverged && r.final_loss > 0) fp32 = &r;

  std::printf("\n");
  print_table(results, fp32);
  std::printf(
      "\nfinal loss: mean MSE of the last 10 steps; vs fp32: relative gap of the final loss; "
      "ms/step: median wall time of a step (forward, loss, backward, host Adam); memory: peak KiB "
      "per category (octet_context_get_memory_stats), peak total includes the caller's tensors\n");

  std::vector<demo::Series> series;
  for (const RunResult& r : results)
    if (r.outcome == Outcome::Ok) series.push_back({r.precision.name, r.losses});
  const std::string title = "octet demo: training loss on " + options.config.backend;
  errno = 0;
  if (!demo::write_text_file(options.plot, demo::loss_plot_svg(series, title))) {
    std::fprintf(stderr, "octet: demo: cannot write the plot to '%s': %s\n", options.plot.c_str(),
                 errno != 0 ? std::strerror(errno) : "the write failed");
    return kExitFailure;
  }
  std::printf("loss curves: %s\n", options.plot.c_str());
  if (!options.losses.empty()) {
    std::vector<std::pair<std::string, std::vector<double>>> runs;
    for (const RunResult& r : results)
      if (r.outcome == Outcome::Ok) runs.emplace_back(r.precision.name, r.losses);
    if (!write_losses(options.losses, runs)) return kExitFailure;
  }

  // Verdict.
  std::vector<std::string> failures;
  for (const RunResult& r : results) {
    if (r.outcome == Outcome::Error) failures.push_back(r.precision.name + " failed: " + r.message);
    if (r.outcome == Outcome::Ok && r.diverged) failures.push_back(r.precision.name + " diverged (non-finite loss)");
  }
  for (const RunResult& r : results) {
    const bool checked = r.precision.name == "fp8-delayed" || r.precision.name == "fp8-current";
    if (!checked) continue;
    if (r.outcome == Outcome::Unsupported) {
      failures.push_back(r.precision.name + " is unsupported on this backend: " + r.message);
    } else if (r.outcome == Outcome::Ok && !r.diverged) {
      if (!fp32) {
        failures.push_back(r.precision.name +
                           " cannot be compared: the fp32 baseline did not run (add fp32 to "
                           "--precisions)");
      } else if (gap_percent(r, fp32) > kMaxGapPercent) {
        failures.push_back(r.precision.name + " ended " + fmt("%.2f", gap_percent(r, fp32)) +
                           "% above fp32's final loss (limit " + fmt("%.0f", kMaxGapPercent) + "%)");
      }
    }
  }
  if (!failures.empty()) {
    for (const std::string& f : failures) std::fprintf(stderr, "octet: demo: %s\n", f.c_str());
    std::printf("FAIL\n");
    return kExitFailure;
  }
  std::printf("PASS: FP8 delayed and current scaling within %.0f%% of FP32\n", kMaxGapPercent);
  return kExitOk;
}

}  // namespace octet_cli
