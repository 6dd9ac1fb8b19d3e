// Per-tensor scaled conversions between high precision and FP8
// (numerics.md section 7): quantize and dequantize. FP32 arithmetic through
// octet_math.h, whose NaN results are defined (numerics.md, "NaN results").
#include <octet/octet_math.h>

#include <algorithm>
#include <cmath>

#include "argument_checks.hpp"
#include "host_errors.hpp"
#include "kernels.hpp"
#include "octet_reference/codecs.hpp"

namespace octet::ref {
namespace {

// dtype passed is_fp8, so it has a format.
Fp8Format fp8_format_of(int32_t dtype) {
  Fp8Format format = Fp8Format::E4M3;
  fp8_format_of_dtype(dtype, &format);
  return format;
}

}  // namespace

int32_t quantize_matrix(const octet_quantize_args* args) {
  const char* kernel = "quantize";
  if (int32_t s = check_not_null(kernel, "args", args)) return s;
  if (int32_t s = check_struct_size(kernel, "args", args->struct_size,
                                    sizeof(octet_quantize_args))) {
    return s;
  }
  if (int32_t s = check_matrix(kernel, "args->input", args->input, DtypeClass::HighPrecision)) {
    return s;
  }
  if (!is_fp8(args->out_dtype)) {
    return report(OCTET_STATUS_INVALID_ARGUMENT,
                  std::string(kernel) + ": args->out_dtype is " + dtype_name(args->out_dtype) + " (" +
                      std::to_string(args->out_dtype) + ") but must be " + kFp8DtypeNames);
  }
  if (int32_t s = check_not_null(kernel, "args->scale", args->scale)) return s;

  const octet_matrix_view& input = args->input;
  const Fp8Format format = fp8_format_of(args->out_dtype);
  const bool saturate = args->saturate != 0;
  const float scale = *args->scale;
  float amax = 0.0f;
  // One pass writes both usages: the rowwise codes [rows, cols] and the
  // columnwise (transposed) codes [cols, rows], both dense.
  for (int64_t r = 0; r < input.rows; ++r) {
    for (int64_t c = 0; c < input.cols; ++c) {
      float x = 0.0f;
      load_element(input.data, input.dtype, element_index(input, r, c), &x);
      if (!std::isnan(x)) amax = std::max(amax, std::fabs(x));  // NaN (signalling too) ignored, inf counts
      const uint8_t code = fp8_encode(octet_math_mul(x, scale), format, saturate);
      if (args->rowwise_out != nullptr) args->rowwise_out[r * input.cols + c] = code;
      if (args->columnwise_out != nullptr) args->columnwise_out[c * input.rows + r] = code;
    }
  }
  if (args->scale_inv_out != nullptr) *args->scale_inv_out = octet_math_div(1.0f, scale);
  if (args->amax_out != nullptr) *args->amax_out = amax;
  return OCTET_STATUS_SUCCESS;
}

int32_t dequantize_matrix(const octet_dequantize_args* args) {
  const char* kernel = "dequantize";
  if (int32_t s = check_not_null(kernel, "args", args)) return s;
  if (int32_t s = check_struct_size(kernel, "args", args->struct_size,
                                    sizeof(octet_dequantize_args))) {
    return s;
  }
  if (int32_t s = check_matrix(kernel, "args->input", args->input, DtypeClass::Fp8)) return s;
  if (int32_t s = check_not_null(kernel, "args->scale_inv", args->scale_inv)) return s;
  if (int32_t s = check_matrix(kernel, "args->output", args->output,
                               DtypeClass::HighPrecision)) {
    return s;
  }
  if (int32_t s = check_shape(kernel, "args->output", args->output, args->input.rows,
                              args->input.cols, "same rows x cols as args->input")) {
    return s;
  }
  const octet_matrix_view& input = args->input;
  const float scale_inv = *args->scale_inv;
  for (int64_t r = 0; r < input.rows; ++r) {
    for (int64_t c = 0; c < input.cols; ++c) {
      float decoded = 0.0f;
      load_element(input.data, input.dtype, element_index(input, r, c), &decoded);
      store_element(args->output.data, args->output.dtype,
                    element_index(args->output, r, c), octet_math_mul(decoded, scale_inv), true);
    }
  }
  return OCTET_STATUS_SUCCESS;
}

}  // namespace octet::ref
