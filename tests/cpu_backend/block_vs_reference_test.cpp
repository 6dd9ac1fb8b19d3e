// Plugin ABI 1.1 kernels of the cpu backend against the reference backend,
// both driven through octet.h (recipes, quantizers, octet_quantize_with_stats,
// octet_dequantize, octet_gemm): MXFP8 (RCEIL, FLOOR), 1x128 / 128x128 and
// per-row and per-column (numerics.md section 16) quantization, in the OCP
// and (where declared) FNUZ formats (codes, scale grids of both usages, amax, statistics)
// bit for bit on ragged shapes; block dequantize bit for bit; per-tensor
// quantize statistics; block-scaled GEMMs within the bound of
// docs/numerics.md sections 8 and 12, computed here from the codes and
// scales.
#include <octet/octet.h>

#include <gtest/gtest.h>
#ifndef OCTET_TEST_SKIP_CPU_ONLY
#include <omp.h>  // the thread-count tests set the plugin's team size
#endif

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "abi_helpers.hpp"

namespace cpu_test {
namespace {

struct Del {
  void operator()(octet_recipe* r) const { octet_recipe_destroy(r); }
  void operator()(octet_quantizer* q) const { octet_quantizer_destroy(q); }
};
using Recipe = std::unique_ptr<octet_recipe, Del>;
using Quantizer = std::unique_ptr<octet_quantizer, Del>;

// One block-scaling configuration, as a recipe and the matching tensor mode.
struct BlockConfig {
  const char* name;
  int32_t mode;       // OCTET_SCALING_*
  int32_t rounding;   // MXFP8 only
  float epsilon;      // FP32 blocks only
  int32_t pow2;       // FP32 blocks only
};

const std::vector<BlockConfig>& block_configs() {
  static const std::vector<BlockConfig> c = {{"mxfp8_rceil", OCTET_SCALING_MXFP8_1X32, OCTET_MX_ROUND_RCEIL, 0.0f, 0},
                                             {"mxfp8_floor", OCTET_SCALING_MXFP8_1X32, OCTET_MX_ROUND_FLOOR, 0.0f, 0},
                                             {"block1x128", OCTET_SCALING_BLOCK_1X128, 0, 0.0f, 0},
                                             {"block1x128_eps_pow2", OCTET_SCALING_BLOCK_1X128, 0, 1e-3f, 1},
                                             {"block128x128", OCTET_SCALING_BLOCK_128X128, 0, 0.0f, 0},
                                             {"block128x128_pow2", OCTET_SCALING_BLOCK_128X128, 0, 0.0f, 1},
                                             {"per_row", OCTET_SCALING_PER_ROW, 0, 0.0f, 0},
                                             {"per_row_eps_pow2", OCTET_SCALING_PER_ROW, 0, 1e-12f, 1},
                                             {"per_column", OCTET_SCALING_PER_COLUMN, 0, 0.0f, 0}};
  return c;
}

// Whether c takes elements of `fp8` (MXFP8 takes OCP formats only).
bool takes(const BlockConfig& c, int32_t fp8) {
  return c.mode != OCTET_SCALING_MXFP8_1X32 || fp8 == OCTET_DTYPE_E4M3 || fp8 == OCTET_DTYPE_E5M2;
}
bool is_fnuz(int32_t fp8) { return fp8 == OCTET_DTYPE_E4M3FNUZ || fp8 == OCTET_DTYPE_E5M2FNUZ; }

// Whether the backend under test declares c's mode (a plugin that reuses
// these suites may declare fewer): configurations it does not declare are skipped.
bool declared(const BlockConfig& c) {
  Context ctx = context(OCTET_TEST_BACKEND);
  octet_backend_info info{};
  info.struct_size = sizeof info;
  EXPECT_EQ(octet_context_get_info(ctx.get(), &info), OCTET_STATUS_SUCCESS) << octet_last_error_message();
  return (info.scaling_modes & static_cast<uint32_t>(c.mode)) != 0;
}

// The block extent along a row of a copy `cols` wide (per-row, and the
// columnwise copy of per-column: the whole row; the rowwise copy of
// per-column: 1).
int64_t block_cols_of(const BlockConfig& c, int64_t cols, bool columnwise_copy = false) {
  if (c.mode == OCTET_SCALING_PER_ROW) return std::max<int64_t>(cols, 1);
  if (c.mode == OCTET_SCALING_PER_COLUMN) return columnwise_copy ? std::max<int64_t>(cols, 1) : 1;
  return c.mode == OCTET_SCALING_MXFP8_1X32 ? 32 : 128;
}
// The block extent down a column of a copy `rows` high.
int64_t block_rows_of(const BlockConfig& c, int64_t rows, bool columnwise_copy = false) {
  if (c.mode == OCTET_SCALING_PER_COLUMN && !columnwise_copy) return std::max<int64_t>(rows, 1);
  return c.mode == OCTET_SCALING_BLOCK_128X128 ? 128 : 1;
}

int32_t role_of(const BlockConfig& c) {
  return c.mode == OCTET_SCALING_BLOCK_128X128 ? OCTET_ROLE_WEIGHT : OCTET_ROLE_INPUT;
}

Recipe make_recipe(const BlockConfig& c, int32_t dtype) {
  const int32_t format = dtype == OCTET_DTYPE_E4M3       ? OCTET_FORMAT_E4M3
                         : dtype == OCTET_DTYPE_E4M3FNUZ ? OCTET_FORMAT_E4M3FNUZ
                         : dtype == OCTET_DTYPE_E5M2FNUZ ? OCTET_FORMAT_E5M2FNUZ
                                                         : OCTET_FORMAT_E5M2;
  octet_recipe* r = nullptr;
  if (c.mode == OCTET_SCALING_PER_ROW) {
    octet_rowwise_scaling_options o;
    EXPECT_EQ(octet_rowwise_scaling_options_init(&o), OCTET_STATUS_SUCCESS);
    o.format = format;
    o.amax_epsilon = c.epsilon;
    o.power_of_two_scales = c.pow2;
    EXPECT_EQ(octet_recipe_create_rowwise(&o, &r), OCTET_STATUS_SUCCESS) << octet_last_error_message();
  } else if (c.mode == OCTET_SCALING_MXFP8_1X32) {
    octet_mxfp8_options o;
    EXPECT_EQ(octet_mxfp8_options_init(&o), OCTET_STATUS_SUCCESS);
    o.format = format;
    o.rounding = c.rounding;
    EXPECT_EQ(octet_recipe_create_mxfp8(&o, &r), OCTET_STATUS_SUCCESS) << octet_last_error_message();
  } else {
    octet_block_scaling_options o;
    EXPECT_EQ(octet_block_scaling_options_init(&o), OCTET_STATUS_SUCCESS);
    o.format = format;
    o.amax_epsilon = c.epsilon;
    o.power_of_two_scales = c.pow2;
    EXPECT_EQ(octet_recipe_create_block(&o, &r), OCTET_STATUS_SUCCESS) << octet_last_error_message();
  }
  return Recipe(r);
}

octet_tensor_info info_of(const octet_tensor* t) {
  octet_tensor_info info{};
  info.struct_size = sizeof info;
  EXPECT_EQ(octet_tensor_get_info(t, &info), OCTET_STATUS_SUCCESS);
  return info;
}

std::vector<uint8_t> read_component(const octet_tensor* t, int32_t component, std::size_t bytes) {
  std::vector<uint8_t> out(bytes);
  if (bytes == 0) return out;
  EXPECT_EQ(octet_tensor_copy_to_host(t, component, out.data(), bytes), OCTET_STATUS_SUCCESS)
      << octet_last_error_message();
  return out;
}

// Every stored component of a block-scaled tensor, as bytes.
struct BlockImage {
  std::vector<uint8_t> rowwise, columnwise, rowwise_scales, columnwise_scales, amax;
};
BlockImage image_of(const octet_tensor* t) {
  const octet_tensor_info info = info_of(t);
  BlockImage im;
  if (info.has_rowwise_data) {
    im.rowwise = read_component(t, OCTET_COMPONENT_DATA, info.rowwise_bytes);
    im.rowwise_scales =
        read_component(t, OCTET_COMPONENT_ROWWISE_SCALE_INV, info.rowwise_scale_inv_bytes);
  }
  if (info.has_columnwise_data) {
    im.columnwise = read_component(t, OCTET_COMPONENT_COLUMNWISE_DATA, info.columnwise_bytes);
    im.columnwise_scales =
        read_component(t, OCTET_COMPONENT_COLUMNWISE_SCALE_INV, info.columnwise_scale_inv_bytes);
  }
  im.amax = read_component(t, OCTET_COMPONENT_AMAX, 4);
  return im;
}

// Finite data whose magnitude changes from block to block (so scales vary
// over the whole range), with all-zero rows, tiny (FP32 subnormal) and huge
// stretches.
std::vector<uint8_t> graded_elements(int32_t dtype, int64_t rows, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const std::size_t size = octet_dtype_size(dtype);
  std::vector<uint8_t> out(static_cast<std::size_t>(rows * cols) * size);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      const int band = static_cast<int>((r / 3 + c / 29) % 11);
      float x;
      if (band == 0 && r % 5 == 0) {
        x = 0.0f;
      } else if (band == 1) {
        x = std::ldexp(normal(rng), -140);  // FP32 subnormals
      } else if (band == 2) {
        x = std::ldexp(normal(rng), 120);
      } else {
        x = std::ldexp(normal(rng), band * 3 - 15);
      }
      uint32_t raw;
      if (size == 4) {
        raw = bits(x);
      } else {
        raw = dtype == OCTET_DTYPE_BF16 ? octet_bf16_encode(x) : octet_fp16_encode(x);
      }
      std::memcpy(&out[static_cast<std::size_t>(r * cols + c) * size], &raw, size);
    }
  }
  return out;
}

