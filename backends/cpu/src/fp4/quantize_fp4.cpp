// FP4 quantize and dequantize (numerics.md 15.3): MXFP4 1x32 with E8M0
// scales, NVFP4 1x16 and 16x16 with E4M3 scales and an FP32 tensor scale,
// with stochastic rounding (Philox bits of <octet/octet_random.h>) and the
// random Hadamard transform. Every value is computed by the reference's
// single-value rules (fp4/fp4_codes.hpp) in its order, so codes, scales, the
// tensor scale, amax and statistics are the reference's bits.
//
// The encoded matrix is cut into groups of 16 rows (one row of 16x16
// blocks; any row split suits the 1xN modes), one OpenMP task each, held in
// a per-thread FP32 panel of 16 x cols: NVFP4 makes two passes over the
// groups (the tensor scale needs the amax of the whole transformed matrix
// first, so the second pass loads and transforms again rather than keeping
// a whole-matrix FP32 copy), MXFP4 one. Groups own whole rows of `out`, so
// threads never share a byte.
#include <octet/octet_math.h>
#include <octet/octet_random.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "codecs/scalar_codecs.hpp"
#include "dispatch/implementation_list.hpp"
#include "dispatch/isa.hpp"
#include "dispatch/parallel_policy.hpp"
#include "elementwise/row_kernels.hpp"
#include "fp4/fp4_codes.hpp"
#include "fp4/fp4_kernels.hpp"
#include "fp4/quantize_fp4_loops.hpp"
#include "plugin/checks.hpp"
#include "plugin/errors.hpp"
#include "plugin/kernels.hpp"

namespace octet_cpu {
namespace {

constexpr int64_t kGroupRows = 16;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

int32_t require_mode(const char* kernel, const char* name, int32_t scaling_mode, Fp4Mode* mode) {
  if (fp4_mode_of(scaling_mode, mode)) return OCTET_STATUS_SUCCESS;
  return report(OCTET_STATUS_INVALID_ARGUMENT, std::string(kernel) + ": " + name + " (" + std::to_string(scaling_mode) +
                                                   ") must be OCTET_SCALING_MXFP4_1X32, NVFP4_1X16 or NVFP4_16X16");
}

// The block's decode scale X (numerics.md 15.3).
float decode_scale(uint8_t code, bool nvfp4, float g) {
  return nvfp4 ? octet_math_mul(fp8_table(OCTET_DTYPE_E4M3)[code], g) : e8m0_table()[code];
}

// The random Hadamard transform of 16 values in place (numerics.md 15.2):
// each output the sum from +0 over j ascending of +-x_j, then * 0.25.
void hadamard16(float* values, uint32_t sign_mask) {
  float in[16];
  for (int j = 0; j < 16; ++j) in[j] = ((sign_mask >> j) & 1u) != 0 ? -values[j] : values[j];
  for (int i = 0; i < 16; ++i) {
    float sum = 0.0f;
    for (int j = 0; j < 16; ++j) {
      sum = octet_math_add(sum, (__builtin_popcount(static_cast<unsigned>(i & j)) & 1) != 0 ? -in[j] : in[j]);
    }
    values[i] = octet_math_mul(sum, 0.25f);
  }
}

void hadamard_portable(float* values, int64_t n, uint32_t sign_mask) {
  for (int64_t g = 0; g < n; g += 16) hadamard16(values + g, sign_mask);
}

void scan_portable(const float* y, int64_t n, float* finite_amax, bool* has_nan) {
  float m = *finite_amax;
  for (int64_t i = 0; i < n; ++i) {
    if (std::isnan(y[i])) *has_nan = true;
    if (std::isfinite(y[i])) m = std::max(m, std::fabs(y[i]));
  }
  *finite_amax = m;
}

void encode_rne_portable(const float* y, int64_t n, float divisor, uint8_t* codes, uint64_t* saturated,
                         uint64_t* flushed) {
  for (int64_t i = 0; i < n; ++i) {
    const float scaled = octet_math_div(y[i], divisor);
    codes[i] = e2m1_encode_rne(scaled);
    *saturated += e2m1_overflows(scaled) ? 1 : 0;
    *flushed += std::isfinite(y[i]) && y[i] != 0.0f && (codes[i] & 0x7) == 0 ? 1 : 0;  // +0 or -0
  }
}

struct Counts {
  uint64_t nan = 0, saturated = 0, flushed = 0;
};

class Quantizer {
 public:
  Quantizer(const octet_fp4_quantize_args& args, const Fp4Mode& mode)
      : args_(args), mode_(mode), rk_(row_kernels()), loops_(fp4_quantize_loops()) {
    const octet_matrix_view& in = args.input;
    transposed_ = args.transposed != 0;
    rows_ = transposed_ ? in.cols : in.rows;
    cols_ = transposed_ ? in.rows : in.cols;
    grid_cols_ = ceil_div(cols_, mode.block_cols);
  }
  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }

