// A tensor: a plain array of one dtype, or a quantized FP8 tensor with the
// copies its usages need and its per-tensor scalars.
#pragma once

#include <octet/octet.h>
#include <octet/octet_backend.h>

#include <cstdint>
#include <memory>
#include <string>

#include "runtime/context.hpp"
#include "tensor/buffer.hpp"

namespace octet::core {

// Offsets of the FP32 scalars of a quantized tensor inside its scalar buffer.
// FP4 tensors have two more: the NVFP4 tensor scales g of the rowwise and
// the columnwise copy (numerics.md section 15), their SCALE_INV component.
enum ScalarSlot {
  kScale = 0,
  kScaleInv = 1,
  kAmax = 2,
  kScalarCount = 3,
  kRowwiseTensorScale = 3,
  kColumnwiseTensorScale = 4,
  kFp4ScalarCount = 5
};

// The FP4 scaling modes (E2M1 data).
inline bool is_fp4_mode(int32_t mode) {
  return mode == OCTET_SCALING_MXFP4_1X32 || mode == OCTET_SCALING_NVFP4_1X16 || mode == OCTET_SCALING_NVFP4_16X16;
}
inline bool is_nvfp4_mode(int32_t mode) {
  return mode == OCTET_SCALING_NVFP4_1X16 || mode == OCTET_SCALING_NVFP4_16X16;
}

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
  // Block scaling (users' ABI 1.1). Per-tensor tensors keep block 1x1.
  // block_rows x block_cols is the rowwise copy's block; the columnwise
  // copy's is the same except for the axiswise modes (block_shape).
  int32_t scaling_mode = OCTET_SCALING_PER_TENSOR;
  int32_t block_rows = 1;
  int32_t block_cols = 1;
  Buffer rowwise_scale_inv;     // grid [ceil(rows/br), ceil(cols/bc)]
  Buffer columnwise_scale_inv;  // grid [ceil(cols/br'), ceil(rows/bc')]
  // Row strides, in elements, of the two copies; 0: dense (cols and rows).
  // Only the groups of a grouped GEMM (ops/grouped_gemm.cpp) are views with
  // a stride: every other tensor is dense.
  int64_t rowwise_ld = 0;
  int64_t columnwise_ld = 0;

  bool quantized() const { return usages != 0; }
  bool block_scaled() const { return scaling_mode != OCTET_SCALING_PER_TENSOR; }
  bool fp4() const { return is_fp4_mode(scaling_mode); }
  // PER_ROW / PER_COLUMN (numerics.md section 16): blocks that span a whole
  // row or column of a stored copy.
  bool axiswise() const { return scaling_mode == OCTET_SCALING_PER_ROW || scaling_mode == OCTET_SCALING_PER_COLUMN; }
  // The block shape of one stored copy: the rowwise copy [rows, cols] or the
  // columnwise copy [cols, rows] (x^T). Per-row: 1 x (the copy's width) for
  // both copies; per-column: rows x 1 for the rowwise copy, 1 x rows for the
  // columnwise one (one scale per row of x^T, i.e. per column of x).
  struct BlockShape {
    int32_t rows, cols;
  };
  BlockShape block_shape(bool columnwise_copy) const;
  // E8M0 codes for MXFP8 and MXFP4, E4M3 codes for NVFP4, FP32 otherwise.
  octet_dtype scale_inv_dtype() const {
    if (scaling_mode == OCTET_SCALING_MXFP8_1X32 || scaling_mode == OCTET_SCALING_MXFP4_1X32) return OCTET_DTYPE_E8M0;
    return is_nvfp4_mode(scaling_mode) ? OCTET_DTYPE_E4M3 : OCTET_DTYPE_FP32;
  }
  // Bytes of the rowwise copy [rows, cols] or the columnwise one [cols, rows]
  // (E2M1: each row packed on its own bytes, docs/abi.md "Sub-byte dtypes").
  size_t copy_bytes(bool columnwise_copy = false) const;
  size_t scalar_count() const { return fp4() ? kFp4ScalarCount : kScalarCount; }
  size_t scale_grid_bytes(bool columnwise_copy) const;
  int64_t numel() const { return rows * cols; }
  size_t element_bytes() const;
  float* scalar(ScalarSlot slot) const { return static_cast<float*>(scalars.data()) + slot; }
  // Views of the stored matrices for the backend.
  octet_matrix_view rowwise_view() const;
  octet_matrix_view columnwise_view() const;
  // Counts every buffer of the tensor under another memory category.
  void recategorize(int32_t category);
};

}  // namespace octet::core

struct octet_tensor {
  octet::core::TensorState state;
  OCTET_POOLED_HANDLE(octet::core::HandleKind::Tensor)
};

namespace octet::core {
// "MXFP8 1x32", ...; and a comma-separated list of OCTET_SCALING_* flags.
const char* scaling_mode_name(int32_t mode);
std::string scaling_mode_list(uint32_t modes);
// Creates a tensor on `ctx` from a checked descriptor. Plain tensors are
// counted under `plain_category`, quantized ones as quantized copies.
std::unique_ptr<octet_tensor> create_tensor(const std::shared_ptr<ContextState>& ctx, const octet_tensor_desc& desc,
                                            int32_t plain_category);
// The rule for a SCALE (and octet_quantizer_set_scale's scale): finite, > 0,
// with a finite reciprocal (its SCALE_INV). For a SCALE_INV (per-tensor, or an
// FP32 block grid entry): finite and > 0 (1/FLT_MAX, a subnormal, is the
// library's own SCALE_INV of the largest scale).
bool scale_allowed(float value);
bool scale_inv_allowed(float value);
// A per-tensor SCALE / SCALE_INV the call is about to read must satisfy
// scale_allowed; else INVALID_ARGUMENT naming the tensor. Only tensors in host
// memory are read here: on a device, the value is checked where the caller
// writes it (octet_tensor_copy_from_host), and the library writes only
// allowed values, so reading it back would only cost a synchronisation.
void require_allowed_scalar(const TensorState& t, ScalarSlot slot, const char* name);

// "4x8": the tensor's shape, for messages.
std::string shape_text(const TensorState& t);
// INVALID_ARGUMENT naming both tensors unless their shapes are equal.
void require_same_shape(const TensorState& a, const char* a_name, const TensorState& b, const char* b_name);

// A tensor argument of a call without a context argument: not NULL, live,
// and its context held for the running call.
TensorState& tensor_handle(const octet_tensor* t, const char* name);
// Checks a tensor argument: not NULL, live and created on `ctx`.
const TensorState& tensor_arg(const octet_tensor* t, const ContextState& ctx, const char* name);
TensorState& tensor_arg(octet_tensor* t, const ContextState& ctx, const char* name);

// The alignment, in bytes, caller memory of `dtype` needs on ctx's backend
// (octet_tensor_wrap, DLPack imports): the element size and the backend's
// caller_alignment (its `alignment` where it declares none).
uint64_t caller_alignment(const ContextState& ctx, octet_dtype dtype);
}  // namespace octet::core
