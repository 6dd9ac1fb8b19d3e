// Block-scaled quantization (numerics.md section "Block scaling"): MXFP8
// 1x32 blocks with E8M0 scales, and 1x128 / 128x128 blocks with FP32
// scales; plus the statistics variant of per-tensor quantize. The kernel
// knows block shapes and rounding rules, never recipes. FP32 arithmetic
// through octet_math.h (defined NaN results, numerics.md "NaN results").
#include <octet/octet_math.h>

#include <cfloat>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "argument_checks.hpp"
#include "host_errors.hpp"
#include "kernels.hpp"
#include "octet_reference/codecs.hpp"
#include "quantize_statistics.hpp"

namespace octet::ref {
namespace {

// dtype passed is_fp8, so it has a format.
Fp8Format format_of(int32_t dtype) {
  Fp8Format format = Fp8Format::E4M3;
  fp8_format_of_dtype(dtype, &format);
  return format;
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// E8M0 scale code of a block (numerics.md section 11).
uint8_t mx_scale_code(float block_amax, Fp8Format format, int32_t rounding) {
  // block_amax: max |x| over the block's finite elements, so never 0xFF.
  if (block_amax == 0.0f) return 0x00;
  if (rounding == 0) {  // RCEIL
    // A finite non-zero amax whose quotient underflows to 0 still gets the
    // smallest scale (0x00, 2^-127), never the NaN code zero would encode to.
    const float quotient = octet_math_div(block_amax, fp8_max(format));
    return quotient == 0.0f ? 0x00 : e8m0_encode(quotient, true);
  }
  // FLOOR (OCP): 2^(floor(log2 amax) - emax_elem); floor(log2) of the FP32
  // value is exact, so take it from the E8M0 floor encoding of amax itself.
  // emax_elem: the exponent of the format's largest value (8 for E4M3, 7 for
  // E4M3FNUZ, 15 for E5M2 and E5M2FNUZ).
  const int emax = std::ilogb(fp8_max(format));
  const int floor_log2 = std::ilogb(block_amax);
  const int code = floor_log2 - emax + 127;
  if (code < 0) return 0x00;
  if (code > 0xFE) return 0xFE;
  return static_cast<uint8_t>(code);
}

// FP32 block scale by the current-scaling rule (numerics.md 14.1).
float fp32_block_scale(float block_amax, Fp8Format format, float epsilon, bool power_of_two) {
  // block_amax: max |x| over the block's finite elements.
  const float amax = std::fmax(block_amax, epsilon);  // a NaN epsilon leaves block_amax
  if (std::isinf(amax) || amax == 0.0f) return 1.0f;
  float scale = octet_math_div(fp8_max(format), amax);
  if (std::isinf(scale)) scale = FLT_MAX;
  if (power_of_two) {
    uint32_t bits;
    std::memcpy(&bits, &scale, sizeof bits);
    bits &= 0xFF800000u;
    std::memcpy(&scale, &bits, sizeof bits);
  }
  return scale;
}

int32_t check_block_shape(const char* kernel, int32_t block_rows, int32_t block_cols) {
  if (block_rows < 1 || block_cols < 1) {
    return report(OCTET_STATUS_INVALID_ARGUMENT,
                  std::string(kernel) + ": block shape " + std::to_string(block_rows) + "x" +
                      std::to_string(block_cols) + " must be at least 1x1");
  }
  return OCTET_STATUS_SUCCESS;
}

int32_t check_scale_dtype(const char* kernel, int32_t scale_dtype) {
  if (scale_dtype != OCTET_DTYPE_E8M0 && scale_dtype != OCTET_DTYPE_FP32) {
    return report(OCTET_STATUS_INVALID_ARGUMENT,
                  std::string(kernel) + ": scale_dtype (" + std::to_string(scale_dtype) +
                      ") must be e8m0 or fp32");
  }
  return OCTET_STATUS_SUCCESS;
}

}  // namespace

int32_t quantize_matrix_with_statistics(const octet_quantize_args* args,
                                        octet_quantize_statistics* stats_out) {
  if (int32_t s = check_not_null("quantize_with_statistics", "stats_out", stats_out)) return s;
  if (int32_t s = quantize_matrix(args)) return s;
  // A second pass over the same values: clarity over speed in the reference.
  const octet_matrix_view& input = args->input;
  const Fp8Format format = format_of(args->out_dtype);
  const float scale = *args->scale;
  StatisticsCounter counter;
  for (int64_t r = 0; r < input.rows; ++r) {
    for (int64_t c = 0; c < input.cols; ++c) {
      float x = 0.0f;
      load_element(input.data, input.dtype, element_index(input, r, c), &x);
      const float scaled = octet_math_mul(x, scale);
      counter.count(x, scaled, fp8_encode(scaled, format, args->saturate != 0), format);
    }
  }
  *stats_out = counter.result();
  return OCTET_STATUS_SUCCESS;
}

int32_t block_quantize_matrix(const octet_block_quantize_args* args) {
  const char* kernel = "block_quantize";
  if (int32_t s = check_not_null(kernel, "args", args)) return s;
  if (int32_t s = check_struct_size(kernel, "args", args->struct_size,
                                    sizeof(octet_block_quantize_args))) {
    return s;
  }
  if (int32_t s = check_matrix(kernel, "args->input", args->input, DtypeClass::HighPrecision)) {
    return s;
  }
  if (!is_fp8(args->out_dtype)) {
    return report(OCTET_STATUS_INVALID_ARGUMENT, std::string(kernel) + ": args->out_dtype must be " + kFp8DtypeNames);
  }
  if (int32_t s = check_block_shape(kernel, args->block_rows, args->block_cols)) return s;
  if (int32_t s = check_scale_dtype(kernel, args->scale_dtype)) return s;
  if (args->scale_dtype == OCTET_DTYPE_E8M0 && args->e8m0_rounding != 0 &&
      args->e8m0_rounding != 1) {
    return report(OCTET_STATUS_INVALID_ARGUMENT,
                  std::string(kernel) + ": args->e8m0_rounding must be 0 (RCEIL) or 1 (FLOOR)");
  }
  if (int32_t s = check_not_null(kernel, "args->out", args->out)) return s;
  if (int32_t s = check_not_null(kernel, "args->scale_inv_out", args->scale_inv_out)) return s;

  const octet_matrix_view& in = args->input;
  const bool transposed = args->transposed != 0;
  const int64_t rows = transposed ? in.cols : in.rows;
  const int64_t cols = transposed ? in.rows : in.cols;
  auto value = [&](int64_t r, int64_t c) {
    float x = 0.0f;
    load_element(in.data, in.dtype, transposed ? element_index(in, c, r) : element_index(in, r, c),
                 &x);
    return x;
  };
  const Fp8Format format = format_of(args->out_dtype);
  const int64_t br = args->block_rows, bc = args->block_cols;
  const int64_t grid_cols = ceil_div(cols, bc);
  StatisticsCounter counter;
  float amax = 0.0f;
  for (int64_t r0 = 0; r0 < rows; r0 += br) {
    for (int64_t c0 = 0; c0 < cols; c0 += bc) {
      // Ragged blocks cover only the elements that exist (as if padded with
      // zeros, which change no amax).
      const int64_t r1 = std::min(rows, r0 + br), c1 = std::min(cols, c0 + bc);
      // Block amax (numerics.md section 11): the largest |x| of the block's
      // finite elements, so a NaN or an infinity changes no finite
      // neighbour's scale. The tensor amax counts infinities (ignores NaN).
      float block_amax = 0.0f;
      bool has_inf = false;
      for (int64_t r = r0; r < r1; ++r) {
        for (int64_t c = c0; c < c1; ++c) {
          const float x = value(r, c);
          // Tested explicitly (glibc's fmaxf returns NaN for a signalling NaN).
          if (std::isinf(x)) {
            has_inf = true;
          } else if (std::isfinite(x)) {
            block_amax = std::max(block_amax, std::fabs(x));
          }
        }
      }
      amax = std::max(amax, has_inf ? INFINITY : block_amax);
      const std::size_t block = static_cast<std::size_t>((r0 / br) * grid_cols + c0 / bc);
      uint8_t scale_code = 0;
      float scale = 1.0f;
      if (args->scale_dtype == OCTET_DTYPE_E8M0) {
        scale_code = mx_scale_code(block_amax, format, args->e8m0_rounding);
        static_cast<uint8_t*>(args->scale_inv_out)[block] = scale_code;
      } else {
        scale = fp32_block_scale(block_amax, format, args->amax_epsilon, args->power_of_two != 0);
        static_cast<float*>(args->scale_inv_out)[block] = octet_math_div(1.0f, scale);
      }
      const float divisor = args->scale_dtype == OCTET_DTYPE_E8M0 ? e8m0_decode(scale_code) : 0.0f;
      for (int64_t r = r0; r < r1; ++r) {
        for (int64_t c = c0; c < c1; ++c) {
          const float x = value(r, c);
          // NaN stays NaN with its sign; an infinity saturates to the
          // largest finite code of its sign.
          const float scaled =
              args->scale_dtype == OCTET_DTYPE_E8M0 ? octet_math_div(x, divisor) : octet_math_mul(x, scale);
          const uint8_t code = fp8_encode(scaled, format, true);
          args->out[static_cast<std::size_t>(r * cols + c)] = code;
          counter.count(x, scaled, code, format);
        }
      }
    }
  }
  if (args->amax_out != nullptr) *args->amax_out = amax;
  if (args->stats_out != nullptr) *args->stats_out = counter.result();
  return OCTET_STATUS_SUCCESS;
}

int32_t block_dequantize_matrix(const octet_block_dequantize_args* args) {
  const char* kernel = "block_dequantize";
  if (int32_t s = check_not_null(kernel, "args", args)) return s;
  if (int32_t s = check_struct_size(kernel, "args", args->struct_size,
                                    sizeof(octet_block_dequantize_args))) {
    return s;
  }
  if (int32_t s = check_matrix(kernel, "args->input", args->input, DtypeClass::Fp8)) return s;
  if (int32_t s = check_matrix(kernel, "args->output", args->output, DtypeClass::HighPrecision)) {
    return s;
  }
  if (int32_t s = check_shape(kernel, "args->output", args->output, args->input.rows,
                              args->input.cols, "same rows x cols as args->input")) {
    return s;
  }
  if (int32_t s = check_block_shape(kernel, args->block_rows, args->block_cols)) return s;
  if (int32_t s = check_scale_dtype(kernel, args->scale_dtype)) return s;
  if (int32_t s = check_not_null(kernel, "args->scale_inv", args->scale_inv)) return s;
  const octet_matrix_view& in = args->input;
  const int64_t grid_cols = ceil_div(in.cols, args->block_cols);
  for (int64_t r = 0; r < in.rows; ++r) {
    for (int64_t c = 0; c < in.cols; ++c) {
      const std::size_t block =
          static_cast<std::size_t>((r / args->block_rows) * grid_cols + c / args->block_cols);
      const float scale_inv =
          args->scale_dtype == OCTET_DTYPE_E8M0
              ? e8m0_decode(static_cast<const uint8_t*>(args->scale_inv)[block])
              : static_cast<const float*>(args->scale_inv)[block];
      float decoded = 0.0f;
      load_element(in.data, in.dtype, element_index(in, r, c), &decoded);
      store_element(args->output.data, args->output.dtype, element_index(args->output, r, c),
                    octet_math_mul(decoded, scale_inv), true);
    }
  }
  return OCTET_STATUS_SUCCESS;
}

}  // namespace octet::ref
