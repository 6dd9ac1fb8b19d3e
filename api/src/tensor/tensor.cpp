#include "tensor/tensor.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "runtime/error.hpp"
#include "runtime/versioned_struct.hpp"
#include "tensor/dtype.hpp"

namespace octet::core {

size_t TensorState::element_bytes() const { return dtype_size(dtype); }

size_t TensorState::copy_bytes(bool columnwise_copy) const {
  const int64_t r = columnwise_copy ? cols : rows, c = columnwise_copy ? rows : cols;
  return size_t(r) * dtype_bytes(dtype, size_t(c));
}

namespace {
// A block extent covering `n` elements (at least 1, so an empty tensor has a valid shape).
int32_t whole(int64_t n) { return int32_t(n < 1 ? 1 : n); }
}  // namespace

TensorState::BlockShape TensorState::block_shape(bool columnwise_copy) const {
  if (scaling_mode == OCTET_SCALING_PER_ROW) return {1, whole(columnwise_copy ? rows : cols)};
  if (scaling_mode == OCTET_SCALING_PER_COLUMN)
    return columnwise_copy ? BlockShape{1, whole(rows)} : BlockShape{whole(rows), 1};
  return {block_rows, block_cols};
}

size_t TensorState::scale_grid_bytes(bool columnwise_copy) const {
  const int64_t r = columnwise_copy ? cols : rows, c = columnwise_copy ? rows : cols;
  const BlockShape b = block_shape(columnwise_copy);
  const int64_t grid = ((r + b.rows - 1) / b.rows) * ((c + b.cols - 1) / b.cols);
  return size_t(grid) * dtype_size(scale_inv_dtype());
}

octet_matrix_view TensorState::rowwise_view() const {
  return octet_matrix_view{data.data(), dtype, 0, rows, cols, rowwise_ld != 0 ? rowwise_ld : cols};
}

octet_matrix_view TensorState::columnwise_view() const {
  return octet_matrix_view{columnwise.data(), dtype, 0, cols, rows, columnwise_ld != 0 ? columnwise_ld : rows};
}

TensorState& tensor_handle(const octet_tensor* t, const char* name) {
  require_live_handle(t, HandleKind::Tensor, name);
  enter_context(*t->state.ctx);
  return const_cast<TensorState&>(t->state);
}

const TensorState& tensor_arg(const octet_tensor* t, const ContextState& ctx, const char* name) {
  require_live_handle(t, HandleKind::Tensor, name);
  require(t->state.ctx.get() == &ctx, "tensor '", name, "' was created on another context");
  return t->state;
}

TensorState& tensor_arg(octet_tensor* t, const ContextState& ctx, const char* name) {
  return const_cast<TensorState&>(tensor_arg(static_cast<const octet_tensor*>(t), ctx, name));
}

bool scale_inv_allowed(float value) { return std::isfinite(value) && value > 0.0f; }
bool scale_allowed(float value) { return scale_inv_allowed(value) && std::isfinite(1.0f / value); }

namespace {
const char* kScaleRule =
    "a per-tensor SCALE must be finite and > 0 with a finite reciprocal (the rule of octet_quantizer_set_scale), "
    "a SCALE_INV finite and > 0";
}

void require_allowed_scalar(const TensorState& t, ScalarSlot slot, const char* name) {
  if (!t.quantized() || t.block_scaled() || !t.ctx->host_memory()) return;
  const float value = *t.scalar(slot);
  require(slot == kScale ? scale_allowed(value) : scale_inv_allowed(value), "tensor '", name, "' has ", slot == kScale ? "SCALE " : "SCALE_INV ", value,
          ", which no rule allows: ", kScaleRule);
}

const char* scaling_mode_name(int32_t mode) {
  switch (mode) {
    case OCTET_SCALING_PER_TENSOR: return "per-tensor";
    case OCTET_SCALING_MXFP8_1X32: return "MXFP8 1x32";
    case OCTET_SCALING_BLOCK_1X128: return "block 1x128";
    case OCTET_SCALING_BLOCK_128X128: return "block 128x128";
    case OCTET_SCALING_PER_ROW:
      return "per-row";
    case OCTET_SCALING_PER_COLUMN:
      return "per-column";
    case OCTET_SCALING_MXFP4_1X32:
      return "MXFP4 1x32";
    case OCTET_SCALING_NVFP4_1X16:
      return "NVFP4 1x16";
    case OCTET_SCALING_NVFP4_16X16:
      return "NVFP4 16x16";
    default: return "unknown";
  }
}

std::string shape_text(const TensorState& t) {
  std::string s;
  for (int i = 0; i < t.ndim; ++i) s += (i ? "x" : "") + std::to_string(t.shape[i]);
  return s;
}

void require_same_shape(const TensorState& a, const char* a_name, const TensorState& b, const char* b_name) {
  const bool same = a.ndim == b.ndim && std::memcmp(a.shape, b.shape, sizeof(int64_t) * size_t(a.ndim)) == 0;
  if (!same)
    fail(OCTET_STATUS_INVALID_ARGUMENT, "tensor '", a_name, "' has shape ", shape_text(a), " but '", b_name,
         "' has shape ", shape_text(b), "; they must match");
}

std::string scaling_mode_list(uint32_t modes) {
  std::string out;
  for (int32_t m : {OCTET_SCALING_PER_TENSOR, OCTET_SCALING_MXFP8_1X32, OCTET_SCALING_BLOCK_1X128,
                    OCTET_SCALING_BLOCK_128X128, OCTET_SCALING_PER_ROW, OCTET_SCALING_PER_COLUMN,
                    OCTET_SCALING_MXFP4_1X32, OCTET_SCALING_NVFP4_1X16, OCTET_SCALING_NVFP4_16X16})
    if (modes & uint32_t(m)) out += (out.empty() ? "" : ", ") + std::string(scaling_mode_name(m));
  return out.empty() ? "none" : out;
}

namespace {

octet_tensor_desc read_desc(const octet_tensor_desc* desc) {
  require(desc != nullptr, "argument 'desc' is NULL");
  return read_versioned(desc, octet_tensor_desc{}, "desc");
}

// Validates a descriptor against the context and fills the shape fields.
void init_shape(TensorState& t, const octet_tensor_desc& d, const ContextState& ctx) {
  require(is_known(d.dtype), "desc->dtype (", d.dtype, ") is not an octet_dtype");
  // E2M1 tensors are quantized FP4 tensors: codes with their block scales.
  require(d.dtype != OCTET_DTYPE_E2M1 || (d.usages != 0 && is_fp4_mode(d.scaling_mode)),
          "desc->dtype e2m1 needs desc->usages != 0 and desc->scaling_mode MXFP4_1X32, NVFP4_1X16 or "
          "NVFP4_16X16: an E2M1 tensor is a quantized FP4 tensor (a plain packed array is encoded and decoded "
          "on the host by octet_fp8_encode_array)");
  if (!(ctx.caps.dtypes & OCTET_DTYPE_BIT(d.dtype)))
    fail(OCTET_STATUS_UNSUPPORTED, "backend '", ctx.backend->name, "' does not store dtype ", dtype_name(d.dtype));
  require(d.ndim >= 1 && d.ndim <= OCTET_MAX_DIMS, "desc->ndim (", d.ndim, ") must be in 1..", OCTET_MAX_DIMS);
  int64_t rows = 1;
  const int64_t limit = std::numeric_limits<int64_t>::max() / 16;
  for (int32_t i = 0; i < d.ndim; ++i) {
    require(d.shape[i] >= 1, "desc->shape[", i, "] (", d.shape[i], ") must be >= 1");
    require(d.shape[i] <= limit / (i + 1 < d.ndim ? rows : 1), "desc->shape makes the tensor too large");
    if (i + 1 < d.ndim) rows *= d.shape[i];
    t.shape[i] = d.shape[i];
  }
  require(rows <= limit / d.shape[d.ndim - 1], "desc->shape makes the tensor too large");
  t.dtype = d.dtype;
  t.ndim = d.ndim;
  t.rows = rows;
  t.cols = d.shape[d.ndim - 1];
  require(d.usages == 0 || is_fp8(d.dtype) || d.dtype == OCTET_DTYPE_E2M1, "desc->usages (", d.usages,
          ") must be 0 unless desc->dtype is an FP8 format (E4M3, E5M2, E4M3FNUZ or E5M2FNUZ) or E2M1");
  require((d.usages & ~uint32_t(OCTET_USAGE_BOTH)) == 0, "desc->usages (", d.usages,
          ") may only combine OCTET_USAGE_ROWWISE and OCTET_USAGE_COLUMNWISE");
  t.usages = d.usages;
  int32_t mode = d.scaling_mode == 0 ? int32_t(OCTET_SCALING_PER_TENSOR) : d.scaling_mode;
  require(mode == OCTET_SCALING_PER_TENSOR || mode == OCTET_SCALING_MXFP8_1X32 || mode == OCTET_SCALING_BLOCK_1X128 ||
              mode == OCTET_SCALING_BLOCK_128X128 || mode == OCTET_SCALING_PER_ROW ||
              mode == OCTET_SCALING_PER_COLUMN || is_fp4_mode(mode),
          "desc->scaling_mode (", d.scaling_mode, ") must be 0 or one OCTET_SCALING_* value");
  require(!is_fp4_mode(mode) || d.dtype == OCTET_DTYPE_E2M1, "desc->scaling_mode ", scaling_mode_name(mode),
          " takes E2M1 elements (desc->dtype e2m1); desc->dtype is ", dtype_name(d.dtype));
  require(mode == OCTET_SCALING_PER_TENSOR || d.usages != 0, "desc->scaling_mode (", d.scaling_mode,
          ") applies only to a quantized tensor (FP8 with usages != 0)");
  require(mode != OCTET_SCALING_MXFP8_1X32 || !is_fnuz(d.dtype),
          "desc->scaling_mode MXFP8_1X32 takes OCP FP8 "
          "elements (E4M3, E5M2) only; desc->dtype is ",
          dtype_name(d.dtype));
  if (!(uint32_t(ctx.caps.scaling_modes) & uint32_t(mode)))
    fail(OCTET_STATUS_UNSUPPORTED, "backend '", ctx.backend->name, "' does not declare the scaling mode ",
         scaling_mode_name(mode), " (it declares ", scaling_mode_list(ctx.caps.scaling_modes), ")");
  t.scaling_mode = mode;
  t.block_rows = mode == OCTET_SCALING_BLOCK_128X128 ? 128 : mode == OCTET_SCALING_NVFP4_16X16 ? 16 : 1;
  t.block_cols = mode == OCTET_SCALING_MXFP8_1X32 || mode == OCTET_SCALING_MXFP4_1X32 ? 32
                 : is_nvfp4_mode(mode)                                                ? 16
                 : mode == OCTET_SCALING_PER_TENSOR                                   ? 1
                                                                                      : 128;
  if (t.axiswise()) {
    require(t.rows <= INT32_MAX && t.cols <= INT32_MAX, "desc->shape: a ", scaling_mode_name(mode), " tensor's rows (",
            t.rows, ") and columns (", t.cols,
            ") must each be at most 2^31 - 1 (one scale block spans a whole row or column)");
    const TensorState::BlockShape b = t.block_shape(false);
    t.block_rows = b.rows;
    t.block_cols = b.cols;
  }
}

size_t component_bytes(const TensorState& t, int32_t component, const Buffer** buffer, size_t* offset) {
  *offset = 0;
  switch (component) {
    case OCTET_COMPONENT_DATA:
      require(bool(t.data), "the tensor has no DATA component (it was quantized for the columnwise usage only)");
      *buffer = &t.data;
      return t.copy_bytes();
    case OCTET_COMPONENT_COLUMNWISE_DATA:
      require(bool(t.columnwise), "the tensor has no COLUMNWISE_DATA component (",
              t.quantized() ? "the backend reads columns natively or the columnwise usage was not requested"
                            : "it is not a quantized tensor",
              ")");
      *buffer = &t.columnwise;
      return t.copy_bytes(true);
    case OCTET_COMPONENT_ROWWISE_SCALE_INV:
    case OCTET_COMPONENT_COLUMNWISE_SCALE_INV: {
      require(t.block_scaled(), "component ", component,
              " exists only on a block-scaled tensor (desc->scaling_mode MXFP8_1X32, BLOCK_1X128 or "
              "BLOCK_128X128); a per-tensor one has SCALE_INV");
      bool columnwise = component == OCTET_COMPONENT_COLUMNWISE_SCALE_INV;
      const Buffer& b = columnwise ? t.columnwise_scale_inv : t.rowwise_scale_inv;
      require(bool(b), "the tensor has no ", columnwise ? "columnwise" : "rowwise",
              " usage, hence no such scale array");
      *buffer = &b;
      return t.scale_grid_bytes(columnwise);
    }
    case OCTET_COMPONENT_SCALE_INV:
      if (is_nvfp4_mode(t.scaling_mode)) {  // the two tensor scales g, rowwise then columnwise
        *buffer = &t.scalars;
        *offset = sizeof(float) * size_t(kRowwiseTensorScale);
        return 2 * sizeof(float);
      }
      [[fallthrough]];
    case OCTET_COMPONENT_SCALE:
      require(!t.block_scaled(), "component ", component, " (SCALE / SCALE_INV) does not exist on a ",
              scaling_mode_name(t.scaling_mode),
              " tensor: its scales are per block (ROWWISE_SCALE_INV / COLUMNWISE_SCALE_INV; an NVFP4 tensor's "
              "SCALE_INV holds its two tensor scales)");
      [[fallthrough]];
    case OCTET_COMPONENT_AMAX:
      require(t.quantized(), "component ", component, " exists only on a quantized tensor (FP8 with usages)");
      *buffer = &t.scalars;
      *offset = sizeof(float) * size_t(component == OCTET_COMPONENT_SCALE       ? kScale
                                       : component == OCTET_COMPONENT_SCALE_INV ? kScaleInv
                                                                                : kAmax);
      return sizeof(float);
    default:
      fail(OCTET_STATUS_INVALID_ARGUMENT, "argument 'component' (", component, ") is not an octet_component");
  }
}

// Scales a caller writes: per-tensor SCALE / SCALE_INV by kScaleRule; FP32
// block grids (1x128, 128x128, per-row, per-column) entry by entry by the same rule (the library
// writes 1/scale of a finite scale > 0); MXFP8's E8M0 codes are all allowed
// (0xFF, the NaN code, makes its whole block NaN; the quantizer never writes it).
void check_written_scales(const TensorState& t, int32_t component, const void* src, size_t bytes) {
  if (component == OCTET_COMPONENT_SCALE_INV && is_nvfp4_mode(t.scaling_mode)) {
    float g[2] = {};
    std::memcpy(g, src, sizeof(g));
    for (int i = 0; i < 2; ++i)
      require(scale_inv_allowed(g[i]), "argument 'src' holds ", g[i], " as the ", i == 0 ? "rowwise" : "columnwise",
              " NVFP4 tensor scale of tensor 'tensor': it must be finite and > 0");
    return;
  }
  if (component == OCTET_COMPONENT_SCALE || component == OCTET_COMPONENT_SCALE_INV) {
    float value = 0.0f;
    std::memcpy(&value, src, sizeof(value));
    require(component == OCTET_COMPONENT_SCALE ? scale_allowed(value) : scale_inv_allowed(value),
            "argument 'src' holds ",
            component == OCTET_COMPONENT_SCALE ? "SCALE " : "SCALE_INV ", value,
            " for tensor 'tensor', which no rule allows: ", kScaleRule);
    // The write derives the other scalar of the pair (write_scale_pair).
    require(component == OCTET_COMPONENT_SCALE || std::isfinite(1.0f / value), "argument 'src' holds SCALE_INV ", value,
            " for tensor 'tensor', whose reciprocal (the SCALE it implies) is not finite: a SCALE_INV written "
            "with octet_tensor_copy_from_host must be finite and > 0 with a finite reciprocal, as a SCALE must");
    return;
  }
  const bool grid = component == OCTET_COMPONENT_ROWWISE_SCALE_INV || component == OCTET_COMPONENT_COLUMNWISE_SCALE_INV;
  if (!grid || t.scale_inv_dtype() != OCTET_DTYPE_FP32) return;
  std::vector<float> values = host_array<float>(bytes / sizeof(float), "a staging copy of the scale grid to check");
  std::memcpy(values.data(), src, values.size() * sizeof(float));
  for (size_t i = 0; i < values.size(); ++i)
    require(scale_inv_allowed(values[i]), "argument 'src' holds ", values[i], " at entry ", i, " of the ",
            scaling_mode_name(t.scaling_mode), " scale_inv grid of tensor 'tensor', which no rule allows: each ",
            "entry must be finite and > 0");
}

// A per-tensor quantized tensor's SCALE and SCALE_INV are one pair: a
// write of either stores it and the FP32 reciprocal as the other (as
// octet_quantizer_set_scale does), in one copy, so that no sequence of
// copies leaves dequantize (which reads SCALE_INV) or quantize (SCALE) with
// a stale value. The value has passed check_written_scales.
void write_scale_pair(TensorState& t, int32_t component, const void* src) {
  static_assert(kScale == 0 && kScaleInv == 1, "SCALE and SCALE_INV are adjacent, SCALE first");
  float written = 0.0f;
  std::memcpy(&written, src, sizeof(written));
  const float derived = 1.0f / written;
  const float pair[2] = {component == OCTET_COMPONENT_SCALE ? written : derived,
                         component == OCTET_COMPONENT_SCALE ? derived : written};
  t.scalars.copy_from_host(pair, sizeof(pair), sizeof(float) * size_t(kScale));
}

}  // namespace

std::unique_ptr<octet_tensor> create_tensor(const std::shared_ptr<ContextState>& ctx, const octet_tensor_desc& d,
                                            int32_t plain_category) {
  auto t = std::make_unique<octet_tensor>();
  TensorState& s = t->state;
  s.ctx = ctx;
  init_shape(s, d, *ctx);
  size_t bytes = s.copy_bytes();
  if (!s.quantized()) {
    s.data = Buffer(ctx, bytes, plain_category);
    return t;
  }
  // A block-scaled columnwise usage has its own scales, so it is always
  // a separate copy, even where columns are read natively.
  const int32_t q = OCTET_MEMORY_QUANTIZED_COPIES;
  bool native = ctx->caps.native_columnwise != 0 && !s.block_scaled();
  bool rowwise = (s.usages & OCTET_USAGE_ROWWISE) || native;
  bool transposed = (s.usages & OCTET_USAGE_COLUMNWISE) && !native;
  if (rowwise) s.data = Buffer(ctx, bytes, q);
  if (transposed) s.columnwise = Buffer(ctx, s.copy_bytes(true), q);
  if (s.block_scaled() && rowwise) s.rowwise_scale_inv = Buffer(ctx, s.scale_grid_bytes(false), q);
  if (s.block_scaled() && transposed) s.columnwise_scale_inv = Buffer(ctx, s.scale_grid_bytes(true), q);
  s.scalars = Buffer(ctx, s.scalar_count() * sizeof(float), q);
  const float initial[kFp4ScalarCount] = {1.0f, 1.0f, 0.0f, 1.0f, 1.0f};
  s.scalars.copy_from_host(initial, s.scalar_count() * sizeof(float));
  return t;
}

void TensorState::recategorize(int32_t category) {
  for (Buffer* b : {&data, &columnwise, &scalars, &rowwise_scale_inv, &columnwise_scale_inv})
    if (*b) b->recategorize(category);
}

}  // namespace octet::core

