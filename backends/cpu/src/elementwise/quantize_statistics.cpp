// Quantize with statistics (numerics.md section 10): the per-tensor
// quantize, then the NaN, saturated and flushed counts and the amax of the
// input, one accumulator per thread, merged in thread order.
#include <octet/octet_math.h>

#include <dnnl.h>
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "block/block_common.hpp"
#include "block/block_rows.hpp"
#include "block/block_scales.hpp"
#include "codecs/scalar_codecs.hpp"
#include "codecs/widen_fp8_avx512.hpp"
#include "dispatch/isa.hpp"
#include "dispatch/parallel_policy.hpp"
#include "elementwise/activation_rows.hpp"
#include "elementwise/row_kernels.hpp"
#include "gemm/block_gemm_folded.hpp"
#include "gemm/gemm_fp8.hpp"
#include "plugin/checks.hpp"
#include "plugin/errors.hpp"
#include "plugin/kernels.hpp"

namespace octet_cpu {
int32_t quantize_with_statistics_kernel(const octet_quantize_args* args, octet_quantize_statistics* stats_out) {
  const char* kernel = "quantize_with_statistics";
  if (int32_t s = require_pointer(kernel, "stats_out", stats_out)) return s;
  if (int32_t s = quantize_kernel(args)) return s;
  const RowKernels& k = row_kernels();
  const octet_matrix_view in = args->input;
  const float scale = *args->scale;
  const int32_t dtype = args->out_dtype;
  const bool sat = args->saturate != 0;
  const Fp8Params& p = params_of(dtype);
  constexpr int64_t kChunk = 2048;
  const int64_t per_row = ceil_div(in.cols, kChunk);
  const int64_t total = in.rows > 0 && in.cols > 0 ? in.rows * per_row : 0;
  std::vector<Counts> parts(static_cast<std::size_t>(omp_get_max_threads()));
#pragma omp parallel if (split_elements(double(in.rows * in.cols)))
  {
    const octet::DefaultFloatMode float_mode;  // this thread, for the region (dispatch/parallel_policy.hpp)
    alignas(64) float values[kChunk];
    alignas(64) uint8_t codes[kChunk];
    Counts& c = parts[static_cast<std::size_t>(omp_get_thread_num())];
#pragma omp for schedule(static)
    for (int64_t t = 0; t < total; ++t) {
      const int64_t r = t / per_row, c0 = (t % per_row) * kChunk;
      const int64_t w = std::min(kChunk, in.cols - c0);
      k.widen(element_ptr(in, r, c0), in.dtype, w, values);
      // octet_math_mul: a NaN scale on NaN data keeps x's NaN (numerics.md 13).
      for (int64_t i = 0; i < w; ++i) codes[i] = encode_fp8(octet_math_mul(values[i], scale), p, sat);
      count(values, w, scale, codes, dtype, c);
    }
  }
  write_counts(parts, stats_out);
  return OCTET_STATUS_SUCCESS;
}
}  // namespace octet_cpu
