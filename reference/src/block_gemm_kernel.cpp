// The reference block-scaled GEMM: the order of numerics.md ("Block-scaled
// GEMM"), so its FP32 results are reproducible bit for bit. Per output
// element, each block of k is summed in ascending k, multiplied by the
// product of the two blocks' scale_inv and added into the accumulator.
#include <octet/octet_math.h>

#include <cmath>
#include <string>
#include <vector>

#include "argument_checks.hpp"
#include "host_errors.hpp"
#include "kernels.hpp"
#include "octet_reference/codecs.hpp"
#include "widened_operand.hpp"

namespace octet::ref {
namespace {

constexpr const char* kKernel = "block_gemm";

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

float scale_at(const void* scales, int32_t dtype, std::size_t index) {
  return dtype == OCTET_DTYPE_E8M0 ? e8m0_decode(static_cast<const uint8_t*>(scales)[index])
                                   : static_cast<const float*>(scales)[index];
}

int32_t check_args(const octet_block_gemm_args* args) {
  if (int32_t s = check_not_null(kKernel, "args", args)) return s;
  if (int32_t s = check_struct_size(kKernel, "args", args->struct_size,
                                    sizeof(octet_block_gemm_args))) {
    return s;
  }
  if (args->m < 0 || args->n < 0 || args->k < 0) {
    return report(OCTET_STATUS_INVALID_ARGUMENT, std::string(kKernel) + ": m, n, k must be >= 0");
  }
  if (int32_t s = check_matrix(kKernel, "args->a", args->a, DtypeClass::Fp8)) return s;
  if (int32_t s = check_matrix(kKernel, "args->b", args->b, DtypeClass::Fp8)) return s;
  if (int32_t s = check_shape(kKernel, "args->a", args->a, args->m, args->k, "[m,k]")) return s;
  if (int32_t s = check_shape(kKernel, "args->b", args->b, args->n, args->k, "[n,k]")) return s;
  if (args->scale_dtype != OCTET_DTYPE_E8M0 && args->scale_dtype != OCTET_DTYPE_FP32) {
    return report(OCTET_STATUS_INVALID_ARGUMENT,
                  std::string(kKernel) + ": args->scale_dtype must be e8m0 or fp32");
  }
  if (args->a_block_rows < 1 || args->a_block_cols < 1 || args->b_block_rows < 1 ||
      args->b_block_cols < 1 || args->a_block_cols != args->b_block_cols) {
    return report(OCTET_STATUS_INVALID_ARGUMENT,
                  std::string(kKernel) +
                      ": block shapes must be >= 1x1 and cover the same extent of k "
                      "(a_block_cols == b_block_cols)");
  }
  if (int32_t s = check_not_null(kKernel, "args->a_scale_inv", args->a_scale_inv)) return s;
  if (int32_t s = check_not_null(kKernel, "args->b_scale_inv", args->b_scale_inv)) return s;
  if (int32_t s = check_matrix(kKernel, "args->d", args->d, DtypeClass::HighPrecision,
                               OCTET_STATUS_UNSUPPORTED)) {
    return s;
  }
  if (int32_t s = check_shape(kKernel, "args->d", args->d, args->m, args->n, "[m,n]")) return s;
  if (args->bias.data != nullptr) {
    if (int32_t s = check_matrix(kKernel, "args->bias", args->bias, DtypeClass::HighPrecision)) {
      return s;
    }
    if (int32_t s = check_shape(kKernel, "args->bias", args->bias, 1, args->n, "one row of n")) {
      return s;
    }
  }
  if (args->epilogue != OCTET_EPILOGUE_NONE && args->epilogue != OCTET_EPILOGUE_GELU) {
    return report(OCTET_STATUS_INVALID_ARGUMENT, std::string(kKernel) + ": bad args->epilogue");
  }
  return OCTET_STATUS_SUCCESS;
}

}  // namespace

int32_t block_gemm(const octet_block_gemm_args* args) {
  if (int32_t s = check_args(args)) return s;
  const int64_t m = args->m, n = args->n, k = args->k, bk = args->a_block_cols;
  const int64_t k_blocks = ceil_div(k, bk);
  const octet_matrix_view& d = args->d;
  const std::vector<float> a_values = widened_operand(args->a, false, m, k);
  const std::vector<float> b_values = widened_operand(args->b, false, n, k);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      float acc = 0.0f;
      for (int64_t kb = 0; kb < k_blocks; ++kb) {
        float partial = 0.0f;
        for (int64_t kk = kb * bk; kk < std::min(k, (kb + 1) * bk); ++kk) {
          const float a = a_values[static_cast<std::size_t>(i * k + kk)];
          const float b = b_values[static_cast<std::size_t>(j * k + kk)];
          const float product = a * b;  // exact for FP8 operands
          partial = partial + product;
        }
        const float sa = scale_at(args->a_scale_inv, args->scale_dtype,
                                  static_cast<std::size_t>((i / args->a_block_rows) * k_blocks + kb));
        const float sb = scale_at(args->b_scale_inv, args->scale_dtype,
                                  static_cast<std::size_t>((j / args->b_block_rows) * k_blocks + kb));
        const float scaled = partial * (sa * sb);
        acc = acc + scaled;
      }
      float v = args->alpha * acc;
      if (args->beta != 0.0f) {
        float d_old = 0.0f;
        load_element(d.data, d.dtype, element_index(d, i, j), &d_old);
        v = v + args->beta * d_old;
      }
      if (args->bias.data != nullptr) {
        float bias = 0.0f;
        load_element(args->bias.data, args->bias.dtype, static_cast<std::size_t>(j), &bias);
        v = v + bias;
      }
      if (args->epilogue == OCTET_EPILOGUE_GELU) {
        v = 0.5f * v * (1.0f + octet_math_tanhf(0.7978845608f * (v + 0.044715f * v * v * v)));
      }
      store_element(d.data, d.dtype, element_index(d, i, j), v, true);
    }
  }
  return OCTET_STATUS_SUCCESS;
}

}  // namespace octet::ref