// FP32 N(0, 0.5) values, rows x cols: block scales in a narrow range.
std::vector<uint8_t> normal_elements(int64_t rows, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 0.5f);
  std::vector<float> x(static_cast<std::size_t>(rows * cols));
  for (float& v : x) v = normal(rng);
  std::vector<uint8_t> out(x.size() * 4);
  std::memcpy(out.data(), x.data(), out.size());
  return out;
}

struct Quantized {
  Context ctx;
  Tensor input, output;
  octet_quantize_stats stats{};
};

Quantized block_quantize_on(const char* backend, const BlockConfig& c, int32_t fp8,
                            int32_t in_dtype, int64_t rows, int64_t cols,
                            const std::vector<uint8_t>& raw, uint32_t usages) {
  Quantized q;
  q.ctx = context(backend);
  q.input = tensor(q.ctx.get(), in_dtype, rows, cols);
  upload(q.input.get(), OCTET_COMPONENT_DATA, raw.data(), raw.size());
  q.output = block_tensor(q.ctx.get(), fp8, rows, cols, usages, c.mode);
  q.stats.struct_size = sizeof q.stats;
  if (c.mode == OCTET_SCALING_PER_COLUMN) {  // no recipe makes it: octet_quantize's defaults
    EXPECT_EQ(octet_quantize_with_stats(q.ctx.get(), q.input.get(), q.output.get(), nullptr, &q.stats),
              OCTET_STATUS_SUCCESS)
        << backend << ": " << octet_last_error_message();
    return q;
  }
  Recipe recipe = make_recipe(c, fp8);
  octet_quantizer* qz = nullptr;
  EXPECT_EQ(octet_quantizer_create(recipe.get(), role_of(c), &qz), OCTET_STATUS_SUCCESS)
      << octet_last_error_message();
  Quantizer quantizer(qz);
  q.stats.struct_size = sizeof q.stats;
  EXPECT_EQ(octet_quantizer_quantize(q.ctx.get(), quantizer.get(), q.input.get(), q.output.get(),
                                     nullptr, &q.stats),
            OCTET_STATUS_SUCCESS)
      << backend << ": " << octet_last_error_message();
  return q;
}

void expect_same_stats(const octet_quantize_stats& got, const octet_quantize_stats& want,
                       const std::string& where) {
  EXPECT_EQ(got.nan_count, want.nan_count) << where;
  EXPECT_EQ(got.saturated_count, want.saturated_count) << where;
  EXPECT_EQ(got.flushed_count, want.flushed_count) << where;
  EXPECT_EQ(got.total_count, want.total_count) << where;
  EXPECT_EQ(bits(got.amax), bits(want.amax)) << where;
}

void expect_same_bytes(const std::vector<uint8_t>& got, const std::vector<uint8_t>& want,
                       std::size_t element, const std::string& where) {
  ASSERT_EQ(got.size(), want.size()) << where;
  const int64_t at = first_difference(got, want, element);
  EXPECT_EQ(at, -1) << where << ": first difference at element " << at;
}

const std::vector<Shape>& block_shapes() {
  static const std::vector<Shape> s = {{1, 1}, {7, 13}, {67, 131}, {130, 259}, {1481, 677}};
  return s;
}

TEST(CpuBlockScaling, QuantizeMatchesReferenceBitForBit) {
  for (const BlockConfig& c : block_configs()) {
    if (!declared(c)) continue;
    for (int32_t fp8 : fp8_dtypes()) {
      if (!takes(c, fp8)) continue;
      for (int32_t in_dtype : high_precision_dtypes()) {
        for (Shape s : block_shapes()) {
          // FNUZ runs the same kernels as OCP with other encoder parameters:
          // the largest shape (the threaded splits) is run in OCP only, and
          // on the default path only (repeated_path_run).
          if ((is_fnuz(fp8) || repeated_path_run()) && s.rows * s.cols > 100000) continue;
          for (int data = 0; data < 2; ++data) {
            const uint32_t seed = static_cast<uint32_t>(s.rows * 7 + s.cols + fp8 * 131 + data);
            std::vector<uint8_t> raw =
                data == 0 ? random_elements(in_dtype, static_cast<std::size_t>(s.rows * s.cols), seed)
                          : graded_elements(in_dtype, s.rows, s.cols, seed);
            const std::string where = std::string(c.name) + " fp8 " + std::to_string(fp8) +
                                      " input " + std::to_string(in_dtype) + " " + shape_name(s) +
                                      (data == 0 ? " random" : " graded");
            Quantized cpu = block_quantize_on(OCTET_TEST_BACKEND, c, fp8, in_dtype, s.rows, s.cols, raw,
                                              OCTET_USAGE_BOTH);
            Quantized ref = block_quantize_on("reference", c, fp8, in_dtype, s.rows, s.cols, raw,
                                              OCTET_USAGE_BOTH);
            const BlockImage got = image_of(cpu.output.get()), want = image_of(ref.output.get());
            ASSERT_FALSE(want.rowwise.empty()) << where;
            ASSERT_FALSE(want.columnwise.empty()) << where;
            const std::size_t scale_size = c.mode == OCTET_SCALING_MXFP8_1X32 ? 1 : 4;
            expect_same_bytes(got.rowwise, want.rowwise, 1, where + " rowwise codes");
            expect_same_bytes(got.columnwise, want.columnwise, 1, where + " columnwise codes");
            expect_same_bytes(got.rowwise_scales, want.rowwise_scales, scale_size,
                              where + " rowwise scales");
            expect_same_bytes(got.columnwise_scales, want.columnwise_scales, scale_size,
                              where + " columnwise scales");
            expect_same_bytes(got.amax, want.amax, 4, where + " amax");
            expect_same_stats(cpu.stats, ref.stats, where);
            if (::testing::Test::HasFailure()) return;
          }
        }
      }
    }
  }
}

// Widths around the vector widths and the block edges (32, 128), so that
// the SIMD block amax / non-finite test and the encoder run on partial vectors,
// with NaN, infinities and FP32 subnormals among the values.
TEST(CpuBlockScaling, QuantizeTailWidthsMatchReference) {
  const int64_t widths[] = {15, 16, 17, 31, 33, 63, 65, 127, 129};
  for (const BlockConfig& c : block_configs()) {
    if (!declared(c)) continue;
    for (int64_t cols : widths) {
      const Shape s{33, cols};
      std::vector<uint8_t> raw = random_elements(
          OCTET_DTYPE_FP32, static_cast<std::size_t>(s.rows * s.cols), static_cast<uint32_t>(cols));
      const std::string where = std::string(c.name) + " " + shape_name(s);
      Quantized cpu = block_quantize_on(OCTET_TEST_BACKEND, c, OCTET_DTYPE_E4M3, OCTET_DTYPE_FP32,
                                        s.rows, s.cols, raw, OCTET_USAGE_BOTH);
      Quantized ref = block_quantize_on("reference", c, OCTET_DTYPE_E4M3, OCTET_DTYPE_FP32, s.rows,
                                        s.cols, raw, OCTET_USAGE_BOTH);
      const BlockImage got = image_of(cpu.output.get()), want = image_of(ref.output.get());
      const std::size_t scale_size = c.mode == OCTET_SCALING_MXFP8_1X32 ? 1 : 4;
      expect_same_bytes(got.rowwise, want.rowwise, 1, where + " rowwise codes");
      expect_same_bytes(got.columnwise, want.columnwise, 1, where + " columnwise codes");
      expect_same_bytes(got.rowwise_scales, want.rowwise_scales, scale_size, where + " rowwise scales");
      expect_same_bytes(got.columnwise_scales, want.columnwise_scales, scale_size,
                        where + " columnwise scales");
      expect_same_bytes(got.amax, want.amax, 4, where + " amax");
      expect_same_stats(cpu.stats, ref.stats, where);
      if (::testing::Test::HasFailure()) return;
    }
  }
}