using namespace octet::core;

namespace octet::core {

uint64_t caller_alignment(const ContextState& ctx, octet_dtype dtype) {
  const uint64_t element = std::max<uint64_t>(dtype_size(dtype), 1);
  const uint64_t backend = ctx.caps.caller_alignment != 0 ? ctx.caps.caller_alignment : ctx.caps.alignment;
  return std::max(element, backend);
}

}  // namespace octet::core

extern "C" {

OCTET_API octet_status octet_tensor_create(octet_context* context, const octet_tensor_desc* desc,
                                           octet_tensor** tensor) {
  return guarded("octet_tensor_create", [&] {
    context_arg(context);
    require(tensor != nullptr, "argument 'tensor' is NULL");
    *tensor = create_tensor(context->state, read_desc(desc), OCTET_MEMORY_USER_TENSORS).release();
  });
}

OCTET_API octet_status octet_tensor_wrap(octet_context* context, const octet_tensor_desc* desc, void* data,
                                         octet_tensor** tensor) {
  return guarded("octet_tensor_wrap", [&] {
    context_arg(context);
    require(tensor != nullptr, "argument 'tensor' is NULL");
    require(data != nullptr, "argument 'data' is NULL");
    const auto& ctx = context->state;
    octet_tensor_desc d = read_desc(desc);
    require(d.usages == 0, "desc->usages must be 0: only plain tensors can wrap caller memory");
    const uint64_t alignment = caller_alignment(*ctx, d.dtype);
    require(reinterpret_cast<uintptr_t>(data) % alignment == 0, "argument 'data' (", data, ") is not aligned to ",
            alignment, " bytes, as backend '", ctx->backend->name, "' requires of ", dtype_name(d.dtype),
            " memory it did not allocate");
    auto t = std::make_unique<octet_tensor>();
    TensorState& s = t->state;
    s.ctx = ctx;
    init_shape(s, d, *ctx);
    s.data = Buffer::wrap(ctx, data, s.copy_bytes());
    *tensor = t.release();
  });
}

OCTET_API void octet_tensor_destroy(octet_tensor* tensor) {
  if (tensor == nullptr) return;
  std::shared_ptr<ContextState> keep;  // outlives the call's hold on the context
  guarded("octet_tensor_destroy", [&] {
    tensor_handle(tensor, "tensor");
    keep = tensor->state.ctx;
    delete tensor;
  });
}

OCTET_API octet_status octet_tensor_get_info(const octet_tensor* tensor, octet_tensor_info* info) {
  return guarded("octet_tensor_get_info", [&] {
    const TensorState& s = tensor_handle(tensor, "tensor");
    require_struct(info, info ? info->struct_size : 0, "info");
    octet_tensor_info out{};
    out.struct_size = sizeof(out);
    out.dtype = s.dtype;
    out.ndim = s.ndim;
    std::memcpy(out.shape, s.shape, sizeof(out.shape));
    out.usages = s.usages;
    out.owns_memory = s.data ? (s.data.owned() ? 1 : 0) : 1;
    out.has_rowwise_data = s.data ? 1 : 0;
    out.has_columnwise_data = s.columnwise ? 1 : 0;
    size_t bytes = s.copy_bytes();
    out.rowwise_bytes = s.data ? bytes : 0;
    out.columnwise_bytes = s.columnwise ? s.copy_bytes(true) : 0;
    out.scaling_mode = s.scaling_mode;
    out.block_rows = s.block_rows;
    out.block_cols = s.block_cols;
    out.scale_inv_dtype = s.scale_inv_dtype();
    out.rowwise_scale_inv_bytes = s.rowwise_scale_inv ? s.scale_grid_bytes(false) : 0;
    out.columnwise_scale_inv_bytes = s.columnwise_scale_inv ? s.scale_grid_bytes(true) : 0;
    out.total_bytes = out.rowwise_bytes + out.columnwise_bytes + (s.scalars ? s.scalar_count() * sizeof(float) : 0) +
                      out.rowwise_scale_inv_bytes + out.columnwise_scale_inv_bytes;
    write_versioned(out, info, "info");
  });
}

OCTET_API octet_status octet_tensor_copy_from_host(octet_tensor* tensor, int32_t component, const void* src,
                                                   size_t bytes) {
  return guarded("octet_tensor_copy_from_host", [&] {
    tensor_handle(tensor, "tensor");
    require(src != nullptr, "argument 'src' is NULL");
    const Buffer* buffer = nullptr;
    size_t offset = 0;
    size_t expected = component_bytes(tensor->state, component, &buffer, &offset);
    require(bytes == expected, "argument 'bytes' (", bytes, ") must equal the component's size (", expected, ")");
    check_written_scales(tensor->state, component, src, bytes);
    if ((component == OCTET_COMPONENT_SCALE || component == OCTET_COMPONENT_SCALE_INV) &&
        !is_nvfp4_mode(tensor->state.scaling_mode)) {
      write_scale_pair(tensor->state, component, src);
      return;
    }
    const_cast<Buffer*>(buffer)->copy_from_host(src, bytes, offset);
  });
}

OCTET_API octet_status octet_tensor_copy_to_host(const octet_tensor* tensor, int32_t component, void* dst,
                                                 size_t bytes) {
  return guarded("octet_tensor_copy_to_host", [&] {
    tensor_handle(tensor, "tensor");
    require(dst != nullptr, "argument 'dst' is NULL");
    const Buffer* buffer = nullptr;
    size_t offset = 0;
    size_t expected = component_bytes(tensor->state, component, &buffer, &offset);
    require(bytes == expected, "argument 'bytes' (", bytes, ") must equal the component's size (", expected, ")");
    buffer->copy_to_host(dst, bytes, offset);
  });
}

}  // extern "C"
