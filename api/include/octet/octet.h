/*
 * octet.h: the users' ABI of Octet, a portable low-precision (FP8) compute
 * library. C99; includes only <stdint.h>, <stddef.h> and octet_types.h
 * (the statuses, dtypes and kinds it shares with the plugin ABI).
 *
 * Conventions (every function, unless its comment says otherwise):
 *  - returns an octet_status (int32_t); OCTET_STATUS_SUCCESS is 0.
 *  - on failure, outputs are left untouched and octet_last_error_message()
 *    explains the failure in words (thread-local; valid until the next Octet
 *    call on the same thread).
 *  - no C++ exception ever leaves the library.
 *  - every create has a destroy that accepts NULL. A destroyed handle given
 *    to a call (a second destroy included) is refused with
 *    OCTET_STATUS_INVALID_ARGUMENT while its memory is not yet reused
 *    (docs/abi.md, "Handles and lifetimes").
 *  - option structs start with `size_t struct_size`. Fields inside the
 *    caller's struct_size are read exactly as given (0 means 0, not "the
 *    default"), so start from the struct's octet_*_init function, which sets
 *    struct_size and every default, then change what you need; or pass NULL
 *    for the defaults. The library reads only min(struct_size, the size it
 *    knows), so callers built against an older header keep working.
 *  - thread safety: global functions (version, codecs, backend enumeration)
 *    may be called from any thread at any time. A context and the tensors
 *    created on it are used by one thread at a time; different contexts are
 *    independent. A call entering a context while another thread is inside
 *    a call on it is refused with OCTET_STATUS_INVALID_ARGUMENT and a message
 *    naming both calls; it changes nothing.
 *
 * Matrices are row-major. A tensor of shape [d0, ..., dn-1] is seen by the
 * matrix operations as rows = d0*...*dn-2 and cols = dn-1.
 */
#ifndef OCTET_OCTET_H
#define OCTET_OCTET_H

#include <stddef.h>
#include <stdint.h>

#include "octet_types.h"

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

/* The users' ABI version (this header and liboctet), a sequence of its own:
 * the plugin ABI (octet_backend.h) has OCTET_PLUGIN_ABI_MAJOR/MINOR. A change
 * of major breaks binary compatibility; a minor adds functions, constants or
 * appended struct fields. CHANGELOG.md lists what each minor added. */
#define OCTET_ABI_MAJOR 1
#define OCTET_ABI_MINOR 9

typedef struct octet_version {
  uint32_t major;
  uint32_t minor;
  uint32_t patch;
} octet_version;

/* Version of the library actually loaded (may differ from the header's). */
OCTET_API octet_version octet_library_version(void);
/* Users' ABI version implemented by the library actually loaded (patch is
 * 0). */
OCTET_API octet_version octet_abi_version(void);

/* ------------------------------------------------------------------------ */
/* Status codes and errors                                                   */
/* ------------------------------------------------------------------------ */

/* octet_status and its OCTET_STATUS_* values: octet_types.h. */

/* Symbolic name of a status ("OCTET_STATUS_UNSUPPORTED"); static storage. */
OCTET_API const char* octet_status_name(octet_status status);

/* Message of the last failure on the calling thread, "" if none. The pointer
 * stays valid until the next Octet call on this thread. */
OCTET_API const char* octet_last_error_message(void);

/* ------------------------------------------------------------------------ */
/* Data types                                                                */
/* ------------------------------------------------------------------------ */

/* octet_dtype and its OCTET_DTYPE_* values: octet_types.h. */

/* Size of one element in bytes; 0 for an unknown dtype and for E2M1, whose
 * codes are 4 bits, two per byte (docs/abi.md, "Sub-byte dtypes"). */
OCTET_API size_t octet_dtype_size(octet_dtype dtype);
/* "fp32", "bf16", "fp16", "e4m3", "e4m3fnuz", "e5m2", "e5m2fnuz", "e8m0",
 * "e2m1"; "invalid" otherwise. */
OCTET_API const char* octet_dtype_name(octet_dtype dtype);
/* DLPack's (code, bits) for a dtype; lanes are always 1. */
OCTET_API octet_status octet_dtype_to_dlpack(octet_dtype dtype, uint8_t* code,
                                            uint8_t* bits);
OCTET_API octet_status octet_dtype_from_dlpack(uint8_t code, uint8_t bits,
                                              octet_dtype* dtype);

/* ------------------------------------------------------------------------ */
/* Scalar and array codecs (exact; computed on the host by the reference)     */
/* ------------------------------------------------------------------------ */

/* FP32 -> FP8 or FP4 with round to nearest even (docs/numerics.md section
 * 1 has a table per format). dtype is OCTET_DTYPE_E4M3, _E5M2, _E4M3FNUZ,
 * _E5M2FNUZ (users' ABI 1.7) or _E2M1 (1.7; the code is in the low 4 bits).
 *  - E4M3, E5M2: saturate != 0: overflow and inf give +-max normal;
 *    saturate == 0: overflow gives NaN (E4M3) or inf (E5M2). NaN stays NaN
 *    with its sign.
 *  - E4M3FNUZ, E5M2FNUZ: NaN gives 0x80, the only NaN; saturate != 0:
 *    overflow and inf give +-max (240, 57344); saturate == 0: they give
 *    0x80. A zero result is 0x00 whatever the sign (no negative zero).
 *  - E2M1 (no NaN, no inf code): saturate != 0: overflow and inf give +-6;
 *    NaN, and with saturate == 0 overflow and inf, have no code: the result
 *    is 0xFF (not a 4-bit code) and the last error message says why.
 * On an invalid dtype the result is 0xFF and the last error message says
 * why. */
OCTET_API uint8_t octet_fp8_encode(float value, int32_t dtype, int32_t saturate);
/* FP8 or FP4 (the low 4 bits of `code`; the high 4 bits must be 0) -> FP32
 * (exact). On an invalid dtype or code the result is a quiet NaN and the
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
 * represents them. rounding: octet_e8m0_rounding (octet_types.h). */
OCTET_API uint8_t octet_e8m0_encode(float value, int32_t rounding);
OCTET_API float octet_e8m0_decode(uint8_t code);

/* Array versions on host memory; n elements; in and out must not overlap.
 * An E2M1 array is packed (docs/abi.md, "Sub-byte dtypes"): its n codes take
 * (n + 1) / 2 bytes, element 2i in the low nibble of byte i, element 2i + 1
 * in the high nibble, and an odd n leaves the last high nibble 0 (encode
 * writes 0 there; decode refuses a nonzero one). An E2M1 encode that meets a
 * value with no code (above) fails with INVALID_ARGUMENT naming its index
 * and leaves `out` untouched. */
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

