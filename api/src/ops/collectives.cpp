// Collectives on tensors through the context's communicator (users' ABI
// 1.7): octet_allreduce, octet_allgather, octet_reduce_scatter. The core
// checks the tensors and the communicator before anything is sent, starts
// the communicator's collective and waits on it.
#include <octet/octet.h>

#include <cmath>

#include "runtime/communicator.hpp"
#include "runtime/error.hpp"
#include "tensor/dtype.hpp"
#include "tensor/tensor.hpp"

namespace octet::core {
namespace {

void require_op(int32_t op) {
  require(op == OCTET_REDUCE_SUM || op == OCTET_REDUCE_MAX, "argument 'op' (", op,
          ") must be OCTET_REDUCE_SUM (0) or OCTET_REDUCE_MAX (1)");
}

// A plain FP32, BF16 or FP16 tensor: what the reductions take.
void require_reducible(const TensorState& t, const char* name, const char* call) {
  require(!t.quantized() && is_high_precision(t.dtype), call, ": tensor '", name,
          "' must be a plain FP32, BF16 or FP16 tensor to be reduced (it is ", t.quantized() ? "a quantized " : "",
          dtype_name(t.dtype), "); FP8 codes are not summed: reduce in high precision, or all-gather them");
}

void require_same_dtype(const TensorState& in, const TensorState& out, const char* call) {
  require(in.dtype == out.dtype, call, ": tensor 'output' is ", dtype_name(out.dtype), " but 'input' is ",
          dtype_name(in.dtype), ": a collective does not convert");
}

// Leading dimension scaled by `factor` (allgather: output = factor x
// input), trailing dims equal.
void require_stacked(const TensorState& small, const char* small_name, const TensorState& big, const char* big_name,
                     int32_t factor, const char* call) {
  bool ok = small.ndim == big.ndim && small.ndim >= 1 && big.shape[0] == small.shape[0] * factor;
  for (int32_t d = 1; ok && d < small.ndim; ++d) ok = small.shape[d] == big.shape[d];
  require(ok, call, ": tensor '", big_name, "' has shape ", shape_text(big), " but '", small_name, "' has shape ",
          shape_text(small), ": '", big_name, "' must be '", small_name, "' with its first dimension times the ",
          factor, " processes of the communicator (same trailing dims)");
}

// Work queued on a device backend finishes before the communicator reads
// the tensors (its collectives run outside the backend's queue).
void settle(const ContextState& ctx) {
  if (ctx.host_memory() || ctx.api().synchronize == nullptr) return;
  call_backend(ctx, "synchronize", [&] { return ctx.api().synchronize(ctx.handle); });
}

constexpr const char* kUndefined = "the output's contents are undefined";

}  // namespace
}  // namespace octet::core

using namespace octet::core;

