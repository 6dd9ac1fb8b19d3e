/*
 * octet.h: the users' ABI of Octet, a portable low-precision (FP8) compute
 * library. C99; includes only <stdint.h> and <stddef.h>.
 *
 * Conventions (every function, unless its comment says otherwise):
 *  - returns an octet_status (int32_t); OCTET_STATUS_SUCCESS is 0.
 *  - on failure, outputs are left untouched and octet_last_error_message()
 *    explains the failure in words (thread-local; valid until the next Octet
 *    call on the same thread).
 *  - no C++ exception ever leaves the library.
 *  - every create has a destroy that accepts NULL.
 *  - option structs start with `size_t struct_size`; pass sizeof(the struct)
 *    after zero-initialising it, or NULL for the defaults. The library reads
 *    only min(struct_size, the size it knows), so older callers keep working.
 *  - thread safety: global functions (version, codecs, backend enumeration)
 *    may be called from any thread at any time. A context and the tensors
 *    created on it are used by one thread at a time; different contexts are
 *    independent.
 *
 * Matrices are row-major. A tensor of shape [d0, ..., dn-1] is seen by the
 * matrix operations as rows = d0*...*dn-2 and cols = dn-1.
 */
#ifndef OCTET_OCTET_H
#define OCTET_OCTET_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define OCTET_API __declspec(dllimport)
#elif defined(__GNUC__)
#define OCTET_API __attribute__((visibility("default")))
#else
#define OCTET_API
#endif

/* ------------------------------------------------------------------------ */
/* Versions                                                                  */
/* ------------------------------------------------------------------------ */

#define OCTET_VERSION_MAJOR 0
#define OCTET_VERSION_MINOR 1
#define OCTET_VERSION_PATCH 0

/* The users' ABI version. A change of major breaks binary compatibility;
 * a minor adds functions or appends struct fields. */
#define OCTET_ABI_MAJOR 1
#define OCTET_ABI_MINOR 0

typedef struct octet_version {
  uint32_t major;
  uint32_t minor;
  uint32_t patch;
} octet_version;

/* Version of the library actually loaded (may differ from the header's). */
OCTET_API octet_version octet_library_version(void);
/* ABI version implemented by the library actually loaded (patch is 0). */
OCTET_API octet_version octet_abi_version(void);

/* ------------------------------------------------------------------------ */
/* Status codes and errors                                                   */
/* ------------------------------------------------------------------------ */

typedef int32_t octet_status;
enum {
  OCTET_STATUS_SUCCESS = 0,
  OCTET_STATUS_INVALID_ARGUMENT = 1, /* the caller broke a documented rule */
  OCTET_STATUS_UNSUPPORTED = 2,      /* valid request, but not available here */
  OCTET_STATUS_OUT_OF_MEMORY = 3,
  OCTET_STATUS_NOT_FOUND = 4,        /* no such backend, file or entry */
  OCTET_STATUS_BACKEND_ERROR = 5,    /* a backend failed while running */
  OCTET_STATUS_ABI_MISMATCH = 6,     /* plugin and host ABI are incompatible */
  OCTET_STATUS_UNAVAILABLE = 7,      /* backend loaded but has no usable device */
  OCTET_STATUS_INTERNAL = 8          /* a bug in Octet: please report it */
};

/* Symbolic name of a status ("OCTET_STATUS_UNSUPPORTED"); static storage. */
OCTET_API const char* octet_status_name(octet_status status);

/* Message of the last failure on the calling thread, "" if none. The pointer
 * stays valid until the next Octet call on this thread. */
OCTET_API const char* octet_last_error_message(void);

/* ------------------------------------------------------------------------ */
/* Data types                                                                */
/* ------------------------------------------------------------------------ */

/* The FP8 codes equal DLPack's DLDataTypeCode values; octet_dtype_to_dlpack
 * gives the full (code, bits) pair for every dtype. */