/* The dtype flags (OCTET_DTYPE_BIT), scaling modes (OCTET_SCALING_*), FP8
 * GEMM layouts (OCTET_GEMM_LAYOUT_*, with octet_gemm's transpose flags) and
 * memory kinds (octet_memory_kind) of octet_backend_info: octet_types.h. */

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
  OCTET_FEATURE_GEMM_HIGH_PRECISION = 1u << 7,
  OCTET_FEATURE_QUANTIZE_STATISTICS = 1u << 8, /* quantize with NaN/saturation/flush counts */
  OCTET_FEATURE_BLOCK_QUANTIZE = 1u << 9,      /* block-scaled quantize and dequantize */
  OCTET_FEATURE_BLOCK_GEMM = 1u << 10,         /* GEMM with per-block scales */
  OCTET_FEATURE_NORM = 1u << 11,               /* LayerNorm/RMSNorm forward + backward */
  OCTET_FEATURE_ACTIVATION = 1u << 12,         /* GELU/SwiGLU forward + backward */
  OCTET_FEATURE_BIAS_GRADIENT = 1u << 13,      /* column sums of dy */
  OCTET_FEATURE_ACCUMULATE = 1u << 14,         /* y += x */
  OCTET_FEATURE_GEMM_FP8_OUTPUT = 1u << 15,    /* the GEMM encodes an FP8 D itself (else the
                                                  core composes FP32 GEMM + quantize) */
  /* Users' ABI 1.8: FP4 (E2M1 with MXFP4 / NVFP4 scales, numerics.md section 15). */
  OCTET_FEATURE_FP4_QUANTIZE = 1u << 18,        /* FP4 quantize and dequantize */
  OCTET_FEATURE_FP4_GEMM = 1u << 19,            /* GEMM of two FP4 operands */
  OCTET_FEATURE_STOCHASTIC_ROUNDING = 1u << 20, /* reproducible stochastic rounding (15.1) */
  OCTET_FEATURE_HADAMARD_TRANSFORM = 1u << 21,  /* random Hadamard transform (15.2) */
  /* Users' ABI 1.9: the backend runs a grouped GEMM in one call (else the
   * core runs its GEMM group by group, with the same results). */
  OCTET_FEATURE_GROUPED_GEMM = 1u << 22
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
  uint64_t alignment;      /* bytes Octet aligns its allocations to; wrapped
                              memory needs caller_alignment */
  /* Users' ABI 1.9 field. */
  uint64_t caller_alignment; /* bytes required of memory octet_tensor_wrap
                                and DLPack imports are given, besides the
                                element size (1: any element-aligned
                                address) */
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
                                 NULL: the backend's own. CUDA's default
                                 streams are non-NULL handles: pass
                                 cudaStreamLegacy or cudaStreamPerThread */
} octet_context_options;

/* Sets struct_size and the defaults: backend "auto", native profile, the
 * backend's own stream. */
OCTET_API octet_status octet_context_options_init(octet_context_options* options);

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
/* Memory a context holds, by category. Bytes are the sizes the
 * tensors need (elements x element size, scales included), not the
 * allocator's rounding; wrapped caller memory is not counted. */
typedef int32_t octet_memory_category;
enum {
  OCTET_MEMORY_USER_TENSORS = 0,      /* plain tensors created by the caller */
  OCTET_MEMORY_PARAMETERS = 1,        /* layer weights and biases (and their gradients) */
  OCTET_MEMORY_QUANTIZED_COPIES = 2,  /* FP8 codes, their scales, quantizer state */
  OCTET_MEMORY_SAVED_ACTIVATIONS = 3, /* what a forward keeps for its backward */
  OCTET_MEMORY_WORKSPACE = 4,         /* temporaries inside one call */
  OCTET_MEMORY_CATEGORY_COUNT = 5
};
#define OCTET_MEMORY_MAX_CATEGORIES 8

typedef struct octet_memory_stats {
  size_t struct_size;
  uint64_t current_bytes[OCTET_MEMORY_MAX_CATEGORIES]; /* indexed by category */
  uint64_t peak_bytes[OCTET_MEMORY_MAX_CATEGORIES];    /* since creation or reset */
  uint64_t current_total;
  uint64_t peak_total;  /* peak of the sum, not the sum of the peaks */
} octet_memory_stats;

OCTET_API octet_status octet_context_get_memory_stats(const octet_context* context,
                                                      octet_memory_stats* stats);
/* Sets every peak to the current value. */
OCTET_API octet_status octet_context_reset_peak_memory(octet_context* context);
/* "user tensors", "parameters", "quantized copies", "saved activations",
 * "workspace"; "invalid" otherwise. */
OCTET_API const char* octet_memory_category_name(int32_t category);

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
  OCTET_COMPONENT_AMAX = 4,
  /* Block-scaled tensors only (see octet_tensor_desc.scaling_mode):
   * the per-block scale_inv of the rowwise copy, grid
   * [ceil(rows/br), ceil(cols/bc)] row-major, and of the columnwise copy,
   * grid [ceil(cols/br), ceil(rows/bc)] (the columnwise copy is stored
   * transposed, [cols, rows], and blocked like a rowwise copy of x^T).
   * Elements are E8M0 codes (1 byte) for MXFP8, FP32 otherwise. */
  OCTET_COMPONENT_ROWWISE_SCALE_INV = 5,
  OCTET_COMPONENT_COLUMNWISE_SCALE_INV = 6
};

typedef struct octet_tensor_desc {
  size_t struct_size;
  int32_t dtype;              /* octet_dtype */
  int32_t ndim;               /* 1 .. OCTET_MAX_DIMS */
  int64_t shape[OCTET_MAX_DIMS];
  uint32_t usages;            /* FP8 only: 0 = plain codes, no scales;
                                 else OCTET_USAGE_* (a quantized tensor) */
  /* One OCTET_SCALING_* value for a quantized tensor; 0 (or a struct_size
   * that ends before this field) means OCTET_SCALING_PER_TENSOR.
   * Block modes: MXFP8_1X32 (1x32 blocks, E8M0 scales), BLOCK_1X128 (1x128,
   * FP32 scales), BLOCK_128X128 (128x128, FP32 scales); users' ABI 1.8:
   * PER_ROW (one FP32 scale per row of each stored copy) and PER_COLUMN
   * (one per column of the rowwise copy; numerics.md section 16), block
   * modes whose blocks span a whole row or column. A block-scaled
   * tensor has no SCALE / SCALE_INV components (its scales are per block,
   * ROWWISE_SCALE_INV / COLUMNWISE_SCALE_INV) but has AMAX; its columnwise
   * usage is always a separate copy quantized from the high-precision
   * tensor, even on a backend with native columnwise access. */
  int32_t scaling_mode;
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
  int32_t scaling_mode;       /* OCTET_SCALING_*; PER_TENSOR for plain tensors */
  int32_t block_rows;         /* block shape (1x1 for per-tensor and plain) */
  int32_t block_cols;
  int32_t scale_inv_dtype;    /* block modes: E8M0 or FP32; else FP32 */
  uint64_t rowwise_scale_inv_bytes;
  uint64_t columnwise_scale_inv_bytes;
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
 * the component's size exactly. A per-tensor quantized tensor's SCALE and
 * SCALE_INV are one pair: writing either (finite and > 0 with a finite
 * reciprocal; anything else is INVALID_ARGUMENT, naming the rule) stores it
 * and its FP32 reciprocal 1/x as the other, as octet_quantizer_set_scale
 * does, so dequantize (which reads SCALE_INV) and quantize (SCALE) never see
 * a stale half of the pair. */
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
  int32_t saturate; /* default 1 */
  /* Users' ABI 1.8 fields, FP4 outputs only (numerics.md section 15):
   * stochastic rounding with the random bits of (seed, offset) (the
   * columnwise copy uses offset + 1), and the random Hadamard transform of
   * the columnwise copy with the sign mask of seed. Default 0. */
  int32_t stochastic_rounding;
  int32_t hadamard_transform;
  uint64_t seed;
  uint64_t offset;
} octet_quantize_options;

/* Sets the defaults: usages 0, saturate 1, no stochastic rounding, no
 * transform, seed and offset 0. The exported octet_quantize_options_init
 * writes the users' ABI 1.0-1.7 struct only (usages, saturate); code
 * compiled against this header calls the sized form through the macro
 * (docs/abi.md, "Growing a struct that has an _init"). */
OCTET_API octet_status(octet_quantize_options_init)(octet_quantize_options* options);
OCTET_API octet_status octet_quantize_options_init_sized(octet_quantize_options* options, size_t struct_size);
#define octet_quantize_options_init(options) octet_quantize_options_init_sized((options), sizeof(*(options)))

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

/* octet_epilogue (OCTET_EPILOGUE_NONE, OCTET_EPILOGUE_GELU): octet_types.h. */