// Shapes around the AVX-512 path's region and tile edges: rows a multiple
// of 64 (the transposed usage's 64 x 16 byte transposes, streamed into a
// 64-byte aligned output) or not, columns a multiple of 16 or not, several
// regions down and across; FP32 (read in place) and BF16 (widened) input.
TEST(CpuBlockScaling, QuantizeRegionEdgesMatchReference) {
  const Shape shapes[] = {{256, 272}, {256, 200}, {200, 256}, {384, 1100}, {130, 530}};
  for (const BlockConfig& c : block_configs()) {
    if (!declared(c)) continue;
    for (Shape s : shapes) {
      for (int32_t in_dtype : {OCTET_DTYPE_FP32, OCTET_DTYPE_BF16}) {
        const uint32_t seed = static_cast<uint32_t>(s.rows * 3 + s.cols + in_dtype);
        std::vector<uint8_t> raw = s.rows == 256
                                       ? graded_elements(in_dtype, s.rows, s.cols, seed)
                                       : random_elements(in_dtype, static_cast<std::size_t>(s.rows * s.cols), seed);
        const std::string where = std::string(c.name) + " " + shape_name(s) + " input " + std::to_string(in_dtype);
        Quantized cpu =
            block_quantize_on(OCTET_TEST_BACKEND, c, OCTET_DTYPE_E4M3, in_dtype, s.rows, s.cols, raw, OCTET_USAGE_BOTH);
        Quantized ref =
            block_quantize_on("reference", c, OCTET_DTYPE_E4M3, in_dtype, s.rows, s.cols, raw, OCTET_USAGE_BOTH);
        const BlockImage got = image_of(cpu.output.get()), want = image_of(ref.output.get());
        const std::size_t scale_size = c.mode == OCTET_SCALING_MXFP8_1X32 ? 1 : 4;
        expect_same_bytes(got.rowwise, want.rowwise, 1, where + " rowwise codes");
        expect_same_bytes(got.columnwise, want.columnwise, 1, where + " columnwise codes");
        expect_same_bytes(got.rowwise_scales, want.rowwise_scales, scale_size, where + " rowwise scales");
        expect_same_bytes(got.columnwise_scales, want.columnwise_scales, scale_size, where + " columnwise scales");
        expect_same_bytes(got.amax, want.amax, 4, where + " amax");
        expect_same_stats(cpu.stats, ref.stats, where);
        if (::testing::Test::HasFailure()) return;
      }
    }
  }
}

// Per-row and per-column scaling's whole-column copies (the per-column
// rowwise copy, both transposed copies) read bands of 64 rows in pieces of
// 4096 columns: several pieces across with a partial last one, a partial
// last band, rows a multiple of 64 (streamed transposed output) or not;
// random data (NaN and infinities in most columns: the scalar rescan) and
// graded data (finite: the SIMD maxima alone); FP32 and BF16 input.
TEST(CpuBlockScaling, QuantizeWholeColumnPiecesMatchReference) {
  const Shape shapes[] = {{70, 8300}, {128, 4096}, {3, 4097}};
  for (const BlockConfig& c : block_configs()) {
    if (!declared(c) || (c.mode != OCTET_SCALING_PER_ROW && c.mode != OCTET_SCALING_PER_COLUMN)) continue;
    for (Shape s : shapes) {
      for (int32_t in_dtype : {OCTET_DTYPE_FP32, OCTET_DTYPE_BF16}) {
        for (int data = 0; data < 2; ++data) {
          const uint32_t seed = static_cast<uint32_t>(s.rows * 5 + s.cols + in_dtype + data);
          std::vector<uint8_t> raw = data == 0
                                         ? random_elements(in_dtype, static_cast<std::size_t>(s.rows * s.cols), seed)
                                         : graded_elements(in_dtype, s.rows, s.cols, seed);
          const std::string where = std::string(c.name) + " " + shape_name(s) + " input " + std::to_string(in_dtype) +
                                    (data == 0 ? " random" : " graded");
          Quantized cpu = block_quantize_on(OCTET_TEST_BACKEND, c, OCTET_DTYPE_E4M3, in_dtype, s.rows, s.cols, raw,
                                            OCTET_USAGE_BOTH);
          Quantized ref =
              block_quantize_on("reference", c, OCTET_DTYPE_E4M3, in_dtype, s.rows, s.cols, raw, OCTET_USAGE_BOTH);
          const BlockImage got = image_of(cpu.output.get()), want = image_of(ref.output.get());
          expect_same_bytes(got.rowwise, want.rowwise, 1, where + " rowwise codes");
          expect_same_bytes(got.columnwise, want.columnwise, 1, where + " columnwise codes");
          expect_same_bytes(got.rowwise_scales, want.rowwise_scales, 4, where + " rowwise scales");
          expect_same_bytes(got.columnwise_scales, want.columnwise_scales, 4, where + " columnwise scales");
          expect_same_bytes(got.amax, want.amax, 4, where + " amax");
          expect_same_stats(cpu.stats, ref.stats, where);
          if (::testing::Test::HasFailure()) return;
        }
      }
    }
  }
}

// One usage at a time: the columnwise-only pass gives the statistics.
TEST(CpuBlockScaling, SingleUsageQuantizeMatchesReference) {
  const Shape s{131, 300};
  for (const BlockConfig& c : block_configs()) {
    if (!declared(c)) continue;
    for (uint32_t usages : {uint32_t(OCTET_USAGE_ROWWISE), uint32_t(OCTET_USAGE_COLUMNWISE)}) {
      std::vector<uint8_t> raw = graded_elements(OCTET_DTYPE_FP32, s.rows, s.cols, 17);
      const std::string where = std::string(c.name) + " usages " + std::to_string(usages);
      Quantized cpu =
          block_quantize_on(OCTET_TEST_BACKEND, c, OCTET_DTYPE_E4M3, OCTET_DTYPE_FP32, s.rows, s.cols, raw, usages);
      Quantized ref = block_quantize_on("reference", c, OCTET_DTYPE_E4M3, OCTET_DTYPE_FP32, s.rows,
                                        s.cols, raw, usages);
      const BlockImage got = image_of(cpu.output.get()), want = image_of(ref.output.get());
      expect_same_bytes(got.rowwise, want.rowwise, 1, where + " rowwise codes");
      expect_same_bytes(got.columnwise, want.columnwise, 1, where + " columnwise codes");
      expect_same_bytes(got.rowwise_scales, want.rowwise_scales, 1, where + " rowwise scales");
      expect_same_bytes(got.columnwise_scales, want.columnwise_scales, 1, where + " columnwise scales");
      expect_same_stats(cpu.stats, ref.stats, where);
    }
  }
}

// Single blocks that hit each scale rule: NaN (quiet and signalling), zero,
// infinity, FP32 subnormal amax (RCEIL quotient underflowing to zero), the
// FLT_MAX scale of FP32 blocks.
TEST(CpuBlockScaling, ScaleRulesOnSingleBlocksMatchReference) {
  const std::vector<uint32_t> specials = {0x7FC00000u, 0x7F800001u, 0x00000000u, 0x80000000u,
                                          0x7F800000u, 0xFF800000u, 0x00000001u, 0x00400000u,
                                          0x00700000u, 0x7F7FFFFFu, 0x3F800000u, 0x43E00000u};
  for (const BlockConfig& c : block_configs()) {
    if (!declared(c)) continue;
    for (int32_t fp8 : fp8_dtypes()) {
      if (!takes(c, fp8)) continue;
      for (uint32_t special : specials) {
        const Shape s{3, 40};
        std::vector<uint8_t> raw(static_cast<std::size_t>(s.rows * s.cols) * 4, 0);
        for (int64_t i = 0; i < s.rows * s.cols; ++i) {
          // Small values around the special one, the special at a few places.
          const uint32_t u = (i % 17 == 5) ? special : bits(std::ldexp(float(i % 7) - 3.0f, -135));
          std::memcpy(&raw[static_cast<std::size_t>(i) * 4], &u, 4);
        }
        const std::string where = std::string(c.name) + " fp8 " + std::to_string(fp8) +
                                  " special bits " + std::to_string(special);
        Quantized cpu = block_quantize_on(OCTET_TEST_BACKEND, c, fp8, OCTET_DTYPE_FP32, s.rows, s.cols, raw,
                                          OCTET_USAGE_BOTH);
        Quantized ref = block_quantize_on("reference", c, fp8, OCTET_DTYPE_FP32, s.rows, s.cols,
                                          raw, OCTET_USAGE_BOTH);
        const BlockImage got = image_of(cpu.output.get()), want = image_of(ref.output.get());
        expect_same_bytes(got.rowwise, want.rowwise, 1, where + " rowwise codes");
        expect_same_bytes(got.columnwise, want.columnwise, 1, where + " columnwise codes");
        expect_same_bytes(got.rowwise_scales, want.rowwise_scales, 1, where + " rowwise scales");
        expect_same_bytes(got.columnwise_scales, want.columnwise_scales, 1,
                          where + " columnwise scales");
        expect_same_bytes(got.amax, want.amax, 4, where + " amax");
        expect_same_stats(cpu.stats, ref.stats, where);
      }
    }
  }
}

