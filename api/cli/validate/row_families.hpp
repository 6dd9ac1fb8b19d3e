// The families of rows `octet validate` runs for one target. Each adds its
// rows to run.rows; see validation_run.hpp for how a row reaches its verdict.
#pragma once

#include "validate/validation_run.hpp"

namespace octet_cli {

void check_convert(const ValidationRun& run);
void check_amax(const ValidationRun& run);
void check_quantize(const ValidationRun& run);
void check_dequantize(const ValidationRun& run);
void check_gemm_fp8(const ValidationRun& run);
void check_gemm_high_precision(const ValidationRun& run);
// FP8 D (ABI 1.4): codes, SCALE_INV and AMAX from the target's own FP32 result, bit for bit.
void check_gemm_fp8_output(const ValidationRun& run);
// Grouped GEMMs (users' ABI 1.9): each group against its own octet_gemm, bit
// for bit, and the bound (grouped_gemm_rows.cpp).
void check_grouped_gemm(const ValidationRun& run);
// Scaling recipes, block-scaled quantize and GEMM (recipe_rows.cpp).
void check_recipes(const ValidationRun& run);
// Layers, one training step against the reference, bit for bit on data whose
// GEMM sums have one term (layer_rows.cpp).
void check_layers(const ValidationRun& run);
// FP4 (numerics.md section 15): MXFP4 / NVFP4 quantize, stochastic rounding,
// Hadamard transform, dequantize and GEMM (fp4_rows.cpp).
void check_fp4(const ValidationRun& run);

// Every family above, in the order `octet validate` prints them (also the
// numerics section of `octet conformance`).
void check_every_family(const ValidationRun& run);

// Shapes shared by the element-wise families: ragged on purpose.
const std::vector<std::vector<int64_t>>& elementwise_shapes();

}  // namespace octet_cli