typedef struct octet_gemm_options {
  size_t struct_size;
  int32_t trans_a;         /* 0: A stored [M,K]; 1: A stored [K,M] */
  int32_t trans_b;         /* 0: B stored [N,K]; 1: B stored [K,N] */
  float alpha;             /* default 1 */
  float beta;              /* default 0; beta == 0 ignores D's old contents */
  const octet_tensor* bias; /* optional, N elements, FP32/BF16/FP16 */
  int32_t epilogue;        /* octet_epilogue; default NONE */
  /* Users' ABI 1.4 fields: they start past the 40 bytes (LP64) of the
   * 1.0-1.3 struct, never in its tail padding, which callers built against
   * 1.0-1.3 leave unset. */
  int32_t reserved_padding;  /* ignored */
  int32_t fast_accumulation; /* default 0. 1 allows the backend to accumulate
                                FP8 products with reduced precision (Hopper's
                                fast accumulation); the result is then not
                                held to numerics.md's GEMM bound. Backends
                                that have no such mode ignore it. */
  int32_t saturate_output;   /* FP8 D only; default 1: values beyond the
                                format's range become +-max, else NaN/inf
                                (numerics.md section 2) */
} octet_gemm_options;

/* Sets struct_size and the defaults: no transposes, alpha 1, beta 0, no bias,
 * no epilogue, exact accumulation, saturating FP8 output. A zeroed struct
 * would mean alpha = 0.
 * octet_gemm_options_init_sized writes min(struct_size, the library's size)
 * bytes and sets struct_size to that: the caller's sizeof, so a struct from
 * an older header is never overrun. The exported octet_gemm_options_init
 * writes the users' ABI 1.0-1.3 struct only: it is the entry point of
 * binaries built against those minors; code compiled against this header
 * calls the sized form through the macro below (docs/abi.md, "Growing a
 * struct that has an _init"). */
OCTET_API octet_status (octet_gemm_options_init)(octet_gemm_options* options);
OCTET_API octet_status octet_gemm_options_init_sized(octet_gemm_options* options, size_t struct_size);
#define octet_gemm_options_init(options) \
  octet_gemm_options_init_sized((options), sizeof(*(options)))

/* D[m,n] = alpha * sa * sb * sum_k A'[m,k] * B'[n,k] + beta * D[m,n] + bias[n]
 * where A' is A or A^T per trans_a, likewise B' (note: the canonical layout
 * keeps B as [N,K], the way a Linear stores its weight). A and B are both
 * FP8 (sa, sb their SCALE_INV; 1 for plain codes) or both FP32/BF16/FP16
 * (sa = sb = 1). D is FP32, BF16 or FP16, shape [M,N]. For a quantized
 * operand used transposed the core picks the columnwise usage: the backend's
 * native columnwise access or the transposed copy, per its capabilities.
 * Block-scaled operands (numerics.md section 12) are read as their
 * K-contiguous copies with their per-block scales inside the sum; per-row
 * and per-column ones (users' ABI 1.8, numerics.md section 16) give
 * D[m,n] = alpha * (sum_k A'[m,k] * B'[n,k]) * sa[m] * sb[n], the scales
 * applied in the epilogue (a per-column operand only used transposed).
 * FP8 output: D may be a per-tensor quantized FP8 tensor
 * (usages != 0, per-tensor scaling) when beta = 0 and neither operand is
 * block-scaled. With r the FP32 value an FP32 D would hold
 * before rounding, every stored usage of D receives fp8(r * SCALE) (D's
 * SCALE component, numerics.md section 2, saturating per
 * options->saturate_output), SCALE_INV = 1/SCALE and AMAX = max |r| (NaN
 * ignored), exactly as octet_quantize of an FP32 tensor holding r. */
OCTET_API octet_status octet_gemm(octet_context* context, const octet_tensor* a,
                                  const octet_tensor* b, octet_tensor* d,
                                  const octet_gemm_options* options);

/* ---- Grouped GEMMs (users' ABI 1.9; docs/grouped_gemm.md) ----
 * One call runs G independent GEMMs, one per group (the experts of a
 * mixture-of-experts layer): group g computes exactly what octet_gemm
 * computes on that group's operands, bit for bit. The groups split one
 * dimension of the products:
 *   OCTET_GROUP_SPLIT_M  the rows M (forward D = X W_g^T and dgrad
 *                        dX = dY W_g): group g owns splits[g] rows of
 *                        op(A) and of D; each group has its own B.
 *   OCTET_GROUP_SPLIT_K  the inner dimension K (wgrad dW_g = dY_g^T X_g):
 *                        group g owns splits[g] of K in op(A) and op(B);
 *                        each group has its own D.
 * Each of a, b and d is given either as group_count tensors (one per group,
 * each with its own scales) or as one tensor (count 1) that the groups
 * share:
 *   - an operand split by the groups (A under both splits, B under
 *     SPLIT_K, D under SPLIT_M) is stacked along the split dimension: the
 *     groups' extents follow one another in order, and sum(splits) is the
 *     tensor's extent. Its scales are the stacked tensor's: per-tensor
 *     scales are shared; a block-scaled one needs every group to start on a
 *     block boundary of the copy the GEMM reads (any start for MXFP8, 1x128,
 *     per-row and per-column blocks along M; a multiple of the block extent
 *     for 128x128 along M and for every block along K), else the call is
 *     refused naming the group: pass that operand one tensor per group.
 *   - the other operand (B under SPLIT_M, D under SPLIT_K) is a 3-D tensor
 *     [group_count, r, c] holding group g's [r, c] matrix at index g.
 * splits[g] >= 0; zero-row groups and splits of any size are allowed.
 * A and B are both FP8 (any scaling mode octet_gemm takes), both FP4 or
 * both FP32/BF16/FP16; D is FP32, BF16 or FP16 (no FP8 output). */
enum { OCTET_GROUP_SPLIT_M = 0, OCTET_GROUP_SPLIT_K = 1 };

typedef struct octet_grouped_gemm_options {
  size_t struct_size;
  int32_t trans_a; /* as octet_gemm_options, for every group */
  int32_t trans_b;
  float alpha;               /* default 1 */
  float beta;                /* default 0 */
  int32_t split;             /* OCTET_GROUP_SPLIT_*; default M */
  int32_t epilogue;          /* octet_epilogue; default NONE */
  int32_t fast_accumulation; /* default 0; as octet_gemm_options */
  int32_t reserved;          /* must be 0 */
  /* NULL, or group_count bias vectors (N elements each; an entry may be
   * NULL: that group has no bias). */
  const octet_tensor* const* bias;
} octet_grouped_gemm_options;

/* Sets struct_size and the defaults above (a zeroed struct would mean
 * alpha = 0); writes min(struct_size, the library's size) bytes. */
OCTET_API octet_status octet_grouped_gemm_options_init_sized(octet_grouped_gemm_options* options, size_t struct_size);
#define octet_grouped_gemm_options_init(options) octet_grouped_gemm_options_init_sized((options), sizeof(*(options)))

/* For g = 0 .. group_count - 1:
 *   D_g = alpha * op(A_g) op(B_g)^T + beta * D_g + bias_g, then the epilogue,
 * with A_g, B_g and D_g the group's operands as described above; a_count,
 * b_count and d_count are each 1 or group_count. group_count >= 1. Every
 * group's arguments are checked before any group is computed: a call
 * refused for its arguments leaves every D untouched. */
OCTET_API octet_status octet_grouped_gemm(octet_context* context, size_t group_count, const int64_t* splits,
                                          const octet_tensor* const* a, size_t a_count, const octet_tensor* const* b,
                                          size_t b_count, octet_tensor* const* d, size_t d_count,
                                          const octet_grouped_gemm_options* options);

/* ------------------------------------------------------------------------ */
/* Numerics statistics                                                       */
/* ------------------------------------------------------------------------ */

/* Counts over the input elements of one quantize call (docs/numerics.md,
 * "Statistics"). A value x, scaled to y = x * scale (per-tensor) or
 * y = x / X (MXFP8) or y = x * block_scale (1x128, 128x128):
 *   nan_count       x is NaN
 *   saturated_count x is not NaN and the non-saturating conversion of y
 *                   would overflow (E4M3 |y| > 464, E5M2 |y| >= 61440, or
 *                   y infinite): the code was clamped to +-max normal
 *   flushed_count   x is finite and non-zero but its code is +-0
 *   amax            max |x| (NaN ignored), as octet_amax
 *   total_count     number of elements */
