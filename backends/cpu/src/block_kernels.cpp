// Plugin ABI 1.1 recipe-free kernels: quantize with statistics, block
// quantize (MXFP8 E8M0 scales with RCEIL/FLOOR, FP32 block scales), block
// dequantize and the block-scaled GEMM. The rules are those of
// docs/numerics.md sections 5, 10, 11 and 12; element-wise results are
// exact (the same bits as any correct implementation of those rules).
//
// Block quantize works in the input's orientation for both usages, on
// regions of whole blocks (a transposed-usage block is block_cols x
// block_rows of the input): an FP32 input is read in place (BF16/FP16 are
// widened into a per-thread buffer), each block's amax (over its finite
// values) gives its scale, each element x is multiplied by its block's
// multiplier (MXFP8: 1/X, X = 2^e, so x * 2^-e is the same FP32 value as
// x / 2^e; FP32 blocks: the scale) and encoded with the row kernels'
// encoder's rules (block_rows.hpp's multiply_encode), whole rows into a
// per-thread code tile, which goes out as it is or byte-transposed.
// Regions are shared by OpenMP threads with a dynamic schedule.
//
// The block GEMM folds power-of-two scales into the operands where that is
// exact and the FP32 engine serves (block_gemm_folded.hpp). Otherwise it
// keeps the documented order between k-blocks: each
// k-block's partial products, then acc = acc + partial * (sa * sb) element
// by element, then the epilogue of section 8. At level avx512_bf16 and
// above, with k-blocks of 32, 64, 128 or 256 (MXFP8, 1x128, 128x128), the
// partial products come from VDPBF16PS on BF16 panels packed in cache
// (fp8_block_gemm_bf16, gemm_fp8.hpp), unless the CPU's FP8 GEMM engine is
// FP32 FMAs (isa.hpp) and the k-blocks are 128 or more; otherwise, for
// each output tile, from oneDNN sgemm calls over the block on FP32 blocks
// that each thread widens in its cache. Only the order inside a block
// differs from the reference. With one k-block and one scale per row of
// each operand (per-row scaling, numerics.md section 16), the FP8 GEMM's
// own kernel gives the sums from the codes and the scales go into the
// epilogue, where the engine is VDPBF16PS or the shape a decode shape.
#include <octet/octet_math.h>

#include <dnnl.h>
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "activation_rows.hpp"
#include "block_gemm_folded.hpp"
#include "block_rows.hpp"
#include "block_scales.hpp"
#include "checks.hpp"
#include "errors.hpp"
#include "gemm_fp8.hpp"
#include "gemm_fp8_widen_avx512.hpp"
#include "isa.hpp"
#include "kernels.hpp"
#include "parallel_policy.hpp"
#include "row_kernels.hpp"
#include "scalar_codecs.hpp"

namespace octet_cpu {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

bool is_nan(float x) { return (bits_of(x) & 0x7FFFFFFFu) > 0x7F800000u; }
bool is_finite(float x) { return (bits_of(x) & 0x7F800000u) != 0x7F800000u; }

const Fp8Params& params_of(int32_t dtype) { return fp8_params(dtype); }
float fp8_max_of(int32_t dtype) { return fp8_max_value(dtype); }

// Statistics of numerics.md section 10, one accumulator per thread.
struct Counts {
  uint64_t nan = 0, saturated = 0, flushed = 0;
  float amax = 0.0f;
  char pad[40];  // keep threads' accumulators on separate cache lines
};

// Counts n elements x[i] whose encoder input was x[i] * scale and whose
// codes are codes[i].
void count(const float* x, int64_t n, float scale, const uint8_t* codes, int32_t dtype, Counts& c) {
  const Fp8Params& p = params_of(dtype);
  const bool e4m3 = dtype == OCTET_DTYPE_E4M3, fnuz = is_fnuz_dtype(dtype);
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    if (is_nan(v)) {
      ++c.nan;
      continue;
    }
    c.amax = max_magnitude(c.amax, v);
    const float y = v * scale;
    if (!is_nan(y)) {  // a NaN per-tensor scale saturates nothing
      // Overflow without saturation: NaN (E4M3), infinity (E5M2), the NaN 0x80 (FNUZ).
      const uint32_t unclamped = encode_fp8(y, p, false), m = unclamped & 0x7Fu;
      if (fnuz ? unclamped == 0x80u : e4m3 ? m == 0x7Fu : m >= 0x7Cu) ++c.saturated;
    }
    // A zero code (+0 or -0; FNUZ has one zero, 0x80 is its NaN).
    if (is_finite(v) && v != 0.0f && (fnuz ? codes[i] == 0 : (codes[i] & 0x7Fu) == 0)) ++c.flushed;
  }
}

void write_counts(const std::vector<Counts>& parts, octet_quantize_statistics* out) {
  octet_quantize_statistics s{};
  for (const Counts& c : parts) {
    s.nan_count += c.nan;
    s.saturated_count += c.saturated;
    s.flushed_count += c.flushed;
    s.amax = c.amax > s.amax ? c.amax : s.amax;
  }
  *out = s;
}

int32_t require_block_shape(const char* kernel, int32_t br, int32_t bc) {
  if (br >= 1 && bc >= 1) return OCTET_STATUS_SUCCESS;
  return report(OCTET_STATUS_INVALID_ARGUMENT, std::string(kernel) + ": block shape " +
                                                   std::to_string(br) + "x" + std::to_string(bc) +
                                                   " must be at least 1x1");
}

int32_t require_scale_dtype(const char* kernel, int32_t scale_dtype) {
  if (scale_dtype == OCTET_DTYPE_E8M0 || scale_dtype == OCTET_DTYPE_FP32) {
    return OCTET_STATUS_SUCCESS;
  }
  return report(OCTET_STATUS_INVALID_ARGUMENT, std::string(kernel) + ": scale_dtype is " +
                                                   dtype_name(scale_dtype) + " (" +
                                                   std::to_string(scale_dtype) +
                                                   "); it must be e8m0 or fp32");
}