typedef int32_t octet_dtype;
enum {
  OCTET_DTYPE_INVALID = 0,
  OCTET_DTYPE_FP32 = 1,
  OCTET_DTYPE_BF16 = 2,
  OCTET_DTYPE_FP16 = 3,
  OCTET_DTYPE_E4M3 = 10, /* OCP E4M3FN: kDLFloat8_e4m3fn */
  OCTET_DTYPE_E5M2 = 12, /* kDLFloat8_e5m2 */
  OCTET_DTYPE_E8M0 = 14  /* unsigned power-of-two scale: kDLFloat8_e8m0fnu */
};

/* Size of one element in bytes; 0 for an unknown dtype. */
OCTET_API size_t octet_dtype_size(octet_dtype dtype);
/* "fp32", "bf16", "fp16", "e4m3", "e5m2", "e8m0"; "invalid" otherwise. */
OCTET_API const char* octet_dtype_name(octet_dtype dtype);
/* DLPack's (code, bits) for a dtype; lanes are always 1. */
OCTET_API octet_status octet_dtype_to_dlpack(octet_dtype dtype, uint8_t* code,
                                            uint8_t* bits);
OCTET_API octet_status octet_dtype_from_dlpack(uint8_t code, uint8_t bits,
                                              octet_dtype* dtype);

/* ------------------------------------------------------------------------ */
/* Scalar and array codecs (exact; computed on the host by the reference)     */
/* ------------------------------------------------------------------------ */

/* FP32 -> FP8 with round to nearest even. dtype is OCTET_DTYPE_E4M3 or
 * OCTET_DTYPE_E5M2. saturate != 0: overflow and inf give +-max normal;
 * saturate == 0: overflow gives NaN (E4M3) or inf (E5M2). NaN stays NaN with
 * its sign. On an invalid dtype the result is 0xFF (NaN in both formats) and
 * the last error message says why. */
OCTET_API uint8_t octet_fp8_encode(float value, int32_t dtype, int32_t saturate);
/* FP8 -> FP32 (exact). On an invalid dtype the result is a quiet NaN and the
 * last error message says why. */
OCTET_API float octet_fp8_decode(uint8_t code, int32_t dtype);

/* IEEE-754 binary16 and bfloat16, round to nearest even, NaN stays a quiet
 * NaN with its sign, FP16 overflow gives inf. */
OCTET_API uint16_t octet_bf16_encode(float value);
OCTET_API float octet_bf16_decode(uint16_t code);
OCTET_API uint16_t octet_fp16_encode(float value);
OCTET_API float octet_fp16_decode(uint16_t code);

/* E8M0 (unsigned, bias 127, no zero, 0xFF = NaN): encodes a positive value
 * as a power of two, rounding the exponent up (CEIL) or down (FLOOR).
 * Results below 2^-127 give 0x00, above 2^127 (and +inf) give 0xFE;
 * NaN, zero and negative values give 0xFF (NaN), because no power of two
 * represents them. */
typedef int32_t octet_e8m0_rounding;
enum { OCTET_E8M0_ROUND_CEIL = 0, OCTET_E8M0_ROUND_FLOOR = 1 };
OCTET_API uint8_t octet_e8m0_encode(float value, int32_t rounding);
OCTET_API float octet_e8m0_decode(uint8_t code);

/* Array versions on host memory; n elements; in and out must not overlap. */
OCTET_API octet_status octet_fp8_encode_array(const float* in, uint8_t* out,
                                             size_t n, int32_t dtype,
                                             int32_t saturate);
OCTET_API octet_status octet_fp8_decode_array(const uint8_t* in, float* out,
                                             size_t n, int32_t dtype);
OCTET_API octet_status octet_bf16_encode_array(const float* in, uint16_t* out,
                                              size_t n);
OCTET_API octet_status octet_bf16_decode_array(const uint16_t* in, float* out,
                                              size_t n);
OCTET_API octet_status octet_fp16_encode_array(const float* in, uint16_t* out,
                                              size_t n);
OCTET_API octet_status octet_fp16_decode_array(const uint16_t* in, float* out,
                                              size_t n);
OCTET_API octet_status octet_e8m0_encode_array(const float* in, uint8_t* out,
                                              size_t n, int32_t rounding);
OCTET_API octet_status octet_e8m0_decode_array(const uint8_t* in, float* out,
                                              size_t n);

