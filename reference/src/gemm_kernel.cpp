// The reference GEMM, evaluated in exactly the order docs/numerics.md
// ("GEMM") documents, so that its FP32 results are reproducible bit for bit.
#include <octet/octet_math.h>

#include <cmath>
#include <vector>

#include "argument_checks.hpp"
#include "host_errors.hpp"
#include "kernels.hpp"
#include "octet_reference/codecs.hpp"
#include "widened_operand.hpp"

namespace octet::ref {
namespace {

constexpr const char* kKernel = "gemm";

float gelu_tanh(float v) {
  return 0.5f * v * (1.0f + octet_math_tanhf(0.7978845608f * (v + 0.044715f * v * v * v)));
}

int32_t check_operand(const char* name, const char* trans_name, const octet_matrix_view& view,
                      int32_t transposed, int64_t outer, int64_t k, const char* outer_name) {
  if (transposed != 0 && transposed != 1) {
    return report(OCTET_STATUS_INVALID_ARGUMENT, std::string(kKernel) + ": args->" +
                                                     trans_name + " (" +
                                                     std::to_string(transposed) +
                                                     ") must be 0 or 1");
  }
  if (int32_t s = check_matrix(kKernel, name, view, DtypeClass::Any)) return s;
  const std::string layout = transposed ? std::string("[k,") + outer_name + "] since " +
                                              trans_name + " = 1"
                                        : std::string("[") + outer_name + ",k] since " +
                                              trans_name + " = 0";
  return transposed ? check_shape(kKernel, name, view, k, outer, layout)
                    : check_shape(kKernel, name, view, outer, k, layout);
}

int32_t check_operand_dtypes(int32_t a_dtype, int32_t b_dtype) {
  const bool both_fp8 = is_fp8(a_dtype) && is_fp8(b_dtype);
  const bool both_high = is_high_precision(a_dtype) && is_high_precision(b_dtype);
  if (both_fp8 || both_high) return OCTET_STATUS_SUCCESS;
  return report(OCTET_STATUS_UNSUPPORTED, std::string(kKernel) + ": args->a.dtype is " + dtype_name(a_dtype) +
                                              " and args->b.dtype is " + dtype_name(b_dtype) +
                                              ": the operands must both be FP8 (" + kFp8DtypeNames +
                                              ") or both fp32/bf16/fp16");
}

int32_t check_gemm_args(const octet_gemm_args* args) {
  if (int32_t s = check_not_null(kKernel, "args", args)) return s;
  if (int32_t s = check_struct_size(kKernel, "args", args->struct_size, sizeof(octet_gemm_args))) {
    return s;
  }
  if (args->m < 0 || args->n < 0 || args->k < 0) {
    return report(OCTET_STATUS_INVALID_ARGUMENT,
                  std::string(kKernel) + ": args->m, args->n and args->k must be >= 0 (got " +
                      std::to_string(args->m) + ", " + std::to_string(args->n) + ", " +
                      std::to_string(args->k) + ")");
  }
  if (int32_t s = check_operand("args->a", "trans_a", args->a, args->trans_a, args->m, args->k,
                                "m")) {
    return s;
  }
  if (int32_t s = check_operand("args->b", "trans_b", args->b, args->trans_b, args->n, args->k,
                                "n")) {
    return s;
  }
  if (int32_t s = check_operand_dtypes(args->a.dtype, args->b.dtype)) return s;
  // D is FP8 exactly when d_scale says how to encode it.
  if (args->d_scale != nullptr) {
    if (int32_t s = check_matrix(kKernel, "args->d", args->d, DtypeClass::Fp8)) return s;
    if (args->beta != 0.0f) {
      return report(OCTET_STATUS_INVALID_ARGUMENT,
                    std::string(kKernel) + ": args->beta must be 0 when args->d is FP8 (d_scale set)");
    }
    if (args->d_saturate != 0 && args->d_saturate != 1) {
      return report(OCTET_STATUS_INVALID_ARGUMENT, std::string(kKernel) + ": args->d_saturate (" +
                                                       std::to_string(args->d_saturate) +
                                                       ") must be 0 or 1");
    }
  } else if (is_fp8(args->d.dtype)) {
    return report(OCTET_STATUS_INVALID_ARGUMENT,
                  std::string(kKernel) + ": args->d is FP8 but args->d_scale is NULL (FP8 output needs it)");
  } else if (int32_t s = check_matrix(kKernel, "args->d", args->d, DtypeClass::HighPrecision)) {
    return s;
  }
  if (args->fast_accumulation != 0 && args->fast_accumulation != 1) {
    return report(OCTET_STATUS_INVALID_ARGUMENT, std::string(kKernel) + ": args->fast_accumulation (" +
                                                     std::to_string(args->fast_accumulation) +
                                                     ") must be 0 or 1");
  }
  if (int32_t s = check_shape(kKernel, "args->d", args->d, args->m, args->n, "[m,n]")) return s;
  if (args->bias.data != nullptr) {
    if (int32_t s = check_matrix(kKernel, "args->bias", args->bias, DtypeClass::HighPrecision)) {
      return s;
    }
    if (int32_t s = check_shape(kKernel, "args->bias", args->bias, 1, args->n,
                                "one row of n elements")) {
      return s;
    }
  }
  if (args->epilogue != OCTET_EPILOGUE_NONE && args->epilogue != OCTET_EPILOGUE_GELU) {
    return report(OCTET_STATUS_INVALID_ARGUMENT,
                  std::string(kKernel) + ": args->epilogue (" + std::to_string(args->epilogue) +
                      ") must be OCTET_EPILOGUE_NONE or OCTET_EPILOGUE_GELU");
  }
  return OCTET_STATUS_SUCCESS;
}

}  // namespace

int32_t gemm(const octet_gemm_args* args) {
  if (int32_t s = check_gemm_args(args)) return s;
  const int64_t m = args->m, n = args->n, k = args->k;
  const std::vector<float> a = widened_operand(args->a, args->trans_a != 0, m, k);
  const std::vector<float> b = widened_operand(args->b, args->trans_b != 0, n, k);
  const float sa = args->a_scale_inv != nullptr ? *args->a_scale_inv : 1.0f;
  const float sb = args->b_scale_inv != nullptr ? *args->b_scale_inv : 1.0f;
  const float scale = args->alpha * (sa * sb);
  const octet_matrix_view& d = args->d;
  // FP8 output: r is encoded with d_scale; amax covers r itself.
  const bool fp8_out = args->d_scale != nullptr;
  const float d_scale = fp8_out ? *args->d_scale : 1.0f;
  Fp8Format d_format = Fp8Format::E4M3;
  fp8_format_of_dtype(args->d.dtype, &d_format);  // an FP8 d (checked) has one
  float d_amax = 0.0f;

  // fast_accumulation is only a permission: the reference always sums exactly
  // as documented.
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      // data() + offset: with k = 0 the vectors are empty and [] would bind
      // a reference to nothing.
      const float* a_row = a.data() + static_cast<std::size_t>(i * k);
      const float* b_row = b.data() + static_cast<std::size_t>(j * k);
      float acc = 0.0f;
      for (int64_t kk = 0; kk < k; ++kk) {
        const float product = a_row[kk] * b_row[kk];  // rounded on its own: never an FMA
        acc = acc + product;
      }
      float v = scale * acc;
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
      if (args->epilogue == OCTET_EPILOGUE_GELU) v = gelu_tanh(v);
      if (fp8_out) {
        d_amax = std::fmax(d_amax, std::fabs(v));
        static_cast<uint8_t*>(d.data)[element_index(d, i, j)] =
            fp8_encode(v * d_scale, d_format, args->d_saturate != 0);
      } else {
        store_element(d.data, d.dtype, element_index(d, i, j), v, true);
      }
    }
  }
  if (fp8_out) {
    if (args->d_scale_inv_out != nullptr) *args->d_scale_inv_out = 1.0f / d_scale;
    if (args->d_amax_out != nullptr) *args->d_amax_out = d_amax;
  }
  return OCTET_STATUS_SUCCESS;
}

}  // namespace octet::ref
