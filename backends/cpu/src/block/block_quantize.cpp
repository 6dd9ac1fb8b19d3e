// Block quantize (numerics.md section 11): MXFP8 E8M0 scales with
// RCEIL/FLOOR and FP32 block scales, exact (the same bits as any correct
// implementation of the rules).
//
// Block quantize works in the input's orientation for both usages, on
// regions of whole blocks (a transposed-usage block is block_cols x
// block_rows of the input): an FP32 input is read in place (BF16/FP16 are
// widened into a per-thread buffer), each block's amax (over its finite
// values) gives its scale, each element x is multiplied by its block's
// multiplier (MXFP8: 1/X, X = 2^e, so x * 2^-e is the same FP32 value as
// x / 2^e; FP32 blocks: the scale) and encoded with the row kernels'
// encoder's rules (block/block_rows.hpp's multiply_encode), whole rows into a
// per-thread code tile, which goes out as it is or byte-transposed.
// Regions are shared by OpenMP threads with a dynamic schedule.
#include <octet/octet_math.h>

#include <dnnl.h>
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "block/block_common.hpp"
#include "block/block_rows.hpp"
#include "block/block_scales.hpp"
#include "codecs/scalar_codecs.hpp"
#include "codecs/widen_fp8_avx512.hpp"
#include "dispatch/isa.hpp"
#include "dispatch/parallel_policy.hpp"
#include "elementwise/activation_rows.hpp"
#include "elementwise/row_kernels.hpp"
#include "gemm/block_gemm_folded.hpp"
#include "gemm/gemm_fp8.hpp"
#include "plugin/checks.hpp"
#include "plugin/errors.hpp"
#include "plugin/kernels.hpp"

namespace octet_cpu {
namespace {

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
// they are or byte-transposed (block/block_rows.hpp). rows, cols > 0.
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
    const octet::DefaultFloatMode float_mode;  // this thread, for the region (dispatch/parallel_policy.hpp)
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
    const octet::DefaultFloatMode float_mode;  // this thread, for the region (dispatch/parallel_policy.hpp)
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
        // Out without reading the output for ownership (block/block_rows.hpp).
        if (transposed) bk.transpose_bytes_out(tile, w, h, w, args->out + c0 * rows + r0, rows);
      }
    }
  }
  if (args->amax_out != nullptr) *args->amax_out = amax;
  if (want_stats) write_counts(parts, args->stats_out);
  return OCTET_STATUS_SUCCESS;
}

}  // namespace

int32_t block_quantize_kernel(const octet_block_quantize_args* args) {
  const char* kernel = "block_quantize";
  if (int32_t s = require_pointer(kernel, "args", args)) return s;
  if (int32_t s = require_struct_size(kernel, "args", args->struct_size, sizeof(octet_block_quantize_args))) {
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
    return report(OCTET_STATUS_INVALID_ARGUMENT, std::string(kernel) + ": args->e8m0_rounding is " +
                                                     std::to_string(args->e8m0_rounding) +
                                                     "; it must be 0 (RCEIL) or 1 (FLOOR)");
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
    const octet::DefaultFloatMode float_mode;  // this thread, for the region (dispatch/parallel_policy.hpp)
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
        // The blocks' scales (block/block_scales.hpp). The largest |x| bits are
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
      // Out without reading the output for ownership (block/block_rows.hpp).
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

}  // namespace octet_cpu