typedef struct octet_quantize_stats {
  size_t struct_size;
  uint64_t nan_count;
  uint64_t saturated_count;
  uint64_t flushed_count;
  uint64_t total_count;
  float amax;
} octet_quantize_stats;

/* octet_quantize plus statistics of the call into *stats (required). Needs
 * the backend's statistics kernel (OCTET_FEATURE_QUANTIZE_STATISTICS). For a
 * block-scaled output the counts come from the rowwise pass when it is
 * requested, else from the columnwise pass. */
OCTET_API octet_status octet_quantize_with_stats(octet_context* context,
                                                 const octet_tensor* input,
                                                 octet_tensor* output,
                                                 const octet_quantize_options* options,
                                                 octet_quantize_stats* stats);

/* ------------------------------------------------------------------------ */
/* Scaling recipes (docs/recipes.md)                                         */
/* ------------------------------------------------------------------------ */

/* A recipe says how scales are chosen; it is immutable once created and may
 * be shared by any number of quantizers, contexts and threads. */
typedef struct octet_recipe octet_recipe;

typedef int32_t octet_recipe_kind;
enum {
  OCTET_RECIPE_DELAYED = 0, /* scale from an amax history (numerics.md 14.2) */
  OCTET_RECIPE_CURRENT = 1, /* scale from this tensor's amax (numerics.md 14.1) */
  OCTET_RECIPE_STATIC = 2,  /* fixed scale, the clip path (docs/recipes.md) */
  OCTET_RECIPE_MXFP8 = 3,   /* 1x32 blocks, E8M0 scales (numerics.md section 11) */
  OCTET_RECIPE_BLOCK = 4,   /* 1x128 / 128x128 blocks, FP32 scales (numerics.md section 11) */
  OCTET_RECIPE_ROWWISE = 5, /* per-row FP32 scales (numerics.md section 16), users' ABI 1.8 */
  OCTET_RECIPE_MXFP4 = 6,   /* E2M1, 1x32 blocks, E8M0 scales (numerics.md section 15) */
  OCTET_RECIPE_NVFP4 = 7    /* E2M1, 1x16 / 16x16 E4M3 scales + FP32 (numerics.md section 15) */
};

/* FP8 formats a recipe uses. HYBRID: E4M3 for the input and weight roles,
 * E5M2 for the gradient role. The FNUZ formats (users' ABI 1.7) are the same
 * with OCTET_DTYPE_E4M3FNUZ / _E5M2FNUZ; MXFP8 takes OCP formats only. A
 * recipe is refused with OCTET_STATUS_UNSUPPORTED, naming the dtype and the
 * backend, where it meets a backend that does not declare one of its dtypes
 * or scaling modes (octet_autocast_begin, octet_layer_create_*,
 * octet_quantizer_quantize). */
typedef int32_t octet_fp8_format;
enum {
  OCTET_FORMAT_E4M3 = 0,
  OCTET_FORMAT_E5M2 = 1,
  OCTET_FORMAT_HYBRID = 2,
  OCTET_FORMAT_E4M3FNUZ = 3,
  OCTET_FORMAT_E5M2FNUZ = 4,
  OCTET_FORMAT_HYBRID_FNUZ = 5
};

/* Tensor roles of a quantizer. */
typedef int32_t octet_tensor_role;
enum { OCTET_ROLE_INPUT = 0, OCTET_ROLE_WEIGHT = 1, OCTET_ROLE_GRADIENT = 2 };

typedef int32_t octet_amax_compute_algo;
enum {
  OCTET_AMAX_MOST_RECENT = 0, /* this step's amax */
  OCTET_AMAX_MAX = 1,         /* max over the history window (NaN ignored) */
  OCTET_AMAX_CALLBACK = 2     /* amax_compute_callback */
};

/* User callback choosing the amax from the history. history[0] is the
 * current step's amax, history[i] the amax i steps earlier (0 for steps not
 * yet seen); length = amax_history_len. Write *amax and return SUCCESS; any
 * other status aborts the scale update with that status. */
typedef octet_status (*octet_amax_compute_fn)(const float* history, size_t length,
                                              float* amax, void* user_data);
/* User callback replacing steps 2-4 of numerics.md 14.2: the new scale from the
 * chosen amax, the previous scale, the format's max and the margin. */
typedef octet_status (*octet_scale_compute_fn)(float amax, float old_scale,
                                               float fp8_max, int32_t margin,
                                               float* new_scale, void* user_data);

/* Delayed scaling. Fields inside struct_size are taken as given (0 is not
 * "default"): start from octet_delayed_scaling_options_init. Defaults:
 * margin 0, interval 1, format HYBRID, amax_history_len 1024, algo MAX,
 * no callbacks, power_of_two_scales 0, overrides 0, reduce_amax 1. */
typedef struct octet_delayed_scaling_options {
  size_t struct_size;
  int32_t margin;              /* >= 0: scale = fp8_max * 2^-margin / amax */
  int32_t interval;            /* >= 1: recompute the scale every N updates */
  int32_t format;              /* E4M3, HYBRID or their FNUZ twins (E5M2 and
                                  E5M2FNUZ alone are refused) */
  int32_t amax_history_len;    /* >= 1 */
  int32_t amax_compute_algo;   /* octet_amax_compute_algo */
  octet_amax_compute_fn amax_compute_callback; /* for OCTET_AMAX_CALLBACK */
  void* amax_compute_user_data;
  octet_scale_compute_fn scale_compute_callback; /* NULL: numerics.md 14.2 */
  void* scale_compute_user_data;
  int32_t power_of_two_scales; /* 1: scale = 2^(floor(log2(fp8_max/amax)) - margin) */
  int32_t override_fprop;      /* 1: run that GEMM of a Linear in high precision */
  int32_t override_dgrad;
  int32_t override_wgrad;
  int32_t reduce_amax;         /* 1: all-reduce (MAX) amaxes through the
                                  context's communicator before an update */
} octet_delayed_scaling_options;

/* Current scaling. Defaults: format HYBRID, amax_epsilon 0, power_of_two 0,
 * reduce_amax 0. */
typedef struct octet_current_scaling_options {
  size_t struct_size;
  int32_t format;              /* any octet_fp8_format */
  float amax_epsilon;          /* >= 0: amax = max(amax, epsilon) */
  int32_t power_of_two_scales; /* 1: round the scale down to a power of two */
  /* Users' ABI 1.5 fields: they start past the 24 bytes (LP64) of the
   * 1.1-1.4 struct, never in its tail padding, which callers built against
   * 1.1-1.4 leave unset. */
  int32_t reserved_padding;    /* ignored */
  int32_t reduce_amax;         /* 1: before each quantize, all-reduce (MAX) the
                                  tensor's amax through the context's
                                  communicator (if one is set), so every
                                  process uses the same scale: one
                                  allreduce_max call of count 1 per quantize,
                                  which every process must make in the same
                                  order (docs/recipes.md) */
} octet_current_scaling_options;

/* Static scaling (the clip path). Defaults: format HYBRID, scale 1,
 * observe 0. With observe = 1 every quantize through a quantizer of this
 * recipe also counts saturated values (needs the statistics kernel); see
 * octet_quantizer_info.observed_*. */
typedef struct octet_static_scaling_options {
  size_t struct_size;
  int32_t format;              /* any octet_fp8_format */
  float scale;                 /* finite, > 0 */
  int32_t observe;
} octet_static_scaling_options;

/* MXFP8. Defaults: format E4M3, rounding RCEIL. */
typedef int32_t octet_mx_rounding;
enum { OCTET_MX_ROUND_RCEIL = 0, OCTET_MX_ROUND_FLOOR = 1 };
typedef struct octet_mxfp8_options {
  size_t struct_size;
  int32_t format;              /* E4M3, E5M2 or HYBRID (OCP formats only) */
  int32_t rounding;            /* octet_mx_rounding */
} octet_mxfp8_options;

/* Float8 block scaling: 1x128 blocks for the input and gradient roles,
 * 128x128 for the weight role. Defaults: format E4M3, amax_epsilon 0,
 * power_of_two_scales 0. */
