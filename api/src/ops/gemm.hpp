// The GEMM orchestration of octet_gemm on core tensors, for layers.
#pragma once

#include <octet/octet.h>

#include <cstdint>
#include <memory>

#include "tensor/buffer.hpp"
#include "tensor/tensor.hpp"

namespace octet::core {

// One backend GEMM call, checked and ready: the entry it goes to, its
// arguments, and the workspaces (K-contiguous copies made by transposing)
// that its views point into, which must outlive the call.
struct PreparedGemm {
  enum class Entry { Gemm, BlockGemm, Fp4Gemm };
  Entry entry = Entry::Gemm;
  octet_gemm_args gemm{};
  octet_block_gemm_args block{};
  octet_fp4_gemm_args fp4{};
  Buffer a_workspace, b_workspace;
};

// Checks the operands of D = op(A) op(B)^T as octet_gemm does and prepares
// the backend call (the usage/layout adaptation included). For an FP8 D the
// plain entry's arguments are left for run_gemm's FP8 output path.
PreparedGemm prepare_gemm(const std::shared_ptr<ContextState>& context, const TensorState& a, const TensorState& b,
                          TensorState& d, const octet_gemm_options& options);

// Runs a prepared call on the backend.
void run_prepared(const ContextState& ctx, const PreparedGemm& gemm);

// Checks the operands and runs D = op(A) op(B)^T as octet_gemm does
// (options already read; the usage/layout adaptation included).
void run_gemm(const std::shared_ptr<ContextState>& context, const TensorState& a, const TensorState& b, TensorState& d,
              const octet_gemm_options& options);

// The view of options.bias for a GEMM with N = n columns (an empty view
// when there is none), after checking it: a high-precision vector of n
// elements on ctx.
octet_matrix_view bias_view(const ContextState& ctx, const octet_gemm_options& options, int64_t n);

}  // namespace octet::core
