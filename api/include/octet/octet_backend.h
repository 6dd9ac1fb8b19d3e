/*
 * octet_backend.h: the plugin ABI a backend implements. C99.
 *
 * A backend is a shared library named liboctet_backend_<name>.so, built with
 * hidden visibility, that exports exactly one symbol:
 *
 *   int32_t octet_backend_entry(uint32_t host_abi_major,
 *                               uint32_t host_abi_minor,
 *                               const octet_backend_api** api_out);
 *
 * The host offers its plugin ABI version; the plugin either answers with a
 * table whose abi_major equals host_abi_major (and any abi_minor), or refuses
 * with OCTET_STATUS_ABI_MISMATCH. The host then checks the table (struct_size,
 * version, required entries) and calls initialize() once.
 *
 * A backend never links liboctet and never sees recipes, layers or the core's
 * tensors: it sees plain buffers in its own memory. It reports every failure
 * through the host's error callback (not thread-local storage) and returns a
 * status. Entry points marked optional may be NULL; the core then composes
 * the operation from others or answers OCTET_STATUS_UNSUPPORTED naming the
 * missing entry point.
 *
 * Pointers named "device" below are in the backend's memory kind (host memory
 * for a host backend). The table, its strings and capabilities must stay
 * valid until the library is unloaded; the host keeps the library loaded
 * while any context or tensor of the backend is alive.
 *
 * Thread safety: initialize/shutdown are called once, by one thread. Other
 * entries may be called concurrently on different backend contexts; one
 * backend context is used by one thread at a time.
 */
#ifndef OCTET_OCTET_BACKEND_H
#define OCTET_OCTET_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "octet.h"