typedef struct octet_block_scaling_options {
  size_t struct_size;
  int32_t format;              /* any octet_fp8_format */
  float amax_epsilon;          /* >= 0 */
  int32_t power_of_two_scales;
} octet_block_scaling_options;

/* Rowwise (axiswise) scaling, torchao's "rowwise" recipes (users' ABI 1.8):
 * every role quantized OCTET_SCALING_PER_ROW, so each GEMM operand has one
 * FP32 scale per row of the copy it reads (numerics.md section 16).
 * Defaults, torchao's: format E4M3, amax_epsilon 1e-12, power_of_two_scales
 * 1, high_precision_wgrad 0. high_precision_wgrad = 1 is torchao's
 * "rowwise_with_gw_hp": a Linear's weight-gradient GEMM runs in high
 * precision (its dgrad and forward GEMMs stay per-row FP8); the recipe's
 * octet_recipe_info reports it as override_wgrad = 1. */
typedef struct octet_rowwise_scaling_options {
  size_t struct_size;
  int32_t format;               /* any octet_fp8_format */
  float amax_epsilon;           /* >= 0: a row's amax = max(amax, epsilon) */
  int32_t power_of_two_scales;  /* 1: round each row's scale down to a power of two */
  int32_t high_precision_wgrad; /* 1: the wgrad GEMM in high precision */
} octet_rowwise_scaling_options;

/* MXFP4 (users' ABI 1.8; numerics.md section 15): E2M1 with one E8M0 scale
 * per 1x32 block, every role. Defaults: rounding RCEIL, no stochastic
 * rounding, seed 0. */
typedef struct octet_mxfp4_options {
  size_t struct_size;
  int32_t rounding;            /* octet_mx_rounding */
  int32_t stochastic_rounding; /* 1: the gradient role rounds stochastically */
  uint64_t seed;               /* of the random bits (numerics.md 15.1) */
} octet_mxfp4_options;

/* NVFP4 (users' ABI 1.8; numerics.md section 15), Transformer Engine's
 * recipe: E2M1 with one E4M3 scale per 1x16 block and one FP32 scale per
 * tensor. Defaults: weight_2d 1, stochastic_rounding 1, hadamard_transform
 * 1, seed 0. */
typedef struct octet_nvfp4_options {
  size_t struct_size;
  int32_t weight_2d;           /* 1: 16x16 blocks for the weight role, else 1x16 */
  int32_t stochastic_rounding; /* 1: the gradient role rounds stochastically */
  int32_t hadamard_transform;  /* 1: the random Hadamard transform of the
                                  columnwise copies of the input and gradient
                                  roles (the weight-gradient GEMM's operands),
                                  for tensors whose row count is a multiple
                                  of 16 */
  int32_t reserved;            /* 0 */
  uint64_t seed;               /* of the random bits and the transform's signs */
} octet_nvfp4_options;

/* Fill *options with the defaults (struct_size set to sizeof). */
OCTET_API octet_status octet_mxfp4_options_init(octet_mxfp4_options* options);
OCTET_API octet_status octet_nvfp4_options_init(octet_nvfp4_options* options);
OCTET_API octet_status octet_delayed_scaling_options_init(octet_delayed_scaling_options* options);
OCTET_API octet_status (octet_current_scaling_options_init)(octet_current_scaling_options* options);
OCTET_API octet_status octet_static_scaling_options_init(octet_static_scaling_options* options);
OCTET_API octet_status octet_mxfp8_options_init(octet_mxfp8_options* options);
OCTET_API octet_status octet_block_scaling_options_init(octet_block_scaling_options* options);
OCTET_API octet_status octet_rowwise_scaling_options_init(octet_rowwise_scaling_options* options);

/* The exported octet_current_scaling_options_init writes the users' ABI
 * 1.1-1.4 struct only: it is the entry point of binaries built against those
 * minors; code compiled against this header calls the sized form, which
 * writes min(struct_size, the library's size) bytes, through the macro below
 * (docs/abi.md, "Growing a struct that has an _init"). */
OCTET_API octet_status octet_current_scaling_options_init_sized(octet_current_scaling_options* options,
                                                                size_t struct_size);
#define octet_current_scaling_options_init(options) \
  octet_current_scaling_options_init_sized((options), sizeof(*(options)))

/* options NULL: the defaults. A bad option gives INVALID_ARGUMENT naming it. */
OCTET_API octet_status octet_recipe_create_delayed(const octet_delayed_scaling_options* options,
                                                   octet_recipe** recipe);
OCTET_API octet_status octet_recipe_create_current(const octet_current_scaling_options* options,
                                                   octet_recipe** recipe);
OCTET_API octet_status octet_recipe_create_static(const octet_static_scaling_options* options,
                                                  octet_recipe** recipe);
OCTET_API octet_status octet_recipe_create_mxfp8(const octet_mxfp8_options* options,
                                                 octet_recipe** recipe);
OCTET_API octet_status octet_recipe_create_block(const octet_block_scaling_options* options,
                                                 octet_recipe** recipe);
OCTET_API octet_status octet_recipe_create_rowwise(const octet_rowwise_scaling_options* options, octet_recipe** recipe);
/* FP4 recipes (users' ABI 1.8). Their quantizers keep a stream counter for
 * stochastic rounding, saved in checkpoints (docs/recipes.md). */
OCTET_API octet_status octet_recipe_create_mxfp4(const octet_mxfp4_options* options, octet_recipe** recipe);
OCTET_API octet_status octet_recipe_create_nvfp4(const octet_nvfp4_options* options, octet_recipe** recipe);
OCTET_API void octet_recipe_destroy(octet_recipe* recipe);

typedef struct octet_recipe_info {
  size_t struct_size;
  int32_t kind;                /* octet_recipe_kind */
  int32_t format;              /* octet_fp8_format; -1 for the FP4 recipes (E2M1) */
  int32_t override_fprop;      /* delayed scaling (and override_wgrad of a
                                  rowwise recipe with high_precision_wgrad);
                                  else 0 */
  int32_t override_dgrad;
  int32_t override_wgrad;
} octet_recipe_info;
OCTET_API octet_status octet_recipe_get_info(const octet_recipe* recipe, octet_recipe_info* info);
/* The dtype (an FP8 dtype) and scaling mode (OCTET_SCALING_*) a tensor of
 * `role` takes under the recipe: what to create quantized outputs with. */
OCTET_API octet_status octet_recipe_tensor_format(const octet_recipe* recipe, int32_t role,
                                                  int32_t* dtype, int32_t* scaling_mode);

/* ------------------------------------------------------------------------ */
/* Quantizers: scaling state of one tensor role                              */
/* ------------------------------------------------------------------------ */

/* A quantizer holds the state of one role: amax history, scale, scale_inv,
 * update count, and (static recipe) observations. It is not tied to a
 * context: its state is portable across backends. Recipe NULL: the
 * quantizer follows the innermost autocast scope of the context it
 * quantizes on (and fails outside any scope). Delayed and current scaling
 * keep the state, and run the scale update, in the backend's memory where
 * the backend has the scaling kernels (the reference, cuda), else on the
 * host; reads and writes through these functions see the same values either
 * way (docs/recipes.md, "Where the scaling state lives"). */
typedef struct octet_quantizer octet_quantizer;

OCTET_API octet_status octet_quantizer_create(const octet_recipe* recipe, int32_t role,
                                              octet_quantizer** quantizer);
OCTET_API void octet_quantizer_destroy(octet_quantizer* quantizer);

/* Quantizes input into output with the quantizer's recipe: delayed and
 * static use the stored scale; current scaling computes the scale from the
 * input's amax first (all-reduced across processes with reduce_amax and a
 * communicator); MXFP8 and block recipes scale per block. The output's
 * dtype and scaling mode must be those of octet_recipe_tensor_format. The
 * input's amax is recorded (delayed: into the current history slot, as the
 * max with what the step recorded so far). stats may be NULL. */
