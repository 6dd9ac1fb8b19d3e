// A GEMM operand widened to FP32 once, before the products: the reference
// GEMMs read each element k (or m, n) times, and widening it once per read
// would dominate their cost. Widening is exact for every accepted dtype, so
// the products and sums are the same as with elements widened at each read.
#pragma once

#include <octet/octet_backend.h>

#include <cstdint>
#include <vector>

namespace octet::ref {

// The operand as logical [outer, k] rows (row i at i * k), whether it is
// stored [outer, k] or, with `transposed`, [k, outer]. Throws OutOfMemory
// (host_errors.hpp) when the copy cannot be allocated.
std::vector<float> widened_operand(const octet_matrix_view& view, bool transposed, int64_t outer, int64_t k);

}  // namespace octet::ref
