// The cpu backend's FP32 engine for compute-bound GEMMs: oneDNN's sgemm on
// FP32 blocks widened in cache, tile by tile (gemm/sgemm_tiles.cpp). The plain
// GEMM (gemm/gemm_kernel.cpp) and the FP4 GEMM (fp4/gemm_fp4_kernel.cpp) feed it their operands.
#pragma once

#include <cstdint>
#include <functional>

namespace octet_cpu {

// One operand's block for one sgemm call: X'[first_outer + i, first_k + kk]
// for i < outer, kk < k, as FP32 in the operand's stored orientation:
// data[i*ld + kk] when k_major is false (stored [outer, k]), data[kk*ld +
// i] when it is true (stored [k, outer]).
struct Fp32Block {
  const float* data;
  int64_t ld;
  bool k_major;
};

// A logical operand X'[outer, k] as sgemm_tiles reads it. block(first_outer,
// outer, first_k, k, buffer) returns the block above, either in memory of
// its own or written into `buffer`, which has room for kSgemmTileM *
// kSgemmSliceK floats when `buffered` is true (else it is null). It is
// called from several threads at once, each with its own buffer, and must
// not throw.
struct TileOperand {
  std::function<Fp32Block(int64_t first_outer, int64_t outer, int64_t first_k, int64_t k, float* buffer)> block;
  bool buffered;
};

// Tiles of acc and slices of K. A thread's two blocks are 512 KiB each and
// its tile of acc 1 MiB: 2 MiB in all, one core's L2 on the CPUs this was
// tuned on, and the same whatever m, n and k are.
constexpr int64_t kSgemmTileM = 512;
constexpr int64_t kSgemmTileN = 512;
constexpr int64_t kSgemmSliceK = 256;

// acc[m, n] (row stride ldc) = A' B'^T (m, n, k > 0): for each tile of
// kSgemmTileM x kSgemmTileN, slice by slice of kSgemmSliceK k, a thread
// takes the tile's two blocks and oneDNN's sgemm, run on that thread, adds
// their product into the tile (beta 0 for the first slice). Every tile sums
// its slices in order on one thread, so the bits depend on m, n and k
// only, never on the thread count; oneDNN packs each block into its own
// panel format first, so the orientation a block comes in does not change
// them either. Returns a status; on failure the message (report(),
// plugin/errors.hpp) names `kernel`. Throws OutOfMemory before any work when the
// blocks cannot be allocated.
int32_t sgemm_tiles(const char* kernel, const TileOperand& a, const TileOperand& b, int64_t m, int64_t n, int64_t k,
                    float* acc, int64_t ldc);

}  // namespace octet_cpu
