// DLPack import and export (octet_dlpack.h, users' ABI 1.6).
//
// Import: the tensor wraps the producer's memory; the Buffer holds a keeper
// whose destruction calls the producer's deleter, so the deleter runs
// exactly once, when the last holder of the memory lets go.
// Export: the DLPack struct holds Buffer::share() of the component's
// memory, so the Octet tensor may be destroyed before the consumer calls
// the deleter.
#include <octet/octet_dlpack.h>

#include <cstdint>
#include <memory>
#include <sstream>
#include <string>

#include "runtime/context.hpp"
#include "runtime/error.hpp"
#include "tensor/buffer.hpp"
#include "tensor/dtype.hpp"
#include "tensor/tensor.hpp"

namespace octet::core {
namespace {

std::string list(const int64_t* values, int32_t n) {
  std::ostringstream out;
  out << '(';
  for (int32_t i = 0; i < n; ++i) out << (i ? ", " : "") << values[i];
  out << ')';
  return out.str();
}

const char* device_name(int32_t type) {
  switch (type) {
    case OCTET_DLPACK_DEVICE_CPU: return "kDLCPU";
    case OCTET_DLPACK_DEVICE_CUDA: return "kDLCUDA";
    case OCTET_DLPACK_DEVICE_CUDA_HOST: return "kDLCUDAHost";
    case OCTET_DLPACK_DEVICE_CUDA_MANAGED: return "kDLCUDAManaged";
    default: return "a device Octet does not address";
  }
}

// The DLPack device of the context's memory; UNSUPPORTED for a device
// backend other than cuda (Octet cannot name its memory in DLPack).
int32_t context_device(const ContextState& ctx) {
  if (ctx.host_memory()) return OCTET_DLPACK_DEVICE_CPU;
  if (ctx.backend->name == "cuda") return OCTET_DLPACK_DEVICE_CUDA;
  fail(OCTET_STATUS_UNSUPPORTED, "backend '", ctx.backend->name,
       "' keeps device memory that Octet cannot describe in DLPack (only the cuda backend's is kDLCUDA)");
}

void check_device(const ContextState& ctx, const octet_dlpack_device& device, const std::string& where) {
  const int32_t type = device.device_type;
  if (context_device(ctx) == OCTET_DLPACK_DEVICE_CPU) {
    require(type == OCTET_DLPACK_DEVICE_CPU || type == OCTET_DLPACK_DEVICE_CUDA_HOST ||
                type == OCTET_DLPACK_DEVICE_CUDA_MANAGED,
            where, ".device.device_type (", type, ", ", device_name(type), ") is not host memory, which backend '",
            ctx.backend->name, "' works on: it takes kDLCPU (1), kDLCUDAHost (3) or kDLCUDAManaged (13)");
  } else {
    require(type == OCTET_DLPACK_DEVICE_CUDA || type == OCTET_DLPACK_DEVICE_CUDA_MANAGED, where,
            ".device.device_type (", type, ", ", device_name(type), ") is not CUDA device memory, which backend '",
            ctx.backend->name, "' works on: it takes kDLCUDA (2) or kDLCUDAManaged (13)");
  }
}

// Calls the producer's deleter once, when the last Buffer or export holding
// the imported memory lets go. Created before any check can fail and armed
// (managed set) only on success, so a failed import never calls it.
template <typename Managed>
struct ImportKeeper {
  Managed* managed = nullptr;
  ImportKeeper() = default;
  ImportKeeper(const ImportKeeper&) = delete;
  ImportKeeper& operator=(const ImportKeeper&) = delete;
  ~ImportKeeper() {
    if (managed != nullptr && managed->deleter != nullptr) managed->deleter(managed);
  }
};

octet_tensor* import_tensor(octet_context* context, const octet_dlpack_tensor& dl, const std::string& where,
                            std::shared_ptr<void> keeper) {
  const std::shared_ptr<ContextState>& ctx = context->state;
  require(dl.data != nullptr, where, ".data is NULL");
  check_device(*ctx, dl.device, where);
  if (dl.dtype.lanes != 1)
    fail(OCTET_STATUS_UNSUPPORTED, where, ".dtype.lanes (", dl.dtype.lanes,
         ") must be 1: Octet has no vector element types");
  octet_dtype dtype = OCTET_DTYPE_INVALID;
  if (octet_dtype_from_dlpack(dl.dtype.code, dl.dtype.bits, &dtype) != OCTET_STATUS_SUCCESS)
    fail(OCTET_STATUS_UNSUPPORTED, where, ".dtype (code ", int(dl.dtype.code), ", bits ", int(dl.dtype.bits),
         ") has no Octet dtype: Octet takes ", dlpack_dtype_list(true));
  if (!(ctx->caps.dtypes & OCTET_DTYPE_BIT(dtype)))
    fail(OCTET_STATUS_UNSUPPORTED, "backend '", ctx->backend->name, "' does not store dtype ", dtype_name(dtype));
  require(dl.ndim >= 1 && dl.ndim <= OCTET_MAX_DIMS, where, ".ndim (", dl.ndim, ") must be in 1..", OCTET_MAX_DIMS,
          dl.ndim == 0 ? " (a 0-d scalar: reshape it to [1] first)" : "");
  require(dl.shape != nullptr, where, ".shape is NULL");
  for (int32_t i = 0; i < dl.ndim; ++i)
    require(dl.shape[i] >= 1, where, ".shape[", i, "] (", dl.shape[i], ") must be >= 1: Octet has no empty tensors");
  if (dl.strides != nullptr) {
    int64_t expected[OCTET_MAX_DIMS];
    int64_t step = 1;
    bool compact = true;
    for (int32_t i = dl.ndim - 1; i >= 0; --i) {
      expected[i] = step;
      if (dl.shape[i] != 1 && dl.strides[i] != step) compact = false;
      if (step > INT64_MAX / dl.shape[i]) fail(OCTET_STATUS_INVALID_ARGUMENT, where, ".shape makes the tensor too large");
      step *= dl.shape[i];
    }
    require(compact, where, ".strides ", list(dl.strides, dl.ndim), " are not compact row-major for shape ",
            list(dl.shape, dl.ndim), " (that needs ", list(expected, dl.ndim),
            ", in elements; a dimension of size 1 may have any stride): Octet addresses only contiguous row-major "
            "memory and never copies, so make the tensor contiguous first (torch: .contiguous(), NumPy: "
            "numpy.ascontiguousarray)");
  }
  char* first = static_cast<char*>(dl.data) + dl.byte_offset;
  const uint64_t alignment = caller_alignment(*ctx, dtype);
  require(reinterpret_cast<uintptr_t>(first) % alignment == 0, where, ".data + byte_offset (",
          static_cast<void*>(first), ") is not aligned to ", alignment, " bytes, as backend '", ctx->backend->name,
          "' requires of ", dtype_name(dtype),
          " memory it did not allocate (octet_tensor_wrap's rule): allocate the memory aligned (octet.aligned_empty "
          "for NumPy), or copy it");

  octet_tensor_desc desc{};
  desc.struct_size = sizeof(desc);
  desc.dtype = dtype;
  desc.ndim = dl.ndim;
  for (int32_t i = 0; i < dl.ndim; ++i) desc.shape[i] = dl.shape[i];
  octet_tensor* tensor = nullptr;
  octet_status status = octet_tensor_wrap(context, &desc, first, &tensor);
  if (status != OCTET_STATUS_SUCCESS) throw Failure(status, octet_last_error_message());
  TensorState& s = tensor->state;
  s.data = Buffer::wrap(ctx, first, s.data.bytes(), std::move(keeper));
  return tensor;
}

template <typename Managed>
void from_dlpack(octet_context* context, Managed* managed, octet_tensor** tensor, const octet_dlpack_tensor& dl) {
  auto keeper = std::make_shared<ImportKeeper<Managed>>();  // may throw: nothing is owned yet
  octet_tensor* t = import_tensor(context, dl, "managed->dl_tensor", keeper);
  keeper->managed = managed;  // armed: from here on the tensor's memory owns `managed`
  *tensor = t;
}

// One component of a tensor as DLPack sees it.
struct ComponentView {
  const Buffer* buffer = nullptr;
  uint64_t byte_offset = 0;
  octet_dtype dtype = OCTET_DTYPE_INVALID;
  int32_t ndim = 0;
  int64_t shape[OCTET_MAX_DIMS] = {};
};

ComponentView component_view(const TensorState& t, int32_t component) {
  ComponentView v;
  v.dtype = t.dtype;
  switch (component) {
    case OCTET_COMPONENT_DATA:
      require(bool(t.data), "the tensor has no DATA component (it was quantized for the columnwise usage only: "
                            "export COLUMNWISE_DATA)");
      v.buffer = &t.data;
      v.ndim = t.ndim;
      for (int32_t i = 0; i < t.ndim; ++i) v.shape[i] = t.shape[i];
      return v;
    case OCTET_COMPONENT_COLUMNWISE_DATA:
      require(bool(t.columnwise), "the tensor has no COLUMNWISE_DATA component (",
              t.quantized() ? "the backend reads columns natively or the columnwise usage was not requested"
                            : "it is not a quantized tensor",
              ")");
      v.buffer = &t.columnwise;
      v.ndim = 2;
      v.shape[0] = t.cols;
      v.shape[1] = t.rows;
      return v;
    case OCTET_COMPONENT_ROWWISE_SCALE_INV:
    case OCTET_COMPONENT_COLUMNWISE_SCALE_INV: {
      require(t.block_scaled(), "argument 'component' (", component,
              ") exists only on a block-scaled tensor; a per-tensor one has SCALE_INV");
      const bool columnwise = component == OCTET_COMPONENT_COLUMNWISE_SCALE_INV;
      const Buffer& b = columnwise ? t.columnwise_scale_inv : t.rowwise_scale_inv;
      require(bool(b), "the tensor has no ", columnwise ? "columnwise" : "rowwise", " usage, hence no such scale grid");
      const int64_t r = columnwise ? t.cols : t.rows, c = columnwise ? t.rows : t.cols;
      v.buffer = &b;
      v.dtype = t.scale_inv_dtype();
      v.ndim = 2;
      const TensorState::BlockShape shape = t.block_shape(columnwise);
      v.shape[0] = (r + shape.rows - 1) / shape.rows;
      v.shape[1] = (c + shape.cols - 1) / shape.cols;
      return v;
    }
    case OCTET_COMPONENT_SCALE:
    case OCTET_COMPONENT_SCALE_INV:
      require(!t.block_scaled(), "argument 'component' (", component, ", SCALE / SCALE_INV) does not exist on a ",
              scaling_mode_name(t.scaling_mode),
              " tensor: its scales are per block (ROWWISE_SCALE_INV / COLUMNWISE_SCALE_INV)");
      [[fallthrough]];
    case OCTET_COMPONENT_AMAX:
      require(t.quantized(), "argument 'component' (", component,
              ") exists only on a quantized tensor (FP8 with usages); a plain tensor has DATA only");
      v.buffer = &t.scalars;
      v.byte_offset = sizeof(float) * uint64_t(component == OCTET_COMPONENT_SCALE       ? kScale
                                               : component == OCTET_COMPONENT_SCALE_INV ? kScaleInv
                                                                                        : kAmax);
      v.dtype = OCTET_DTYPE_FP32;
      v.ndim = 1;
      v.shape[0] = 1;
      return v;
    default:
      fail(OCTET_STATUS_INVALID_ARGUMENT, "argument 'component' (", component, ") is not an octet_component");
  }
}

// What a consumer holds: the DLPack struct, its shape and strides, and the
// references that keep the memory and the context alive.
template <typename Managed>
struct Export {
  Managed managed{};
  int64_t shape[OCTET_MAX_DIMS] = {};
  int64_t strides[OCTET_MAX_DIMS] = {};
  std::shared_ptr<void> memory;
  std::shared_ptr<ContextState> ctx;