OCTET_API octet_status octet_quantizer_quantize(octet_context* context,
                                                octet_quantizer* quantizer,
                                                const octet_tensor* input,
                                                octet_tensor* output,
                                                const octet_quantize_options* options,
                                                octet_quantize_stats* stats);
/* Records an amax measured elsewhere, as a quantize would: max with what the
 * step recorded so far; NaN is ignored; a negative amax is INVALID_ARGUMENT. */
OCTET_API octet_status octet_quantizer_record_amax(octet_quantizer* quantizer, float amax);
/* Applies the recipe's scale update (delayed scaling: numerics.md 14.2, then
 * advances the history window; other recipes: nothing to do). Uses the
 * quantizer's recipe, or the one it was last used with. */
OCTET_API octet_status octet_quantizer_update_scale(octet_quantizer* quantizer);
/* Sets the scale (and scale_inv = 1/scale): initialising the state. */
OCTET_API octet_status octet_quantizer_set_scale(octet_quantizer* quantizer, float scale);

typedef struct octet_quantizer_info {
  size_t struct_size;
  int32_t role;
  int32_t recipe_kind;         /* -1 while it follows autocast and was never used */
  float scale;
  float scale_inv;
  float amax;                  /* the current step's recorded amax */
  uint32_t amax_history_len;
  uint64_t update_count;       /* scale updates applied so far */
  float observed_amax;         /* static recipe with observe: max amax seen */
  uint64_t observed_saturated; /* values that saturated, over all calls */
  uint64_t observed_total;     /* values quantized, over all calls */
  double saturated_fraction;   /* observed_saturated / observed_total (0 if none) */
} octet_quantizer_info;
OCTET_API octet_status octet_quantizer_get_info(const octet_quantizer* quantizer,
                                                octet_quantizer_info* info);
/* Copies the history, newest first (history[0] = current step), into out;
 * length must equal amax_history_len. */
OCTET_API octet_status octet_quantizer_get_amax_history(const octet_quantizer* quantizer,
                                                        float* out, size_t length);

/* Checkpointing. octet_quantizer_save with buffer NULL writes the needed size
 * to *size; else capacity must be >= that size. The bytes are
 * little-endian, versioned and checksummed (docs/recipes.md), and load into a
 * quantizer of the same role, recipe kind and history length on any backend
 * and any library with the same users' ABI major. */
OCTET_API octet_status octet_quantizer_save(const octet_quantizer* quantizer, void* buffer,
                                            size_t capacity, size_t* size);
OCTET_API octet_status octet_quantizer_load(octet_quantizer* quantizer, const void* buffer,
                                            size_t size);

/* ------------------------------------------------------------------------ */
/* Autocast scopes and the communicator                                      */
/* ------------------------------------------------------------------------ */

/* Reductions of the collectives (users' ABI 1.7). */
typedef int32_t octet_reduce_op;
enum { OCTET_REDUCE_SUM = 0, OCTET_REDUCE_MAX = 1 };

/* Bits of octet_communicator.memory_kinds (users' ABI 1.7): the memories its
 * collectives' buffers may be in (an octet_memory_kind k is bit 1 << k). */
enum { OCTET_COMM_HOST_MEMORY = 1, OCTET_COMM_DEVICE_MEMORY = 2 };

/* Cross-process communication the caller provides (over MPI: octet_mpi.h;
 * NCCL: docs/distributed.md). Every process makes the same calls, with the
 * same counts and dtypes, in the same order.
 *
 * allreduce_max (required) replaces values[0..count) (host memory) by the
 * element-wise maximum over all processes: the amax reductions of recipes
 * with reduce_amax.
 *
 * Users' ABI 1.7 appends the collectives on buffers that octet_allreduce,
 * octet_allgather and octet_reduce_scatter run (docs/abi.md,
 * "Communicators"); a struct_size of 24 (LP64, users' ABI 1.0-1.6) leaves
 * them all absent. Each may be NULL (the entry points that need it answer
 * UNSUPPORTED naming it); any of them set needs `wait`, rank, size and
 * memory_kinds. A collective only starts: it returns SUCCESS with *request
 * set (any value, NULL included) and the operation in flight, and the core
 * later calls wait(request) exactly once, after which recv holds the
 * result; a failing start has nothing in flight and is not waited on. The
 * core does not touch send or recv between the start and the wait. send
 * and recv are in the memory of the context's backend (device memory for a
 * device backend; its queued work has finished before a start), hold
 * `dtype` elements (octet_dtype; reductions: FP32, BF16, FP16) and never
 * overlap, except allreduce in place (send == recv). */
typedef struct octet_communicator {
  size_t struct_size;
  octet_status (*allreduce_max)(float* values, size_t count, void* user_data);
  void* user_data;
  /* Users' ABI 1.7 fields: they start at the 1.0-1.6 struct's size. */
  int32_t rank;             /* this process, 0 .. size-1 */
  int32_t size;             /* processes taking part, >= 1 */
  uint32_t memory_kinds;    /* OCTET_COMM_*_MEMORY bits */
  int32_t reserved_padding; /* ignored */
  /* recv[i] = op over processes of send[i], i < count. */
  octet_status (*allreduce)(const void* send, void* recv, size_t count, int32_t dtype, int32_t op, void** request,
                            void* user_data);
  /* recv[p * send_count .. (p+1) * send_count) = process p's send. */
  octet_status (*allgather)(const void* send, void* recv, size_t send_count, int32_t dtype, void** request,
                            void* user_data);
  /* recv[i] = op over processes of their send[rank * recv_count + i]. */
  octet_status (*reduce_scatter)(const void* send, void* recv, size_t recv_count, int32_t dtype, int32_t op,
                                 void** request, void* user_data);
  /* Completes one started collective; a failure is its status. */
  octet_status (*wait)(void* request, void* user_data);
} octet_communicator;

/* Sets (or, with NULL, removes) the context's communicator. The struct is
 * copied (min(struct_size, sizeof) bytes); user_data must stay valid while
 * it is set. */
OCTET_API octet_status octet_context_set_communicator(octet_context* context,
                                                      const octet_communicator* communicator);

/* Collectives on tensors through the context's communicator (users' ABI
 * 1.7; docs/distributed.md). Every process calls them in the same order with
 * the same shapes and dtypes. Checked before anything is sent: a
 * communicator is set and has the entry (else UNSUPPORTED naming it), the
 * tensors are on the context, in a memory the communicator takes, and fit:
 *
 * octet_allreduce: output = op over processes of input; same shape and
 * dtype (FP32, BF16 or FP16), plain; output may be input (in place).
 *
 * octet_allgather: input [r, ...] -> output [size * r, ...] (process p's
 * rows at p * r), same trailing dims and dtype. Plain tensors of any dtype,
 * or per-tensor quantized ones (rowwise copy only): the FP8 codes are
 * gathered, every process must have quantized with the same scale (checked
 * by one allreduce_max; INVALID_ARGUMENT naming the differing scales
 * otherwise), and the output gets that scale and the maximum AMAX.
 *
 * octet_reduce_scatter: input [size * r, ...] -> output [r, ...]: the
 * op over processes of rows [rank * r, (rank+1) * r) of input; FP32, BF16
 * or FP16, plain.
 *
 * On failure the output holds what it held before the call unless the
 * communicator failed after it started writing (then its status, and a
 * message saying the output is undefined). */
OCTET_API octet_status octet_allreduce(octet_context* context, const octet_tensor* input, octet_tensor* output,
                                       int32_t op);
OCTET_API octet_status octet_allgather(octet_context* context, const octet_tensor* input, octet_tensor* output);
OCTET_API octet_status octet_reduce_scatter(octet_context* context, const octet_tensor* input, octet_tensor* output,
                                            int32_t op);

/* What a context has sent through its communicator (users' ABI 1.7): calls
 * and bytes this process contributed (the send buffers; for allreduce_max,
 * 4 bytes per amax), per kind of collective, since creation or reset. */
