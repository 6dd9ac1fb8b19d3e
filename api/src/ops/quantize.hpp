// The quantize orchestration shared by octet_quantize, octet_quantize_with_stats
// and quantizers: which copies to write, which backend entries to call.
#pragma once

#include <octet/octet.h>

#include <memory>

#include "tensor/tensor.hpp"

namespace octet::core {

// Block-kernel parameters a recipe chooses (defaults: what octet_quantize
// uses for a block-scaled output without a recipe).
struct BlockParams {
  int32_t e8m0_rounding = OCTET_MX_ROUND_RCEIL;
  int32_t power_of_two = 0;
  float amax_epsilon = 0.0f;
};

// Checks input/output and returns the usages to write (requested 0: all).
uint32_t check_quantize(const ContextState& ctx, const TensorState& in, const TensorState& out,
                        uint32_t requested);

// Quantizes `in` into `out` for `usages` with the scale already in out's
// SCALE (per-tensor) or per block. stats (host) may be NULL.
void quantize_into(const std::shared_ptr<ContextState>& ctx, const TensorState& in, TensorState& out,
                   uint32_t usages, bool saturate, const BlockParams& block, octet_quantize_stats* stats);

octet_quantize_options read_quantize_options(const octet_quantize_options* options);

// The amax of `in`'s rowwise copy, computed by the context's backend into
// its workspace memory and copied back to the host (octet_amax, current
// scaling in quantizers). Fails with UNSUPPORTED when the backend has no
// amax entry.
float amax_on_backend(const std::shared_ptr<ContextState>& ctx, const TensorState& in);

}  // namespace octet::core
