// FP4 tensors (E2M1 codes with MXFP4 / NVFP4 scales, numerics.md section 15):
// the core's side of quantize, dequantize and GEMM, calling the backend's
// plugin ABI 1.4 entries.
#pragma once

#include <octet/octet.h>

#include <cstdint>
#include <memory>

#include "ops/block_params.hpp"
#include "tensor/tensor.hpp"

namespace octet::core {

// Quantizes `in` into the FP4 tensor `out` for `usages`. The rowwise copy
// draws its random bits from stream params.offset, the columnwise copy from
// params.offset + 1; the Hadamard transform applies to the columnwise copy
// only. stats (device) may be NULL.
void quantize_fp4(const std::shared_ptr<ContextState>& ctx, const TensorState& in, TensorState& out, uint32_t usages,
                  const Fp4Params& params, octet_quantize_statistics* stats);

// Dequantizes the FP4 tensor `in` into the high-precision `out`.
void dequantize_fp4(const std::shared_ptr<ContextState>& ctx, const TensorState& in, TensorState& out);

// The backend arguments of D = alpha * op(A) op(B)^T + beta * D + bias with
// two FP4 operands (checked; the caller runs them through fp4_gemm).
octet_fp4_gemm_args fp4_gemm_args(const ContextState& ctx, const TensorState& ta, const TensorState& tb,
                                  TensorState& td, const octet_gemm_options& o, int64_t m, int64_t n, int64_t k);

}  // namespace octet::core