// The scale rules' edges many blocks to a row, so that the backend's
// vectorized scale computation (16 blocks at a time on AVX-512) meets each
// edge in every lane position and in the tail: square tiles as wide as a
// block (32 for MXFP8, 128 for FP32 blocks), each of one magnitude v on its
// diagonal and below v elsewhere, so that every block of both usages has
// amax v. The magnitudes: zero, FP32 subnormals (RCEIL quotients that
// underflow to zero, and subnormal quotients around 2^-127), powers of two
// times the format's largest value and one ulp either side, up to FLT_MAX.
TEST(CpuBlockScaling, ScaleRuleEdgesAcrossRowsOfBlocksMatchReference) {
  for (const BlockConfig& c : block_configs()) {
    if (!declared(c) || c.mode == OCTET_SCALING_PER_ROW || c.mode == OCTET_SCALING_PER_COLUMN) continue;
    for (int32_t fp8 : fp8_dtypes()) {
      if (!takes(c, fp8)) continue;
      const double fp8_max = fp8 == OCTET_DTYPE_E4M3 ? 448.0 : fp8 == OCTET_DTYPE_E4M3FNUZ ? 240.0 : 57344.0;
      std::vector<float> edges = {0.0f,    from_bits(0x00000001u),       from_bits(0x007FFFFFu), FLT_MIN,
                                  FLT_MAX, std::nextafter(FLT_MAX, 0.0f)};
      for (int e : {-150, -149, -141, -128, -127, -126, -125, -64, -1, 0, 1, 64, 110}) {
        for (double f : {1.0, 1.5, 1.75, 1.0 + 0x1p-23, 1.0 - 0x1p-24}) {
          const double v = std::ldexp(fp8_max * f, e);
          if (v <= double(FLT_MAX)) edges.push_back(float(v));
        }
      }
      const int64_t tile = c.mode == OCTET_SCALING_MXFP8_1X32 ? 32 : 128;
      const int64_t across = 29;  // blocks a row: one full register and a tail
      const int64_t down = (int64_t(edges.size()) + across - 1) / across;
      const int64_t rows = tile * down, cols = tile * across;
      std::vector<float> x(std::size_t(rows * cols));
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t j = 0; j < cols; ++j) {
          const float v = edges[std::size_t((r / tile) * across + j / tile) % edges.size()];
          const float m = (r % tile == j % tile) ? 1.0f : 0.5f + float((r + j) % 7) / 16.0f;
          x[std::size_t(r * cols + j)] = (r + j) % 2 == 0 ? v * m : -(v * m);
        }
      }
      std::vector<uint8_t> raw(x.size() * 4);
      std::memcpy(raw.data(), x.data(), raw.size());
      const std::string where = std::string(c.name) + " fp8 " + std::to_string(fp8);
      Quantized cpu =
          block_quantize_on(OCTET_TEST_BACKEND, c, fp8, OCTET_DTYPE_FP32, rows, cols, raw, OCTET_USAGE_BOTH);
      Quantized ref = block_quantize_on("reference", c, fp8, OCTET_DTYPE_FP32, rows, cols, raw, OCTET_USAGE_BOTH);
      const BlockImage got = image_of(cpu.output.get()), want = image_of(ref.output.get());
      expect_same_bytes(got.rowwise_scales, want.rowwise_scales, c.mode == OCTET_SCALING_MXFP8_1X32 ? 1 : 4,
                        where + " rowwise scales");
      expect_same_bytes(got.columnwise_scales, want.columnwise_scales, c.mode == OCTET_SCALING_MXFP8_1X32 ? 1 : 4,
                        where + " columnwise scales");
      expect_same_bytes(got.rowwise, want.rowwise, 1, where + " rowwise codes");
      expect_same_bytes(got.columnwise, want.columnwise, 1, where + " columnwise codes");
      expect_same_bytes(got.amax, want.amax, 4, where + " amax");
      expect_same_stats(cpu.stats, ref.stats, where);
    }
  }
}

// numerics.md section 11 on blocks holding NaN or infinities: a block's
// scale comes from the largest |x| of its finite elements, NaN encodes to
// the NaN code of its sign and an infinity to the largest finite code of its
// sign. The expectation is built here from that rule, for both copies (the
// columnwise one holds the transpose, blocked along the input's rows).
struct NonFiniteExpectation {
  std::vector<uint8_t> codes;    // rows x cols of the quantized matrix
  std::vector<uint8_t> scales;   // the scale grid, bytes
  std::vector<float> scale_inv;  // per block, as a float
};

NonFiniteExpectation expect_non_finite(const std::vector<float>& x, int64_t rows, int64_t cols, const BlockConfig& c,
                                       int32_t fp8, bool columnwise_copy) {
  const bool mx = c.mode == OCTET_SCALING_MXFP8_1X32;
  const int64_t br = block_rows_of(c, rows, columnwise_copy);
  const int64_t bc = block_cols_of(c, cols, columnwise_copy);
  const bool e4m3 = fp8 == OCTET_DTYPE_E4M3, fnuz = is_fnuz(fp8);
  // numerics.md section 1: 448, 57344, 240 (E4M3FNUZ), 57344 (E5M2FNUZ).
  const double fp8_max = e4m3 ? 448.0 : fp8 == OCTET_DTYPE_E4M3FNUZ ? 240.0 : 57344.0;
  const uint8_t max_code = e4m3 ? 0x7E : fnuz ? 0x7F : 0x7B;
  NonFiniteExpectation e;
  e.codes.resize(x.size());
  for (int64_t r0 = 0; r0 < rows; r0 += br) {
    for (int64_t c0 = 0; c0 < cols; c0 += bc) {
      const int64_t r1 = std::min(rows, r0 + br), c1 = std::min(cols, c0 + bc);
      double amax = 0.0;
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t j = c0; j < c1; ++j)
          if (std::isfinite(x[std::size_t(r * cols + j)]))
            amax = std::max(amax, std::fabs(double(x[std::size_t(r * cols + j)])));
      float multiplier = 1.0f;
      if (mx) {
        int exponent = 0;
        if (c.rounding == OCTET_MX_ROUND_RCEIL) {
          int e2 = 0;
          const double m = std::frexp(amax / fp8_max, &e2);
          exponent = m == 0.5 ? e2 - 1 : e2;  // ceil(log2(amax / fp8_max))
        } else if (amax != 0.0) {             // ilogb(0) is FP_ILOGB0: no exponent to take
          exponent = std::ilogb(amax) - (e4m3 ? 8 : 15);
        }
        const int code = amax == 0.0 ? 0 : std::min(254, std::max(0, exponent + 127));
        e.scales.push_back(uint8_t(code));
        e.scale_inv.push_back(float(std::ldexp(1.0, code - 127)));
        multiplier = float(std::ldexp(1.0, 127 - code));
      } else {
        const double bounded = std::max(amax, double(c.epsilon));
        if (bounded != 0.0) multiplier = float(fp8_max / bounded);
        if (c.pow2 != 0) multiplier = float(std::ldexp(1.0, std::ilogb(multiplier)));
        const float inv = 1.0f / multiplier;
        const uint8_t* b = reinterpret_cast<const uint8_t*>(&inv);
        e.scales.insert(e.scales.end(), b, b + 4);
        e.scale_inv.push_back(inv);
      }
      for (int64_t r = r0; r < r1; ++r) {
        for (int64_t j = c0; j < c1; ++j) {
          const float v = x[std::size_t(r * cols + j)];
          const uint8_t sign = std::signbit(v) ? 0x80 : 0x00;
          uint8_t code;
          if (std::isnan(v)) {
            code = fnuz ? 0x80 : sign | 0x7F;  // FNUZ: the one NaN, no sign
          } else if (std::isinf(v)) {
            code = sign | max_code;
          } else {
            code = octet_fp8_encode(v * multiplier, fp8, 1);
          }
          e.codes[std::size_t(r * cols + j)] = code;
        }
      }
    }
  }
  return e;
}

// 256 x 256 of +-1000: one quadrant with a NaN of each sign, one with an
// infinity of each sign, one with a NaN and an infinity side by side, and
// one all NaN.
std::vector<float> thousands_with_non_finite(int64_t n) {
  std::vector<float> x(std::size_t(n * n));
  for (int64_t r = 0; r < n; ++r)
    for (int64_t c = 0; c < n; ++c) x[std::size_t(r * n + c)] = (r + c) % 3 == 0 ? -1000.0f : 1000.0f;
  auto at = [&](int64_t r, int64_t c) -> float& { return x[std::size_t(r * n + c)]; };
  at(3, 5) = NAN;
  at(70, 100) = -NAN;
  at(10, 130) = INFINITY;
  at(100, 250) = -INFINITY;
  at(200, 64) = INFINITY;
  at(200, 65) = NAN;
  for (int64_t r = 128; r < n; ++r)
    for (int64_t c = 128; c < n; ++c) at(r, c) = c % 2 == 0 ? NAN : -NAN;
  return x;
}

