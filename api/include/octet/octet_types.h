/*
 * octet_types.h: the values both of Octet's ABIs speak. C99; includes only
 * <stdint.h>.
 *
 * octet.h (the users' ABI) and octet_backend.h (the plugin ABI) both include
 * this header, so a status, a dtype or a kind has one declaration and one
 * value on both sides. It declares types and constants only: no function,
 * no struct, and nothing about recipes, quantizers or layers.
 */
#ifndef OCTET_OCTET_TYPES_H
#define OCTET_OCTET_TYPES_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Status codes                                                              */
/* ------------------------------------------------------------------------ */

typedef int32_t octet_status;
enum {
  OCTET_STATUS_SUCCESS = 0,
  OCTET_STATUS_INVALID_ARGUMENT = 1, /* the caller broke a documented rule */
  OCTET_STATUS_UNSUPPORTED = 2,      /* valid request, but not available here */
  OCTET_STATUS_OUT_OF_MEMORY = 3,
  OCTET_STATUS_NOT_FOUND = 4,     /* no such backend, file or entry */
  OCTET_STATUS_BACKEND_ERROR = 5, /* a backend failed while running */
  OCTET_STATUS_ABI_MISMATCH = 6,  /* plugin and host ABI are incompatible */
  OCTET_STATUS_UNAVAILABLE = 7,   /* backend loaded but has no usable device */
  OCTET_STATUS_INTERNAL = 8       /* a bug in Octet: please report it */
};

/* ------------------------------------------------------------------------ */
/* Data types                                                                */
/* ------------------------------------------------------------------------ */

/* The FP8 and FP4 codes equal DLPack's DLDataTypeCode values;
 * octet_dtype_to_dlpack (octet.h) gives the full (code, bits) pair for every
 * dtype. docs/numerics.md section 1 has each format's rules. */
typedef int32_t octet_dtype;
enum {
  OCTET_DTYPE_INVALID = 0,
  OCTET_DTYPE_FP32 = 1,
  OCTET_DTYPE_BF16 = 2,
  OCTET_DTYPE_FP16 = 3,
  OCTET_DTYPE_E4M3 = 10,     /* OCP E4M3FN: kDLFloat8_e4m3fn */
  OCTET_DTYPE_E4M3FNUZ = 11, /* bias 8, max 240, NaN 0x80: kDLFloat8_e4m3fnuz */
  OCTET_DTYPE_E5M2 = 12,     /* kDLFloat8_e5m2 */
  OCTET_DTYPE_E5M2FNUZ = 13, /* bias 16, max 57344, NaN 0x80: kDLFloat8_e5m2fnuz */
  OCTET_DTYPE_E8M0 = 14,     /* unsigned power-of-two scale: kDLFloat8_e8m0fnu */
  OCTET_DTYPE_E2M1 = 17      /* FP4, two codes per byte: kDLFloat4_e2m1fn */
};

/* Bit flags of a set of dtypes: 1u << dtype code. */
#define OCTET_DTYPE_BIT(dtype) (1u << (uint32_t)(dtype))

/* Rounding of a value to an E8M0 power of two: the exponent rounded up
 * (CEIL) or down (FLOOR). */
typedef int32_t octet_e8m0_rounding;
enum { OCTET_E8M0_ROUND_CEIL = 0, OCTET_E8M0_ROUND_FLOOR = 1 };

/* ------------------------------------------------------------------------ */
/* What a backend can do                                                     */
/* ------------------------------------------------------------------------ */

/* Scaling modes (bit flags of a set of modes). */
enum {
  OCTET_SCALING_PER_TENSOR = 1u << 0,
  OCTET_SCALING_MXFP8_1X32 = 1u << 1,
  OCTET_SCALING_BLOCK_1X128 = 1u << 2,
  OCTET_SCALING_BLOCK_128X128 = 1u << 3,
  /* Axiswise FP32 scales (users' ABI 1.8, numerics.md section 16): one
   * scale per row of each stored copy (PER_ROW), or one per column of the
   * rowwise copy as stored (PER_COLUMN); a GEMM applies them in its
   * epilogue. */
  OCTET_SCALING_PER_ROW = 1u << 4,
  OCTET_SCALING_PER_COLUMN = 1u << 5,
  /* FP4 modes (E2M1 data, users' ABI 1.8 / plugin ABI 1.4; numerics.md
   * section 15): one E8M0 scale per 1x32 block (OCP MXFP4); one E4M3
   * scale per 1x16 block plus one FP32 scale per tensor (NVFP4); the same
   * with 16x16 blocks (NVFP4 weights). */
  OCTET_SCALING_MXFP4_1X32 = 1u << 6,
  OCTET_SCALING_NVFP4_1X16 = 1u << 7,
  OCTET_SCALING_NVFP4_16X16 = 1u << 8
};

/* FP8 GEMM operand layouts (bit flags), named as cuBLAS names them. With
 * D[m,n] = sum_k A'[m,k] * B'[n,k] and the GEMM's transpose flags:
 *   TN: trans_a = 0, trans_b = 0 (both operands K-contiguous: the only FP8
 *       layout on Hopper-class devices)
 *   NN: trans_a = 0, trans_b = 1      TT: trans_a = 1, trans_b = 0
 *   NT: trans_a = 1, trans_b = 1 */
enum {
  OCTET_GEMM_LAYOUT_TN = 1u << 0,
  OCTET_GEMM_LAYOUT_NN = 1u << 1,
  OCTET_GEMM_LAYOUT_TT = 1u << 2,
  OCTET_GEMM_LAYOUT_NT = 1u << 3,
  OCTET_GEMM_LAYOUT_ALL = 0xF
};

/* Where a backend's memory lives. */
typedef int32_t octet_memory_kind;
enum { OCTET_MEMORY_HOST = 0, OCTET_MEMORY_DEVICE = 1 };

/* ------------------------------------------------------------------------ */
/* Kinds of operations                                                       */
/* ------------------------------------------------------------------------ */

/* What a GEMM applies to its result after bias. */
typedef int32_t octet_epilogue;
enum { OCTET_EPILOGUE_NONE = 0, OCTET_EPILOGUE_GELU = 1 };

/* Row-wise normalisations. */
typedef int32_t octet_norm_kind;
enum { OCTET_NORM_LAYERNORM = 0, OCTET_NORM_RMSNORM = 1 };

/* Element-wise activations. */
typedef int32_t octet_activation_kind;
enum { OCTET_ACTIVATION_GELU = 0, OCTET_ACTIVATION_SWIGLU = 1 };

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* OCTET_OCTET_TYPES_H */
