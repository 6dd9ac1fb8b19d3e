// Host-side launchers of the plugin ABI 1.1 kernels (block_kernels.cu). Arguments
// are already checked (block_entries.cpp); each returns the first failing
// CUDA call's cudaError_t. Temporaries come from the context's pool and all
// work is queued on the context's stream.
#pragma once

#include <octet/octet_backend.h>

#include <cuda_runtime_api.h>

namespace octet_cuda {

// Running totals of a statistics pass in device memory (zeroed first).
struct StatisticsAccumulator {
  unsigned long long nan_count;
  unsigned long long saturated_count;
  unsigned long long flushed_count;
  unsigned amax_bits;  // bits of the non-negative amax, ordered like the float
  unsigned reserved;
};

// The statistics of per-tensor quantize (x * scale, args.saturate) into
// *accumulator, then stats_out (a second pass after quantize, as the
// reference counts).
cudaError_t launch_quantize_statistics(const octet_quantize_args& args, StatisticsAccumulator* accumulator,
                                       octet_quantize_statistics* stats_out, cudaStream_t stream);

// Codes, scale grid, and (with an accumulator) amax_out / stats_out.
// accumulator may be NULL only when amax_out and stats_out are both NULL.
cudaError_t launch_block_quantize(const octet_block_quantize_args& args, StatisticsAccumulator* accumulator,
                                  cudaStream_t stream);

cudaError_t launch_block_dequantize(const octet_block_dequantize_args& args, cudaStream_t stream);

cudaError_t launch_block_gemm(const octet_block_gemm_args& args, cudaStream_t stream);

}  // namespace octet_cuda