TEST(CpuBlockScaling, NonFiniteElementsLeaveTheFiniteOnesTheirScale) {
  const int64_t n = 256;
  const std::vector<float> x = thousands_with_non_finite(n);
  std::vector<float> xt(x.size());
  for (int64_t r = 0; r < n; ++r)
    for (int64_t c = 0; c < n; ++c) xt[std::size_t(c * n + r)] = x[std::size_t(r * n + c)];
  std::vector<uint8_t> raw(x.size() * 4);
  std::memcpy(raw.data(), x.data(), raw.size());
  for (const BlockConfig& c : block_configs()) {
    if (!declared(c)) continue;
    for (int32_t fp8 : fp8_dtypes()) {
      if (!takes(c, fp8)) continue;
      const std::string where = std::string(c.name) + " fp8 " + std::to_string(fp8);
      const NonFiniteExpectation rowwise = expect_non_finite(x, n, n, c, fp8, false);
      const NonFiniteExpectation columnwise = expect_non_finite(xt, n, n, c, fp8, true);
      Quantized cpu = block_quantize_on(OCTET_TEST_BACKEND, c, fp8, OCTET_DTYPE_FP32, n, n, raw, OCTET_USAGE_BOTH);
      Quantized ref = block_quantize_on("reference", c, fp8, OCTET_DTYPE_FP32, n, n, raw, OCTET_USAGE_BOTH);
      const BlockImage got = image_of(cpu.output.get()), want = image_of(ref.output.get());
      const std::size_t scale_size = c.mode == OCTET_SCALING_MXFP8_1X32 ? 1 : 4;
      expect_same_bytes(want.rowwise, rowwise.codes, 1, where + " reference rowwise codes");
      expect_same_bytes(want.columnwise, columnwise.codes, 1, where + " reference columnwise codes");
      expect_same_bytes(want.rowwise_scales, rowwise.scales, scale_size, where + " reference rowwise scales");
      expect_same_bytes(want.columnwise_scales, columnwise.scales, scale_size, where + " reference columnwise scales");
      expect_same_bytes(got.rowwise, want.rowwise, 1, where + " rowwise codes");
      expect_same_bytes(got.columnwise, want.columnwise, 1, where + " columnwise codes");
      expect_same_bytes(got.rowwise_scales, want.rowwise_scales, scale_size, where + " rowwise scales");
      expect_same_bytes(got.columnwise_scales, want.columnwise_scales, scale_size, where + " columnwise scales");
      float amax = 0.0f;
      std::memcpy(&amax, want.amax.data(), 4);
      EXPECT_EQ(amax, INFINITY) << where << ": the tensor amax counts infinities";
      expect_same_bytes(got.amax, want.amax, 4, where + " amax");
      expect_same_stats(cpu.stats, ref.stats, where);
      EXPECT_EQ(ref.stats.nan_count, uint64_t(128 * 128 + 3)) << where;
      if (::testing::Test::HasFailure()) return;

      // Every finite value comes back within an eighth of itself (E5M2's
      // rounding, or FLOOR's clamp of 1000 to 896).
      Tensor out = tensor(cpu.ctx.get(), OCTET_DTYPE_FP32, n, n);
      ASSERT_EQ(octet_dequantize(cpu.ctx.get(), cpu.output.get(), out.get()), OCTET_STATUS_SUCCESS)
          << where << ": " << octet_last_error_message();
      const std::vector<uint8_t> bytes = download(out.get(), OCTET_COMPONENT_DATA);
      const float tolerance = 1000.0f / 8;
      for (int64_t i = 0; i < n * n; ++i) {
        float back = 0.0f;
        std::memcpy(&back, &bytes[std::size_t(i) * 4], 4);
        const float v = x[std::size_t(i)];
        if (std::isnan(v)) {
          ASSERT_TRUE(std::isnan(back)) << where << " element " << i;
        } else if (std::isfinite(v)) {
          ASSERT_LE(std::fabs(back - v), tolerance) << where << " element " << i << " is " << back;
        }
      }
    }
  }
}

TEST(CpuBlockScaling, DequantizeMatchesReferenceBitForBit) {
  for (const BlockConfig& c : block_configs()) {
    if (!declared(c)) continue;
    for (Shape s : block_shapes()) {
      std::vector<uint8_t> raw =
          graded_elements(OCTET_DTYPE_FP32, s.rows, s.cols, static_cast<uint32_t>(s.rows + s.cols));
      Quantized cpu = block_quantize_on(OCTET_TEST_BACKEND, c, OCTET_DTYPE_E4M3, OCTET_DTYPE_FP32, s.rows, s.cols,
                                        raw, OCTET_USAGE_ROWWISE);
      Quantized ref = block_quantize_on("reference", c, OCTET_DTYPE_E4M3, OCTET_DTYPE_FP32, s.rows,
                                        s.cols, raw, OCTET_USAGE_ROWWISE);
      for (int32_t out_dtype : high_precision_dtypes()) {
        const std::string where =
            std::string(c.name) + " " + shape_name(s) + " to " + std::to_string(out_dtype);
        Tensor out_cpu = tensor(cpu.ctx.get(), out_dtype, s.rows, s.cols);
        Tensor out_ref = tensor(ref.ctx.get(), out_dtype, s.rows, s.cols);
        ASSERT_EQ(octet_dequantize(cpu.ctx.get(), cpu.output.get(), out_cpu.get()),
                  OCTET_STATUS_SUCCESS)
            << where << ": " << octet_last_error_message();
        ASSERT_EQ(octet_dequantize(ref.ctx.get(), ref.output.get(), out_ref.get()),
                  OCTET_STATUS_SUCCESS)
            << where << ": " << octet_last_error_message();
        expect_same_bytes(download(out_cpu.get(), OCTET_COMPONENT_DATA),
                          download(out_ref.get(), OCTET_COMPONENT_DATA),
                          octet_dtype_size(out_dtype), where);
      }
    }
  }
}

// numerics.md section 13 for x' = decode(q) * X: a NaN block scale (E8M0
// 0xFF) gives X's NaN, except where the code is NaN too, whose NaN comes
// first. The expectation is built from the public codecs, not from a backend
// (found by tests/fuzz/fuzz_backend_vs_reference.cpp: the cpu backend gave
// every element of such a block the scale's NaN).
TEST(CpuBlockScaling, DequantizeWithANanScaleKeepsTheNanOfNanCodes) {
  Context ctx = context(OCTET_TEST_BACKEND);
  ASSERT_TRUE(ctx);
  const int64_t cols = 70;  // blocks 0 and 1 whole, block 2 a tail of 6
  Tensor q = tensor(ctx.get(), OCTET_DTYPE_E4M3, 1, cols, OCTET_USAGE_ROWWISE, OCTET_SCALING_MXFP8_1X32);
  std::vector<uint8_t> codes(cols);
  for (int64_t i = 0; i < cols; ++i) codes[std::size_t(i)] = i % 3 == 0 ? 0xFF : i % 3 == 1 ? 0x7F : 0x38;
  const uint8_t scales[3] = {0xFF, 127, 0xFF};  // NaN, 1.0, NaN
  upload(q.get(), OCTET_COMPONENT_DATA, codes.data(), codes.size());
  upload(q.get(), OCTET_COMPONENT_ROWWISE_SCALE_INV, scales, sizeof scales);
  Tensor out = tensor(ctx.get(), OCTET_DTYPE_FP32, 1, cols);
  ASSERT_EQ(octet_dequantize(ctx.get(), q.get(), out.get()), OCTET_STATUS_SUCCESS) << octet_last_error_message();
  const std::vector<uint8_t> bytes = download(out.get(), OCTET_COMPONENT_DATA);
  for (int64_t i = 0; i < cols; ++i) {
    const float code_value = octet_fp8_decode(codes[std::size_t(i)], OCTET_DTYPE_E4M3);
    const float scale = octet_e8m0_decode(scales[i / 32]);
    uint32_t want = 0;
    if (std::isnan(code_value)) {
      want = bits(code_value) | 0x00400000u;
    } else if (std::isnan(scale)) {
      want = bits(scale) | 0x00400000u;
    } else {
      want = bits(code_value * scale);
    }
    uint32_t got = 0;
    std::memcpy(&got, &bytes[std::size_t(i) * 4], 4);
    EXPECT_EQ(got, want) << "element " << i << " code 0x" << std::hex << int(codes[std::size_t(i)]);
  }
}

// Per-tensor quantize with statistics (both overflow modes, scales that
// saturate and flush).
TEST(CpuQuantizeStatistics, MatchReference) {
  for (int32_t fp8 : fp8_dtypes()) {
    for (int32_t in_dtype : high_precision_dtypes()) {
      for (Shape s : ragged_shapes()) {
        if (is_fnuz(fp8) && s.rows * s.cols > 100000) continue;  // as above
        for (float scale : {1.0f, 3.0e3f, 1.0e-4f}) {
          for (int32_t saturate : {1, 0}) {
            std::vector<uint8_t> raw = random_elements(
                in_dtype, static_cast<std::size_t>(s.rows * s.cols), static_cast<uint32_t>(s.cols));
            const std::string where = "fp8 " + std::to_string(fp8) + " input " +
                                      std::to_string(in_dtype) + " " + shape_name(s) + " scale " +
                                      std::to_string(scale) + " saturate " +
                                      std::to_string(saturate);
            octet_quantize_stats got{}, want{};
            std::vector<uint8_t> codes[2];
            int side = 0;
            for (const char* backend : {OCTET_TEST_BACKEND, "reference"}) {
              Context ctx = context(backend);
              Tensor in = tensor(ctx.get(), in_dtype, s.rows, s.cols);
              upload(in.get(), OCTET_COMPONENT_DATA, raw.data(), raw.size());
              Tensor out = tensor(ctx.get(), fp8, s.rows, s.cols, OCTET_USAGE_BOTH);
              upload(out.get(), OCTET_COMPONENT_SCALE, &scale, 4);
              octet_quantize_options o;
              ASSERT_EQ(octet_quantize_options_init(&o), OCTET_STATUS_SUCCESS);
              o.saturate = saturate;
              octet_quantize_stats& st = side == 0 ? got : want;
              st.struct_size = sizeof st;
              ASSERT_EQ(octet_quantize_with_stats(ctx.get(), in.get(), out.get(), &o, &st),
                        OCTET_STATUS_SUCCESS)
                  << backend << " " << where << ": " << octet_last_error_message();
              codes[side] = download(out.get(), OCTET_COMPONENT_DATA);
              ++side;
            }
            expect_same_bytes(codes[0], codes[1], 1, where + " codes");
            expect_same_stats(got, want, where);
            if (::testing::Test::HasFailure()) return;
          }
        }
      }
    }
  }
}