/* ------------------------------------------------------------------------ */
/* Backends and their capabilities                                           */
/* ------------------------------------------------------------------------ */

/* Bit flags of octet_backend_info.dtypes: 1u << dtype code. */
#define OCTET_DTYPE_BIT(dtype) (1u << (uint32_t)(dtype))

/* Scaling modes (bit flags in octet_backend_info.scaling_modes). */
enum {
  OCTET_SCALING_PER_TENSOR = 1u << 0,
  OCTET_SCALING_MXFP8_1X32 = 1u << 1,
  OCTET_SCALING_BLOCK_1X128 = 1u << 2,
  OCTET_SCALING_BLOCK_128X128 = 1u << 3
};

/* FP8 GEMM operand layouts (bit flags), named as cuBLAS names them. With
 * D[m,n] = sum_k A'[m,k] * B'[n,k] and octet_gemm's transpose flags:
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

typedef int32_t octet_memory_kind;
enum { OCTET_MEMORY_HOST = 0, OCTET_MEMORY_DEVICE = 1 };

/* Optional operations a backend provides (bit flags of .features). The core
 * composes an operation from simpler ones, or answers UNSUPPORTED, when a
 * feature is missing. */
enum {
  OCTET_FEATURE_CONVERT = 1u << 0,
  OCTET_FEATURE_AMAX = 1u << 1,
  OCTET_FEATURE_QUANTIZE = 1u << 2,
  OCTET_FEATURE_FUSED_CAST_TRANSPOSE = 1u << 3,
  OCTET_FEATURE_TRANSPOSE = 1u << 4,
  OCTET_FEATURE_DEQUANTIZE = 1u << 5,
  OCTET_FEATURE_GEMM_FP8 = 1u << 6,
  OCTET_FEATURE_GEMM_HIGH_PRECISION = 1u << 7
};

typedef struct octet_backend_info {
  size_t struct_size;
  const char* name;        /* "reference", "cpu", "cuda", ... */
  const char* version;     /* the backend's own version string */
  const char* device;      /* human-readable device name */
  const char* path;        /* file it was loaded from; "(embedded)" for the reference */
  int32_t memory_kind;     /* octet_memory_kind */
  int32_t available;       /* 0: loaded but no usable device (see reason) */
  const char* unavailable_reason; /* "" when available */
  uint32_t abi_major;      /* plugin ABI the backend answered with */
  uint32_t abi_minor;
  uint32_t dtypes;         /* OCTET_DTYPE_BIT(...) of storage formats */
  uint32_t scaling_modes;  /* OCTET_SCALING_* */
  int32_t native_columnwise; /* 1: one FP8 copy serves both usages */
  uint32_t fp8_gemm_layouts; /* OCTET_GEMM_LAYOUT_* */
  uint32_t features;       /* OCTET_FEATURE_* */
  uint64_t alignment;      /* bytes required of wrapped memory */
} octet_backend_info;

/* Registered backends, in a fixed order: the embedded reference first, then
 * plugins in discovery order. The first call discovers plugins: explicit
 * paths added with octet_backend_load, then directories listed in
 * OCTET_BACKEND_PATH (':'-separated, read with secure_getenv), then the
 * folder octet/backends beside the loaded liboctet. In each folder every file
 * named liboctet_backend_<name>.so is tried, sorted by name; never the current
 * directory unless named explicitly. A plugin whose name is already
 * registered is reported as a failure and skipped. */
OCTET_API octet_status octet_backend_count(size_t* count);
/* Fills *info for backend `index`. Strings live as long as the process. */
OCTET_API octet_status octet_backend_get_info(size_t index, octet_backend_info* info);

/* Plugins that could not be registered, with the reason. Strings live as
 * long as the process. */
typedef struct octet_backend_failure {
  size_t struct_size;
  const char* path;
  const char* reason;
} octet_backend_failure;
OCTET_API octet_status octet_backend_failure_count(size_t* count);
OCTET_API octet_status octet_backend_get_failure(size_t index,
                                                 octet_backend_failure* failure);

/* Loads one plugin from an explicit path (any file name). Failures are also
 * recorded in the failure list. */
OCTET_API octet_status octet_backend_load(const char* path);

