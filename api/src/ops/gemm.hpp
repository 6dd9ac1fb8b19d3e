// The GEMM orchestration of octet_gemm on core tensors, for layers.
#pragma once

#include <octet/octet.h>

#include <memory>

#include "tensor/tensor.hpp"

namespace octet::core {

// Checks the operands and runs D = op(A) op(B)^T as octet_gemm does
// (options already read; the usage/layout adaptation included).
void run_gemm(const std::shared_ptr<ContextState>& context, const TensorState& a, const TensorState& b,
              TensorState& d, const octet_gemm_options& options);

}  // namespace octet::core