// Per-tensor quantize with statistics at the counts' edges: inputs whose
// x * scale lands on, just below and just above where encoding saturates
// (the tie past the largest value) and where it flushes to zero (half the
// smallest subnormal), for power-of-two scales (exact products) and scale 3
// (a few FP32 steps either side of each edge), both signs, with zeros,
// infinities, NaN and FP32 subnormals; counts and codes as the reference's.
TEST(CpuQuantizeStatistics, EdgesMatchReference) {
  const float inf = std::numeric_limits<float>::infinity();
  for (int32_t fp8 : fp8_dtypes()) {
    const bool fnuz = is_fnuz(fp8);
    const float max = fp8 == OCTET_DTYPE_E4M3 ? 448.0f : fp8 == OCTET_DTYPE_E4M3FNUZ ? 240.0f : 57344.0f;
    const float next_up = fp8 == OCTET_DTYPE_E4M3 ? 480.0f : fp8 == OCTET_DTYPE_E4M3FNUZ ? 256.0f : 65536.0f;
    const float min_subnormal = fp8 == OCTET_DTYPE_E4M3       ? 0x1p-9f
                                : fp8 == OCTET_DTYPE_E5M2     ? 0x1p-16f
                                : fp8 == OCTET_DTYPE_E4M3FNUZ ? 0x1p-10f
                                                              : 0x1p-17f;
    for (float scale : {1.0f, 0.5f, 4.0f, 3.0f}) {
      std::vector<float> x;
      for (float edge : {(max + next_up) / 2, min_subnormal / 2, max, min_subnormal}) {
        float v = edge / scale;
        for (int step = 0; step < 3; ++step) v = std::nextafter(v, 0.0f);
        for (int step = 0; step < 7; ++step, v = std::nextafter(v, inf)) {
          x.push_back(v);
          x.push_back(-v);
        }
      }
      for (float v : {0.0f, -0.0f, inf, -inf, std::numeric_limits<float>::quiet_NaN(),
                      std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::max()}) {
        x.push_back(v);
      }
      for (int32_t saturate : {1, 0}) {
        const std::string where = "fp8 " + std::to_string(fp8) + " scale " + std::to_string(scale) + " saturate " +
                                  std::to_string(saturate) + (fnuz ? " (FNUZ)" : "");
        octet_quantize_stats got{}, want{};
        std::vector<uint8_t> codes[2];
        int side = 0;
        for (const char* backend : {OCTET_TEST_BACKEND, "reference"}) {
          Context ctx = context(backend);
          const int64_t n = static_cast<int64_t>(x.size());
          Tensor in = tensor(ctx.get(), OCTET_DTYPE_FP32, 1, n);
          upload(in.get(), OCTET_COMPONENT_DATA, x.data(), x.size() * 4);
          Tensor out = tensor(ctx.get(), fp8, 1, n, OCTET_USAGE_ROWWISE);
          upload(out.get(), OCTET_COMPONENT_SCALE, &scale, 4);
          octet_quantize_options o;
          ASSERT_EQ(octet_quantize_options_init(&o), OCTET_STATUS_SUCCESS);
          o.saturate = saturate;
          octet_quantize_stats& st = side == 0 ? got : want;
          st.struct_size = sizeof st;
          ASSERT_EQ(octet_quantize_with_stats(ctx.get(), in.get(), out.get(), &o, &st), OCTET_STATUS_SUCCESS)
              << backend << " " << where << ": " << octet_last_error_message();
          codes[side] = download(out.get(), OCTET_COMPONENT_DATA);
          ++side;
        }
        expect_same_bytes(codes[0], codes[1], 1, where + " codes");
        expect_same_stats(got, want, where);
        EXPECT_GT(want.saturated_count, 0u) << where;  // the inputs reach both edges
        EXPECT_GT(want.flushed_count, 0u) << where;
        if (::testing::Test::HasFailure()) return;
      }
    }
  }
}

// The cpu backend's OpenMP team sizes: not built into other backends'
// suites (the kokkos tests define OCTET_TEST_SKIP_CPU_ONLY).
#ifndef OCTET_TEST_SKIP_CPU_ONLY
// The block-scaled GEMM's FP32 path (1x128 x 128x128 and per-row operands
// on a CPU whose FP8 GEMM engine is FP32 FMAs; the BF16 kernels elsewhere)
// gives the same bits on 1, 2 and 3 threads, over several output tiles,
// k-blocks and slices.
TEST(CpuBlockGemm, BitsDoNotDependOnTheThreadCount) {
  const int64_t m = 600, n = 530, k = 700;
  // block_configs(): block1x128 x block128x128 and per_row x per_row on
  // graded data; mxfp8 x mxfp8 and the power-of-two 1x128 x 128x128 on
  // data whose scales fold into the operands (gemm/block_gemm_folded.hpp).
  const int pairs[][3] = {{2, 4, 1}, {6, 6, 1}, {0, 0, 0}, {3, 5, 0}};
  const int old_threads = omp_get_max_threads();
  for (const auto& pair : pairs) {
    const BlockConfig& ca = block_configs()[static_cast<std::size_t>(pair[0])];
    const BlockConfig& cb = block_configs()[static_cast<std::size_t>(pair[1])];
    if (!declared(ca) || !declared(cb)) continue;
    const bool graded = pair[2] != 0;
    const std::vector<uint8_t> raw_a = graded ? graded_elements(OCTET_DTYPE_FP32, m, k, 5) : normal_elements(m, k, 5);
    const std::vector<uint8_t> raw_b = graded ? graded_elements(OCTET_DTYPE_FP32, n, k, 6) : normal_elements(n, k, 6);
    Quantized qa =
        block_quantize_on(OCTET_TEST_BACKEND, ca, OCTET_DTYPE_E4M3, OCTET_DTYPE_FP32, m, k, raw_a, OCTET_USAGE_ROWWISE);
    octet_context* ctx = qa.ctx.get();
    Tensor hb = tensor(ctx, OCTET_DTYPE_FP32, n, k);
    upload(hb.get(), OCTET_COMPONENT_DATA, raw_b.data(), raw_b.size());
    Tensor qb = block_tensor(ctx, OCTET_DTYPE_E4M3, n, k, OCTET_USAGE_ROWWISE, cb.mode);
    Recipe rb = make_recipe(cb, OCTET_DTYPE_E4M3);
    octet_quantizer* qz = nullptr;
    ASSERT_EQ(octet_quantizer_create(rb.get(), role_of(cb), &qz), OCTET_STATUS_SUCCESS);
    Quantizer quantizer(qz);
    ASSERT_EQ(octet_quantizer_quantize(ctx, quantizer.get(), hb.get(), qb.get(), nullptr, nullptr),
              OCTET_STATUS_SUCCESS)
        << octet_last_error_message();
    std::vector<uint8_t> first;
    for (int threads : {2, 1, 3}) {
      omp_set_num_threads(threads);
      Tensor d = tensor(ctx, OCTET_DTYPE_FP32, m, n);
      ASSERT_EQ(octet_gemm(ctx, qa.output.get(), qb.get(), d.get(), nullptr), OCTET_STATUS_SUCCESS)
          << ca.name << " x " << cb.name << ": " << octet_last_error_message();
      const std::vector<uint8_t> out = download(d.get(), OCTET_COMPONENT_DATA);
      if (first.empty()) {
        first = out;
      } else {
        EXPECT_EQ(first_difference(first, out, 4), -1) << ca.name << " x " << cb.name << " threads " << threads;
      }
    }
  }
  omp_set_num_threads(old_threads);
}
#endif  // OCTET_TEST_SKIP_CPU_ONLY