  static void deleter(Managed* self) noexcept {
    if (self != nullptr) delete static_cast<Export*>(self->manager_ctx);
  }
};

template <typename Managed>
Managed* to_dlpack(octet_tensor* tensor, int32_t component) {
  const TensorState& t = tensor_handle(tensor, "tensor");  // live, its context held for this call
  const int32_t device = context_device(*t.ctx);
  ComponentView v = component_view(t, component);
  if (v.dtype == OCTET_DTYPE_E2M1)
    fail(OCTET_STATUS_UNSUPPORTED, "argument 'component' (", component,
         ") holds packed E2M1 codes, which Octet does not export through DLPack: copy them with "
         "octet_tensor_copy_to_host (its scale grids and AMAX export)");
  auto e = std::make_unique<Export<Managed>>();
  e->ctx = t.ctx;
  e->memory = v.buffer->share();
  int64_t step = 1;
  for (int32_t i = v.ndim - 1; i >= 0; --i) {
    e->shape[i] = v.shape[i];
    e->strides[i] = step;
    step *= v.shape[i];
  }
  octet_dlpack_tensor& dl = e->managed.dl_tensor;
  dl.data = v.buffer->data();
  dl.device.device_type = device;
  dl.device.device_id = 0;
  dl.ndim = v.ndim;
  uint8_t code = 0, bits = 0;
  if (octet_dtype_to_dlpack(v.dtype, &code, &bits) != OCTET_STATUS_SUCCESS)
    fail(OCTET_STATUS_INTERNAL, "a tensor holds dtype ", v.dtype, ", which has no DLPack code");
  dl.dtype.code = code;
  dl.dtype.bits = bits;
  dl.dtype.lanes = 1;
  dl.shape = e->shape;
  dl.strides = e->strides;
  dl.byte_offset = v.byte_offset;
  e->managed.manager_ctx = e.get();
  e->managed.deleter = &Export<Managed>::deleter;
  return &e.release()->managed;
}

}  // namespace
}  // namespace octet::core

