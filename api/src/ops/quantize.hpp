// The quantize orchestration shared by octet_quantize, octet_quantize_with_stats
// and quantizers: which copies to write, which backend entries to call.
#pragma once

#include <octet/octet.h>

#include <memory>

#include "ops/block_params.hpp"
#include "tensor/tensor.hpp"

namespace octet::core {

// Checks input/output and returns the usages to write (requested 0: all).
uint32_t check_quantize(const ContextState& ctx, const TensorState& in, const TensorState& out,
                        uint32_t requested);

// Quantizes `in` into `out` for `usages` with the scale already in out's
// SCALE (per-tensor) or per block. stats (host) may be NULL.
// fp4: the FP4 options (stochastic rounding, transform, stream); NULL for
// the defaults. An FP8 output refuses non-default FP4 options.
void quantize_into(const std::shared_ptr<ContextState>& ctx, const TensorState& in, TensorState& out, uint32_t usages,
                   bool saturate, const BlockParams& block, octet_quantize_stats* stats,
                   const Fp4Params* fp4 = nullptr);
// The FP4 options an octet_quantize_options asks for (checked: 0 or 1).
Fp4Params fp4_params_of(const octet_quantize_options& o);

// A per-tensor quantize call writing `out`'s `usages` in one pass, with the
// scale in out's SCALE and no input set (quantize_into sets it; a layer
// fuses the call into a norm or bias-gradient pass, which brings its own):
// the rowwise codes where a usage reads them, the transposed copy in the
// same pass. False when the backend needs two passes for that (no fused
// cast+transpose).
bool one_pass_quantize_args(const ContextState& ctx, TensorState& out, uint32_t usages, bool saturate,
                            octet_quantize_args& args);

octet_quantize_options read_quantize_options(const octet_quantize_options* options);

// The amax of `in`'s rowwise copy, computed by the context's backend into
// its workspace memory and copied back to the host (octet_amax, current
// scaling in quantizers). Fails with UNSUPPORTED when the backend has no
// amax entry.
float amax_on_backend(const std::shared_ptr<ContextState>& ctx, const TensorState& in);

}  // namespace octet::core