// Block-scaled GEMMs: the cpu result against the reference's within the
// bound of numerics.md section 12 (section 8 with the block scales inside
// the sum), from the codes and scales the reference stored.
TEST(CpuBlockGemm, WithinTheBoundOfTheReference) {
  struct Case {
    int config_a, config_b;  // indices into block_configs()
    int64_t m, n, k;
    int trans_a, trans_b;
    int32_t fp8 = OCTET_DTYPE_E4M3;  // both operands
    bool graded_a = true;            // else A is normal_elements too
  };
  const std::vector<Case> cases = {{0, 0, 5, 7, 70, 0, 0},
                                   {1, 0, 33, 17, 96, 1, 0},
                                   {0, 1, 130, 300, 257, 0, 1},
                                   {0, 0, 64, 64, 1000, 1, 1},
                                   {2, 4, 6, 130, 300, 0, 0},
                                   {3, 5, 129, 260, 384, 0, 0},
                                   {2, 2, 3, 5, 129, 1, 0},
                                   {4, 4, 200, 131, 260, 0, 1},
                                   {2, 5, 1, 1, 1, 0, 0},
                                   {6, 6, 5, 7, 70, 0, 0},
                                   {7, 7, 33, 17, 96, 1, 0},
                                   {6, 7, 130, 300, 257, 0, 1},
                                   {7, 7, 64, 64, 1000, 1, 1},
                                   {6, 6, 1, 1, 1, 0, 0},
                                   {7, 6, 129, 260, 384, 0, 0},
                                   {0, 0, 70, 1100, 520, 0, 0},
                                   {3, 5, 26, 1040, 300, 0, 0},
                                   // Per-column operands (8) are read transposed (their columnwise copy
                                   // has one scale per row), beside per-row ones (numerics.md section 16).
                                   {8, 8, 5, 7, 70, 1, 1},
                                   {6, 8, 33, 17, 96, 0, 1},
                                   {8, 6, 130, 300, 257, 1, 0},
                                   {8, 7, 1, 1, 1, 1, 0},
                                   // FNUZ elements (numerics.md section 1) in the FP32-scaled modes.
                                   {6, 6, 5, 7, 70, 0, 0, OCTET_DTYPE_E4M3FNUZ},
                                   {8, 6, 33, 17, 96, 1, 0, OCTET_DTYPE_E5M2FNUZ},
                                   {2, 4, 6, 130, 300, 0, 0, OCTET_DTYPE_E4M3FNUZ},
                                   {3, 5, 129, 260, 384, 0, 1, OCTET_DTYPE_E5M2FNUZ},
                                   // Scales that fold into the operands (gemm/block_gemm_folded.hpp):
                                   // MXFP8, and the power-of-two FP32 block scales.
                                   {0, 0, 130, 300, 257, 0, 0, OCTET_DTYPE_E4M3, false},
                                   {1, 0, 64, 600, 1000, 1, 1, OCTET_DTYPE_E5M2, false},
                                   {0, 1, 600, 40, 520, 0, 1, OCTET_DTYPE_E4M3, false},
                                   {3, 5, 129, 260, 384, 0, 0, OCTET_DTYPE_E4M3, false},
                                   {5, 3, 200, 131, 700, 1, 0, OCTET_DTYPE_E5M2, false},
                                   {3, 3, 40, 530, 300, 0, 0, OCTET_DTYPE_E4M3FNUZ, false}};
  for (const Case& g : cases) {
    const BlockConfig& ca = block_configs()[static_cast<std::size_t>(g.config_a)];
    const BlockConfig& cb = block_configs()[static_cast<std::size_t>(g.config_b)];
    if (!declared(ca) || !declared(cb)) continue;
    if (is_fnuz(g.fp8) && !tested_backend_declares_dtype(g.fp8)) continue;
    const int64_t a_rows = g.trans_a ? g.k : g.m, a_cols = g.trans_a ? g.m : g.k;
    const int64_t b_rows = g.trans_b ? g.k : g.n, b_cols = g.trans_b ? g.n : g.k;
    const std::vector<uint8_t> raw_a =
        g.graded_a ? graded_elements(OCTET_DTYPE_FP32, a_rows, a_cols, 3) : normal_elements(a_rows, a_cols, 3);
    std::vector<float> xb(static_cast<std::size_t>(b_rows * b_cols));
    std::mt19937 rng(9);
    std::normal_distribution<float> normal(0.0f, 0.5f);
    for (float& v : xb) v = normal(rng);
    std::vector<uint8_t> raw_b(xb.size() * 4);
    std::memcpy(raw_b.data(), xb.data(), raw_b.size());
    std::vector<float> bias(static_cast<std::size_t>(g.n)), d_old(static_cast<std::size_t>(g.m * g.n));
    for (float& v : bias) v = normal(rng);
    for (float& v : d_old) v = normal(rng);

    std::vector<double> magnitudes;  // [m, n], from the first output dtype and variant
    for (int32_t out_dtype : {OCTET_DTYPE_FP32, OCTET_DTYPE_BF16}) {
      // Variant 0: alpha 0.75; 1: beta, bias and GELU too; 2 (FP32 D):
      // alpha 1 alone, where the cpu backend leaves its sums in D as they are.
      for (int variant = 0; variant < 3; ++variant) {
        if (variant == 2 && out_dtype != OCTET_DTYPE_FP32) continue;
        const float alpha = variant == 2 ? 1.0f : 0.75f;
        const std::string where =
            std::string(ca.name) + " x " + cb.name + " m" + std::to_string(g.m) + " n" + std::to_string(g.n) + " k" +
            std::to_string(g.k) + " trans " + std::to_string(g.trans_a) + std::to_string(g.trans_b) + " " +
            octet_dtype_name(g.fp8) + " out " + std::to_string(out_dtype) + " variant " + std::to_string(variant);
        Quantized qa[2], qb[2];
        std::vector<float> d_result[2];
        const char* backends[2] = {OCTET_TEST_BACKEND, "reference"};
        for (int side = 0; side < 2; ++side) {
          qa[side] =
              block_quantize_on(backends[side], ca, g.fp8, OCTET_DTYPE_FP32, a_rows, a_cols, raw_a, OCTET_USAGE_BOTH);
          octet_context* ctx = qa[side].ctx.get();
          // B in the same context as A.
          Tensor hb = tensor(ctx, OCTET_DTYPE_FP32, b_rows, b_cols);
          upload(hb.get(), OCTET_COMPONENT_DATA, raw_b.data(), raw_b.size());
          qb[side].output = block_tensor(ctx, g.fp8, b_rows, b_cols, OCTET_USAGE_BOTH, cb.mode);
          if (cb.mode == OCTET_SCALING_PER_COLUMN) {
            ASSERT_EQ(octet_quantize(ctx, hb.get(), qb[side].output.get(), nullptr), OCTET_STATUS_SUCCESS)
                << where << ": " << octet_last_error_message();
          } else {
            Recipe rb = make_recipe(cb, g.fp8);
            octet_quantizer* qz = nullptr;
            ASSERT_EQ(octet_quantizer_create(rb.get(), role_of(cb), &qz), OCTET_STATUS_SUCCESS);
            Quantizer quantizer(qz);
            ASSERT_EQ(octet_quantizer_quantize(ctx, quantizer.get(), hb.get(), qb[side].output.get(), nullptr, nullptr),
                      OCTET_STATUS_SUCCESS)
                << where << ": " << octet_last_error_message();
          }
          Tensor d32 = tensor(ctx, OCTET_DTYPE_FP32, g.m, g.n);
          upload(d32.get(), OCTET_COMPONENT_DATA, d_old.data(), d_old.size() * 4);
          Tensor d = tensor(ctx, out_dtype, g.m, g.n);
          ASSERT_EQ(octet_convert(ctx, d32.get(), d.get(), 1), OCTET_STATUS_SUCCESS)
              << octet_last_error_message();
          Tensor tb = tensor(ctx, OCTET_DTYPE_FP32, 1, g.n);
          upload(tb.get(), OCTET_COMPONENT_DATA, bias.data(), bias.size() * 4);
          octet_gemm_options o;
          ASSERT_EQ(octet_gemm_options_init(&o), OCTET_STATUS_SUCCESS);
          o.trans_a = g.trans_a;
          o.trans_b = g.trans_b;
          o.alpha = alpha;
          if (variant == 1) {
            o.beta = -0.5f;
            o.bias = tb.get();
            o.epilogue = OCTET_EPILOGUE_GELU;
          }
          ASSERT_EQ(octet_gemm(ctx, qa[side].output.get(), qb[side].output.get(), d.get(), &o),
                    OCTET_STATUS_SUCCESS)
              << backends[side] << " " << where << ": " << octet_last_error_message();
          Tensor d_back = tensor(ctx, OCTET_DTYPE_FP32, g.m, g.n);
          ASSERT_EQ(octet_convert(ctx, d.get(), d_back.get(), 1), OCTET_STATUS_SUCCESS);
          std::vector<uint8_t> bytes = download(d_back.get(), OCTET_COMPONENT_DATA);
          d_result[side].resize(bytes.size() / 4);
          std::memcpy(d_result[side].data(), bytes.data(), bytes.size());
        }
        // sum_k |A'[i,k] B'[j,k] scales|, from the codes and scales as the
        // reference stored them (K-contiguous). The operands are the same for
        // every output dtype and variant, so it is computed once per case.
        if (magnitudes.empty()) {
          const int64_t bk = block_cols_of(ca, g.k, g.trans_a != 0), kbs = (g.k + bk - 1) / bk;
          auto operand = [&](const octet_tensor* t, bool trans, const BlockConfig& c, std::vector<float>* values,
                             std::vector<float>* scales) {
            const BlockImage im = image_of(t);
            const std::vector<uint8_t>& codes = trans ? im.columnwise : im.rowwise;
            const std::vector<uint8_t>& sc = trans ? im.columnwise_scales : im.rowwise_scales;
            for (uint8_t code : codes) values->push_back(octet_fp8_decode(code, g.fp8));
            if (c.mode == OCTET_SCALING_MXFP8_1X32) {
              for (uint8_t code : sc) scales->push_back(std::ldexp(1.0f, int(code) - 127));
            } else {
              scales->resize(sc.size() / 4);
              std::memcpy(scales->data(), sc.data(), sc.size());
            }
          };
          std::vector<float> va, vb, sa, sb;
          operand(qa[1].output.get(), g.trans_a != 0, ca, &va, &sa);
          operand(qb[1].output.get(), g.trans_b != 0, cb, &vb, &sb);
          ASSERT_EQ(va.size(), static_cast<std::size_t>(g.m * g.k)) << where;
          ASSERT_EQ(vb.size(), static_cast<std::size_t>(g.n * g.k)) << where;
          const int64_t bra = ca.mode == OCTET_SCALING_BLOCK_128X128 ? 128 : 1;
          const int64_t brb = cb.mode == OCTET_SCALING_BLOCK_128X128 ? 128 : 1;
          magnitudes.resize(static_cast<std::size_t>(g.m * g.n));
          for (int64_t i = 0; i < g.m; ++i) {
            for (int64_t j = 0; j < g.n; ++j) {
              double magnitude = 0.0;
              for (int64_t kk = 0; kk < g.k; ++kk) {
                const double s = double(sa[std::size_t((i / bra) * kbs + kk / bk)]) *
                                 double(sb[std::size_t((j / brb) * kbs + kk / bk)]);
                magnitude +=
                    std::fabs(double(va[std::size_t(i * g.k + kk)]) * double(vb[std::size_t(j * g.k + kk)]) * s);
              }
              magnitudes[std::size_t(i * g.n + j)] = magnitude;
            }
          }
        }
        double worst = 0.0;
        for (int64_t i = 0; i < g.m; ++i) {
          for (int64_t j = 0; j < g.n; ++j) {
            const double magnitude = magnitudes[std::size_t(i * g.n + j)];
            const double got = d_result[0][std::size_t(i * g.n + j)];
            const double want = d_result[1][std::size_t(i * g.n + j)];
            // Section 8's bound, the rounding of the beta and bias terms,
            // GELU's slope (at most ~1.13) and the output dtype's rounding.
            double bound = double(g.k) * std::ldexp(1.0, -23) * magnitude * alpha;
            if (variant == 1) bound = 1.2 * bound + std::ldexp(1.0, -21) * (std::fabs(want) + 2.0);
            if (out_dtype == OCTET_DTYPE_BF16) bound += std::ldexp(1.0, -7) * std::fabs(want);
            const double diff = std::fabs(got - want);
            ASSERT_TRUE(diff <= bound || (std::isnan(got) && std::isnan(want)))
                << where << " at " << i << "," << j << ": cpu " << got << " reference " << want
                << " bound " << bound;
            if (bound > 0) worst = std::max(worst, diff / bound);
          }
        }
        RecordProperty(where, std::to_string(worst));
      }
    }
  }
}

