// The cpu backend's engine for compute-bound FP8 GEMMs on CPUs whose
// oneDNN BF16 matmul runs on AMX tiles (Fp8GemmEngine::OnednnBf16,
// gemm/fp8_gemm_engine.hpp): oneDNN's matmul primitive on BF16 blocks widened in cache, tile
// by tile, like sgemm_tiles (gemm/sgemm_tiles.hpp) does on FP32 blocks. Every
// FP8 value is exactly a BF16 value and oneDNN sums in FP32, so the result
// keeps numerics.md's GEMM bound.
#pragma once

#include <cstdint>
#include <functional>

namespace octet_cpu {

// One operand's block for one matmul call: X'[first_outer + i, first_k + kk]
// for i < outer, kk < k, as BF16 bits in the operand's stored orientation:
// data[i*ld + kk] when k_major is false (stored [outer, k]), data[kk*ld + i]
// when it is true (stored [k, outer]).
struct Bf16Block {
  const uint16_t* data;
  int64_t ld;
  bool k_major;
};

// A logical operand X'[outer, k]: block(first_outer, outer, first_k, k,
// buffer) writes the block above into `buffer` (room for kBf16TileM *
// kBf16SliceK values) and describes it. Called from several threads at
// once, each with its own buffer; must not throw.
using Bf16TileOperand =
    std::function<Bf16Block(int64_t first_outer, int64_t outer, int64_t first_k, int64_t k, uint16_t* buffer)>;

// Tiles of acc and slices of K: a thread's two blocks are 512 KiB each and
// its tile of acc 1 MiB, as for sgemm_tiles.
constexpr int64_t kBf16TileM = 512;
constexpr int64_t kBf16TileN = 512;
constexpr int64_t kBf16SliceK = 512;

// acc[m, n] (row stride ldc) = A' B'^T (m, n, k > 0): for each tile of
// kBf16TileM x kBf16TileN, slice by slice of kBf16SliceK k, a thread takes
// the tile's two blocks and a oneDNN matmul primitive (BF16 x BF16 -> FP32,
// a sum post-op after the first slice), run on that thread. Every tile sums
// its slices in order on one thread, so the bits depend on m, n, k and
// oneDNN's kernel only, never on the thread count. Returns a status; on
// failure the message (report(), plugin/errors.hpp) names `kernel`. Throws
// OutOfMemory before any work when the blocks cannot be allocated.
int32_t bf16_matmul_tiles(const char* kernel, const Bf16TileOperand& a, const Bf16TileOperand& b, int64_t m, int64_t n,
                          int64_t k, float* acc, int64_t ldc);

// The name of the implementation oneDNN picks for a 512 x 512 x 512 BF16
// matmul on one thread (e.g. "brg:avx512_core_amx_bf16"), or "" when it
// cannot create one. Asked once; the engine choice (dispatch/isa.cpp) takes
// OnednnBf16 by default only when this names AMX.
const char* onednn_bf16_matmul_impl();

}  // namespace octet_cpu
