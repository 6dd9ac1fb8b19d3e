// Block scaling (numerics.md section 11): MXFP8 1x32 blocks with E8M0 scales
// and 1x128 / 128x128 blocks with FP32 scales, quantize and dequantize. One
// Kokkos team per block: the team reduces the block's amax (over its finite
// elements), every thread derives the same scale from it, then the team
// writes the codes and reduces the statistics (whose amax, the tensor's,
// counts infinities).
#include <cfloat>
#include <string>

#include "views.hpp"

namespace octet_kokkos {
namespace {

// E8M0 scale code of a block (numerics.md 11, MXFP8).
KOKKOS_INLINE_FUNCTION uint8_t mx_scale_code(float block_amax, int32_t dtype, int32_t rounding) {
  // block_amax: max |x| over the block's finite elements, so never 0xFF.
  if (block_amax == 0.0f) return 0x00;
  if (rounding == 0) {  // RCEIL; a quotient that underflows to 0 gets 0x00, never the NaN code
    const float quotient = div(block_amax, fp8_max_of(dtype));
    return quotient == 0.0f ? static_cast<uint8_t>(0x00) : e8m0_encode(quotient, true);
  }
  // emax = floor(log2 fp8_max): 8 (E4M3), 7 (E4M3FNUZ), 15 (E5M2, E5M2FNUZ).
  const int code = ilogb_of(block_amax) - ilogb_of(fp8_max_of(dtype)) + 127;
  if (code < 0) return 0x00;
  if (code > 0xFE) return 0xFE;
  return static_cast<uint8_t>(code);
}

// FP32 block scale by the current-scaling rule (numerics.md 14.1).
KOKKOS_INLINE_FUNCTION float fp32_block_scale(float block_amax, int32_t dtype, float epsilon, bool power_of_two) {
  // block_amax: max |x| over the block's finite elements.
  const float amax = fmax_of(block_amax, epsilon);
  if (is_inf(amax) || amax == 0.0f) return 1.0f;
  float scale = div(fp8_max_of(dtype), amax);
  if (is_inf(scale)) scale = FLT_MAX;
  if (power_of_two) scale = float_of(bits_of(scale) & 0xFF800000u);
  return scale;
}

int32_t check_block_shape(const char* kernel, int32_t block_rows, int32_t block_cols) {
  if (block_rows >= 1 && block_cols >= 1) return OCTET_STATUS_SUCCESS;
  return report(OCTET_STATUS_INVALID_ARGUMENT, std::string(kernel) + ": block shape " + std::to_string(block_rows) +
                                                   "x" + std::to_string(block_cols) + " must be at least 1x1");
}

int32_t check_scale_dtype(const char* kernel, int32_t scale_dtype) {
  if (scale_dtype == OCTET_DTYPE_E8M0 || scale_dtype == OCTET_DTYPE_FP32) return OCTET_STATUS_SUCCESS;
  return report(OCTET_STATUS_INVALID_ARGUMENT,
                std::string(kernel) + ": scale_dtype (" + std::to_string(scale_dtype) + ") must be e8m0 or fp32");
}

}  // namespace

int32_t block_quantize_kernel(const octet_block_quantize_args* args) {
  const char* kernel = "block_quantize";
  if (int32_t s = check_not_null(kernel, "args", args)) return s;
  if (int32_t s = check_struct_size(kernel, "args", args->struct_size, sizeof(octet_block_quantize_args))) return s;
  if (int32_t s = check_matrix(kernel, "args->input", args->input, DtypeClass::HighPrecision)) return s;
  if (!is_fp8(args->out_dtype)) {
    return report(OCTET_STATUS_INVALID_ARGUMENT,
                  std::string(kernel) + ": args->out_dtype is " + dtype_name(args->out_dtype) + " (" +
                      std::to_string(args->out_dtype) + ") but must be " + kFp8DtypeNames);
  }
  if (int32_t s = check_block_shape(kernel, args->block_rows, args->block_cols)) return s;
  if (int32_t s = check_scale_dtype(kernel, args->scale_dtype)) return s;
  if (args->scale_dtype == OCTET_DTYPE_E8M0 && args->e8m0_rounding != 0 && args->e8m0_rounding != 1) {
    return report(OCTET_STATUS_INVALID_ARGUMENT,
                  std::string(kernel) + ": args->e8m0_rounding must be 0 (RCEIL) or 1 (FLOOR)");
  }
  if (int32_t s = check_not_null(kernel, "args->out", args->out)) return s;
  if (int32_t s = check_not_null(kernel, "args->scale_inv_out", args->scale_inv_out)) return s;

  const Mat in(args->input);
  const bool transposed = args->transposed != 0;
  const int64_t rows = transposed ? in.cols : in.rows;
  const int64_t cols = transposed ? in.rows : in.cols;
  const int64_t br = args->block_rows, bc = args->block_cols;
  const int64_t grid_rows = ceil_div(rows, br), grid_cols = ceil_div(cols, bc);
  const int64_t blocks = (rows > 0 && cols > 0) ? grid_rows * grid_cols : 0;
  const int32_t dtype = args->out_dtype;
  const bool e8m0 = args->scale_dtype == OCTET_DTYPE_E8M0;
  const int32_t rounding = args->e8m0_rounding;
  const float epsilon = args->amax_epsilon;
  const bool power_of_two = args->power_of_two != 0;
  const DeviceView<uint8_t> out(args->out, static_cast<size_t>(blocks > 0 ? rows * cols : 0));
  const DeviceView<uint8_t> scale_codes(e8m0 ? static_cast<uint8_t*>(args->scale_inv_out) : nullptr,
                                        e8m0 ? static_cast<size_t>(blocks) : 0);
  const DeviceView<float> scale_values(e8m0 ? nullptr : static_cast<float*>(args->scale_inv_out),
                                       e8m0 ? 0 : static_cast<size_t>(blocks));
  Stats stats;
  if (blocks > 0) {
    Kokkos::parallel_reduce(
        "octet_kokkos::block_quantize", Team(static_cast<int>(blocks), Kokkos::AUTO),
        KOKKOS_LAMBDA(const Member& team, Stats& total) {
          const int64_t block = team.league_rank();
          const int64_t r0 = (block / grid_cols) * br, c0 = (block % grid_cols) * bc;
          const int64_t r1 = r0 + br < rows ? r0 + br : rows, c1 = c0 + bc < cols ? c0 + bc : cols;
          const int64_t width = c1 - c0, count = (r1 - r0) * width;
          auto value = [&](int64_t e) {
            const int64_t r = r0 + e / width, c = c0 + e % width;
            return transposed ? in.at(c, r) : in.at(r, c);
          };
          // Ragged blocks cover only existing elements (zero padding changes no amax).
          // NaN and infinities take no part in the block's amax.
          float block_amax = 0.0f;
          Kokkos::parallel_reduce(
              Kokkos::TeamThreadRange(team, count),
              [&](int64_t e, float& m) {
                const float x = value(e);
                if (is_finite(x) && abs_of(x) > m) m = abs_of(x);
              },
              Kokkos::Max<float>(block_amax));
          if (!(block_amax > 0.0f)) block_amax = 0.0f;
          uint8_t scale_code = 0;
          float scale = 1.0f, divisor = 0.0f;
          if (e8m0) {
            scale_code = mx_scale_code(block_amax, dtype, rounding);
            divisor = e8m0_decode(scale_code);
          } else {
            scale = fp32_block_scale(block_amax, dtype, epsilon, power_of_two);
          }
          Kokkos::single(Kokkos::PerTeam(team), [&]() {
            if (e8m0) {
              scale_codes(block) = scale_code;
            } else {
              scale_values(block) = div(1.0f, scale);
            }
          });
          Stats block_stats;
          Kokkos::parallel_reduce(
              Kokkos::TeamThreadRange(team, count),
              [&](int64_t e, Stats& s) {
                const float x = value(e);
                const int64_t r = r0 + e / width, c = c0 + e % width;
                // NaN keeps its sign; an infinity saturates to max finite.
                const float scaled = e8m0 ? div(x, divisor) : mul(x, scale);
                const uint8_t code = fp8_encode(scaled, dtype, true);
                out(r * cols + c) = code;
                s.count(x, scaled, code, dtype);
              },
              Kokkos::Sum<Stats>(block_stats));
          Kokkos::single(Kokkos::PerTeam(team), [&]() { total += block_stats; });
        },
        Kokkos::Sum<Stats>(stats));
  }
  if (args->amax_out != nullptr) write_scalar(args->amax_out, stats.amax);
  if (args->stats_out != nullptr) write_scalar(args->stats_out, stats.result());
  return OCTET_STATUS_SUCCESS;
}

int32_t block_dequantize_kernel(const octet_block_dequantize_args* args) {
  const char* kernel = "block_dequantize";
  if (int32_t s = check_not_null(kernel, "args", args)) return s;
  if (int32_t s = check_struct_size(kernel, "args", args->struct_size, sizeof(octet_block_dequantize_args))) return s;
  if (int32_t s = check_matrix(kernel, "args->input", args->input, DtypeClass::Fp8)) return s;
  if (int32_t s = check_matrix(kernel, "args->output", args->output, DtypeClass::HighPrecision)) return s;
  if (int32_t s = check_shape(kernel, "args->output", args->output, args->input.rows, args->input.cols,
                              "same rows x cols as args->input"))
    return s;
  if (int32_t s = check_block_shape(kernel, args->block_rows, args->block_cols)) return s;
  if (int32_t s = check_scale_dtype(kernel, args->scale_dtype)) return s;
  if (int32_t s = check_not_null(kernel, "args->scale_inv", args->scale_inv)) return s;
  const Mat in(args->input), out(args->output);
  if (in.empty()) return OCTET_STATUS_SUCCESS;
  const int64_t br = args->block_rows, bc = args->block_cols;
  const int64_t grid_cols = ceil_div(in.cols, bc);
  const int64_t blocks = ceil_div(in.rows, br) * grid_cols;
  const bool e8m0 = args->scale_dtype == OCTET_DTYPE_E8M0;
  const DeviceView<uint8_t> codes(e8m0 ? static_cast<uint8_t*>(const_cast<void*>(args->scale_inv)) : nullptr,
                                  e8m0 ? static_cast<size_t>(blocks) : 0);
  const DeviceView<float> values(e8m0 ? nullptr : static_cast<float*>(const_cast<void*>(args->scale_inv)),
                                 e8m0 ? 0 : static_cast<size_t>(blocks));
  Kokkos::parallel_for(
      "octet_kokkos::block_dequantize", Range2({0, 0}, {in.rows, in.cols}), KOKKOS_LAMBDA(int64_t r, int64_t c) {
        const int64_t block = (r / br) * grid_cols + c / bc;
        const float scale_inv = e8m0 ? e8m0_decode(codes(block)) : values(block);
        out.put(r, c, mul(in.at(r, c), scale_inv), true);
      });
  Kokkos::fence();
  return OCTET_STATUS_SUCCESS;
}

}  // namespace octet_kokkos
