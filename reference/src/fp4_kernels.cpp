// The reference FP4 kernels (plugin ABI 1.4): MXFP4 and NVFP4 quantize,
// dequantize and GEMM in the order of numerics.md section 15, so their bits
// are the oracle other backends are checked against. Clarity over speed.
#include <octet/octet_math.h>
#include <octet/octet_random.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "argument_checks.hpp"
#include "fp4_math.hpp"
#include "host_errors.hpp"
#include "kernels.hpp"
#include "octet_reference/codecs.hpp"
#include "quantize_statistics.hpp"

namespace octet::ref {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

struct Fp4Mode {
  int64_t block_rows;
  int64_t block_cols;
  bool nvfp4;
};

// False for a value that is not one FP4 scaling mode.
bool fp4_mode_of(int32_t scaling_mode, Fp4Mode* mode) {
  switch (scaling_mode) {
    case OCTET_SCALING_MXFP4_1X32:
      *mode = {1, 32, false};
      return true;
    case OCTET_SCALING_NVFP4_1X16:
      *mode = {1, 16, true};
      return true;
    case OCTET_SCALING_NVFP4_16X16:
      *mode = {16, 16, true};
      return true;
    default:
      return false;
  }
}

int32_t check_mode(const char* kernel, const char* name, int32_t scaling_mode, Fp4Mode* mode) {
  if (!fp4_mode_of(scaling_mode, mode)) {
    return report(OCTET_STATUS_INVALID_ARGUMENT, std::string(kernel) + ": " + name + " (" +
                                                     std::to_string(scaling_mode) +
                                                     ") must be OCTET_SCALING_MXFP4_1X32, NVFP4_1X16 or NVFP4_16X16");
  }
  return OCTET_STATUS_SUCCESS;
}

// Packed rows (docs/abi.md, "Sub-byte dtypes"): row r starts at byte
// r * ceil(cols / 2); column c is the low nibble of byte c / 2 when even.
std::size_t byte_of(int64_t row, int64_t col, int64_t cols) {
  return static_cast<std::size_t>(row * ((cols + 1) / 2) + col / 2);
}

uint8_t code_at(const uint8_t* packed, int64_t row, int64_t col, int64_t cols) {
  const uint8_t byte = packed[byte_of(row, col, cols)];
  return (col % 2 == 0) ? (byte & 0x0F) : static_cast<uint8_t>(byte >> 4);
}

void put_code(uint8_t* packed, int64_t row, int64_t col, int64_t cols, uint8_t code) {
  uint8_t& byte = packed[byte_of(row, col, cols)];
  byte =
      (col % 2 == 0) ? static_cast<uint8_t>((byte & 0xF0) | code) : static_cast<uint8_t>((byte & 0x0F) | (code << 4));
}

// The decode scale X of a block (numerics.md 15.3).
float block_decode_scale(uint8_t code, const Fp4Mode& mode, float g) {
  return mode.nvfp4 ? octet_math_mul(fp8_decode(code, Fp8Format::E4M3), g) : e8m0_decode(code);
}

}  // namespace

