// Element-wise kernels: convert, amax, quantize (with the fused cast +
// transpose), transpose, dequantize. Work is split into row segments of at
// most kChunk elements and shared among OpenMP threads with a static
// schedule; each segment goes through the row kernels (AVX2 or portable).
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "block/block_rows.hpp"
#include "codecs/scalar_codecs.hpp"
#include "dispatch/parallel_policy.hpp"
#include "elementwise/row_kernels.hpp"
#include "plugin/checks.hpp"
#include "plugin/errors.hpp"
#include "plugin/kernels.hpp"

namespace octet_cpu {
namespace {

constexpr int64_t kChunk = 2048;  // elements per segment (fits L1 as FP32)

// Calls body(r, c0, width, float_buffer) for every segment of a rows x cols
// matrix, in parallel (static schedule). Each thread has its own buffer.
template <typename Body>
void for_each_segment(int64_t rows, int64_t cols, Body&& body) {
  if (rows <= 0 || cols <= 0) return;
  const int64_t per_row = (cols + kChunk - 1) / kChunk;
  const int64_t total = rows * per_row;
  const bool parallel = split_elements(double(rows * cols));
#pragma omp parallel if (parallel)
  {
    const octet::DefaultFloatMode float_mode;  // this thread, for the region (dispatch/parallel_policy.hpp)
    alignas(64) float buffer[kChunk];
#pragma omp for schedule(static)
    for (int64_t s = 0; s < total; ++s) {
      const int64_t r = s / per_row;
      const int64_t c0 = (s % per_row) * kChunk;
      body(r, c0, std::min(kChunk, cols - c0), buffer);
    }
  }
}

// The FP32 values of a segment: the input itself when it is FP32, else
// widened into the buffer.
const float* segment_values(const RowKernels& k, const octet_matrix_view& in, int64_t r,
                            int64_t c0, int64_t width, float* buffer) {
  if (in.dtype == OCTET_DTYPE_FP32) return reinterpret_cast<const float*>(element_ptr(in, r, c0));
  k.widen(element_ptr(in, r, c0), in.dtype, width, buffer);
  return buffer;
}

}  // namespace

int32_t convert_kernel(const octet_matrix_view* input, const octet_matrix_view* output,
                       int32_t saturate) {
  const char* kernel = "convert";
  if (int32_t s = require_pointer(kernel, "input", input)) return s;
  if (int32_t s = require_pointer(kernel, "output", output)) return s;
  if (int32_t s = require_matrix(kernel, "input", *input, Accept::Any)) return s;
  if (int32_t s = require_matrix(kernel, "output", *output, Accept::Any)) return s;
  if (int32_t s = require_shape(kernel, "output", *output, input->rows, input->cols,
                                "the rows x cols of input")) {
    return s;
  }
  const RowKernels& k = row_kernels();
  const octet_matrix_view in = *input, out = *output;
  const bool sat = saturate != 0;
  for_each_segment(in.rows, in.cols, [&](int64_t r, int64_t c0, int64_t w, float* buffer) {
    const float* values = segment_values(k, in, r, c0, w, buffer);
    k.narrow(values, w, out.dtype, sat, element_ptr_mut(out, r, c0));
  });
  return OCTET_STATUS_SUCCESS;
}

int32_t amax_kernel(const octet_matrix_view* input, float* amax_out) {
  const char* kernel = "amax";
  if (int32_t s = require_pointer(kernel, "input", input)) return s;
  if (int32_t s = require_pointer(kernel, "amax_out", amax_out)) return s;
  if (int32_t s = require_matrix(kernel, "input", *input, Accept::HighPrecision)) return s;
  const RowKernels& k = row_kernels();
  const octet_matrix_view in = *input;
  std::vector<float> partial(static_cast<std::size_t>(omp_get_max_threads()), 0.0f);
  for_each_segment(in.rows, in.cols, [&](int64_t r, int64_t c0, int64_t w, float* buffer) {
    const float* values = segment_values(k, in, r, c0, w, buffer);
    k.amax(values, w, &partial[static_cast<std::size_t>(omp_get_thread_num())]);
  });
  float amax = 0.0f;
  for (float p : partial) amax = p > amax ? p : amax;
  *amax_out = amax;
  return OCTET_STATUS_SUCCESS;
}

namespace {
struct PaddedCounts {  // one thread's counts, on a cache line of its own
  alignas(64) QuantizeCounts c;
};
}  // namespace

int32_t quantize_kernel(const octet_quantize_args* args) { return quantize_counting(args, nullptr, nullptr); }

int32_t quantize_counting(const octet_quantize_args* args, QuantizeCounts* counts_out, float* amax_of_input) {
  const char* kernel = counts_out != nullptr ? "quantize_with_statistics" : "quantize";
  if (int32_t s = require_pointer(kernel, "args", args)) return s;
  if (int32_t s = require_struct_size(kernel, "args", args->struct_size,
                                      sizeof(octet_quantize_args))) {
    return s;
  }
  if (int32_t s = require_matrix(kernel, "args->input", args->input, Accept::HighPrecision)) {
    return s;
  }
  if (int32_t s = require_fp8_dtype(kernel, "args->out_dtype", args->out_dtype)) return s;
  if (int32_t s = require_pointer(kernel, "args->scale", args->scale)) return s;

  const RowKernels& k = row_kernels();
  const octet_matrix_view in = args->input;
  const int64_t rows = in.rows, cols = in.cols;
  const float scale = *args->scale;
  const int32_t dtype = args->out_dtype;
  const bool sat = args->saturate != 0;
  uint8_t* rowwise = args->rowwise_out;
  uint8_t* columnwise = args->columnwise_out;
  std::vector<float> partial(static_cast<std::size_t>(omp_get_max_threads()), 0.0f);
  // With statistics: each run is counted right after it is encoded, while
  // it is still in L1, so the statistics cost no second pass over memory.
  std::vector<PaddedCounts> counts(counts_out != nullptr ? partial.size() : 0);
  const QuantizeThresholds thresholds = quantize_thresholds(dtype);
  auto count = [&](const float* values, int64_t w) {
    if (counts_out != nullptr)
      k.count_quantize(values, w, scale, thresholds, &counts[static_cast<std::size_t>(omp_get_thread_num())].c);
  };

  if (columnwise == nullptr) {
    // Rowwise only (or nothing but amax): one streaming pass.
    for_each_segment(rows, cols, [&](int64_t r, int64_t c0, int64_t w, float* buffer) {
      const float* values = segment_values(k, in, r, c0, w, buffer);
      float* amax = &partial[static_cast<std::size_t>(omp_get_thread_num())];
      if (rowwise != nullptr) {
        k.scale_encode(values, w, scale, dtype, sat, rowwise + r * cols + c0, amax);
      } else {
        k.amax(values, w, amax);
      }
      count(values, w);
    });
  } else if (rows > 0 && cols > 0) {
    // Fused cast + transpose, a tile of kTileRows x kTileCols at a time:
    // the tile's rows are encoded into a per-thread buffer (128 KiB: L2),
    // each row read as one long run of the input (so that the hardware
    // prefetchers follow it), then the codes go to the rowwise output and,
    // transposed, to the columnwise one (kTileRows = 64 bytes, one cache
    // line, per column) through the block row kernels' streaming copies
    // (block/block_rows.hpp), so that neither output is read for ownership. The
    // input is read once and each code written once.
    constexpr int64_t kTileRows = 64, kTileCols = 2048;
    const BlockRowKernels& bk = block_row_kernels();
    const int64_t row_tiles = (rows + kTileRows - 1) / kTileRows;
    const int64_t col_tiles = (cols + kTileCols - 1) / kTileCols;
    const bool parallel = split_elements(double(rows * cols));
#pragma omp parallel if (parallel)
    {
      const octet::DefaultFloatMode float_mode;  // this thread, for the region (dispatch/parallel_policy.hpp)
      alignas(64) float buffer[kTileCols];
      std::vector<uint8_t> tile(static_cast<std::size_t>(kTileRows * kTileCols));
      float* amax = &partial[static_cast<std::size_t>(omp_get_thread_num())];
#pragma omp for schedule(dynamic, 1)
      for (int64_t t = 0; t < row_tiles * col_tiles; ++t) {
        const int64_t r0 = (t / col_tiles) * kTileRows;
        const int64_t c0 = (t % col_tiles) * kTileCols;
        const int64_t h = std::min(kTileRows, rows - r0);
        const int64_t w = std::min(kTileCols, cols - c0);
        for (int64_t i = 0; i < h; ++i) {
          const float* values = segment_values(k, in, r0 + i, c0, w, buffer);
          k.scale_encode(values, w, scale, dtype, sat, tile.data() + i * kTileCols, amax);
          count(values, w);
        }
        if (rowwise != nullptr) bk.copy_bytes_out(tile.data(), kTileCols, h, w, rowwise + r0 * cols + c0, cols);
        bk.transpose_bytes_out(tile.data(), kTileCols, h, w, columnwise + c0 * rows + r0, rows);
      }
    }
  }
  float amax = 0.0f;
  for (float p : partial) amax = p > amax ? p : amax;
  if (args->scale_inv_out != nullptr) *args->scale_inv_out = 1.0f / scale;
  if (args->amax_out != nullptr) *args->amax_out = amax;
  if (counts_out != nullptr) {
    *counts_out = QuantizeCounts{};
    for (const PaddedCounts& c : counts) {  // in thread order
      counts_out->nan += c.c.nan;
      counts_out->saturated += c.c.saturated;
      counts_out->flushed += c.c.flushed;
    }
    *amax_of_input = amax;
  }
  return OCTET_STATUS_SUCCESS;
}

namespace {

template <typename T>
void transpose_typed(const octet_matrix_view& in, const octet_matrix_view& out) {
  constexpr int64_t kTile = 64;
  const int64_t rows = in.rows, cols = in.cols;
  const int64_t row_tiles = (rows + kTile - 1) / kTile;
  const int64_t col_tiles = (cols + kTile - 1) / kTile;
  const T* src = static_cast<const T*>(in.data);
  T* dst = static_cast<T*>(out.data);
  const bool parallel = split_elements(double(rows * cols));
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t t = 0; t < row_tiles * col_tiles; ++t) {
    const int64_t r0 = (t / col_tiles) * kTile;
    const int64_t c0 = (t % col_tiles) * kTile;
    const int64_t r1 = std::min(rows, r0 + kTile), c1 = std::min(cols, c0 + kTile);
    if constexpr (sizeof(T) == 1) {
      row_kernels().transpose_bytes(src + r0 * in.ld + c0, in.ld, r1 - r0, c1 - c0,
                                    dst + c0 * out.ld + r0, out.ld);
    } else {
      for (int64_t c = c0; c < c1; ++c) {
        for (int64_t r = r0; r < r1; ++r) dst[c * out.ld + r] = src[r * in.ld + c];
      }
    }
  }
}

}  // namespace

