// `octet demo --distributed`: one precision trained on every MPI rank at
// once, data-parallel and sharded (FSDP-style; docs/distributed.md). Each
// rank trains on its rows of every global batch, holds rows [rank * r,
// (rank + 1) * r) of each weight matrix as its FP32 master shard (with its
// Adam moments), all-gathers the weights before the forward (FP32 or BF16
// values, or FP8 codes of one agreed scale given to the layers as they
// are), and gets its shard of the summed weight gradient by a
// reduce-scatter; vectors (norms, biases) are replicated and their
// gradients all-reduced.
#pragma once

#include <octet/octet.h>

#include <cstdint>
#include <string>
#include <vector>

#include "demo/mpi_world.hpp"
#include "demo/training_run.hpp"

namespace octet_cli {
namespace demo {

// The precisions --distributed runs (per-tensor FP8: the codes of one scale
// can be gathered; block scales cannot).
bool runs_distributed(const Precision& precision);

// Deliberate failure for the tests (--inject-failure): rank `rank`, at step
// `step`, leaves the step before its first collective; `exit`: the process
// exits at once (status 3), else it reports an error and lingers for
// `linger_seconds` without taking part, as a hung process would.
struct InjectedFailure {
  int rank = -1;
  int64_t step = 0;
  bool exit = false;
  double linger_seconds = 0.0;
};

struct DistributedResult {
  Precision precision;
  Outcome outcome = Outcome::Error;
  std::string message;         // error: the library's message (and liboctet_mpi's)
  std::vector<double> losses;  // the global batch's loss per step, equal on every rank (checked)
  double final_loss = 0.0;     // mean of the last 10 steps
  bool diverged = false;
  double ms_per_step = 0.0;
  // Bytes this rank sent per step (octet_context_get_communication_stats,
  // the same every step): the weights' all-gathers, the amax all-reduces
  // that agree on the shards' scale (FP8) and on activations' scales, the
  // weight gradients' reduce-scatters and the vectors' all-reduces.
  uint64_t gather_bytes = 0, gather_amax_bytes = 0, step_amax_bytes = 0, reduce_scatter_bytes = 0, allreduce_bytes = 0;
};

// sharded = false: plain data parallelism instead, every rank holding all
// parameters and all-reducing every gradient (no gathers).
DistributedResult run_distributed(const Precision& precision, const DemoConfig& config, MpiWorld& world,
                                  const InjectedFailure& failure, bool sharded = true);

}  // namespace demo
}  // namespace octet_cli