using namespace octet::core;

extern "C" {

OCTET_API octet_status octet_tensor_from_dlpack(octet_context* context, octet_dlpack_managed_tensor_versioned* managed,
                                                octet_tensor** tensor) {
  return guarded("octet_tensor_from_dlpack", [&] {
    context_arg(context);  // live, held for this call
    require(managed != nullptr, "argument 'managed' is NULL");
    require(tensor != nullptr, "argument 'tensor' is NULL");
    require(managed->version.major == OCTET_DLPACK_MAJOR_VERSION, "managed->version (", managed->version.major, ".",
            managed->version.minor, ") has another major than the DLPack ", int(OCTET_DLPACK_MAJOR_VERSION),
            ".x Octet reads; the caller still owns it and must call its deleter");
    require((managed->flags & OCTET_DLPACK_FLAG_READ_ONLY) == 0,
            "managed->flags has DLPACK_FLAG_BITMASK_READ_ONLY: Octet tensors are writable and Octet does not track "
            "read-only memory, so it refuses read-only memory rather than risk writing to it (copy it into "
            "writable memory first)");
    from_dlpack(context, managed, tensor, managed->dl_tensor);
  });
}

OCTET_API octet_status octet_tensor_from_dlpack_legacy(octet_context* context, octet_dlpack_managed_tensor* managed,
                                                       octet_tensor** tensor) {
  return guarded("octet_tensor_from_dlpack_legacy", [&] {
    context_arg(context);  // live, held for this call
    require(managed != nullptr, "argument 'managed' is NULL");
    require(tensor != nullptr, "argument 'tensor' is NULL");
    from_dlpack(context, managed, tensor, managed->dl_tensor);
  });
}

OCTET_API octet_status octet_tensor_to_dlpack(octet_tensor* tensor, int32_t component,
                                              octet_dlpack_managed_tensor_versioned** managed) {
  return guarded("octet_tensor_to_dlpack", [&] {
    require(managed != nullptr, "argument 'managed' is NULL");
    auto* m = to_dlpack<octet_dlpack_managed_tensor_versioned>(tensor, component);
    m->version.major = OCTET_DLPACK_MAJOR_VERSION;
    m->version.minor = OCTET_DLPACK_MINOR_VERSION;
    m->flags = 0;
    *managed = m;
  });
}

OCTET_API octet_status octet_tensor_to_dlpack_legacy(octet_tensor* tensor, int32_t component,
                                                     octet_dlpack_managed_tensor** managed) {
  return guarded("octet_tensor_to_dlpack_legacy", [&] {
    require(managed != nullptr, "argument 'managed' is NULL");
    *managed = to_dlpack<octet_dlpack_managed_tensor>(tensor, component);
  });
}

}  // extern "C"