extern "C" {

OCTET_API octet_status octet_allreduce(octet_context* context, const octet_tensor* input, octet_tensor* output,
                                       int32_t op) {
  return guarded("octet_allreduce", [&] {
    ContextState& ctx = context_arg(context);
    const TensorState& in = tensor_arg(input, ctx, "input");
    TensorState& out = tensor_arg(output, ctx, "output");
    require_op(op);
    collective_communicator(ctx, ctx.communicator.allreduce != nullptr, "allreduce", "octet_allreduce");
    require_reducible(in, "input", "octet_allreduce");
    require_same_dtype(in, out, "octet_allreduce");
    require_same_shape(in, "input", out, "output");
    settle(ctx);
    const size_t n = size_t(in.numel());
    start_allreduce(ctx, in.data.data(), out.data.data(), n, in.dtype, op, n * in.element_bytes(), kUndefined).wait();
  });
}

OCTET_API octet_status octet_allgather(octet_context* context, const octet_tensor* input, octet_tensor* output) {
  return guarded("octet_allgather", [&] {
    ContextState& ctx = context_arg(context);
    const TensorState& in = tensor_arg(input, ctx, "input");
    TensorState& out = tensor_arg(output, ctx, "output");
    require(input != output,
            "octet_allgather: 'input' and 'output' are the same tensor; the output is 'size' times "
            "larger");
    const octet_communicator& c =
        collective_communicator(ctx, ctx.communicator.allgather != nullptr, "allgather", "octet_allgather");
    require_same_dtype(in, out, "octet_allgather");
    require(in.quantized() == out.quantized(), "octet_allgather: tensor 'input' is ",
            in.quantized() ? "quantized" : "plain", " but 'output' is ", out.quantized() ? "quantized" : "plain");
    if (in.quantized()) {
      require(!in.block_scaled() && !out.block_scaled(), "octet_allgather: block-scaled tensors (",
              scaling_mode_name(in.block_scaled() ? in.scaling_mode : out.scaling_mode),
              ") are not gathered: only per-tensor quantized ones (their scale grids would need a layout of "
              "their own)");
      require(in.data && (in.usages & OCTET_USAGE_ROWWISE) != 0,
              "octet_allgather: tensor 'input' has no rowwise "
              "copy (usages ",
              in.usages, "): the rowwise codes are what is gathered");
      require(out.usages == OCTET_USAGE_ROWWISE,
              "octet_allgather: tensor 'output' must be created with usages "
              "OCTET_USAGE_ROWWISE only (it has ",
              out.usages, "): the gathered rowwise codes");
    }
    require_stacked(in, "input", out, "output", c.size, "octet_allgather");
    settle(ctx);
    float agreed[3] = {0.0f, 0.0f, 0.0f};  // max scale, max -scale, max amax
    if (in.quantized()) {
      // One allreduce_max checks that every process quantized with the same
      // scale (max of scale and of -scale agree) and takes the largest AMAX,
      // before the output is touched.
      float mine[3];
      in.scalars.copy_to_host(mine, sizeof mine);
      const float scale = mine[kScale];
      agreed[0] = scale;
      agreed[1] = -scale;
      agreed[2] = mine[kAmax];
      communicator_allreduce_max(ctx, agreed, 3, "nothing was gathered and the output is unchanged");
      require(agreed[0] == -agreed[1],
              "octet_allgather: the processes quantized 'input' "
              "with different scales (from ",
              -agreed[1], " to ", agreed[0], "; this process ", scale,
              "): FP8 codes gather into one tensor only with one scale; agree on it first (current scaling with "
              "reduce_amax, or one delayed-scaling quantizer state reduced across processes)");
    }
    const size_t n = size_t(in.numel());
    start_allgather(ctx, in.data.data(), out.data.data(), n, in.dtype, n * in.element_bytes(), kUndefined).wait();
    if (in.quantized()) {
      // The agreed scale, the input's own SCALE_INV (bit for bit) and the
      // largest AMAX.
      float scalars[3];
      in.scalars.copy_to_host(scalars, sizeof scalars);
      scalars[kAmax] = agreed[2];
      out.scalars.copy_from_host(scalars, sizeof scalars);
    }
  });
}

OCTET_API octet_status octet_reduce_scatter(octet_context* context, const octet_tensor* input, octet_tensor* output,
                                            int32_t op) {
  return guarded("octet_reduce_scatter", [&] {
    ContextState& ctx = context_arg(context);
    const TensorState& in = tensor_arg(input, ctx, "input");
    TensorState& out = tensor_arg(output, ctx, "output");
    require_op(op);
    require(input != output,
            "octet_reduce_scatter: 'input' and 'output' are the same tensor; the output is 'size' "
            "times smaller");
    const octet_communicator& c = collective_communicator(ctx, ctx.communicator.reduce_scatter != nullptr,
                                                          "reduce_scatter", "octet_reduce_scatter");
    require_reducible(in, "input", "octet_reduce_scatter");
    require_same_dtype(in, out, "octet_reduce_scatter");
    require_stacked(out, "output", in, "input", c.size, "octet_reduce_scatter");
    settle(ctx);
    const size_t n = size_t(out.numel());
    start_reduce_scatter(ctx, in.data.data(), out.data.data(), n, in.dtype, op, n * size_t(c.size) * in.element_bytes(),
                         kUndefined)
        .wait();
  });
}

}  // extern "C"