float scale_value(const void* grid, int32_t scale_dtype, std::size_t index) {
  return scale_dtype == OCTET_DTYPE_E8M0 ? decode_e8m0(static_cast<const uint8_t*>(grid)[index])
                                         : static_cast<const float*>(grid)[index];
}

// Block quantize of one copy whose blocks are whole columns of the input:
// per-column scaling's rowwise copy (block_rows >= rows, block_cols 1) and
// the transposed copy of both per-row and per-column scaling (transposed,
// block_rows 1, block_cols >= rows), numerics.md section 16. The generic
// region loop would treat every element as a block of its own, and strips
// of columns over every row do not stay in cache when the row stride is a
// power of two (all their lines fall in a few cache sets). So the input is
// read twice in whole rows, as stored: once for each column's largest
// finite |x| (and whether it holds an infinity; threads take bands of
// rows, each with its own maxima, then merged), once to encode x *
// scale[column] with the row kernels' encoder, 64 rows a band, written as
// they are or byte-transposed (block_rows.hpp). rows, cols > 0.
int32_t whole_column_quantize(const octet_block_quantize_args* args) {
  const RowKernels& k = row_kernels();
  const BlockRowKernels& bk = block_row_kernels();
  const octet_matrix_view in = args->input;
  const int64_t rows = in.rows, cols = in.cols;
  const int32_t dtype = args->out_dtype;
  const bool transposed = args->transposed != 0;
  const bool want_stats = args->stats_out != nullptr, pow2 = args->power_of_two != 0;
  const bool fp32 = in.dtype == OCTET_DTYPE_FP32;
  float* scale_inv_out = static_cast<float*>(args->scale_inv_out);
  constexpr int64_t kBand = 64;     // rows per band: one cache line of each transposed output row
  constexpr int64_t kPiece = 4096;  // columns per piece of a band: its buffers stay in L2
  const int64_t bands = ceil_div(rows, kBand), piece = std::min(kPiece, cols);
  const int nthreads = split_elements(double(rows * cols)) ? omp_get_max_threads() : 1;
  const std::size_t ucols = static_cast<std::size_t>(cols), upiece = static_cast<std::size_t>(piece);
  const std::size_t unthreads = static_cast<std::size_t>(nthreads);
  // Per thread: its columns' maxima and infinity flags, and a band piece's
  // widened input (not for FP32) and codes (transposed copy only).
  std::vector<uint32_t> tops(unthreads * ucols, 0u);
  std::vector<uint8_t> infs(unthreads * ucols, 0u);
  std::vector<float> widened(fp32 ? 0 : unthreads * kBand * upiece);
  std::vector<uint32_t> piece_tops(unthreads * upiece);
  std::vector<uint8_t> tiles(transposed ? unthreads * kBand * upiece : 0);
  std::vector<float> multiplier(ucols);
  std::vector<Counts> parts(unthreads);
  // The band piece's FP32 values, src[i * ld + j] = x[r0 + i, c0 + j].
  auto piece_values = [&](std::size_t me, int64_t r0, int64_t h, int64_t c0, int64_t w, int64_t* ld) -> const float* {
    if (fp32) {
      *ld = in.ld;
      return reinterpret_cast<const float*>(element_ptr(in, r0, c0));
    }
    float* dst = widened.data() + me * kBand * upiece;
    for (int64_t i = 0; i < h; ++i) k.widen(element_ptr(in, r0 + i, c0), in.dtype, w, dst + i * w);
    *ld = w;
    return dst;
  };

  // Pass 1: each column's largest |x| bits; a column piece at or above the
  // infinity's bits holds an infinity or a NaN, and its largest finite |x|
  // comes from a scalar scan of that piece (rare).
#pragma omp parallel num_threads(nthreads)
  {
    const octet::DefaultFloatMode float_mode;  // this thread, for the region (parallel_policy.hpp)
    const std::size_t me = static_cast<std::size_t>(omp_get_thread_num());
    uint32_t* top = tops.data() + me * ucols;
    uint8_t* inf = infs.data() + me * ucols;
    uint32_t* ptop = piece_tops.data() + me * upiece;
#pragma omp for schedule(static)
    for (int64_t b = 0; b < bands; ++b) {
      const int64_t r0 = b * kBand, h = std::min(kBand, rows - r0);
      for (int64_t c0 = 0; c0 < cols; c0 += piece) {
        const int64_t w = std::min(piece, cols - c0);
        int64_t ld = 0;
        const float* src = piece_values(me, r0, h, c0, w, &ld);
        bk.block_abs_bits_max(src, ld, h, w, 1, ptop);
        for (int64_t j = 0; j < w; ++j) {
          uint32_t t = ptop[j];
          if (t >= 0x7F800000u) {
            t = 0u;
            for (int64_t i = 0; i < h; ++i) {
              const uint32_t a = bits_of(src[i * ld + j]) & 0x7FFFFFFFu;
              if (a < 0x7F800000u) t = a > t ? a : t;
              inf[c0 + j] |= a == 0x7F800000u ? 1u : 0u;
            }
          }
          top[c0 + j] = t > top[c0 + j] ? t : top[c0 + j];
        }
      }
    }
  }
  float amax = 0.0f;
  for (int64_t j = 0; j < cols; ++j) {
    uint32_t t = 0u;
    bool has_inf = false;
    for (std::size_t th = 0; th < unthreads; ++th) {
      const std::size_t at = th * ucols + static_cast<std::size_t>(j);
      t = tops[at] > t ? tops[at] : t;
      has_inf = has_inf || infs[at] != 0;
    }
    const float block_amax = float_of(t);
    if (has_inf) amax = float_of(0x7F800000u);  // the tensor amax counts infinities
    amax = block_amax > amax ? block_amax : amax;
    multiplier[static_cast<std::size_t>(j)] = fp32_block_scale(block_amax, fp8_max_of(dtype), args->amax_epsilon, pow2);
    scale_inv_out[j] = 1.0f / multiplier[static_cast<std::size_t>(j)];
  }

  // Pass 2: encode band piece by band piece.
#pragma omp parallel num_threads(nthreads)
  {
    const octet::DefaultFloatMode float_mode;  // this thread, for the region (parallel_policy.hpp)
    const std::size_t me = static_cast<std::size_t>(omp_get_thread_num());
    Counts& stats = parts[me];
    uint8_t* tile = transposed ? tiles.data() + me * kBand * upiece : nullptr;
#pragma omp for schedule(static)
    for (int64_t b = 0; b < bands; ++b) {
      const int64_t r0 = b * kBand, h = std::min(kBand, rows - r0);
      for (int64_t c0 = 0; c0 < cols; c0 += piece) {
        const int64_t w = std::min(piece, cols - c0);
        int64_t ld = 0;
        const float* src = piece_values(me, r0, h, c0, w, &ld);
        const float* m = multiplier.data() + c0;
        for (int64_t i = 0; i < h; ++i) {
          const float* x = src + i * ld;
          uint8_t* out = transposed ? tile + i * w : args->out + (r0 + i) * cols + c0;
          // A multiplier is finite and > 0, so x * multiplier is octet_math_mul's
          // result (a NaN x keeps its NaN).
          bk.multiply_encode(x, m, w, 1, dtype, out);
          if (want_stats) {
            for (int64_t j = 0; j < w; ++j) count(x + j, 1, m[j], out + j, dtype, stats);
          }
        }
        // Out without reading the output for ownership (block_rows.hpp).
        if (transposed) bk.transpose_bytes_out(tile, w, h, w, args->out + c0 * rows + r0, rows);
      }
    }
  }
  if (args->amax_out != nullptr) *args->amax_out = amax;
  if (want_stats) write_counts(parts, args->stats_out);
  return OCTET_STATUS_SUCCESS;
}

}  // namespace