int32_t fp4_quantize_matrix(const octet_fp4_quantize_args* args) {
  const char* kernel = "fp4_quantize";
  if (int32_t s = check_not_null(kernel, "args", args)) return s;
  if (int32_t s = check_struct_size(kernel, "args", args->struct_size, sizeof(octet_fp4_quantize_args))) {
    return s;
  }
  if (int32_t s = check_matrix(kernel, "args->input", args->input, DtypeClass::HighPrecision)) return s;
  Fp4Mode mode{};
  if (int32_t s = check_mode(kernel, "args->scaling_mode", args->scaling_mode, &mode)) return s;
  if (args->e8m0_rounding != 0 && args->e8m0_rounding != 1) {
    return report(OCTET_STATUS_INVALID_ARGUMENT,
                  std::string(kernel) + ": args->e8m0_rounding must be 0 (RCEIL) or 1 (FLOOR)");
  }
  if ((args->stochastic_rounding != 0 && args->stochastic_rounding != 1) || (args->rht != 0 && args->rht != 1)) {
    return report(OCTET_STATUS_INVALID_ARGUMENT,
                  std::string(kernel) + ": args->stochastic_rounding and args->rht must be 0 or 1");
  }
  if (args->rht_sign_mask > 0xFFFFu) {
    return report(OCTET_STATUS_INVALID_ARGUMENT, std::string(kernel) + ": args->rht_sign_mask must fit in 16 bits");
  }
  const octet_matrix_view& in = args->input;
  const bool transposed = args->transposed != 0;
  const int64_t rows = transposed ? in.cols : in.rows;
  const int64_t cols = transposed ? in.rows : in.cols;
  if (args->rht != 0 && cols % 16 != 0) {
    return report(OCTET_STATUS_INVALID_ARGUMENT, std::string(kernel) +
                                                     ": the Hadamard transform needs the encoded rows' length (" +
                                                     std::to_string(cols) + ") to be a multiple of 16");
  }
  if (int32_t s = check_not_null(kernel, "args->out", args->out)) return s;
  if (int32_t s = check_not_null(kernel, "args->scale_inv_out", args->scale_inv_out)) return s;
  if (mode.nvfp4) {
    if (int32_t s = check_not_null(kernel, "args->tensor_scale_inv_out", args->tensor_scale_inv_out)) return s;
  }

  // 1. The matrix to encode, widened to FP32, and the input's amax
  // (section 6: NaN ignored, infinities count).
  std::vector<float> y(static_cast<std::size_t>(rows * cols));
  float amax = 0.0f;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      float x = 0.0f;
      load_element(in.data, in.dtype, transposed ? element_index(in, c, r) : element_index(in, r, c), &x);
      if (!std::isnan(x)) amax = std::max(amax, std::fabs(x));
      y[static_cast<std::size_t>(r * cols + c)] = x;
    }
  }
  // 2. The random Hadamard transform of each row's 16-element groups.
  if (args->rht != 0) {
    for (int64_t g0 = 0; g0 < rows * cols; g0 += 16) hadamard16(&y[static_cast<std::size_t>(g0)], args->rht_sign_mask);
  }
  // 3. NVFP4's tensor scale from the finite amax of what is encoded.
  float g = 1.0f;
  if (mode.nvfp4) {
    float finite_amax = 0.0f;
    for (float v : y) {
      if (std::isfinite(v)) finite_amax = std::max(finite_amax, std::fabs(v));
    }
    g = nvfp4_tensor_scale(finite_amax);
  }
  // 4. Blocks.
  const int64_t grid_cols = ceil_div(cols, mode.block_cols);
  std::vector<uint8_t> codes(static_cast<std::size_t>(rows * ((cols + 1) / 2)), 0);
  std::vector<uint8_t> scales(static_cast<std::size_t>(ceil_div(rows, mode.block_rows) * grid_cols), 0);
  StatisticsCounter counter;
  for (int64_t r0 = 0; r0 < rows; r0 += mode.block_rows) {
    for (int64_t c0 = 0; c0 < cols; c0 += mode.block_cols) {
      const int64_t r1 = std::min(rows, r0 + mode.block_rows), c1 = std::min(cols, c0 + mode.block_cols);
      float block_amax = 0.0f;
      bool has_nan = false;
      for (int64_t r = r0; r < r1; ++r) {
        for (int64_t c = c0; c < c1; ++c) {
          const float v = y[static_cast<std::size_t>(r * cols + c)];
          if (std::isnan(v)) has_nan = true;
          if (std::isfinite(v)) block_amax = std::max(block_amax, std::fabs(v));
        }
      }
      uint8_t scale_code = 0;
      if (has_nan) {
        scale_code = mode.nvfp4 ? 0x7F : 0xFF;  // the scale's NaN code
      } else {
        scale_code = mode.nvfp4 ? nvfp4_block_scale_code(block_amax, g)
                                : mxfp4_block_scale_code(block_amax, args->e8m0_rounding);
      }
      scales[static_cast<std::size_t>((r0 / mode.block_rows) * grid_cols + c0 / mode.block_cols)] = scale_code;
      const float divisor = block_decode_scale(scale_code, mode, g);
      for (int64_t r = r0; r < r1; ++r) {
        for (int64_t c = c0; c < c1; ++c) {
          const int64_t index = r * cols + c;
          const float v = y[static_cast<std::size_t>(index)];
          float scaled = v;
          uint8_t code = 0;
          if (has_nan) {
            code = 0x0;  // the NaN scale alone marks the block; its finite values count as flushed
            scaled = std::numeric_limits<float>::quiet_NaN();
          } else if (std::isinf(v)) {
            code = std::signbit(v) ? 0xF : 0x7;
          } else if (divisor == 0.0f) {
            code = std::signbit(v) ? 0x8 : 0x0;  // the block's scale flushed to 0
            scaled = 0.0f;
          } else {
            scaled = octet_math_div(v, divisor);
            code = args->stochastic_rounding != 0
                       ? e2m1_encode_stochastic(
                             scaled, octet_random_bits(args->seed, args->offset, static_cast<uint64_t>(index)))
                       : fp8_encode(scaled, Fp8Format::E2M1, true);
          }
          put_code(codes.data(), r, c, cols, code);
          counter.count(v, scaled, code, Fp8Format::E2M1);
        }
      }
    }
  }
  std::copy(codes.begin(), codes.end(), args->out);
  std::copy(scales.begin(), scales.end(), args->scale_inv_out);
  if (mode.nvfp4) *args->tensor_scale_inv_out = g;
  if (args->amax_out != nullptr) *args->amax_out = amax;
  if (args->stats_out != nullptr) {
    octet_quantize_statistics stats = counter.result();
    stats.amax = amax;
    *args->stats_out = stats;
  }
  return OCTET_STATUS_SUCCESS;
}