// MXFP8 operands built code by code, with E8M0 scales at the edges of the
// range where the cpu backend folds them into the operands
// (gemm/block_gemm_folded.hpp) and one step past each edge, where it keeps the
// per-block order: the cpu result against the reference's. A finite
// reference value must be met within section 8's bound with the block
// scales inside the sum, plus the reference's own underflow (a scaled
// partial sum below 2^-126 is rounded to a multiple of 2^-149: at most
// 2^-150 per k-block); a NaN must be a NaN and an infinity the same
// infinity. Codes are random finite ones (E5M2 subnormals included), or
// the smallest magnitudes only, whose products would underflow if folded
// past the edge; one case adds infinities and a NaN.
TEST(CpuBlockGemm, ScaleRangeEdgesOfTheFoldedSumsKeepTheReference) {
  struct Case {
    const char* name;
    int32_t fp8;
    int a_exponent, b_exponent;  // every block's scale exponent (code - 127)
    int smallest_codes;          // 0: any finite code; else codes 1..this, either sign
    bool specials;               // infinities and a NaN among the codes
  };
  // E4M3: smallest 2^-9, largest below 2^9; E5M2: 2^-16 and 2^16. With k =
  // 320 (ceil(log2 k) = 9) the fold holds for -9 - 9 + ea + eb >= -149 and
  // 9 + ea <= 127 (E4M3), and for 16 + 16 + ea + eb + 9 <= 127 (E5M2).
  const Case cases[] = {{"e4m3 products of 2^-149 (folded)", OCTET_DTYPE_E4M3, -60, -71, 0, false},
                        {"e4m3 products of 2^-150 (not folded)", OCTET_DTYPE_E4M3, -60, -72, 0, false},
                        {"e4m3 smallest codes, products of 2^-149 (folded)", OCTET_DTYPE_E4M3, -60, -71, 3, false},
                        {"e4m3 smallest codes, products of 2^-150 (not folded)", OCTET_DTYPE_E4M3, -60, -72, 3, false},
                        {"e5m2 sums below 2^127 (folded)", OCTET_DTYPE_E5M2, 43, 43, 0, false},
                        {"e5m2 sums may pass 2^127 (not folded)", OCTET_DTYPE_E5M2, 44, 43, 0, false},
                        {"e5m2 scale products overflow (not folded)", OCTET_DTYPE_E5M2, 100, 40, 0, false},
                        {"e4m3 scaled elements below 2^127 (folded)", OCTET_DTYPE_E4M3, 118, -100, 0, false},
                        {"e4m3 scaled elements up to 1.75 * 2^128 (not folded)", OCTET_DTYPE_E4M3, 120, -100, 0, false},
                        {"e5m2 infinities and a NaN (folded)", OCTET_DTYPE_E5M2, -8, -3, 0, true}};
  if (!declared(block_configs()[0])) GTEST_SKIP() << "the backend under test does not declare MXFP8";
  const int64_t m = 40, n = 48, k = 320, kbs = k / 32;
  for (const Case& c : cases) {
    std::mt19937 rng(static_cast<uint32_t>(c.a_exponent * 1000 + c.b_exponent + c.smallest_codes));
    auto finite_codes = [&](int64_t count) {
      std::vector<uint8_t> codes(static_cast<std::size_t>(count));
      for (uint8_t& code : codes) {
        if (c.smallest_codes > 0) {
          code = static_cast<uint8_t>((rng() % 2) * 0x80 + 1 + rng() % static_cast<uint32_t>(c.smallest_codes));
          continue;
        }
        do {
          code = static_cast<uint8_t>(rng());
        } while (!std::isfinite(octet_fp8_decode(code, c.fp8)));
      }
      return codes;
    };
    std::vector<uint8_t> a = finite_codes(m * k), b = finite_codes(n * k);
    if (c.specials) {  // E5M2: 0x7C +inf, 0xFC -inf, 0x7E NaN
      a[static_cast<std::size_t>(0 * k + 5)] = 0x7C;
      a[static_cast<std::size_t>(1 * k + 7)] = 0xFC;
      a[static_cast<std::size_t>(1 * k + 40)] = 0x7C;
      a[static_cast<std::size_t>(2 * k + 300)] = 0x7E;
      b[static_cast<std::size_t>(3 * k + 100)] = 0xFC;
    }
    const std::vector<uint8_t> sa(static_cast<std::size_t>(m * kbs), static_cast<uint8_t>(127 + c.a_exponent));
    const std::vector<uint8_t> sb(static_cast<std::size_t>(n * kbs), static_cast<uint8_t>(127 + c.b_exponent));
    std::vector<float> result[2];
    const char* backends[2] = {OCTET_TEST_BACKEND, "reference"};
    for (int side = 0; side < 2; ++side) {
      Context ctx = context(backends[side]);
      Tensor ta = block_tensor(ctx.get(), c.fp8, m, k, OCTET_USAGE_ROWWISE, OCTET_SCALING_MXFP8_1X32);
      Tensor tb = block_tensor(ctx.get(), c.fp8, n, k, OCTET_USAGE_ROWWISE, OCTET_SCALING_MXFP8_1X32);
      ASSERT_EQ(info_of(ta.get()).rowwise_scale_inv_bytes, sa.size()) << c.name;
      upload(ta.get(), OCTET_COMPONENT_DATA, a.data(), a.size());
      upload(ta.get(), OCTET_COMPONENT_ROWWISE_SCALE_INV, sa.data(), sa.size());
      upload(tb.get(), OCTET_COMPONENT_DATA, b.data(), b.size());
      upload(tb.get(), OCTET_COMPONENT_ROWWISE_SCALE_INV, sb.data(), sb.size());
      Tensor d = tensor(ctx.get(), OCTET_DTYPE_FP32, m, n);
      ASSERT_EQ(octet_gemm(ctx.get(), ta.get(), tb.get(), d.get(), nullptr), OCTET_STATUS_SUCCESS)
          << backends[side] << " " << c.name << ": " << octet_last_error_message();
      const std::vector<uint8_t> bytes = download(d.get(), OCTET_COMPONENT_DATA);
      result[side].resize(bytes.size() / 4);
      std::memcpy(result[side].data(), bytes.data(), bytes.size());
    }
    const double scale = std::ldexp(1.0, c.a_exponent + c.b_exponent);
    int non_finite = 0;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        const float got = result[0][static_cast<std::size_t>(i * n + j)];
        const float want = result[1][static_cast<std::size_t>(i * n + j)];
        const std::string at = std::string(c.name) + " at " + std::to_string(i) + "," + std::to_string(j);
        if (std::isnan(want)) {
          EXPECT_TRUE(std::isnan(got)) << at << ": cpu " << got << ", reference NaN";
          ++non_finite;
          continue;
        }
        if (std::isinf(want)) {
          EXPECT_EQ(bits(got), bits(want)) << at << ": cpu " << got << ", reference " << want;
          ++non_finite;
          continue;
        }
        double magnitude = 0.0;
        for (int64_t kk = 0; kk < k; ++kk) {
          magnitude += std::fabs(double(octet_fp8_decode(a[static_cast<std::size_t>(i * k + kk)], c.fp8)) *
                                 double(octet_fp8_decode(b[static_cast<std::size_t>(j * k + kk)], c.fp8)));
        }
        const double bound = double(k) * std::ldexp(1.0, -23) * magnitude * scale + double(kbs) * std::ldexp(1.0, -150);
        ASSERT_TRUE(std::isfinite(got) && std::fabs(double(got) - double(want)) <= bound)
            << at << ": cpu " << got << ", reference " << want << ", bound " << bound;
      }
    }
    if (c.specials) {
      EXPECT_GT(non_finite, 0) << c.name;
    }
  }
}

}  // namespace
}  // namespace cpu_test