int32_t quantize_with_statistics_kernel(const octet_quantize_args* args,
                                        octet_quantize_statistics* stats_out) {
  const char* kernel = "quantize_with_statistics";
  if (int32_t s = require_pointer(kernel, "stats_out", stats_out)) return s;
  if (int32_t s = quantize_kernel(args)) return s;
  const RowKernels& k = row_kernels();
  const octet_matrix_view in = args->input;
  const float scale = *args->scale;
  const int32_t dtype = args->out_dtype;
  const bool sat = args->saturate != 0;
  const Fp8Params& p = params_of(dtype);
  constexpr int64_t kChunk = 2048;
  const int64_t per_row = ceil_div(in.cols, kChunk);
  const int64_t total = in.rows > 0 && in.cols > 0 ? in.rows * per_row : 0;
  std::vector<Counts> parts(static_cast<std::size_t>(omp_get_max_threads()));
#pragma omp parallel if (split_elements(double(in.rows * in.cols)))
  {
    const octet::DefaultFloatMode float_mode;  // this thread, for the region (parallel_policy.hpp)
    alignas(64) float values[kChunk];
    alignas(64) uint8_t codes[kChunk];
    Counts& c = parts[static_cast<std::size_t>(omp_get_thread_num())];
#pragma omp for schedule(static)
    for (int64_t t = 0; t < total; ++t) {
      const int64_t r = t / per_row, c0 = (t % per_row) * kChunk;
      const int64_t w = std::min(kChunk, in.cols - c0);
      k.widen(element_ptr(in, r, c0), in.dtype, w, values);
      // octet_math_mul: a NaN scale on NaN data keeps x's NaN (numerics.md 13).
      for (int64_t i = 0; i < w; ++i) codes[i] = encode_fp8(octet_math_mul(values[i], scale), p, sat);
      count(values, w, scale, codes, dtype, c);
    }
  }
  write_counts(parts, stats_out);
  return OCTET_STATUS_SUCCESS;
}