int32_t transpose_kernel(const octet_matrix_view* input, const octet_matrix_view* output) {
  const char* kernel = "transpose";
  if (int32_t s = require_pointer(kernel, "input", input)) return s;
  if (int32_t s = require_pointer(kernel, "output", output)) return s;
  if (int32_t s = require_matrix(kernel, "input", *input, Accept::Any)) return s;
  if (int32_t s = require_matrix(kernel, "output", *output, Accept::Any)) return s;
  if (output->dtype != input->dtype) {
    return report(OCTET_STATUS_INVALID_ARGUMENT,
                  std::string(kernel) + ": output.dtype is " + dtype_name(output->dtype) +
                      " but input.dtype is " + dtype_name(input->dtype) + "; they must be equal");
  }
  if (int32_t s = require_shape(kernel, "output", *output, input->cols, input->rows,
                                "input.cols x input.rows")) {
    return s;
  }
  if (input->rows == 0 || input->cols == 0) return OCTET_STATUS_SUCCESS;
  // Elements are moved as raw bits of their size.
  switch (dtype_size(input->dtype)) {
    case 1: transpose_typed<uint8_t>(*input, *output); break;
    case 2: transpose_typed<uint16_t>(*input, *output); break;
    default: transpose_typed<uint32_t>(*input, *output); break;
  }
  return OCTET_STATUS_SUCCESS;
}