#ifdef __cplusplus
extern "C" {
#endif

#define OCTET_PLUGIN_ABI_MAJOR 1
#define OCTET_PLUGIN_ABI_MINOR 0

#define OCTET_BACKEND_ENTRY_SYMBOL "octet_backend_entry"

#if defined(__GNUC__)
#define OCTET_BACKEND_EXPORT __attribute__((visibility("default")))
#else
#define OCTET_BACKEND_EXPORT
#endif

/* Services the host gives a backend at initialize(). Valid until shutdown. */
typedef struct octet_host_services {
  size_t struct_size;
  uint32_t abi_major;
  uint32_t abi_minor;
  /* Report a failure: status and a message naming the argument or the rule.
   * The host copies the message. Call it before returning the status. */
  void (*report_error)(void* host_data, int32_t status, const char* message);
  void* host_data;
} octet_host_services;

/* What a backend can do. dtypes, scaling_modes, fp8_gemm_layouts and
 * memory_kind use the flags and enums of octet.h. */
typedef struct octet_backend_caps {
  size_t struct_size;
  const char* device;        /* human-readable device name */
  int32_t memory_kind;       /* OCTET_MEMORY_HOST or OCTET_MEMORY_DEVICE */
  uint32_t dtypes;           /* OCTET_DTYPE_BIT(...) */
  uint32_t scaling_modes;    /* OCTET_SCALING_* */
  int32_t native_columnwise; /* 1: FP8 operands may be read along columns */
  uint32_t fp8_gemm_layouts; /* OCTET_GEMM_LAYOUT_* for FP8 operands;
                                high-precision GEMMs accept every layout */
  uint64_t alignment;        /* bytes; a power of two */
  int32_t fused_cast_transpose; /* quantize() writes both usages in one pass */
} octet_backend_caps;

typedef struct octet_backend_context octet_backend_context;

/* A 2-D matrix in backend memory: row-major, rows x cols, leading dimension
 * ld >= cols (in elements). */
typedef struct octet_matrix_view {
  void* data;
  int32_t dtype;
  int32_t reserved;
  int64_t rows;
  int64_t cols;
  int64_t ld;
} octet_matrix_view;

typedef struct octet_quantize_args {
  size_t struct_size;
  octet_matrix_view input;        /* FP32/BF16/FP16, rows x cols */
  int32_t out_dtype;              /* E4M3 or E5M2 */
  int32_t saturate;
  const float* scale;             /* device, 1 value */
  uint8_t* rowwise_out;           /* device, rows x cols, or NULL */
  uint8_t* columnwise_out;        /* device, cols x rows (transposed), or NULL */
  float* scale_inv_out;           /* device, 1 value (1/scale), or NULL */
  float* amax_out;                /* device, 1 value (max |x|), or NULL */
} octet_quantize_args;

typedef struct octet_dequantize_args {
  size_t struct_size;
  octet_matrix_view input;        /* E4M3/E5M2 codes */
  const float* scale_inv;         /* device, 1 value */
  octet_matrix_view output;       /* FP32/BF16/FP16, same rows x cols */
} octet_dequantize_args;

typedef struct octet_gemm_args {
  size_t struct_size;
  int64_t m, n, k;
  octet_matrix_view a;            /* [m,k], or [k,m] when trans_a */
  octet_matrix_view b;            /* [n,k], or [k,n] when trans_b */
  int32_t trans_a;
  int32_t trans_b;
  const float* a_scale_inv;       /* device, 1 value; NULL means 1 */
  const float* b_scale_inv;       /* device, 1 value; NULL means 1 */
  float alpha;
  float beta;
  octet_matrix_view d;            /* [m,n] FP32/BF16/FP16, read when beta != 0 */
  octet_matrix_view bias;         /* data NULL or n elements (rows 1, cols n) */
  int32_t epilogue;               /* octet_epilogue */
} octet_gemm_args;

typedef struct octet_backend_api {
  size_t struct_size;              /* sizeof(octet_backend_api) of the plugin */
  uint32_t abi_major;
  uint32_t abi_minor;
  const char* name;                /* [a-z0-9_]+, unique among backends */
  const char* version;

  /* Required. Probes the device and fills *caps. A backend with no usable
   * device returns OCTET_STATUS_UNAVAILABLE with the reason (it stays listed,
   * as unavailable). */
  int32_t (*initialize)(const octet_host_services* host, octet_backend_caps* caps);
  /* Optional. Called once before unloading. */
  void (*shutdown)(void);

  /* Required. stream: the caller's stream, or NULL for the backend's own. */
  int32_t (*context_create)(void* stream, octet_backend_context** context);
  void (*context_destroy)(octet_backend_context* context);
  /* Optional (host backends that run synchronously may leave it NULL). */
  int32_t (*synchronize)(octet_backend_context* context);

  /* Memory. Optional for a host backend (the host then uses aligned host
   * memory and memcpy); required for a device backend. */
  int32_t (*mem_alloc)(octet_backend_context* context, size_t bytes, void** ptr);
  void (*mem_free)(octet_backend_context* context, void* ptr);
  int32_t (*copy_from_host)(octet_backend_context* context, void* dst,
                            const void* src, size_t bytes);
  int32_t (*copy_to_host)(octet_backend_context* context, void* dst,
                          const void* src, size_t bytes);

  /* Kernels, all optional. */
  /* Element-wise dtype conversion (raw codes for FP8, no scale). */
  int32_t (*convert)(octet_backend_context* context, const octet_matrix_view* input,
                     const octet_matrix_view* output, int32_t saturate);
  /* max |x| (NaN ignored) of a high-precision matrix into amax_out (device). */
  int32_t (*amax)(octet_backend_context* context, const octet_matrix_view* input,
                  float* amax_out);
  int32_t (*quantize)(octet_backend_context* context, const octet_quantize_args* args);
  /* Transpose of a matrix of 1-, 2- or 4-byte elements: output is cols x rows. */
  int32_t (*transpose)(octet_backend_context* context, const octet_matrix_view* input,
                       const octet_matrix_view* output);
  int32_t (*dequantize)(octet_backend_context* context,
                        const octet_dequantize_args* args);
  int32_t (*gemm)(octet_backend_context* context, const octet_gemm_args* args);
} octet_backend_api;

/* The one symbol a plugin exports. */
typedef int32_t (*octet_backend_entry_fn)(uint32_t host_abi_major,
                                          uint32_t host_abi_minor,
                                          const octet_backend_api** api_out);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* OCTET_OCTET_BACKEND_H */