int32_t block_quantize_kernel(const octet_block_quantize_args* args) {
  const char* kernel = "block_quantize";
  if (int32_t s = require_pointer(kernel, "args", args)) return s;
  if (int32_t s = require_struct_size(kernel, "args", args->struct_size,
                                      sizeof(octet_block_quantize_args))) {
    return s;
  }
  if (int32_t s = require_matrix(kernel, "args->input", args->input, Accept::HighPrecision)) {
    return s;
  }
  if (int32_t s = require_fp8_dtype(kernel, "args->out_dtype", args->out_dtype)) return s;
  if (int32_t s = require_block_shape(kernel, args->block_rows, args->block_cols)) return s;
  if (int32_t s = require_scale_dtype(kernel, args->scale_dtype)) return s;
  const bool mx = args->scale_dtype == OCTET_DTYPE_E8M0;
  if (mx && args->e8m0_rounding != 0 && args->e8m0_rounding != 1) {
    return report(OCTET_STATUS_INVALID_ARGUMENT,
                  std::string(kernel) + ": args->e8m0_rounding is " +
                      std::to_string(args->e8m0_rounding) + "; it must be 0 (RCEIL) or 1 (FLOOR)");
  }
  if (int32_t s = require_pointer(kernel, "args->out", args->out)) return s;
  if (int32_t s = require_pointer(kernel, "args->scale_inv_out", args->scale_inv_out)) return s;

  const bool whole_columns = args->transposed == 0 ? args->block_cols == 1 && args->block_rows >= args->input.rows
                                                   : args->block_rows == 1 && args->block_cols >= args->input.rows;
  if (!mx && whole_columns && args->input.rows > 0 && args->input.cols > 0) {
    return whole_column_quantize(args);  // per-column scaling's rowwise copy; both per-axis transposed copies
  }
  const RowKernels& k = row_kernels();
  const BlockRowKernels& bk = block_row_kernels();
  const octet_matrix_view in = args->input;
  const bool transposed = args->transposed != 0;
  const int32_t dtype = args->out_dtype;
  const float fp8_max = fp8_max_of(dtype);
  const bool want_stats = args->stats_out != nullptr;
  const bool fp32 = in.dtype == OCTET_DTYPE_FP32;
  // Everything runs in the input's orientation: a block covers br x bc of
  // the input's rows x columns (the transposed usage's blocks are its
  // block_cols x block_rows there), and the transposed usage's codes are
  // byte-transposed into its output at the end of each region.
  const int64_t rows = in.rows, cols = in.cols;
  const int64_t br = transposed ? args->block_cols : args->block_rows;
  const int64_t bc = transposed ? args->block_rows : args->block_cols;
  const int64_t grid_down = ceil_div(rows, br), grid_across = ceil_div(cols, bc);
  // A region: h x w input elements (h a multiple of br, w of bc, except
  // where the input is smaller), about kRegion elements. The rowwise usage
  // takes whole rows where blocks allow it; the transposed one at least 64
  // rows, so that each of its output rows gets a whole cache line.
  constexpr int64_t kRegion = 32768;
  int64_t w = std::max<int64_t>(bc, (kRegion / br / bc) * bc);
  if (transposed) w = std::max<int64_t>(bc, (kRegion / std::max<int64_t>(br, 64) / bc) * bc);
  w = std::max<int64_t>(w, bc * ceil_div(16, bc));
  w = std::min(w, cols);
  int64_t h = br * std::max<int64_t>(1, kRegion / (br * std::max<int64_t>(w, 1)));
  if (transposed) h = std::max(h, br * ceil_div(64, br));
  h = std::min(h, rows);
  const int64_t regions_down = rows > 0 ? ceil_div(rows, h) : 0;
  const int64_t regions_across = cols > 0 ? ceil_div(cols, w) : 0;
  const int64_t total = regions_down * regions_across;
  const int64_t blocks_per_row = ceil_div(w, bc);
  const int nthreads = omp_get_max_threads();
  std::vector<Counts> parts(static_cast<std::size_t>(nthreads));
  std::vector<Counts> amaxes(static_cast<std::size_t>(nthreads));

#pragma omp parallel if (split_elements(double(rows * cols)))
  {
    const octet::DefaultFloatMode float_mode;  // this thread, for the region (parallel_policy.hpp)
    const std::size_t me = static_cast<std::size_t>(omp_get_thread_num());
    // Per thread: the widened region (not for FP32 input), a row of
    // blocks' maxima, multipliers and scales, and the region's codes.
    std::vector<float> widened(fp32 || total == 0 ? 0 : static_cast<std::size_t>(h * w));
    std::vector<uint32_t> tops(static_cast<std::size_t>(blocks_per_row));
    std::vector<float> multipliers(static_cast<std::size_t>(blocks_per_row));
    std::vector<uint8_t> codes_of_scales(mx ? static_cast<std::size_t>(blocks_per_row) : 0);
    std::vector<float> inverses(mx ? 0 : static_cast<std::size_t>(blocks_per_row));
    std::vector<uint8_t> tile(total > 0 ? static_cast<std::size_t>(h * w) : 0);
    Counts& stats = parts[me];
    float amax = 0.0f;  // this thread's, published after the loop
#pragma omp for schedule(dynamic, 1) nowait
    for (int64_t t = 0; t < total; ++t) {
      const int64_t r0 = (t / regions_across) * h, c0 = (t % regions_across) * w;
      const int64_t rh = std::min(h, rows - r0), rw = std::min(w, cols - c0);
      // The region's FP32 values: src[i * sld + j] = x[r0 + i, c0 + j].
      const float* src = reinterpret_cast<const float*>(element_ptr(in, r0, c0));
      int64_t sld = in.ld;
      if (!fp32) {
        for (int64_t i = 0; i < rh; ++i) k.widen(element_ptr(in, r0 + i, c0), in.dtype, rw, widened.data() + i * rw);
        src = widened.data();
        sld = rw;
      }
      // The region's codes, in the input's orientation.
      uint8_t* codes = tile.data();
      const int64_t codes_ld = rw;
      // r0 and c0 are multiples of br and bc.
      const int64_t grid_c0 = c0 / bc;
      for (int64_t b0 = 0; b0 < rh; b0 += br) {
        const int64_t bh = std::min(br, rh - b0);
        const int64_t nb = ceil_div(rw, bc);
        const int64_t grid_r = (r0 + b0) / br;
        bk.block_abs_bits_max(src + b0 * sld, sld, bh, rw, bc, tops.data());
        // The blocks' scales (block_scales.hpp). The largest |x| bits are
        // the block's amax when every element is finite; at or above the
        // infinity's bits the block holds an infinity or a NaN: then its
        // amax is taken over its finite elements (scalar) and the scales
        // are computed again. The tensor amax counts infinities.
        auto scales = [&]() {
          return mx ? bk.mx_scales(tops.data(), nb, fp8_max, args->e8m0_rounding, codes_of_scales.data(),
                                   multipliers.data())
                    : bk.fp32_scales(tops.data(), nb, fp8_max, args->amax_epsilon, args->power_of_two != 0,
                                     inverses.data(), multipliers.data());
        };
        uint32_t top_max = scales();
        if (top_max >= 0x7F800000u) {
          for (int64_t q = 0; q < nb; ++q) {
            if (tops[static_cast<std::size_t>(q)] < 0x7F800000u) continue;
            const int64_t j0 = q * bc, bw = std::min(bc, rw - j0);
            float block_amax = 0.0f;
            for (int64_t i = b0; i < b0 + bh; ++i) {
              const float* x = src + i * sld + j0;
              for (int64_t j = 0; j < bw; ++j) {
                const uint32_t a = bits_of(x[j]) & 0x7FFFFFFFu;
                if (a < 0x7F800000u) {
                  block_amax = max_magnitude(block_amax, x[j]);
                } else if (a == 0x7F800000u) {
                  amax = float_of(0x7F800000u);
                }
              }
            }
            tops[static_cast<std::size_t>(q)] = bits_of(block_amax);
          }
          top_max = scales();
        }
        amax = float_of(top_max) > amax ? float_of(top_max) : amax;
        // Into the usage's scale grid: block (grid_r, grid_c0 + q).
        const std::size_t first =
            static_cast<std::size_t>(transposed ? grid_c0 * grid_down + grid_r : grid_r * grid_across + grid_c0);
        const std::size_t step = static_cast<std::size_t>(transposed ? grid_down : 1);
        if (step == 1) {
          const std::size_t size = mx ? 1 : 4;
          std::memcpy(static_cast<uint8_t*>(args->scale_inv_out) + first * size,
                      mx ? static_cast<const void*>(codes_of_scales.data()) : inverses.data(),
                      static_cast<std::size_t>(nb) * size);
        } else if (mx) {
          uint8_t* grid = static_cast<uint8_t*>(args->scale_inv_out) + first;
          const uint8_t* from = codes_of_scales.data();
          for (int64_t q = 0; q < nb; ++q) grid[static_cast<std::size_t>(q) * step] = from[q];
        } else {
          float* grid = static_cast<float*>(args->scale_inv_out) + first;
          const float* from = inverses.data();
          for (int64_t q = 0; q < nb; ++q) grid[static_cast<std::size_t>(q) * step] = from[q];
        }
        // x * multiplier element by element (the same FP32 product the
        // encoder would form with that scale), encoded saturating: NaN
        // keeps its sign; an infinity saturates to max finite.
        for (int64_t i = b0; i < b0 + bh; ++i) {
          const float* x = src + i * sld;
          uint8_t* out = codes + i * codes_ld;
          bk.multiply_encode(x, multipliers.data(), rw, bc, dtype, out);
          if (want_stats) {
            for (int64_t q = 0; q < nb; ++q) {
              const int64_t j0 = q * bc;
              count(x + j0, std::min(bc, rw - j0), multipliers[static_cast<std::size_t>(q)], out + j0, dtype, stats);
            }
          }
        }
      }
      // Out without reading the output for ownership (block_rows.hpp).
      if (transposed) {
        bk.transpose_bytes_out(codes, codes_ld, rh, rw, args->out + c0 * rows + r0, rows);
      } else {
        bk.copy_bytes_out(codes, codes_ld, rh, rw, args->out + r0 * cols + c0, cols);
      }
    }
    amaxes[me].amax = amax;
  }
  float amax = 0.0f;
  for (const Counts& c : amaxes) amax = c.amax > amax ? c.amax : amax;
  if (args->amax_out != nullptr) *args->amax_out = amax;
  if (want_stats) write_counts(parts, args->stats_out);
  return OCTET_STATUS_SUCCESS;
}