int32_t dequantize_kernel(const octet_dequantize_args* args) {
  const char* kernel = "dequantize";
  if (int32_t s = require_pointer(kernel, "args", args)) return s;
  if (int32_t s = require_struct_size(kernel, "args", args->struct_size,
                                      sizeof(octet_dequantize_args))) {
    return s;
  }
  if (int32_t s = require_matrix(kernel, "args->input", args->input, Accept::Fp8)) return s;
  if (int32_t s = require_pointer(kernel, "args->scale_inv", args->scale_inv)) return s;
  if (int32_t s = require_matrix(kernel, "args->output", args->output, Accept::HighPrecision)) {
    return s;
  }
  if (int32_t s = require_shape(kernel, "args->output", args->output, args->input.rows,
                                args->input.cols, "the rows x cols of args->input")) {
    return s;
  }
  const RowKernels& k = row_kernels();
  const octet_matrix_view in = args->input, out = args->output;
  const float scale_inv = *args->scale_inv;
  for_each_segment(in.rows, in.cols, [&](int64_t r, int64_t c0, int64_t w, float* buffer) {
    k.widen(element_ptr(in, r, c0), in.dtype, w, buffer);
    k.scale(buffer, w, scale_inv);
    k.narrow(buffer, w, out.dtype, true, element_ptr_mut(out, r, c0));
  });
  return OCTET_STATUS_SUCCESS;
}

}  // namespace octet_cpu