/* ------------------------------------------------------------------------ */
/* Contexts                                                                  */
/* ------------------------------------------------------------------------ */

/* Capability profiles: a profile can only take capabilities away from a
 * backend, so the core's adaptation can be exercised on any backend. The
 * reference declares every capability, so it can present either class. */
typedef int32_t octet_capability_profile;
enum {
  OCTET_PROFILE_NATIVE = 0,        /* what the backend declares */
  OCTET_PROFILE_HOPPER_LIKE = 1,   /* TN-only FP8 GEMM, transposed copies */
  OCTET_PROFILE_BLACKWELL_LIKE = 2 /* native columnwise access, all layouts */
};

typedef struct octet_context_options {
  size_t struct_size;
  const char* backend;        /* a backend name, or NULL / "auto": the first
                                 available device backend, else the first
                                 available host plugin, else the reference */
  int32_t capability_profile; /* octet_capability_profile */
  void* stream;               /* backend stream to run on (e.g. cudaStream_t);
                                 NULL: the backend's own */
} octet_context_options;

typedef struct octet_context octet_context;

OCTET_API octet_status octet_context_create(const octet_context_options* options,
                                            octet_context** context);
/* Tensors created on a context keep what they need alive: a context may be
 * destroyed before its tensors. */
OCTET_API void octet_context_destroy(octet_context* context);
/* The capabilities in effect for this context (after the profile). The
 * strings live as long as the process. */
OCTET_API octet_status octet_context_get_info(const octet_context* context,
                                              octet_backend_info* info);
/* Waits until all work queued on the context has finished. */
OCTET_API octet_status octet_context_synchronize(octet_context* context);

/* ------------------------------------------------------------------------ */
/* Tensors                                                                   */
/* ------------------------------------------------------------------------ */

#define OCTET_MAX_DIMS 8

/* Usages of a quantized (FP8) tensor: which GEMM access it serves. */
enum {
  OCTET_USAGE_ROWWISE = 1u << 0,
  OCTET_USAGE_COLUMNWISE = 1u << 1,
  OCTET_USAGE_BOTH = 3u
};

/* Components of a tensor, for copies to and from the host. A plain tensor
 * has only DATA. A quantized tensor (FP8 dtype, created with usages != 0)
 * has DATA (rowwise, [rows, cols]) when it has the rowwise usage or the
 * backend reads columns natively, COLUMNWISE_DATA (the physically transposed
 * copy, [cols, rows]) when it has the columnwise usage and the backend does
 * not read columns natively, and one FP32 each of SCALE, SCALE_INV, AMAX. */
typedef int32_t octet_component;
enum {
  OCTET_COMPONENT_DATA = 0,
  OCTET_COMPONENT_COLUMNWISE_DATA = 1,
  OCTET_COMPONENT_SCALE = 2,
  OCTET_COMPONENT_SCALE_INV = 3,
  OCTET_COMPONENT_AMAX = 4
};

typedef struct octet_tensor_desc {
  size_t struct_size;
  int32_t dtype;              /* octet_dtype */
  int32_t ndim;               /* 1 .. OCTET_MAX_DIMS */
  int64_t shape[OCTET_MAX_DIMS];
  uint32_t usages;            /* FP8 only: 0 = plain codes, no scales;
                                 else OCTET_USAGE_* (a quantized tensor) */
} octet_tensor_desc;

typedef struct octet_tensor_info {
  size_t struct_size;
  int32_t dtype;
  int32_t ndim;
  int64_t shape[OCTET_MAX_DIMS];
  uint32_t usages;
  int32_t owns_memory;        /* 0 for a wrapped tensor */
  int32_t has_rowwise_data;
  int32_t has_columnwise_data; /* a separate transposed copy is stored */
  uint64_t rowwise_bytes;
  uint64_t columnwise_bytes;
  uint64_t total_bytes;       /* every component, scales included */
} octet_tensor_info;

typedef struct octet_tensor octet_tensor;

/* Allocates a tensor in the context's backend memory. Contents are
 * unspecified, except a quantized tensor's SCALE, which starts at 1. */
