/*
 * octet_dlpack.h: DLPack interchange for Octet tensors, part of the users'
 * ABI. C99; includes only <octet/octet.h> (hence <stdint.h>, <stddef.h> and
 * <octet/octet_types.h>).
 *
 * DLPack (https://dmlc.github.io/dlpack/) is the zero-copy tensor exchange
 * that NumPy, PyTorch, JAX, CuPy and others speak. Octet declares the
 * DLPack structs itself, under octet_dlpack_* names, with the field layout
 * the DLPack specification fixes (an ABI fact: DLPack 1.x never moves a
 * field). The prefixed names cannot collide with a <dlpack/dlpack.h> the
 * program also includes, before or after this header; a pointer to one of
 * these structs and to its DLPack counterpart may be cast into each other:
 *
 *   octet_dlpack_version                  = DLPackVersion
 *   octet_dlpack_device                   = DLDevice (device_type is DLPack's
 *                                           enum, an int32_t here)
 *   octet_dlpack_dtype                    = DLDataType
 *   octet_dlpack_tensor                   = DLTensor
 *   octet_dlpack_managed_tensor           = DLManagedTensor (legacy, pre-1.0)
 *   octet_dlpack_managed_tensor_versioned = DLManagedTensorVersioned (>= 1.0)
 *
 * tests/python/test_dlpack.py compiles this header beside the dlpack.h that
 * PyTorch installs and compares every size and offset, and exchanges
 * tensors with NumPy and PyTorch through these functions.
 *
 * Ownership, in DLPack's terms:
 *  - import (octet_tensor_from_dlpack*): on SUCCESS the new Octet tensor
 *    owns `managed`: Octet calls managed->deleter(managed) exactly once,
 *    when the last Octet user of the memory lets go (octet_tensor_destroy
 *    of the tensor, or later if an export of it is still held), possibly
 *    after the context was destroyed. On failure Octet has not called the
 *    deleter and never will: `managed` is still the caller's (who, as
 *    DLPack's consumer, calls its deleter when done with it).
 *  - export (octet_tensor_to_dlpack*): the returned struct holds a reference
 *    to the tensor's memory (and its context): the tensor may be destroyed
 *    before the consumer calls (*managed)->deleter(*managed), which must be
 *    called exactly once. The deleter may free Octet memory: call it on a
 *    thread that may use the tensor's context at that moment (docs/abi.md,
 *    "Thread safety"). A tensor that wraps caller memory (octet_tensor_wrap)
 *    exports that memory, which must then outlive the export too.
 *
 * Rules of import (each broken rule is INVALID_ARGUMENT with a message
 * naming the field and the rule; nothing is ever copied):
 *  - versioned: version.major must be OCTET_DLPACK_MAJOR_VERSION (1); any
 *    minor is accepted. flags must not have OCTET_DLPACK_FLAG_READ_ONLY:
 *    Octet tensors are writable and Octet does not track read-only memory,
 *    so read-only memory is refused, not imported (copy it first);
 *  - device: on a backend with host memory (reference, cpu, kokkos on the
 *    host) OCTET_DLPACK_DEVICE_CPU, _CUDA_HOST or _CUDA_MANAGED; on the
 *    cuda backend OCTET_DLPACK_DEVICE_CUDA or _CUDA_MANAGED. Other device
 *    backends: UNSUPPORTED;
 *  - dtype: lanes 1 and a (code, bits) pair octet_dtype_from_dlpack knows
 *    (FP32, FP16, BF16, E4M3, E5M2, E8M0, E4M3FNUZ, E5M2FNUZ, E2M1 with
 *    bits 4; else UNSUPPORTED), stored by the
 *    context's backend (else UNSUPPORTED);
 *  - ndim 1..OCTET_MAX_DIMS, every shape entry >= 1;
 *  - strides NULL (compact row-major), or the compact row-major strides
 *    (in elements) exactly, except that a dimension of size 1 may have any
 *    stride. Anything else (transposed, sliced, broadcast) is refused: make
 *    the tensor contiguous first;
 *  - data + byte_offset (the first element) aligned to the backend's
 *    alignment, as octet_tensor_wrap requires.
 * The result is a plain tensor (usages 0) over that memory, like
 * octet_tensor_wrap's; octet_tensor_get_info reports owns_memory = 0.
 */
#ifndef OCTET_OCTET_DLPACK_H
#define OCTET_OCTET_DLPACK_H

#include <octet/octet.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The DLPack version Octet's exports declare (1.1: the first with the
 * float8 type codes). Imports accept any 1.x. */
enum { OCTET_DLPACK_MAJOR_VERSION = 1, OCTET_DLPACK_MINOR_VERSION = 1 };

/* DLPack's DLDeviceType values Octet reads or writes. */
enum {
  OCTET_DLPACK_DEVICE_CPU = 1,          /* kDLCPU */
  OCTET_DLPACK_DEVICE_CUDA = 2,         /* kDLCUDA */
  OCTET_DLPACK_DEVICE_CUDA_HOST = 3,    /* kDLCUDAHost: pinned host memory */
  OCTET_DLPACK_DEVICE_CUDA_MANAGED = 13 /* kDLCUDAManaged */
};

/* DLPack's DLDataTypeCode values of Octet's dtypes (bits in parentheses):
 * FP32 (32) and FP16 (16) are FLOAT, BF16 (16) BFLOAT, the 8-bit codes equal
 * octet_dtype's E4M3, E4M3FNUZ, E5M2, E5M2FNUZ and E8M0, and the 4-bit one
 * octet_dtype's E2M1 (FNUZ and E2M1 codes: users' ABI 1.7). */
