// sgemm_tiles (gemm/sgemm_tiles.hpp): tiles of acc shared by OpenMP threads,
// each summed slice by slice on oneDNN's sgemm.
#include "gemm/sgemm_tiles.hpp"

#include <dnnl.h>
#include <omp.h>

#include <algorithm>
#include <string>

#include "dispatch/parallel_policy.hpp"
#include "plugin/errors.hpp"
#include "plugin/kernels.hpp"

namespace octet_cpu {

int32_t sgemm_tiles(const char* kernel, const TileOperand& a, const TileOperand& b, int64_t m, int64_t n, int64_t k,
                    float* acc, int64_t ldc) {
  const int64_t tiles_m = (m + kSgemmTileM - 1) / kSgemmTileM, tiles_n = (n + kSgemmTileN - 1) / kSgemmTileN;
  const int64_t tiles = tiles_m * tiles_n;
  const int64_t slice = std::min(k, kSgemmSliceK);
  const int threads = static_cast<int>(
      std::min<int64_t>(tiles, threads_for(2.0 * double(m) * double(n) * double(k), kGemmFlopsPerThread)));
  const int64_t a_floats = a.buffered ? std::min(m, kSgemmTileM) * slice : 0;
  const int64_t b_floats = b.buffered ? std::min(n, kSgemmTileN) * slice : 0;
  const int64_t per_thread = std::max<int64_t>(a_floats + b_floats, 1);
  Buffer<float> buffers(element_count(threads, per_thread));
  dnnl_status_t failure = dnnl_success;
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    const octet::DefaultFloatMode float_mode;  // this thread, for the region (dispatch/parallel_policy.hpp)
    const OpenMpThreadLimit one_thread(1);     // oneDNN runs each call on this thread.
    float* a_buffer = buffers.get() + static_cast<std::size_t>(omp_get_thread_num()) * per_thread;
    float* b_buffer = a_buffer + a_floats;
#pragma omp for schedule(static)
    for (int64_t t = 0; t < tiles; ++t) {
      const int64_t i0 = (t / tiles_n) * kSgemmTileM, j0 = (t % tiles_n) * kSgemmTileN;
      const int64_t mc = std::min(kSgemmTileM, m - i0), nc = std::min(kSgemmTileN, n - j0);
      for (int64_t k0 = 0; k0 < k; k0 += slice) {
        const int64_t kc = std::min(slice, k - k0);
        const Fp32Block ab = a.block(i0, mc, k0, kc, a.buffered ? a_buffer : nullptr);
        const Fp32Block bb = b.block(j0, nc, k0, kc, b.buffered ? b_buffer : nullptr);
        // acc tile += op(ab) op(bb), op(ab) [mc, kc] and op(bb) [kc, nc].
        const dnnl_status_t st = dnnl_sgemm(ab.k_major ? 'T' : 'N', bb.k_major ? 'N' : 'T', mc, nc, kc, 1.0f, ab.data,
                                            ab.ld, bb.data, bb.ld, k0 == 0 ? 0.0f : 1.0f, acc + i0 * ldc + j0, ldc);
        if (st != dnnl_success) {
#pragma omp critical(octet_cpu_sgemm_failure)
          failure = st;
        }
      }
    }
  }
  if (failure == dnnl_out_of_memory) {
    return report(OCTET_STATUS_OUT_OF_MEMORY, std::string(kernel) +
                                                  ": out of host memory inside oneDNN dnnl_sgemm (a " +
                                                  std::to_string(kSgemmTileM) + " x " + std::to_string(kSgemmTileN) +
                                                  " x " + std::to_string(kSgemmSliceK) + " FP32 tile product)");
  }
  if (failure != dnnl_success) {
    return report(OCTET_STATUS_BACKEND_ERROR, std::string(kernel) + ": oneDNN dnnl_sgemm failed with status " +
                                                  std::to_string(static_cast<int>(failure)));
  }
  return OCTET_STATUS_SUCCESS;
}

}  // namespace octet_cpu
