// The 2-D tensors a layer makes and moves: plain and FP8 tensors, copies,
// gradient accumulation, and a quantized tensor's scalars.
#pragma once

#include <octet/octet.h>

#include <cstdint>
#include <memory>

#include "runtime/context.hpp"
#include "tensor/tensor.hpp"

namespace octet::core {

using TensorPtr = std::shared_ptr<octet_tensor>;
using ContextPtr = std::shared_ptr<ContextState>;

// The descriptor of a plain tensor of `ndim` dimensions: [d0] or [d0, d1].
octet_tensor_desc tensor_desc(octet_dtype dtype, int32_t ndim, int64_t d0, int64_t d1);
// A tensor created from `desc` on `ctx`, counted under `category`.
TensorPtr make_tensor(const ContextPtr& ctx, const octet_tensor_desc& desc, int32_t category);

// A plain 2-D tensor [rows, cols], counted under `category`.
TensorPtr make_plain(const ContextPtr& ctx, octet_dtype dtype, int64_t rows, int64_t cols, int32_t category);

// A quantized 2-D tensor [rows, cols] with `usages`, counted as a quantized copy.
TensorPtr make_fp8(const ContextPtr& ctx, octet_dtype dtype, int64_t rows, int64_t cols, uint32_t usages,
                   int32_t scaling_mode = OCTET_SCALING_PER_TENSOR);

// Zeros a plain tensor.
void fill_zero(TensorState& t);

// Whether the context's backend declares an OCTET_FEATURE_* kernel.
bool has_feature(const ContextState& ctx, uint32_t feature);

// dst = src, converted to dst's dtype by the backend.
void copy_into(const ContextState& ctx, const TensorState& src, TensorState& dst);

// A new plain tensor holding a copy of `src`, counted under `category`.
TensorPtr copy_of(const ContextPtr& ctx, const TensorState& src, int32_t category);

// y = x (+ y): FP32 sums into a gradient of the parameter dtype.
void accumulate_into(const ContextState& ctx, const TensorState& x, TensorState& y, bool accumulate);

// One FP32 scalar (SCALE, SCALE_INV, AMAX) of a quantized tensor, read to the host.
float read_scalar(const TensorState& t, ScalarSlot slot);

// Writes a quantized tensor's SCALE from the host.
void write_scale(TensorState& t, float scale);

// After the rowwise usage was consumed: keep only the columnwise one (frees
// the rowwise copy, and its block scales, where the columnwise usage is a
// separate copy).
void keep_columnwise_only(TensorState& t);

}  // namespace octet::core