typedef int32_t octet_collective_kind;
enum {
  OCTET_COLLECTIVE_AMAX = 0, /* allreduce_max of amaxes (and scale checks) */
  OCTET_COLLECTIVE_ALLREDUCE = 1,
  OCTET_COLLECTIVE_ALLGATHER = 2,
  OCTET_COLLECTIVE_REDUCE_SCATTER = 3,
  OCTET_COLLECTIVE_KIND_COUNT = 4
};
#define OCTET_COLLECTIVE_MAX_KINDS 8
typedef struct octet_communication_stats {
  size_t struct_size;
  uint64_t calls[OCTET_COLLECTIVE_MAX_KINDS]; /* indexed by octet_collective_kind */
  uint64_t bytes_sent[OCTET_COLLECTIVE_MAX_KINDS];
} octet_communication_stats;
OCTET_API octet_status octet_context_get_communication_stats(const octet_context* context,
                                                             octet_communication_stats* stats);
OCTET_API octet_status octet_context_reset_communication_stats(octet_context* context);

/* Opens a scope using `recipe` (kept alive by the scope). Scopes nest; the
 * innermost one is in effect for its span. At the end of the outermost scope
 * the quantizers used in it (in the order of their first use) get their
 * delayed-scaling update: the current amaxes of those whose recipe has
 * reduce_amax are all-reduced (MAX) through the communicator, if one is set,
 * in one call; then every scale is updated. */
OCTET_API octet_status octet_autocast_begin(octet_context* context, const octet_recipe* recipe);
OCTET_API octet_status octet_autocast_end(octet_context* context);
/* Depth of nesting (0 outside any scope) and the recipe in effect (NULL
 * outside; the pointer stays valid while the scope is open). */
OCTET_API octet_status octet_autocast_get_state(const octet_context* context, int32_t* depth,
                                                const octet_recipe** recipe);


/* ------------------------------------------------------------------------ */
/* Layers: Linear, LayerNormLinear, LayerNormMLP (docs/layers.md)            */
/* ------------------------------------------------------------------------ */

/* A layer owns its parameters (and their gradients) on one context, and per
 * GEMM-bearing sub-layer ("linear") three quantizers: input, weight and
 * gradient roles. Precision at each forward: the layer's own recipe if it was
 * created with one, else the innermost autocast scope's recipe on the
 * context, else high precision (plain GEMMs in the parameter dtype with FP32
 * accumulation). Every recipe kind works: delayed, current, static, MXFP8
 * and 1x128/128x128 blocks; a backend lacking a scaling mode or kernel the
 * recipe needs answers UNSUPPORTED.
 *
 * Shapes: input [..., in_features] (any ndim, rows = product of the leading
 * dims), output [..., out_features] with the same leading dims. Input,
 * output and gradients have the parameter dtype (FP32 or BF16).
 *
 * Lifetimes: a layer keeps its context alive. A saved handle keeps what it
 * saved alive (it may outlive its layer, but backward needs the layer). The
 * tensors handed out by get_parameter / get_gradient are borrowed: valid
 * until the layer is destroyed; do not destroy them.
 * Thread safety: as tensors: one thread at a time per context (a layer and
 * its saved handles count as the context's). */
typedef struct octet_layer octet_layer;
typedef struct octet_saved octet_saved;

/* Kinds of a layer's normalisation and activation: octet_norm_kind
 * (OCTET_NORM_*) and octet_activation_kind (OCTET_ACTIVATION_*), in
 * octet_types.h. The OCTET_LAYER_* names are aliases of those values, kept
 * for source compatibility. */
enum { OCTET_LAYER_LAYERNORM = OCTET_NORM_LAYERNORM, OCTET_LAYER_RMSNORM = OCTET_NORM_RMSNORM };
enum { OCTET_LAYER_GELU = OCTET_ACTIVATION_GELU, OCTET_LAYER_SWIGLU = OCTET_ACTIVATION_SWIGLU };

/* How parameters are held. */
typedef int32_t octet_weight_storage;
enum {
  OCTET_WEIGHTS_HIGH_PRECISION = 0, /* params_dtype parameters (master weights in
                                       the model), quantized before FP8 GEMMs */
  OCTET_WEIGHTS_FP8_ONLY = 1        /* inference: the weight matrices are stored
                                       quantized (no high-precision copy); needs
                                       a recipe at creation; forward with
                                       training = 0 only */
};

/* Options shared by every layer kind (the first fields of each options
 * struct). Defaults from the _init functions. */
typedef struct octet_linear_options {
  size_t struct_size;
  int64_t in_features;        /* required, >= 1 (init: 0) */
  int64_t out_features;       /* required, >= 1 (init: 0) */
  int32_t bias;               /* 1: with bias (default 1) */
  int32_t params_dtype;       /* OCTET_DTYPE_FP32 or OCTET_DTYPE_BF16 (default FP32) */
  int32_t weight_storage;     /* octet_weight_storage (default HIGH_PRECISION) */
  const octet_recipe* recipe; /* NULL (default): autocast scope or high precision.
                                 Kept alive by the layer. */
  int32_t save_original_input; /* 1: forward keeps a reference to the caller's
                                  high-precision input (which must then stay
                                  alive and unchanged until backward or
                                  octet_saved_destroy) instead of an FP8 copy,
                                  and quantizes it again in backward */
  int32_t minimize_memory;    /* 1: do not keep the FP8 weight between forward
                                 and backward; quantize it again in backward */
  int32_t weight_cache;       /* 1: quantize each weight once per step
                                 (octet_layer_new_step) and reuse it for every
                                 micro-batch */
  int32_t skip_weight_allocation; /* 1: no weight matrix is allocated; give one
                                     with octet_layer_set_weight before forward */
} octet_linear_options;

/* LayerNorm/RMSNorm over the last dimension, then Linear. The normalisation
 * output is quantized in the same pass where the recipe's scale is known
 * (delayed, static). save_original_input does not apply (must be 0). */
typedef struct octet_layernorm_linear_options {
  size_t struct_size;
  const octet_linear_options* linear; /* required (read during create only);
                                         in_features = normalized size */
  int32_t norm;               /* octet_norm_kind (default LAYERNORM) */
  float epsilon;              /* default 1e-5 */
} octet_layernorm_linear_options;

/* norm, FC1 (hidden -> ffn, or -> 2*ffn for SwiGLU), activation, FC2
 * (ffn -> hidden). */
typedef struct octet_layernorm_mlp_options {
  size_t struct_size;
  const octet_linear_options* linear; /* required (read during create only);
                                         in_features = hidden size;
                                         out_features ignored (the output
                                         is hidden-sized) */
  int64_t ffn_features;       /* required, >= 1 (init: 0) */
  int32_t norm;               /* octet_norm_kind (default LAYERNORM) */
  float epsilon;              /* default 1e-5 */
  int32_t activation;         /* octet_activation_kind (default GELU) */
} octet_layernorm_mlp_options;

/* Users' ABI 1.9: G experts' Linears over one input whose rows are sorted
 * by expert (a mixture-of-experts layer, docs/grouped_linear.md): rows
 * [s_0 + .. + s_{g-1}, + s_g) of the input go through expert g,
 * y_g = x_g W_g^T + b_g, with the splits s given at each forward
 * (octet_layer_forward_grouped; zero and ragged splits allowed, no
 * padding). Every recipe, the weight storage, minimize_memory,
 * weight_cache and skip_weight_allocation apply per expert as to a Linear;
 * save_original_input does not (must be 0), nor recipes whose amaxes are
 * all-reduced (current scaling with reduce_amax: refused at forward). */
typedef struct octet_grouped_linear_options {
  size_t struct_size;
  const octet_linear_options* linear; /* required (read during create only):
                                         in_features, out_features of each
                                         expert */
  int64_t num_groups;                 /* required, 1 to 65536 (init: 0): the experts */
  int32_t shared_quantizers;          /* 0 (default): each expert's linear has its
                                         own three quantizers (its own scales and
                                         amax histories); 1: the experts share one
                                         set (one delayed/static scale per role for
                                         every expert; an amax history step records
                                         the max over the experts) */
} octet_grouped_linear_options;

