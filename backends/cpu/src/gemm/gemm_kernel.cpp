// GEMM: acc = A' B'^T in FP32, then the epilogue applies the documented
// order of docs/numerics.md section 8 element by element: v =
// (alpha*(sa*sb))*acc, + beta*D_old, + bias, GELU, rounding to D's dtype.
// Only the summation order of acc differs from the reference.
//
// acc comes from gemm_sums (gemm/gemm_sums.cpp), whose implementation list
// picks the kernel for the level, the FP8 GEMM engine and the shape.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <string>
#include <vector>

#include "codecs/widen_fp8_avx512.hpp"
#include "dispatch/isa.hpp"
#include "dispatch/parallel_policy.hpp"
#include "elementwise/activation_rows.hpp"
#include "elementwise/row_kernels.hpp"
#include "gemm/bf16_matmul_tiles.hpp"
#include "gemm/decode_gemm_fp8_avx2.hpp"
#include "gemm/decode_gemm_fp8_avx512.hpp"
#include "gemm/gemm_fp8.hpp"
#include "gemm/sgemm_tiles.hpp"
#include "plugin/checks.hpp"
#include "plugin/errors.hpp"
#include "plugin/kernels.hpp"

namespace octet_cpu {

void* aligned_bytes(std::size_t bytes) {
  if (bytes == 0) bytes = 1;
  if (bytes > std::numeric_limits<std::size_t>::max() - 63) throw OutOfMemory(bytes);
  void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  if (p == nullptr) throw OutOfMemory(bytes);
  return p;
}

void Workspace::Free::operator()(float* p) const { std::free(p); }

float* Workspace::get(std::size_t count) {
  if (count == 0) count = 1;
  if (count > capacity_) {
    if (count > (std::numeric_limits<std::size_t>::max() - 63) / sizeof(float)) {
      throw OutOfMemory(std::numeric_limits<std::size_t>::max());
    }
    data_.reset(static_cast<float*>(aligned_bytes(count * sizeof(float))));
    capacity_ = count;
  }
  return data_.get();
}

namespace {

constexpr const char* kKernel = "gemm";

int32_t check_operand(const char* name, const char* trans_name, const octet_matrix_view& v,
                      int32_t trans, int64_t outer, int64_t k, const char* outer_name) {
  if (trans != 0 && trans != 1) {
    return report(OCTET_STATUS_INVALID_ARGUMENT, std::string(kKernel) + ": args->" + trans_name +
                                                     " is " + std::to_string(trans) +
                                                     "; it must be 0 or 1");
  }
  if (int32_t s = require_matrix(kKernel, name, v, Accept::Any)) return s;
  const std::string rule = trans ? std::string("[k,") + outer_name + "] because " + trans_name +
                                       " = 1"
                                 : std::string("[") + outer_name + ",k] because " + trans_name +
                                       " = 0";
  return trans ? require_shape(kKernel, name, v, k, outer, rule.c_str())
               : require_shape(kKernel, name, v, outer, k, rule.c_str());
}

int32_t check_args(const octet_gemm_args* args) {
  if (int32_t s = require_pointer(kKernel, "args", args)) return s;
  if (int32_t s = require_struct_size(kKernel, "args", args->struct_size, sizeof(octet_gemm_args)))
    return s;
  if (args->m < 0 || args->n < 0 || args->k < 0) {
    return report(OCTET_STATUS_INVALID_ARGUMENT,
                  std::string(kKernel) + ": args->m, args->n, args->k are " +
                      std::to_string(args->m) + ", " + std::to_string(args->n) + ", " +
                      std::to_string(args->k) + "; none may be negative");
  }
  if (int32_t s = check_operand("args->a", "trans_a", args->a, args->trans_a, args->m, args->k, "m"))
    return s;
  if (int32_t s = check_operand("args->b", "trans_b", args->b, args->trans_b, args->n, args->k, "n"))
    return s;
  const int32_t ad = args->a.dtype, bd = args->b.dtype;
  if (!((is_fp8(ad) && is_fp8(bd)) || (is_high_precision(ad) && is_high_precision(bd)))) {
    return report(OCTET_STATUS_UNSUPPORTED,
                  std::string(kKernel) + ": args->a.dtype is " + dtype_name(ad) + " and args->b.dtype is " +
                      dtype_name(bd) +
                      "; operands must be both FP8 (e4m3/e5m2/e4m3fnuz/e5m2fnuz) or both fp32/bf16/fp16");
  }
  if (int32_t s = require_matrix(kKernel, "args->d", args->d, Accept::HighPrecision,
                                 OCTET_STATUS_UNSUPPORTED)) {
    return s;
  }
  if (int32_t s = require_shape(kKernel, "args->d", args->d, args->m, args->n, "[m,n]")) return s;
  if (args->bias.data != nullptr) {
    if (int32_t s = require_matrix(kKernel, "args->bias", args->bias, Accept::HighPrecision))
      return s;
    if (int32_t s = require_shape(kKernel, "args->bias", args->bias, 1, args->n,
                                  "one row of n elements")) {
      return s;
    }
  }
  if (args->epilogue != OCTET_EPILOGUE_NONE && args->epilogue != OCTET_EPILOGUE_GELU) {
    return report(OCTET_STATUS_INVALID_ARGUMENT,
                  std::string(kKernel) + ": args->epilogue is " + std::to_string(args->epilogue) +
                      "; it must be OCTET_EPILOGUE_NONE or OCTET_EPILOGUE_GELU");
  }
  // oneDNN accumulates FP32 exactly as asked: fast accumulation has nothing
  // to relax here, so 1 is accepted and changes nothing.
  if (args->fast_accumulation != 0 && args->fast_accumulation != 1) {
    return report(OCTET_STATUS_INVALID_ARGUMENT, std::string(kKernel) + ": args->fast_accumulation is " +
                                                     std::to_string(args->fast_accumulation) +
                                                     "; it must be 0 or 1");
  }
  // The caps do not declare fp8_gemm_output, so no host sends d_scale.
  if (args->d_scale != nullptr) {
    return report(OCTET_STATUS_UNSUPPORTED,
                  std::string(kKernel) + ": args->d_scale is set but this backend writes no FP8 output "
                                         "(caps.fp8_gemm_output = 0; the host composes it)");
  }
  return OCTET_STATUS_SUCCESS;
}

}  // namespace

int32_t check_gemm_kernel_args(const octet_gemm_args* args) { return check_args(args); }

int32_t gemm_kernel(const octet_gemm_args* args) {
  if (int32_t s = check_args(args)) return s;
  const int64_t m = args->m, n = args->n, k = args->k;
  if (m == 0 || n == 0) return OCTET_STATUS_SUCCESS;
  const RowKernels& rk = row_kernels();
  const octet_matrix_view& d = args->d;
  const float sa = args->a_scale_inv != nullptr ? *args->a_scale_inv : 1.0f;
  const float sb = args->b_scale_inv != nullptr ? *args->b_scale_inv : 1.0f;
  const float scale = args->alpha * (sa * sb);
  const float beta = args->beta;
  const bool has_bias = args->bias.data != nullptr;
  const bool has_gelu = args->epilogue == OCTET_EPILOGUE_GELU;

  // acc goes straight into D when D is FP32 and its old values are not needed.
  const bool direct = d.dtype == OCTET_DTYPE_FP32 && beta == 0.0f;
  Buffer<float> acc_buffer;
  if (!direct) acc_buffer.reset(element_count(m, n));
  float* acc = direct ? static_cast<float*>(d.data) : acc_buffer.get();
  const int64_t ldc = direct ? d.ld : n;

  if (int32_t s = gemm_sums(kKernel, args->a, args->trans_a != 0, args->b, args->trans_b != 0, m, n, k, acc, ldc)) {
    return s;
  }

  if (direct && scale == 1.0f && !has_bias && !has_gelu) return OCTET_STATUS_SUCCESS;

  // Epilogue, row by row, in the documented order.
  const bool parallel = split_elements(double(m * n));
  // Buffers are allocated here, outside the parallel region (nothing may
  // throw inside it): the widened bias, and one row of old D per thread.
  Buffer<float> bias_values;
  if (has_bias) {
    bias_values.reset(static_cast<std::size_t>(n));
    rk.widen(args->bias.data, args->bias.dtype, n, bias_values.get());
  }
  const bool widen_old = beta != 0.0f && d.dtype != OCTET_DTYPE_FP32;
  Buffer<float> old_rows;
  if (widen_old) old_rows.reset(element_count(omp_get_max_threads(), n));
#pragma omp parallel if (parallel)
  {
    const octet::DefaultFloatMode float_mode;  // this thread, for the region (dispatch/parallel_policy.hpp)
    float* row_buffer =
        widen_old ? old_rows.get() + static_cast<std::size_t>(omp_get_thread_num()) * n : nullptr;
#pragma omp for schedule(static)
    for (int64_t i = 0; i < m; ++i) {
      float* v = acc + i * ldc;
      for (int64_t j = 0; j < n; ++j) v[j] = scale * v[j];
      if (beta != 0.0f) {
        const float* old;
        if (d.dtype == OCTET_DTYPE_FP32) {
          old = reinterpret_cast<const float*>(element_ptr(d, i, 0));
        } else {
          rk.widen(element_ptr(d, i, 0), d.dtype, n, row_buffer);
          old = row_buffer;
        }
        for (int64_t j = 0; j < n; ++j) v[j] = v[j] + beta * old[j];
      }
      if (has_bias) {
        for (int64_t j = 0; j < n; ++j) v[j] = v[j] + bias_values.get()[j];
      }
      if (has_gelu) {
        activation_rows().gelu(v, n, v);
      }
      if (!direct) {
        rk.narrow(v, n, d.dtype, true, element_ptr_mut(d, i, 0));
      }
    }
  }
  return OCTET_STATUS_SUCCESS;
}

}  // namespace octet_cpu