OCTET_API octet_status octet_tensor_create(octet_context* context,
                                           const octet_tensor_desc* desc,
                                           octet_tensor** tensor);
/* Wraps caller memory (in the backend's memory kind) without copying; plain
 * tensors only. data must be aligned to the backend's alignment and stay
 * valid until the tensor is destroyed. */
OCTET_API octet_status octet_tensor_wrap(octet_context* context,
                                         const octet_tensor_desc* desc,
                                         void* data, octet_tensor** tensor);
OCTET_API void octet_tensor_destroy(octet_tensor* tensor);
OCTET_API octet_status octet_tensor_get_info(const octet_tensor* tensor,
                                             octet_tensor_info* info);
/* Copies one component between host memory and the tensor. bytes must equal
 * the component's size exactly. */
OCTET_API octet_status octet_tensor_copy_from_host(octet_tensor* tensor,
                                                   int32_t component,
                                                   const void* src, size_t bytes);
OCTET_API octet_status octet_tensor_copy_to_host(const octet_tensor* tensor,
                                                 int32_t component, void* dst,
                                                 size_t bytes);

/* ------------------------------------------------------------------------ */
/* Operations (all run on the context's backend)                             */
/* ------------------------------------------------------------------------ */

/* Element-wise conversion between any two dtypes of the same shape, with the
 * rules of the codecs above (FP8 targets: saturate != 0 or not). FP8 sources
 * and targets are raw codes: no scale is applied. */
OCTET_API octet_status octet_convert(octet_context* context,
                                     const octet_tensor* input,
                                     octet_tensor* output, int32_t saturate);

/* max |x| over a high-precision tensor (NaN ignored, inf counts) into *amax. */
OCTET_API octet_status octet_amax(octet_context* context,
                                  const octet_tensor* input, float* amax);

typedef struct octet_quantize_options {
  size_t struct_size;
  uint32_t usages;  /* 0: every usage the output has; else a subset of them */
  int32_t saturate; /* default 1 (set struct_size to leave it at 1) */
} octet_quantize_options;

/* q = fp8(x * scale), with scale read from output's SCALE component; writes
 * the requested usages, SCALE_INV = 1/scale and AMAX = max |x|. The rowwise
 * and columnwise copies come from one fused pass where the backend has it. */
OCTET_API octet_status octet_quantize(octet_context* context,
                                      const octet_tensor* input,
                                      octet_tensor* output,
                                      const octet_quantize_options* options);

/* x' = decode(q) * scale_inv into a high-precision tensor of the same shape. */
OCTET_API octet_status octet_dequantize(octet_context* context,
                                        const octet_tensor* input,
                                        octet_tensor* output);

typedef int32_t octet_epilogue;
enum { OCTET_EPILOGUE_NONE = 0, OCTET_EPILOGUE_GELU = 1 };

typedef struct octet_gemm_options {
  size_t struct_size;
  int32_t trans_a;         /* 0: A stored [M,K]; 1: A stored [K,M] */
  int32_t trans_b;         /* 0: B stored [N,K]; 1: B stored [K,N] */
  float alpha;             /* default 1 */
  float beta;              /* default 0; beta == 0 ignores D's old contents */
  const octet_tensor* bias; /* optional, N elements, FP32/BF16/FP16 */
  int32_t epilogue;        /* octet_epilogue; default NONE */
} octet_gemm_options;

/* D[m,n] = alpha * sa * sb * sum_k A'[m,k] * B'[n,k] + beta * D[m,n] + bias[n]
 * where A' is A or A^T per trans_a, likewise B' (note: the canonical layout
 * keeps B as [N,K], the way a Linear stores its weight). A and B are both
 * FP8 (sa, sb their SCALE_INV; 1 for plain codes) or both FP32/BF16/FP16
 * (sa = sb = 1). D is FP32, BF16 or FP16, shape [M,N]. For a quantized
 * operand used transposed the core picks the columnwise usage: the backend's
 * native columnwise access or the transposed copy, per its capabilities. */
OCTET_API octet_status octet_gemm(octet_context* context, const octet_tensor* a,
                                  const octet_tensor* b, octet_tensor* d,
                                  const octet_gemm_options* options);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* OCTET_OCTET_H */