int32_t fp4_dequantize_matrix(const octet_fp4_dequantize_args* args) {
  const char* kernel = "fp4_dequantize";
  if (int32_t s = check_not_null(kernel, "args", args)) return s;
  if (int32_t s = check_struct_size(kernel, "args", args->struct_size, sizeof(octet_fp4_dequantize_args))) {
    return s;
  }
  Fp4Mode mode{};
  if (int32_t s = check_mode(kernel, "args->scaling_mode", args->scaling_mode, &mode)) return s;
  if (args->rows < 0 || args->cols < 0) {
    return report(OCTET_STATUS_INVALID_ARGUMENT, std::string(kernel) + ": rows and cols must be >= 0");
  }
  if (int32_t s = check_matrix(kernel, "args->output", args->output, DtypeClass::HighPrecision)) return s;
  if (int32_t s = check_shape(kernel, "args->output", args->output, args->rows, args->cols, "rows x cols")) {
    return s;
  }
  if (args->rows * args->cols > 0) {
    if (int32_t s = check_not_null(kernel, "args->input", args->input)) return s;
    if (int32_t s = check_not_null(kernel, "args->scale_inv", args->scale_inv)) return s;
    if (mode.nvfp4) {
      if (int32_t s = check_not_null(kernel, "args->tensor_scale_inv", args->tensor_scale_inv)) return s;
    }
  }
  const int64_t rows = args->rows, cols = args->cols;
  const float g = mode.nvfp4 && rows * cols > 0 ? *args->tensor_scale_inv : 1.0f;
  const int64_t grid_cols = ceil_div(cols, mode.block_cols);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      const uint8_t scale_code =
          args->scale_inv[static_cast<std::size_t>((r / mode.block_rows) * grid_cols + c / mode.block_cols)];
      const float x = fp8_decode(code_at(args->input, r, c, cols), Fp8Format::E2M1);
      const float v = octet_math_mul(x, block_decode_scale(scale_code, mode, g));
      store_element(args->output.data, args->output.dtype, element_index(args->output, r, c), v, true);
    }
  }
  return OCTET_STATUS_SUCCESS;
}