  // y of rows [r0, r0 + h) into panel (h x cols): the input (or its
  // transpose) widened to FP32; *amax = max(*amax, |x|), NaN ignored; then
  // the Hadamard transform when asked.
  void load(int64_t r0, int64_t h, float* panel, float* amax) const {
    const octet_matrix_view& in = args_.input;
    if (!transposed_) {
      for (int64_t r = 0; r < h; ++r) rk_.widen(element_ptr(in, r0 + r, 0), in.dtype, cols_, panel + r * cols_);
    } else {
      float column[kGroupRows];
      for (int64_t c = 0; c < cols_; ++c) {
        rk_.widen(element_ptr(in, c, r0), in.dtype, h, column);
        for (int64_t r = 0; r < h; ++r) panel[r * cols_ + c] = column[r];
      }
    }
    float m = *amax;
    for (int64_t i = 0; i < h * cols_; ++i) m = max_magnitude(m, panel[i]);
    *amax = m;
    if (args_.rht != 0) loops_.hadamard(panel, h * cols_, args_.rht_sign_mask);
  }

  // Codes and scales of rows [r0, r0 + h) from their y in panel; codes:
  // h x cols bytes of scratch, one code each before packing.
  void encode(int64_t r0, int64_t h, const float* panel, float g, uint8_t* codes, Counts* counts) const {
    const int64_t br = mode_.block_rows, bc = mode_.block_cols;
    for (int64_t b0 = 0; b0 < h; b0 += br) {
      const int64_t b1 = std::min(h, b0 + br);
      for (int64_t c0 = 0; c0 < cols_; c0 += bc) {
        const int64_t c1 = std::min(cols_, c0 + bc);
        float block_amax = 0.0f;
        bool has_nan = false;
        for (int64_t r = b0; r < b1; ++r) loops_.scan(panel + r * cols_ + c0, c1 - c0, &block_amax, &has_nan);
        uint8_t scale_code;
        if (has_nan) {
          scale_code = mode_.nvfp4 ? 0x7F : 0xFF;
        } else {
          scale_code = mode_.nvfp4 ? nvfp4_block_scale_code(block_amax, g)
                                   : mxfp4_block_scale_code(block_amax, args_.e8m0_rounding);
        }
        args_.scale_inv_out[((r0 + b0) / br) * grid_cols_ + c0 / bc] = scale_code;
        const float divisor = decode_scale(scale_code, mode_.nvfp4, g);
        const bool fast = !has_nan && divisor != 0.0f && args_.stochastic_rounding == 0;
        for (int64_t r = b0; r < b1; ++r) {
          const float* y = panel + r * cols_;
          uint8_t* code_row = codes + r * cols_;
          if (fast) {
            loops_.encode_rne(y + c0, c1 - c0, divisor, code_row + c0, &counts->saturated, &counts->flushed);
            continue;
          }
          for (int64_t c = c0; c < c1; ++c) {
            const float v = y[c];
            uint8_t code = 0;
            bool saturated = false;
            if (std::isnan(v)) {
              ++counts->nan;
            } else if (has_nan) {
              code = 0x0;  // the NaN scale alone marks the block
            } else if (std::isinf(v)) {
              code = std::signbit(v) ? 0xF : 0x7;
              saturated = true;
            } else if (divisor == 0.0f) {
              code = std::signbit(v) ? 0x8 : 0x0;  // the block's scale flushed to 0
            } else {                               // stochastic rounding
              const float scaled = octet_math_div(v, divisor);
              saturated = e2m1_overflows(scaled);
              const uint64_t index = static_cast<uint64_t>((r0 + r) * cols_ + c);
              code = e2m1_encode_stochastic(scaled, octet_random_bits(args_.seed, args_.offset, index));
            }
            counts->saturated += saturated ? 1 : 0;
            // The reference's rule: a finite non-zero value whose code is
            // 0x0 (the reference tests code & 0x7F, so -0, 0x8, does not
            // count).
            if (std::isfinite(v) && v != 0.0f && (code & 0x7) == 0) ++counts->flushed;  // +0 or -0
            code_row[c] = code;
          }
        }
      }
    }
    // Pack two codes a byte, low nibble first; an odd cols leaves each
    // row's last high nibble 0.
    const int64_t row_bytes = fp4_row_bytes(cols_);
    for (int64_t r = 0; r < h; ++r) {
      const uint8_t* code_row = codes + r * cols_;
      uint8_t* out_row = args_.out + (r0 + r) * row_bytes;
      for (int64_t c = 0; c + 1 < cols_; c += 2) {
        out_row[c / 2] = static_cast<uint8_t>(code_row[c] | (code_row[c + 1] << 4));
      }
      if (cols_ % 2 != 0) out_row[cols_ / 2] = code_row[cols_ - 1];
    }
  }