enum {
  OCTET_DLPACK_CODE_FLOAT = 2,            /* kDLFloat */
  OCTET_DLPACK_CODE_BFLOAT = 4,           /* kDLBfloat */
  OCTET_DLPACK_CODE_FLOAT8_E4M3FN = 10,   /* kDLFloat8_e4m3fn */
  OCTET_DLPACK_CODE_FLOAT8_E4M3FNUZ = 11, /* kDLFloat8_e4m3fnuz */
  OCTET_DLPACK_CODE_FLOAT8_E5M2 = 12,     /* kDLFloat8_e5m2 */
  OCTET_DLPACK_CODE_FLOAT8_E5M2FNUZ = 13, /* kDLFloat8_e5m2fnuz */
  OCTET_DLPACK_CODE_FLOAT8_E8M0FNU = 14,  /* kDLFloat8_e8m0fnu */
  OCTET_DLPACK_CODE_FLOAT4_E2M1FN = 17    /* kDLFloat4_e2m1fn */
};

/* Bits of octet_dlpack_managed_tensor_versioned.flags. */
enum {
  OCTET_DLPACK_FLAG_READ_ONLY = 1,             /* DLPACK_FLAG_BITMASK_READ_ONLY */
  OCTET_DLPACK_FLAG_IS_COPIED = 2,             /* DLPACK_FLAG_BITMASK_IS_COPIED */
  OCTET_DLPACK_FLAG_IS_SUBBYTE_TYPE_PADDED = 4 /* DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED */
};

typedef struct octet_dlpack_version {
  uint32_t major;
  uint32_t minor;
} octet_dlpack_version;

typedef struct octet_dlpack_device {
  int32_t device_type; /* OCTET_DLPACK_DEVICE_* */
  int32_t device_id;   /* 0 for the CPU */
} octet_dlpack_device;

typedef struct octet_dlpack_dtype {
  uint8_t code;   /* OCTET_DLPACK_CODE_* */
  uint8_t bits;   /* bits of one lane */
  uint16_t lanes; /* 1: Octet has no vector types */
} octet_dlpack_dtype;

typedef struct octet_dlpack_tensor {
  void* data;                 /* base pointer */
  octet_dlpack_device device;
  int32_t ndim;
  octet_dlpack_dtype dtype;
  int64_t* shape;             /* ndim entries */
  int64_t* strides;           /* ndim entries, in elements; NULL: compact row-major */
  uint64_t byte_offset;       /* the first element is at (char*)data + byte_offset */
} octet_dlpack_tensor;

/* Pre-1.0 DLPack (DLManagedTensor). */
typedef struct octet_dlpack_managed_tensor {
  octet_dlpack_tensor dl_tensor;
  void* manager_ctx;          /* the producer's */
  void (*deleter)(struct octet_dlpack_managed_tensor* self); /* may be NULL */
} octet_dlpack_managed_tensor;

/* DLPack >= 1.0 (DLManagedTensorVersioned). */
typedef struct octet_dlpack_managed_tensor_versioned {
  octet_dlpack_version version;
  void* manager_ctx;          /* the producer's */
  void (*deleter)(struct octet_dlpack_managed_tensor_versioned* self); /* may be NULL */
  uint64_t flags;             /* OCTET_DLPACK_FLAG_* */
  octet_dlpack_tensor dl_tensor;
} octet_dlpack_managed_tensor_versioned;

/* A tensor on `context` over the memory `managed` describes, without
 * copying; on SUCCESS *tensor receives it and Octet owns `managed` (see the
 * ownership and import rules above). */
OCTET_API octet_status octet_tensor_from_dlpack(octet_context* context,
                                                octet_dlpack_managed_tensor_versioned* managed,
                                                octet_tensor** tensor);
/* The same for a legacy DLManagedTensor (no version, no flags). */
OCTET_API octet_status octet_tensor_from_dlpack_legacy(octet_context* context,
                                                       octet_dlpack_managed_tensor* managed,
                                                       octet_tensor** tensor);

/* Exports one component of `tensor` (octet_component) without copying:
 *  - DATA: the tensor's elements (a quantized tensor's FP8 codes, the
 *    scaled values x * SCALE), the tensor's shape and dtype;
 *  - COLUMNWISE_DATA: a quantized tensor's transposed copy, [cols, rows];
 *  - SCALE, SCALE_INV, AMAX: a per-tensor quantized tensor's FP32 scalar,
 *    shape [1];
 *  - ROWWISE_SCALE_INV, COLUMNWISE_SCALE_INV: a block-scaled tensor's scale
 *    grid (octet.h, OCTET_COMPONENT_ROWWISE_SCALE_INV), E8M0 codes (MXFP8)
 *    or FP32.
 * So a quantized tensor travels as its codes plus its scales as separate
 * DLPack tensors. A plain tensor has DATA only. A component the tensor does
 * not have is INVALID_ARGUMENT, naming it.
 * The result: device CPU (id 0) on a host-memory backend, CUDA on the cuda
 * backend (device_id 0: the core does not know the backend's device
 * ordinal; docs/abi.md), explicit compact row-major strides, byte_offset 0
 * except for SCALE_INV and AMAX (their offset in the scalar block), flags 0
 * (writable, not a copy), version 1.1. A write through a SCALE or SCALE_INV
 * view changes that scalar alone: octet_tensor_copy_from_host writes the
 * pair (octet.h). The consumer must call
 * (*managed)->deleter(*managed) exactly once. */
OCTET_API octet_status octet_tensor_to_dlpack(octet_tensor* tensor, int32_t component,
                                              octet_dlpack_managed_tensor_versioned** managed);
/* The same as a legacy DLManagedTensor. */
OCTET_API octet_status octet_tensor_to_dlpack_legacy(octet_tensor* tensor, int32_t component,
                                                     octet_dlpack_managed_tensor** managed);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* OCTET_OCTET_DLPACK_H */
