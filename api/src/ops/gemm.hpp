// The GEMM orchestration of octet_gemm on core tensors, for layers.
#pragma once

#include <octet/octet.h>

#include <cstdint>
#include <memory>

#include "tensor/tensor.hpp"

namespace octet::core {

// Checks the operands and runs D = op(A) op(B)^T as octet_gemm does
// (options already read; the usage/layout adaptation included).
void run_gemm(const std::shared_ptr<ContextState>& context, const TensorState& a, const TensorState& b,
              TensorState& d, const octet_gemm_options& options);

// The view of options.bias for a GEMM with N = n columns (an empty view
// when there is none), after checking it: a high-precision vector of n
// elements on ctx.
octet_matrix_view bias_view(const ContextState& ctx, const octet_gemm_options& options, int64_t n);

}  // namespace octet::core
