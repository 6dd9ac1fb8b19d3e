// grouped_gemm_kernel (plugin/kernels.hpp): the groups of a grouped GEMM
// (octet_backend.h, "Grouped GEMMs"), each exactly gemm_kernel or
// block_gemm_kernel on its arguments.
//
// Every group is checked first, on the calling thread (a report reaches the
// host only from there). Then the groups that a call of their own would run
// on one thread (less than two grains of work, dispatch/parallel_policy.hpp)
// run at once, one group a thread, largest first, in one OpenMP region; the
// others run one after another, each on the threads its own call would
// use. Where the FP8 GEMM engine's bits never depend on the thread count
// (Fp32Fma's sgemm tiles, OnednnBf16's matmul tiles; gemm/gemm_sums.cpp),
// every group of at most a thread's share of the whole work runs in that
// one region, one thread each: a mixture of
// experts' groups of a few hundred rows fill every core, where their own
// calls would each split a handful of tiles between the threads. On the
// Bf16Dot and Amx engines, whose blocking follows the thread count, only
// the one-thread groups share the region. Either way each group's D holds
// the bits its own call would write.
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "dispatch/isa.hpp"
#include "dispatch/parallel_policy.hpp"
#include "gemm/fp8_gemm_engine.hpp"
#include "plugin/checks.hpp"
#include "plugin/errors.hpp"
#include "plugin/kernels.hpp"

namespace octet_cpu {
namespace {

constexpr const char* kKernel = "grouped_gemm";

struct Group {
  const octet_gemm_args* gemm;
  const octet_block_gemm_args* block;
  double flops() const {
    const int64_t m = gemm ? gemm->m : block->m, n = gemm ? gemm->n : block->n, k = gemm ? gemm->k : block->k;
    return 2.0 * double(m) * double(n) * double(k);
  }
  int32_t run() const {
    if (gemm != nullptr) return gemm_kernel(gemm);
    GemmWorkspace workspace;  // freed when the group returns
    return block_gemm_kernel(block, workspace);
  }
};

// Whether every path of the engine gives bits that do not depend on the
// thread count (the file comment).
bool thread_count_free() {
  const Fp8GemmEngine engine = fp8_gemm_engine();
  return engine == Fp8GemmEngine::Fp32Fma || engine == Fp8GemmEngine::OnednnBf16;
}

// A failure inside the parallel region, reported after it.
struct Failure {
  int32_t status = OCTET_STATUS_SUCCESS;
  std::size_t bytes = 0;  // out of memory: the bytes asked
};

}  // namespace

int32_t grouped_gemm_kernel(const octet_grouped_gemm_args* args) {
  if (int32_t s = require_pointer(kKernel, "args", args)) return s;
  if (int32_t s = require_struct_size(kKernel, "args", args->struct_size, sizeof(octet_grouped_gemm_args))) return s;
  if (args->group_count < 1) {
    return report(OCTET_STATUS_INVALID_ARGUMENT, std::string(kKernel) + ": args->group_count is " +
                                                     std::to_string(args->group_count) + "; it must be >= 1");
  }
  if ((args->gemms == nullptr) == (args->block_gemms == nullptr)) {
    return report(OCTET_STATUS_INVALID_ARGUMENT,
                  std::string(kKernel) + ": exactly one of args->gemms and args->block_gemms must be set");
  }
  const int64_t count = args->group_count;
  std::vector<Group> groups(static_cast<std::size_t>(count));
  for (int64_t g = 0; g < count; ++g) {
    Group& group = groups[static_cast<std::size_t>(g)];
    group.gemm = args->gemms != nullptr ? args->gemms[g] : nullptr;
    group.block = args->block_gemms != nullptr ? args->block_gemms[g] : nullptr;
    const int32_t s =
        group.gemm != nullptr ? check_gemm_kernel_args(group.gemm) : check_block_gemm_kernel_args(group.block);
    if (s != OCTET_STATUS_SUCCESS) return s;
  }

  // The groups that share the region, largest first; the rest in order.
  // A group of more than a thread's share of the whole runs alone even
  // then: on one thread it would be the region's straggler.
  const bool all_at_once = thread_count_free();
  const double most = double(std::max(1, omp_get_max_threads()));
  double total = 0.0;
  for (const Group& group : groups) total += group.flops();
  std::vector<int64_t> shared, alone;
  for (int64_t g = 0; g < count; ++g) {
    const double flops = groups[static_cast<std::size_t>(g)].flops();
    const bool one_thread = threads_for(flops, kGemmFlopsPerThread) == 1;
    (one_thread || (all_at_once && flops * most <= total) ? shared : alone).push_back(g);
  }
  std::stable_sort(shared.begin(), shared.end(), [&](int64_t x, int64_t y) {
    return groups[static_cast<std::size_t>(x)].flops() > groups[static_cast<std::size_t>(y)].flops();
  });

  std::vector<Failure> failures(static_cast<std::size_t>(count));
  const int threads = static_cast<int>(std::min<int64_t>(int64_t(shared.size()), std::max(1, omp_get_max_threads())));
  if (!shared.empty()) {
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads) if (threads > 1)
    for (int64_t i = 0; i < int64_t(shared.size()); ++i) {
      const octet::DefaultFloatMode float_mode;  // this thread (dispatch/parallel_policy.hpp)
      const OpenMpThreadLimit one_thread(1);     // the group's kernel runs on this thread alone
      const int64_t g = shared[static_cast<std::size_t>(i)];
      Failure& failure = failures[static_cast<std::size_t>(g)];
      try {
        failure.status = groups[static_cast<std::size_t>(g)].run();
      } catch (const octet::plugin::OutOfMemory& e) {
        failure.status = OCTET_STATUS_OUT_OF_MEMORY;
        failure.bytes = e.bytes();
      } catch (...) {
        failure.status = OCTET_STATUS_INTERNAL;
      }
    }
  }
  for (int64_t g = 0; g < count; ++g) {
    const Failure& failure = failures[static_cast<std::size_t>(g)];
    if (failure.status == OCTET_STATUS_SUCCESS) continue;
    std::string what = std::string(kKernel) + ": group " + std::to_string(g) + " failed";
    if (failure.status == OCTET_STATUS_OUT_OF_MEMORY)
      what += ": out of host memory (" + std::to_string(failure.bytes) + " bytes asked)";
    return report(failure.status, what);
  }
  for (int64_t g : alone) {
    const int32_t s = groups[static_cast<std::size_t>(g)].run();
    if (s != OCTET_STATUS_SUCCESS) return s;
  }
  return OCTET_STATUS_SUCCESS;
}

}  // namespace octet_cpu