int32_t block_dequantize_kernel(const octet_block_dequantize_args* args) {
  const char* kernel = "block_dequantize";
  if (int32_t s = require_pointer(kernel, "args", args)) return s;
  if (int32_t s = require_struct_size(kernel, "args", args->struct_size,
                                      sizeof(octet_block_dequantize_args))) {
    return s;
  }
  if (int32_t s = require_matrix(kernel, "args->input", args->input, Accept::Fp8)) return s;
  if (int32_t s = require_matrix(kernel, "args->output", args->output, Accept::HighPrecision)) {
    return s;
  }
  if (int32_t s = require_shape(kernel, "args->output", args->output, args->input.rows,
                                args->input.cols, "the rows x cols of args->input")) {
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
    const octet::DefaultFloatMode float_mode;  // this thread, for the region (parallel_policy.hpp)
    alignas(64) float values[kChunk];
#pragma omp for schedule(static)
    for (int64_t t = 0; t < total; ++t) {
      const int64_t r = t / per_row, c0 = (t % per_row) * kChunk;
      const int64_t w = std::min(kChunk, in.cols - c0);
      k.widen(element_ptr(in, r, c0), in.dtype, w, values);
      for (int64_t j = 0; j < w;) {
        const int64_t c = c0 + j;
        const int64_t len = std::min(w - j, bc - c % bc);
        const float s = scale_value(args->scale_inv, args->scale_dtype,
                                    static_cast<std::size_t>((r / br) * grid_cols + c / bc));
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

namespace {

int32_t check_block_gemm(const octet_block_gemm_args* args) {
  const char* kernel = "block_gemm";
  if (int32_t s = require_pointer(kernel, "args", args)) return s;
  if (int32_t s = require_struct_size(kernel, "args", args->struct_size,
                                      sizeof(octet_block_gemm_args))) {
    return s;
  }
  if (args->m < 0 || args->n < 0 || args->k < 0) {
    return report(OCTET_STATUS_INVALID_ARGUMENT,
                  std::string(kernel) + ": args->m, args->n, args->k are " +
                      std::to_string(args->m) + ", " + std::to_string(args->n) + ", " +
                      std::to_string(args->k) + "; none may be negative");
  }
  if (int32_t s = require_matrix(kernel, "args->a", args->a, Accept::Fp8)) return s;
  if (int32_t s = require_matrix(kernel, "args->b", args->b, Accept::Fp8)) return s;
  if (int32_t s = require_shape(kernel, "args->a", args->a, args->m, args->k, "[m,k]")) return s;
  if (int32_t s = require_shape(kernel, "args->b", args->b, args->n, args->k, "[n,k]")) return s;
  if (int32_t s = require_scale_dtype(kernel, args->scale_dtype)) return s;
  if (args->a_block_rows < 1 || args->a_block_cols < 1 || args->b_block_rows < 1 ||
      args->b_block_cols < 1 || args->a_block_cols != args->b_block_cols) {
    return report(OCTET_STATUS_INVALID_ARGUMENT,
                  std::string(kernel) + ": block shapes " + std::to_string(args->a_block_rows) +
                      "x" + std::to_string(args->a_block_cols) + " and " +
                      std::to_string(args->b_block_rows) + "x" +
                      std::to_string(args->b_block_cols) +
                      " must be at least 1x1 and cover the same extent of k "
                      "(a_block_cols == b_block_cols)");
  }
  if (int32_t s = require_pointer(kernel, "args->a_scale_inv", args->a_scale_inv)) return s;
  if (int32_t s = require_pointer(kernel, "args->b_scale_inv", args->b_scale_inv)) return s;
  if (int32_t s = require_matrix(kernel, "args->d", args->d, Accept::HighPrecision,
                                 OCTET_STATUS_UNSUPPORTED)) {
    return s;
  }
  if (int32_t s = require_shape(kernel, "args->d", args->d, args->m, args->n, "[m,n]")) return s;
  if (args->bias.data != nullptr) {
    if (int32_t s = require_matrix(kernel, "args->bias", args->bias, Accept::HighPrecision)) {
      return s;
    }
    if (int32_t s = require_shape(kernel, "args->bias", args->bias, 1, args->n,
                                  "one row of n elements")) {
      return s;
    }
  }
  if (args->epilogue != OCTET_EPILOGUE_NONE && args->epilogue != OCTET_EPILOGUE_GELU) {
    return report(OCTET_STATUS_INVALID_ARGUMENT,
                  std::string(kernel) + ": args->epilogue is " + std::to_string(args->epilogue) +
                      "; it must be OCTET_EPILOGUE_NONE or OCTET_EPILOGUE_GELU");
  }
  return OCTET_STATUS_SUCCESS;
}

// The BF16-dot-product kernels take the operands (rows contiguous): the
// level has them, and no FNUZ operand holds its NaN code (gemm_fp8.hpp).
bool bf16_kernels_take(const octet_block_gemm_args* args) {
  if (cpu_isa() < Isa::Avx512Bf16 || !fp8_gemm_bf16_built()) return false;
  const Fp8Operand a{static_cast<const uint8_t*>(args->a.data), args->a.ld, false, args->a.dtype};
  const Fp8Operand b{static_cast<const uint8_t*>(args->b.data), args->b.ld, false, args->b.dtype};
  return !fp8_operand_has_fnuz_nan(a, args->m, args->k) && !fp8_operand_has_fnuz_nan(b, args->n, args->k);
}

// Whether the block GEMM's m x n sums can be written straight into D: D
// is FP32 and its old values are not needed (beta is 0).
bool writes_sums_into_d(const octet_block_gemm_args* args) {
  return args->d.dtype == OCTET_DTYPE_FP32 && args->beta == 0.0f;
}

// The epilogue of section 8 on the m x n sums acc (row stride ldc): v =
// alpha * acc, then beta, bias and GELU, row by row, into D. acc is D's
// own memory when writes_sums_into_d(args) holds.
int32_t finish_block_gemm(const octet_block_gemm_args* args, float* acc, int64_t ldc) {
  const int64_t m = args->m, n = args->n;
  const RowKernels& rk = row_kernels();
  const octet_matrix_view d = args->d;
  const float alpha = args->alpha, beta = args->beta;
  const bool direct = writes_sums_into_d(args);
  std::vector<float> bias_values;
  if (args->bias.data != nullptr) {
    bias_values.resize(static_cast<std::size_t>(n));
    rk.widen(args->bias.data, args->bias.dtype, n, bias_values.data());
  }
  const bool has_gelu = args->epilogue == OCTET_EPILOGUE_GELU;
  // In place with nothing to apply: alpha * v is v when alpha is 1.
  if (direct && alpha == 1.0f && bias_values.empty() && !has_gelu) return OCTET_STATUS_SUCCESS;
  std::vector<float> old_rows(beta != 0.0f ? element_count(omp_get_max_threads(), n) : 0);
#pragma omp parallel if (split_elements(double(m * n)))
  {
    const octet::DefaultFloatMode float_mode;  // this thread, for the region (parallel_policy.hpp)
    float* old = beta != 0.0f ? old_rows.data() + static_cast<std::size_t>(omp_get_thread_num()) * n : nullptr;
#pragma omp for schedule(static)
    for (int64_t i = 0; i < m; ++i) {
      float* v = acc + i * ldc;
      for (int64_t j = 0; j < n; ++j) v[j] = alpha * v[j];
      if (beta != 0.0f) {
        rk.widen(element_ptr(d, i, 0), d.dtype, n, old);
        for (int64_t j = 0; j < n; ++j) v[j] = v[j] + beta * old[j];
      }
      if (!bias_values.empty()) {
        for (int64_t j = 0; j < n; ++j) v[j] = v[j] + bias_values[static_cast<std::size_t>(j)];
      }
      if (has_gelu) {
        activation_rows().gelu(v, n, v);
      }
      if (!direct) rk.narrow(v, n, d.dtype, true, element_ptr_mut(d, i, 0));
    }
  }
  return OCTET_STATUS_SUCCESS;
}

// The block GEMM on BF16 dot products: FP32 scale tables, the m x n sums
// from fp8_block_gemm_bf16 (in D itself when D is FP32 and beta is 0, else
// in a workspace), then the epilogue of section 8 row by row.
int32_t block_gemm_bf16(const octet_block_gemm_args* args, GemmWorkspace& ws) {
  const int64_t m = args->m, n = args->n, k = args->k;
  const int64_t bk = args->a_block_cols, k_blocks = ceil_div(k, bk);
  const int64_t bra = args->a_block_rows, brb = args->b_block_rows;
  const int64_t a_grid = ceil_div(m, bra) * k_blocks, b_grid = ceil_div(n, brb) * k_blocks;
  float* sa = ws.a.get(static_cast<std::size_t>(a_grid));
  float* sb = ws.b.get(static_cast<std::size_t>(b_grid));
  for (int64_t i = 0; i < a_grid; ++i) {
    sa[i] = scale_value(args->a_scale_inv, args->scale_dtype, static_cast<std::size_t>(i));
  }
  for (int64_t i = 0; i < b_grid; ++i) {
    sb[i] = scale_value(args->b_scale_inv, args->scale_dtype, static_cast<std::size_t>(i));
  }
  // The sums go straight into D when D is FP32 and its old values are not
  // needed (as in per_row_gemm); else into an m x n FP32 buffer.
  const bool direct = writes_sums_into_d(args);
  float* acc = direct ? static_cast<float*>(args->d.data) : ws.acc.get(element_count(m, n));
  const int64_t ldc = direct ? args->d.ld : n;
  const Fp8Operand a{static_cast<const uint8_t*>(args->a.data), args->a.ld, false, args->a.dtype};
  const Fp8Operand b{static_cast<const uint8_t*>(args->b.data), args->b.ld, false, args->b.dtype};
  fp8_block_gemm_bf16(a, b, m, n, k, bk, BlockScaleTable{sa, bra, k_blocks}, BlockScaleTable{sb, brb, k_blocks}, acc,
                      ldc);
  return finish_block_gemm(args, acc, ldc);
}

// The block GEMM with its scales folded into the operands
// (block_gemm_folded.hpp): the m x n sums (in D itself when D is FP32 and
// beta is 0, else in a workspace), then the epilogue of section 8.
int32_t block_gemm_folded(const octet_block_gemm_args* args, GemmWorkspace& ws) {
  const bool direct = writes_sums_into_d(args);
  float* acc = direct ? static_cast<float*>(args->d.data) : ws.acc.get(element_count(args->m, args->n));
  const int64_t ldc = direct ? args->d.ld : args->n;
  if (int32_t s = block_gemm_folded_sums(args, acc, ldc)) return s;
  return finish_block_gemm(args, acc, ldc);
}

// D = alpha * (0 + P[i,j] * (sa[i] * sb[j])) (+ beta * D, + bias, GELU):
// numerics.md section 12 with one k-block, P the per-tensor FP8 GEMM's
// sums (gemm_sums) straight from the codes, one FP32 m x n accumulator.
int32_t per_row_gemm(const octet_block_gemm_args* args) {
  const int64_t m = args->m, n = args->n, k = args->k;
  const RowKernels& rk = row_kernels();
  const octet_matrix_view d = args->d;
  const float alpha = args->alpha, beta = args->beta;
  const bool has_bias = args->bias.data != nullptr;
  const bool has_gelu = args->epilogue == OCTET_EPILOGUE_GELU;
  const float* sa = static_cast<const float*>(args->a_scale_inv);
  const float* sb = static_cast<const float*>(args->b_scale_inv);
  // The sums go straight into D when D is FP32 and its old values are not needed.
  const bool direct = d.dtype == OCTET_DTYPE_FP32 && beta == 0.0f;
  Buffer<float> acc_buffer;
  if (!direct) acc_buffer.reset(element_count(m, n));
  float* acc = direct ? static_cast<float*>(d.data) : acc_buffer.get();
  const int64_t ldc = direct ? d.ld : n;
  // k >= 1: one k-block, summed as the per-tensor FP8 GEMM sums it.
  if (int32_t s = gemm_sums("block_gemm", args->a, false, args->b, false, m, n, k, acc, ldc)) return s;
  Buffer<float> bias_values;
  if (has_bias) {
    bias_values.reset(static_cast<std::size_t>(n));
    rk.widen(args->bias.data, args->bias.dtype, n, bias_values.get());
  }
  Buffer<float> old_rows;
  if (beta != 0.0f) old_rows.reset(element_count(omp_get_max_threads(), n));
#pragma omp parallel if (split_elements(double(m * n)))
  {
    const octet::DefaultFloatMode float_mode;  // this thread, for the region (parallel_policy.hpp)
    float* old = beta != 0.0f ? old_rows.get() + static_cast<std::size_t>(omp_get_thread_num()) * n : nullptr;
#pragma omp for schedule(static)
    for (int64_t i = 0; i < m; ++i) {
      float* v = acc + i * ldc;
      const float s = sa[i];
      for (int64_t j = 0; j < n; ++j) v[j] = alpha * (0.0f + v[j] * (s * sb[j]));
      if (beta != 0.0f) {
        rk.widen(element_ptr(d, i, 0), d.dtype, n, old);
        for (int64_t j = 0; j < n; ++j) v[j] = v[j] + beta * old[j];
      }
      if (has_bias) {
        for (int64_t j = 0; j < n; ++j) v[j] = v[j] + bias_values.get()[j];
      }
      if (has_gelu) {
        activation_rows().gelu(v, n, v);
      }
      if (!direct) rk.narrow(v, n, d.dtype, true, element_ptr_mut(d, i, 0));
    }
  }
  return OCTET_STATUS_SUCCESS;
}

}  // namespace

// The smallest k-block the FP32 engine takes (see block_gemm_kernel).
constexpr int64_t kFp32EngineMinBlockK = 128;

int32_t block_gemm_kernel(const octet_block_gemm_args* args, GemmWorkspace& ws) {
  if (int32_t s = check_block_gemm(args)) return s;
  const int64_t m = args->m, n = args->n, k = args->k;
  if (m == 0 || n == 0) return OCTET_STATUS_SUCCESS;
  const int64_t bk = args->a_block_cols, k_blocks = ceil_div(k, bk);
  const int64_t bra = args->a_block_rows, brb = args->b_block_rows;
  // On a CPU whose FP8 GEMM engine is FP32 FMAs or oneDNN's BF16 matmul
  // (isa.hpp), compute-bound
  // shapes with several k-blocks whose scales fold exactly into the
  // operands (block_gemm_folded.hpp: MXFP8's E8M0 scales in any sane
  // range, power-of-two FP32 scales) are summed on the sgemm tiles in
  // slices of 256 k, as are such shapes where the BF16 kernels cannot run.
  // Other compute-bound shapes there with k-blocks of 128 or more take the
  // per-block FP32 path below; decode shapes keep the decode kernel, and
  // other 32-wide k-blocks the BF16 kernel: one sgemm call per 32 k costs
  // more than VDPBF16PS's half rate.
  const bool engine_fp32 = fp8_gemm_engine() != Fp8GemmEngine::Bf16Dot && !fp8_gemm_bf16_decodes(m, false);
  const bool bf16_able = k > 0 && bf16_kernels_take(args);
  if (k_blocks > 1 && (engine_fp32 || !bf16_able) && block_scales_fold(args)) {
    return block_gemm_folded(args, ws);
  }
  // Per-row scales (one k-block, one scale per row of each operand): the
  // scales factor out of the sum, so the per-tensor FP8 GEMM's sums (its
  // path for the shape, level and engine: decode kernels, BF16 dot
  // products or sgemm tiles) are the block's partial sums and the scales
  // go into the epilogue.
  if (k_blocks == 1 && bra == 1 && brb == 1 && args->scale_dtype == OCTET_DTYPE_FP32) return per_row_gemm(args);
  const bool fp32_engine = engine_fp32 && bk >= kFp32EngineMinBlockK;
  const bool bf16 = bf16_able && !fp32_engine;
  if (fp8_block_gemm_bf16_takes(bk) && bf16) return block_gemm_bf16(args, ws);
  const RowKernels& rk = row_kernels();
  const octet_matrix_view d = args->d;
  const float alpha = args->alpha, beta = args->beta;
  const bool has_bias = args->bias.data != nullptr;
  const bool has_gelu = args->epilogue == OCTET_EPILOGUE_GELU;
  std::vector<float> bias_values;
  if (has_bias) {
    bias_values.resize(static_cast<std::size_t>(n));
    rk.widen(args->bias.data, args->bias.dtype, n, bias_values.data());
  }

  // FP32 path: output tiles of kTm x kTn, each summed k-block by k-block;
  // a k-block's partial products come from oneDNN's sgemm on slices of at
  // most kSlice k whose FP32 blocks each thread widens in its cache (no
  // FP32 copy of a whole operand). Per thread: the tile's partial products
  // and accumulator, the widened A and B slices, the tile's b scales and
  // one row of old D. Every tile is summed on one thread in the same order,
  // so the bits do not depend on the thread count.
  constexpr int64_t kTm = 512, kTn = 512, kSlice = 256;
  const int64_t tm = std::min(kTm, m), tn = std::min(kTn, n), slice = std::min(kSlice, std::min(bk, k));
  const int64_t tiles_down = ceil_div(m, tm), tiles_across = ceil_div(n, tn);
  const int nthreads = static_cast<int>(std::min<int64_t>(
      tiles_down * tiles_across,
      threads_for(2.0 * double(m) * double(n) * double(std::max<int64_t>(k, 1)), kGemmFlopsPerThread)));
  const std::size_t per_thread =
      static_cast<std::size_t>(2 * tm * tn + (tm + tn) * std::max<int64_t>(slice, 1) + 2 * tn) + 16;
  float* scratch = ws.acc.get(per_thread * static_cast<std::size_t>(nthreads));
  const WidenRow widen_a = widen_row_for(args->a.dtype), widen_b = widen_row_for(args->b.dtype);
  int32_t failure = 0;
#pragma omp parallel num_threads(nthreads)
  {
    const octet::DefaultFloatMode float_mode;  // this thread, for the region (parallel_policy.hpp)
    const OpenMpThreadLimit one_thread(1);     // oneDNN runs each call on this thread.
    float* part = scratch + static_cast<std::size_t>(omp_get_thread_num()) * per_thread;
    float* acc = part + tm * tn;
    float* a = acc + tm * tn;
    float* b = a + tm * slice;
    float* sb_row = b + tn * slice;
    float* old = sb_row + tn;
#pragma omp for schedule(static)
    for (int64_t t = 0; t < tiles_down * tiles_across; ++t) {
      const int64_t i0 = (t / tiles_across) * tm, j0 = (t % tiles_across) * tn;
      const int64_t h = std::min(tm, m - i0), w = std::min(tn, n - j0);
      std::fill(acc, acc + h * w, 0.0f);
      for (int64_t kb = 0; kb < k_blocks; ++kb) {
        const int64_t k_end = std::min(k, (kb + 1) * bk);
        for (int64_t k0 = kb * bk; k0 < k_end; k0 += slice) {
          const int64_t kw = std::min(slice, k_end - k0);
          for (int64_t i = 0; i < h; ++i) widen_a(element_ptr(args->a, i0 + i, k0), args->a.dtype, kw, a + i * kw);
          for (int64_t j = 0; j < w; ++j) widen_b(element_ptr(args->b, j0 + j, k0), args->b.dtype, kw, b + j * kw);
          const dnnl_status_t st =
              dnnl_sgemm('N', 'T', h, w, kw, 1.0f, a, kw, b, kw, k0 == kb * bk ? 0.0f : 1.0f, part, w);
          if (st != dnnl_success) {
#pragma omp atomic write
            failure = static_cast<int32_t>(st);
          }
        }
        for (int64_t j = 0; j < w; ++j) {
          sb_row[j] = scale_value(args->b_scale_inv, args->scale_dtype,
                                  static_cast<std::size_t>(((j0 + j) / brb) * k_blocks + kb));
        }
        for (int64_t i = 0; i < h; ++i) {
          const float sa = scale_value(args->a_scale_inv, args->scale_dtype,
                                       static_cast<std::size_t>(((i0 + i) / bra) * k_blocks + kb));
          float* acc_row = acc + i * w;
          const float* p = part + i * w;
          for (int64_t j = 0; j < w; ++j) acc_row[j] = acc_row[j] + p[j] * (sa * sb_row[j]);
        }
      }
      for (int64_t i = 0; i < h; ++i) {
        float* v = acc + i * w;
        for (int64_t j = 0; j < w; ++j) v[j] = alpha * v[j];
        if (beta != 0.0f) {
          rk.widen(element_ptr(d, i0 + i, j0), d.dtype, w, old);
          for (int64_t j = 0; j < w; ++j) v[j] = v[j] + beta * old[j];
        }
        if (has_bias) {
          for (int64_t j = 0; j < w; ++j) v[j] = v[j] + bias_values[static_cast<std::size_t>(j0 + j)];
        }
        if (has_gelu) {
          activation_rows().gelu(v, w, v);
        }
        rk.narrow(v, w, d.dtype, true, element_ptr_mut(d, i0 + i, j0));
      }
    }
  }
  if (failure != 0) {
    return report(OCTET_STATUS_BACKEND_ERROR,
                  std::string("block_gemm: oneDNN dnnl_sgemm failed with status ") +
                      std::to_string(failure));
  }
  return OCTET_STATUS_SUCCESS;
}

}  // namespace octet_cpu