OCTET_API octet_status octet_linear_options_init(octet_linear_options* options);
OCTET_API octet_status octet_layernorm_linear_options_init(octet_layernorm_linear_options* options);
OCTET_API octet_status octet_layernorm_mlp_options_init(octet_layernorm_mlp_options* options);
OCTET_API octet_status octet_grouped_linear_options_init(octet_grouped_linear_options* options);

/* Parameters start with unspecified contents: fill them through
 * octet_layer_get_parameter + octet_tensor_copy_from_host (FP8-only weights:
 * octet_layer_load_weight). LayerNorm weights are not initialised either. */
OCTET_API octet_status octet_layer_create_linear(octet_context* context,
                                                 const octet_linear_options* options,
                                                 octet_layer** layer);
OCTET_API octet_status octet_layer_create_layernorm_linear(
    octet_context* context, const octet_layernorm_linear_options* options, octet_layer** layer);
OCTET_API octet_status octet_layer_create_layernorm_mlp(
    octet_context* context, const octet_layernorm_mlp_options* options, octet_layer** layer);
OCTET_API octet_status octet_layer_create_grouped_linear(octet_context* context,
                                                         const octet_grouped_linear_options* options,
                                                         octet_layer** layer);
/* Accepts NULL. Saved handles of the layer stay valid to destroy. */
OCTET_API void octet_layer_destroy(octet_layer* layer);

/* Parameters, in a fixed order with stable names:
 *   Linear:          "weight" [out, in], "bias" [out]
 *   LayerNormLinear: "norm_weight" [in], "norm_bias" [in] (LayerNorm only),
 *                    "weight", "bias"
 *   LayerNormMLP:    "norm_weight", "norm_bias" (LayerNorm only),
 *                    "fc1_weight" [ffn or 2*ffn, hidden], "fc1_bias",
 *                    "fc2_weight" [hidden, ffn], "fc2_bias"
 *   GroupedLinear:   "weight0" [out, in], "bias0" [out], "weight1", "bias1",
 *                    ... one pair per expert; linear_index g of
 *                    octet_layer_get_quantizer is expert g's (with
 *                    shared_quantizers, every g gives the same three)
 * (biases only with bias = 1). names live as long as the layer. */
OCTET_API octet_status octet_layer_parameter_count(const octet_layer* layer, size_t* count);
OCTET_API octet_status octet_layer_parameter_name(const octet_layer* layer, size_t index,
                                                  const char** name);
/* Index of a parameter by name; NOT_FOUND if the layer has none such. */
OCTET_API octet_status octet_layer_find_parameter(const octet_layer* layer, const char* name,
                                                  size_t* index);
/* The parameter tensor (borrowed). With skip_weight_allocation a weight
 * matrix is the tensor last given to octet_layer_set_weight (NOT_FOUND
 * before); FP8-only weights are quantized tensors. Writing a parameter
 * invalidates nothing by itself: call octet_layer_new_step afterwards when
 * the weight cache is on. */
OCTET_API octet_status octet_layer_get_parameter(octet_layer* layer, size_t index,
                                                 octet_tensor** parameter);
/* The gradient of a parameter (borrowed), same shape and dtype as the
 * parameter (params_dtype). Allocated by the first backward that produces
 * it, or here (then zero-filled) if asked before. The weight matrices of an
 * FP8-only layer have none (UNSUPPORTED). */
OCTET_API octet_status octet_layer_get_gradient(octet_layer* layer, size_t index,
                                                octet_tensor** gradient);
/* skip_weight_allocation: the weight matrix `index` for the next forwards.
 * Borrowed: it must stay alive and unchanged until every backward of a
 * forward that used it has run. Shape [out, in] and params_dtype, or (users'
 * ABI 1.8) a per-tensor E4M3/E5M2 tensor with the rowwise usage, e.g. an
 * FP8 all-gather of shards (docs/distributed.md): forward and dgrad then
 * run on its codes and scale, never quantizing it again, and need an FP8
 * recipe whose weight role has its dtype, with fprop and dgrad in FP8
 * (else INVALID_ARGUMENT at forward). The weight gradient is params_dtype,
 * as for a high-precision weight. */
OCTET_API octet_status octet_layer_set_weight(octet_layer* layer, size_t index,
                                              const octet_tensor* weight);
/* FP8-only weights: quantizes a high-precision matrix (params_dtype, the
 * weight's shape) into the stored FP8 weight `index` with the layer's weight
 * quantizer (the layer's recipe: current scaling takes this matrix's amax;
 * delayed/static use the quantizer's scale). */
OCTET_API octet_status octet_layer_load_weight(octet_layer* layer, size_t index,
                                               const octet_tensor* weight);
/* The optimizer stepped: cached FP8 weights are quantized again at the next
 * forward. Harmless without the weight cache. */
OCTET_API octet_status octet_layer_new_step(octet_layer* layer);

/* Quantizer of one role of one linear (0: the only one, or FC1; 1: FC2),
 * borrowed, for inspection, scale updates and checkpoints. */
OCTET_API octet_status octet_layer_get_quantizer(octet_layer* layer, size_t linear_index,
                                                 int32_t role, octet_quantizer** quantizer);

/* output = layer(input). input and output are caller tensors of the layer's
 * context (output created by the caller with the right shape and dtype).
 * training != 0: *saved receives a new handle holding what backward needs
 * (required); several may be in flight, each consumed by its own backward.
 * training == 0: nothing is kept; saved may be NULL, and if not it receives
 * an inference handle that backward refuses.
 * Quantizer amaxes are recorded (and, inside an autocast scope, the
 * quantizers are noted for the scope's scale update). */
OCTET_API octet_status octet_layer_forward(octet_layer* layer, const octet_tensor* input,
                                           octet_tensor* output, int32_t training,
                                           octet_saved** saved);
/* GroupedLinear (users' ABI 1.9): output = layer(input) with the rows split
 * between the experts: splits[g] (>= 0, group_count = num_groups of them,
 * adding up to the input's rows) rows go through expert g, in order. As
 * octet_layer_forward otherwise (octet_layer_forward refuses a grouped
 * layer, and this function any other); the saved handle keeps the splits
 * for octet_layer_backward. An expert with no rows computes nothing; its
 * gradients are zero (or unchanged with accumulate). */
OCTET_API octet_status octet_layer_forward_grouped(octet_layer* layer, const octet_tensor* input, size_t group_count,
                                                   const int64_t* splits, octet_tensor* output, int32_t training,
                                                   octet_saved** saved);
/* skip_weight_allocation (users' ABI 1.9): the high-precision weight matrix
 * `index` that saved's backward reads, in place of the one its forward was
 * given, for a weight whose memory moved between the two (FSDP frees a
 * gathered weight after the forward and gathers it again, maybe at another
 * address). Same shape and params_dtype as the parameter, holding the values
 * the forward read (the caller's promise: not checked); borrowed until that
 * backward has run. The layer's own weight for later forwards is unchanged
 * (octet_layer_set_weight sets it). INVALID_ARGUMENT where the forward ran
 * on an FP8 weight given with octet_layer_set_weight (the backward reads its
 * codes, not a matrix of the caller's) and for a handle of another layer or
 * of an inference forward. */
OCTET_API octet_status octet_layer_set_saved_weight(octet_layer* layer, octet_saved* saved, size_t index,
                                                    const octet_tensor* weight);
/* Consumes *saved (one backward per forward; the handle is destroyed and
 * *saved set to NULL even when backward fails after its checks passed).
 * grad_output: dL/doutput (shape and dtype of output). grad_input: written
 * with dL/dinput (may be NULL to skip it). Parameter gradients:
 * accumulate != 0 adds to them, 0 overwrites them. Uses the precision the
 * forward used. */
OCTET_API octet_status octet_layer_backward(octet_layer* layer, octet_saved** saved,
                                            const octet_tensor* grad_output,
                                            octet_tensor* grad_input, int32_t accumulate);
/* Releases a saved handle without running backward. Accepts NULL. */
OCTET_API void octet_saved_destroy(octet_saved* saved);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* OCTET_OCTET_H */