int32_t fp4_gemm(const octet_fp4_gemm_args* args) {
  const char* kernel = "fp4_gemm";
  if (int32_t s = check_not_null(kernel, "args", args)) return s;
  if (int32_t s = check_struct_size(kernel, "args", args->struct_size, sizeof(octet_fp4_gemm_args))) return s;
  if (args->m < 0 || args->n < 0 || args->k < 0) {
    return report(OCTET_STATUS_INVALID_ARGUMENT, std::string(kernel) + ": m, n, k must be >= 0");
  }
  Fp4Mode a_mode{}, b_mode{};
  if (int32_t s = check_mode(kernel, "args->a_scaling_mode", args->a_scaling_mode, &a_mode)) return s;
  if (int32_t s = check_mode(kernel, "args->b_scaling_mode", args->b_scaling_mode, &b_mode)) return s;
  if (a_mode.nvfp4 != b_mode.nvfp4) {
    return report(OCTET_STATUS_INVALID_ARGUMENT, std::string(kernel) +
                                                     ": args->a_scaling_mode and args->b_scaling_mode must both be "
                                                     "MXFP4 or both NVFP4");
  }
  if (int32_t s = check_matrix(kernel, "args->d", args->d, DtypeClass::HighPrecision, OCTET_STATUS_UNSUPPORTED)) {
    return s;
  }
  if (int32_t s = check_shape(kernel, "args->d", args->d, args->m, args->n, "[m,n]")) return s;
  if (args->bias.data != nullptr) {
    if (int32_t s = check_matrix(kernel, "args->bias", args->bias, DtypeClass::HighPrecision)) return s;
    if (int32_t s = check_shape(kernel, "args->bias", args->bias, 1, args->n, "one row of n")) return s;
  }
  if (args->epilogue != OCTET_EPILOGUE_NONE && args->epilogue != OCTET_EPILOGUE_GELU) {
    return report(OCTET_STATUS_INVALID_ARGUMENT, std::string(kernel) + ": bad args->epilogue");
  }
  if (args->k > 0 && args->m > 0) {
    if (int32_t s = check_not_null(kernel, "args->a", args->a)) return s;
    if (int32_t s = check_not_null(kernel, "args->a_scale_inv", args->a_scale_inv)) return s;
  }
  if (args->k > 0 && args->n > 0) {
    if (int32_t s = check_not_null(kernel, "args->b", args->b)) return s;
    if (int32_t s = check_not_null(kernel, "args->b_scale_inv", args->b_scale_inv)) return s;
  }
  if (a_mode.nvfp4) {
    if (int32_t s = check_not_null(kernel, "args->a_tensor_scale_inv", args->a_tensor_scale_inv)) return s;
    if (int32_t s = check_not_null(kernel, "args->b_tensor_scale_inv", args->b_tensor_scale_inv)) return s;
  }
  const int64_t m = args->m, n = args->n, k = args->k, bk = a_mode.block_cols;
  const int64_t k_blocks = ceil_div(k, bk);
  const float ga = a_mode.nvfp4 ? *args->a_tensor_scale_inv : 1.0f;
  const float gb = a_mode.nvfp4 ? *args->b_tensor_scale_inv : 1.0f;
  auto block_scale = [&](const uint8_t* grid, const Fp4Mode& mode, int64_t row, int64_t kb) {
    const uint8_t code = grid[static_cast<std::size_t>((row / mode.block_rows) * k_blocks + kb)];
    return mode.nvfp4 ? fp8_decode(code, Fp8Format::E4M3) : e8m0_decode(code);
  };
  const octet_matrix_view& d = args->d;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      float acc = 0.0f;
      for (int64_t kb = 0; kb < k_blocks; ++kb) {
        float partial = 0.0f;  // exact: products are multiples of 1/4 up to 36
        for (int64_t kk = kb * bk; kk < std::min(k, (kb + 1) * bk); ++kk) {
          const float a = fp8_decode(code_at(args->a, i, kk, k), Fp8Format::E2M1);
          const float b = fp8_decode(code_at(args->b, j, kk, k), Fp8Format::E2M1);
          partial = partial + a * b;
        }
        const float sa = block_scale(args->a_scale_inv, a_mode, i, kb);
        const float sb = block_scale(args->b_scale_inv, b_mode, j, kb);
        acc = acc + partial * (sa * sb);
      }
      float v = (args->alpha * (ga * gb)) * acc;
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
