// A tensor: a plain array of one dtype, or a quantized FP8 tensor with the
// copies its usages need and its per-tensor scalars.
#pragma once

#include <octet/octet.h>
#include <octet/octet_backend.h>

#include <cstdint>
#include <memory>

#include "buffer.hpp"
#include "context.hpp"

namespace octet::core {

// Offsets of the FP32 scalars of a quantized tensor inside its scalar buffer.
enum ScalarSlot { kScale = 0, kScaleInv = 1, kAmax = 2, kScalarCount = 3 };

struct TensorState {
  std::shared_ptr<ContextState> ctx;
  octet_dtype dtype = OCTET_DTYPE_INVALID;
  int32_t ndim = 0;
  int64_t shape[OCTET_MAX_DIMS] = {};
  int64_t rows = 0;   // product of all dims but the last
  int64_t cols = 0;   // the last dim
  uint32_t usages = 0;
  Buffer data;        // plain data, or the rowwise copy [rows, cols]
  Buffer columnwise;  // the physically transposed copy [cols, rows]
  Buffer scalars;     // kScalarCount floats, quantized tensors only

  bool quantized() const { return usages != 0; }
  int64_t numel() const { return rows * cols; }
  size_t element_bytes() const;
  float* scalar(ScalarSlot slot) const { return static_cast<float*>(scalars.data()) + slot; }
  // Views of the stored matrices for the backend.
  octet_matrix_view rowwise_view() const;
  octet_matrix_view columnwise_view() const;
};

}  // namespace octet::core

struct octet_tensor {
  octet::core::TensorState state;
};

namespace octet::core {
// Checks a tensor argument: not NULL and created on `ctx`.
const TensorState& tensor_arg(const octet_tensor* t, const ContextState& ctx, const char* name);
TensorState& tensor_arg(octet_tensor* t, const ContextState& ctx, const char* name);
}  // namespace octet::core
