// Block dequantize (numerics.md section 11): each code decoded and
// multiplied by its block's scale_inv, exact.
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
int32_t block_dequantize_kernel(const octet_block_dequantize_args* args) {
  const char* kernel = "block_dequantize";
  if (int32_t s = require_pointer(kernel, "args", args)) return s;
  if (int32_t s = require_struct_size(kernel, "args", args->struct_size, sizeof(octet_block_dequantize_args))) {
    return s;
  }
  if (int32_t s = require_matrix(kernel, "args->input", args->input, Accept::Fp8)) return s;
  if (int32_t s = require_matrix(kernel, "args->output", args->output, Accept::HighPrecision)) {
    return s;
  }
  if (int32_t s = require_shape(kernel, "args->output", args->output, args->input.rows, args->input.cols,
                                "the rows x cols of args->input")) {
    return s;
  }
  if (int32_t s = require_block_shape(kernel, args->block_rows, args->block_cols)) return s;
  if (int32_t s = require_scale_dtype(kernel, args->scale_dtype)) return s;
  if (int32_t s = require_pointer(kernel, "args->scale_inv", args->scale_inv)) return s;
  const RowKernels& k = row_kernels();
  const octet_matrix_view in = args->input, out = args->output;
  const int64_t br = args->block_rows, bc = args->block_cols;
  const int64_t grid_cols = ceil_div(in.cols, bc);
  constexpr int64_t kChunk = 2048;
  const int64_t per_row = ceil_div(in.cols, kChunk);
  const int64_t total = in.rows > 0 && in.cols > 0 ? in.rows * per_row : 0;
#pragma omp parallel if (split_elements(double(in.rows * in.cols)))
  {
    const octet::DefaultFloatMode float_mode;  // this thread, for the region (dispatch/parallel_policy.hpp)
    alignas(64) float values[kChunk];
#pragma omp for schedule(static)
    for (int64_t t = 0; t < total; ++t) {
      const int64_t r = t / per_row, c0 = (t % per_row) * kChunk;
      const int64_t w = std::min(kChunk, in.cols - c0);
      k.widen(element_ptr(in, r, c0), in.dtype, w, values);
      for (int64_t j = 0; j < w;) {
        const int64_t c = c0 + j;
        const int64_t len = std::min(w - j, bc - c % bc);
        const float s =
            scale_value(args->scale_inv, args->scale_dtype, static_cast<std::size_t>((r / br) * grid_cols + c / bc));
        // decode(q) * scale_inv with numerics.md section 13's NaN: a NaN
        // scale (E8M0 0xFF) gives its NaN, except where the code is NaN
        // too, whose NaN comes first (k.scale keeps that order).
        k.scale(values + j, len, s);
        j += len;
      }
      k.narrow(values, w, out.dtype, true, element_ptr_mut(out, r, c0));
    }
  }
  return OCTET_STATUS_SUCCESS;
}
}  // namespace octet_cpu
