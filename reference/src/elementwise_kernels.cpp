// Kernels that move or convert elements without scaling: convert, amax,
// transpose.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "argument_checks.hpp"
#include "host_errors.hpp"
#include "kernels.hpp"
#include "octet_reference/codecs.hpp"

namespace octet::ref {

int32_t convert_matrix(const octet_matrix_view* input, const octet_matrix_view* output,
                       int32_t saturate) {
  const char* kernel = "convert";
  if (int32_t s = check_not_null(kernel, "input", input)) return s;
  if (int32_t s = check_not_null(kernel, "output", output)) return s;
  if (int32_t s = check_matrix(kernel, "input", *input, DtypeClass::Any)) return s;
  if (int32_t s = check_matrix(kernel, "output", *output, DtypeClass::Any)) return s;
  if (int32_t s = check_shape(kernel, "output", *output, input->rows, input->cols,
                              "same rows x cols as input")) {
    return s;
  }
  for (int64_t r = 0; r < input->rows; ++r) {
    for (int64_t c = 0; c < input->cols; ++c) {
      float value = 0.0f;
      load_element(input->data, input->dtype, element_index(*input, r, c), &value);
      store_element(output->data, output->dtype, element_index(*output, r, c), value,
                    saturate != 0);
    }
  }
  return OCTET_STATUS_SUCCESS;
}

int32_t amax_of_matrix(const octet_matrix_view* input, float* amax_out) {
  const char* kernel = "amax";
  if (int32_t s = check_not_null(kernel, "input", input)) return s;
  if (int32_t s = check_not_null(kernel, "amax_out", amax_out)) return s;
  if (int32_t s = check_matrix(kernel, "input", *input, DtypeClass::HighPrecision)) return s;
  float amax = 0.0f;
  for (int64_t r = 0; r < input->rows; ++r) {
    for (int64_t c = 0; c < input->cols; ++c) {
      float value = 0.0f;
      load_element(input->data, input->dtype, element_index(*input, r, c), &value);
      // NaN skipped explicitly: glibc's fmaxf returns NaN for a signalling
      // NaN operand, so std::fmax alone would not ignore it.
      if (!std::isnan(value)) amax = std::max(amax, std::fabs(value));
    }
  }
  *amax_out = amax;
  return OCTET_STATUS_SUCCESS;
}

int32_t transpose_matrix(const octet_matrix_view* input, const octet_matrix_view* output) {
  const char* kernel = "transpose";
  if (int32_t s = check_not_null(kernel, "input", input)) return s;
  if (int32_t s = check_not_null(kernel, "output", output)) return s;
  if (int32_t s = check_matrix(kernel, "input", *input, DtypeClass::Any)) return s;
  if (int32_t s = check_matrix(kernel, "output", *output, DtypeClass::Any)) return s;
  if (output->dtype != input->dtype) {
    return report(OCTET_STATUS_INVALID_ARGUMENT,
                  std::string(kernel) + ": output.dtype is " + dtype_name(output->dtype) +
                      " but must equal input.dtype (" + dtype_name(input->dtype) + ")");
  }
  if (int32_t s = check_shape(kernel, "output", *output, input->cols, input->rows,
                              "input.cols x input.rows")) {
    return s;
  }
  // Elements are copied as bytes: a transpose never changes a value.
  const std::size_t size = dtype_size(input->dtype);
  const auto* in = static_cast<const unsigned char*>(input->data);
  auto* out = static_cast<unsigned char*>(output->data);
  for (int64_t r = 0; r < input->rows; ++r) {
    for (int64_t c = 0; c < input->cols; ++c) {
      std::memcpy(out + element_index(*output, c, r) * size,
                  in + element_index(*input, r, c) * size, size);
    }
  }
  return OCTET_STATUS_SUCCESS;
}

}  // namespace octet::ref