  // max |y| over the finite y of panel (h rows).
  float finite_amax(int64_t h, const float* panel) const {
    float m = 0.0f;
    for (int64_t i = 0; i < h * cols_; ++i) {
      if (std::isfinite(panel[i])) m = std::max(m, std::fabs(panel[i]));
    }
    return m;
  }

 private:
  const octet_fp4_quantize_args& args_;
  Fp4Mode mode_;
  const RowKernels& rk_;
  const Fp4QuantizeLoops& loops_;
  bool transposed_ = false;
  int64_t rows_ = 0, cols_ = 0, grid_cols_ = 0;
};

}  // namespace

const Fp4QuantizeLoops& fp4_portable_loops() {
  static const Fp4QuantizeLoops loops{"portable", hadamard_portable, scan_portable, encode_rne_portable};
  return loops;
}

// The FP4 quantize loops' implementation list (dispatch/implementation_list.hpp).
using Fp4QuantizeLoopsCandidate = Candidate<AnyProblem, const Fp4QuantizeLoops* (*)()>;
constexpr Fp4QuantizeLoopsCandidate kFp4QuantizeLoopsList[] = {
    {"avx512", Isa::Avx512, [] { return fp4_avx512_loops() != nullptr; }, nullptr, fp4_avx512_loops},
    {"portable", Isa::Portable, nullptr, nullptr, [] { return &fp4_portable_loops(); }},
};
static_assert(ends_with_fallback(kFp4QuantizeLoopsList), "the last candidate takes every problem");

const Fp4QuantizeLoops& fp4_quantize_loops() { return *choose(kFp4QuantizeLoopsList, cpu_isa(), AnyProblem{})->impl(); }

int32_t fp4_quantize_kernel(const octet_fp4_quantize_args* args) {
  const char* kernel = "fp4_quantize";
  if (int32_t s = require_pointer(kernel, "args", args)) return s;
  if (int32_t s = require_struct_size(kernel, "args", args->struct_size, sizeof(octet_fp4_quantize_args))) return s;
  if (int32_t s = require_matrix(kernel, "args->input", args->input, Accept::HighPrecision)) return s;
  Fp4Mode mode{};
  if (int32_t s = require_mode(kernel, "args->scaling_mode", args->scaling_mode, &mode)) return s;
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
  Quantizer q(*args, mode);
  const int64_t rows = q.rows(), cols = q.cols();
  if (args->rht != 0 && cols % 16 != 0) {
    return report(OCTET_STATUS_INVALID_ARGUMENT, std::string(kernel) +
                                                     ": the Hadamard transform needs the encoded rows' length (" +
                                                     std::to_string(cols) + ") to be a multiple of 16");
  }
  if (int32_t s = require_pointer(kernel, "args->out", args->out)) return s;
  if (int32_t s = require_pointer(kernel, "args->scale_inv_out", args->scale_inv_out)) return s;
  if (mode.nvfp4) {
    if (int32_t s = require_pointer(kernel, "args->tensor_scale_inv_out", args->tensor_scale_inv_out)) return s;
  }

  const int64_t groups = ceil_div(rows, kGroupRows);
  // Per thread: the FP32 panel of 16 rows, then their codes (a byte each).
  const std::size_t panel_floats = element_count(kGroupRows, std::max<int64_t>(cols, 1)) * 5 / 4;
  const int threads = omp_get_max_threads();
  Buffer<float> panels(element_count(static_cast<int64_t>(threads), static_cast<int64_t>(panel_floats)));
  const bool parallel = split_elements(double(rows * cols));

  float amax = 0.0f, g = 1.0f;
  if (mode.nvfp4) {  // pass 1: the tensor scale (and the input's amax)
    float finite = 0.0f;
#pragma omp parallel num_threads(threads) if (parallel) reduction(max : amax, finite)
    {
      const octet::DefaultFloatMode float_mode;  // this thread, for the region (dispatch/parallel_policy.hpp)
      float* panel = panels.get() + static_cast<std::size_t>(omp_get_thread_num()) * panel_floats;
#pragma omp for schedule(static)
      for (int64_t t = 0; t < groups; ++t) {
        const int64_t r0 = t * kGroupRows, h = std::min(kGroupRows, rows - r0);
        q.load(r0, h, panel, &amax);
        finite = std::max(finite, q.finite_amax(h, panel));
      }
    }
    g = nvfp4_tensor_scale(finite);
  }
  uint64_t nan = 0, saturated = 0, flushed = 0;
#pragma omp parallel num_threads(threads) if (parallel) reduction(max : amax) reduction(+ : nan, saturated, flushed)
  {
    const octet::DefaultFloatMode float_mode;  // this thread, for the region (dispatch/parallel_policy.hpp)
    float* panel = panels.get() + static_cast<std::size_t>(omp_get_thread_num()) * panel_floats;
    Counts counts;
#pragma omp for schedule(static)
    for (int64_t t = 0; t < groups; ++t) {
      const int64_t r0 = t * kGroupRows, h = std::min(kGroupRows, rows - r0);
      q.load(r0, h, panel, &amax);
      q.encode(r0, h, panel, g, reinterpret_cast<uint8_t*>(panel + kGroupRows * cols), &counts);
    }
    nan += counts.nan;
    saturated += counts.saturated;
    flushed += counts.flushed;
  }
  if (mode.nvfp4) *args->tensor_scale_inv_out = g;
  if (args->amax_out != nullptr) *args->amax_out = amax;
  if (args->stats_out != nullptr) {
    octet_quantize_statistics stats{};
    stats.nan_count = nan;
    stats.saturated_count = saturated;
    stats.flushed_count = flushed;
    stats.amax = amax;
    *args->stats_out = stats;
  }
  return OCTET_STATUS_SUCCESS;
}

int32_t fp4_dequantize_kernel(const octet_fp4_dequantize_args* args) {
  const char* kernel = "fp4_dequantize";
  if (int32_t s = require_pointer(kernel, "args", args)) return s;
  if (int32_t s = require_struct_size(kernel, "args", args->struct_size, sizeof(octet_fp4_dequantize_args))) {
    return s;
  }
  Fp4Mode mode{};
  if (int32_t s = require_mode(kernel, "args->scaling_mode", args->scaling_mode, &mode)) return s;
  if (args->rows < 0 || args->cols < 0) {
    return report(OCTET_STATUS_INVALID_ARGUMENT, std::string(kernel) + ": rows and cols must be >= 0");
  }
  if (int32_t s = require_matrix(kernel, "args->output", args->output, Accept::HighPrecision)) return s;
  if (int32_t s = require_shape(kernel, "args->output", args->output, args->rows, args->cols, "rows x cols")) {
    return s;
  }
  const int64_t rows = args->rows, cols = args->cols;
  if (rows * cols == 0) return OCTET_STATUS_SUCCESS;
  if (int32_t s = require_pointer(kernel, "args->input", args->input)) return s;
  if (int32_t s = require_pointer(kernel, "args->scale_inv", args->scale_inv)) return s;
  if (mode.nvfp4) {
    if (int32_t s = require_pointer(kernel, "args->tensor_scale_inv", args->tensor_scale_inv)) return s;
  }
  const float g = mode.nvfp4 ? *args->tensor_scale_inv : 1.0f;
  const int64_t grid_cols = ceil_div(cols, mode.block_cols), row_bytes = fp4_row_bytes(cols);
  const RowKernels& rk = row_kernels();
  const octet_matrix_view out = args->output;
  constexpr int64_t kChunk = 2048;  // a multiple of 32: chunks hold whole blocks
  const int64_t per_row = ceil_div(cols, kChunk);
#pragma omp parallel if (split_elements(double(rows * cols)))
  {
    const octet::DefaultFloatMode float_mode;  // this thread, for the region (dispatch/parallel_policy.hpp)
    alignas(64) float values[kChunk];
#pragma omp for schedule(static)
    for (int64_t t = 0; t < rows * per_row; ++t) {
      const int64_t r = t / per_row, c0 = (t % per_row) * kChunk, w = std::min(kChunk, cols - c0);
      const uint8_t* row = args->input + r * row_bytes;
      const uint8_t* grid = args->scale_inv + (r / mode.block_rows) * grid_cols;
      for (int64_t b = 0; b < w; b += mode.block_cols) {
        const float x = decode_scale(grid[(c0 + b) / mode.block_cols], mode.nvfp4, g);
        const int64_t e = std::min(w, b + mode.block_cols);
        for (int64_t j = b; j < e; ++j) values[j] = octet_math_mul(e2m1_decode(fp4_code_at(row, c0 + j)), x);
      }
      rk.narrow(values, w, out.dtype, true, element_ptr_mut(out, r, c0));
    }
  }
  return OCTET_STATUS_SUCCESS;
}

}  // namespace octet_cpu
