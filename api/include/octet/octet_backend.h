/*
 * octet_backend.h: the plugin ABI a backend implements. C99; includes only
 * <stddef.h>, <stdint.h> and octet_types.h (the statuses, dtypes and kinds
 * it shares with the users' ABI of octet.h).
 *
 * A backend is a shared library named liboctet_backend_<name>.so, built with
 * hidden visibility, that exports exactly one symbol:
 *
 *   int32_t octet_backend_entry(uint32_t host_abi_major,
 *                               uint32_t host_abi_minor,
 *                               const octet_backend_api** api_out);
 *
 * The host offers its plugin ABI version (OCTET_PLUGIN_ABI_MAJOR/MINOR, a
 * sequence of its own, apart from the users' ABI version of octet.h); the
 * plugin either answers with a
 * table whose abi_major equals host_abi_major (and any abi_minor), or refuses
 * with OCTET_STATUS_ABI_MISMATCH. The host then checks the table (struct_size,
 * version, required entries) and calls initialize() once.
 *
 * A backend never links liboctet, never includes octet.h and never sees
 * recipes, layers or the core's tensors: it sees plain buffers in its own
 * memory and kernel arguments. It reports every failure
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

#include "octet_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The plugin ABI version. A change of major breaks every plugin; a minor
 * appends entries to octet_backend_api or fields to an argument struct (read
 * only inside the struct_size the other side gives). CHANGELOG.md lists what
 * each minor added. */
#define OCTET_PLUGIN_ABI_MAJOR 1
#define OCTET_PLUGIN_ABI_MINOR 5

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
 * memory_kind use the flags and enums of octet_types.h. */
typedef struct octet_backend_caps {
  size_t struct_size;
  const char* device;        /* human-readable device name */
  int32_t memory_kind;       /* OCTET_MEMORY_HOST or OCTET_MEMORY_DEVICE */
  uint32_t dtypes;           /* OCTET_DTYPE_BIT(...); the core never
                                passes a dtype missing here (E4M3FNUZ and
                                E5M2FNUZ for an FNUZ device, E4M3 and E5M2
                                for an OCP one) */
  uint32_t scaling_modes;    /* OCTET_SCALING_*. Plugin ABI 1.4: PER_ROW
                                and PER_COLUMN (numerics.md section 16)
                                reach the block kernels below as FP32
                                blocks as wide as the copy's row
                                (1 x cols_out) or, for a per-column
                                rowwise copy, as tall as its column
                                (rows_out x 1); a per-row block GEMM has
                                a_block_cols = b_block_cols >= k (one
                                k-block) and block rows 1. Declare them
                                only if those kernels take such shapes. */
  int32_t native_columnwise; /* 1: FP8 operands may be read along columns */
  uint32_t fp8_gemm_layouts; /* OCTET_GEMM_LAYOUT_* for FP8 operands;
                                high-precision GEMMs accept every layout */
  uint64_t alignment;        /* bytes; a power of two */
  int32_t fused_cast_transpose; /* quantize() writes both usages in one pass */
  /* Plugin ABI 1.3 fields (zero when the plugin's caps are shorter): they
   * start past the tail padding of the 1.0-1.2 struct, which a plugin may
   * leave unset. */
  int32_t reserved_padding;  /* ignored */
  int32_t fp8_gemm_output;   /* 1: gemm() writes FP8 D with d_scale and amax
                                (octet_gemm_args); else the host composes it */
  /* Plugin ABI 1.5 field (zero when the plugin's caps are shorter). */
  uint64_t caller_alignment; /* bytes, a power of two <= alignment: what the
                                kernels need of memory the backend did not
                                allocate (octet_tensor_wrap, DLPack
                                imports), beyond the element size, which
                                the core always requires; 1: any
                                element-aligned address. 0: `alignment`.
                                `alignment` stays what the core allocates
                                with. */
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

/* Bytes of one element of `dtype`: 4 for FP32, 2 for BF16 and FP16, 1 for
 * the FP8 formats and E8M0; 0 for E2M1 (two codes a byte) and for a value
 * that is no octet_dtype. The one table of element sizes: liboctet's
 * octet_dtype_size, the plugin SDK's dtype_size and the C plugins read it;
 * header-only, so that a plugin needs no liboctet for it. */
static inline size_t octet_dtype_element_bytes(int32_t dtype) {
  switch (dtype) {
    case OCTET_DTYPE_FP32:
      return 4;
    case OCTET_DTYPE_BF16:
    case OCTET_DTYPE_FP16:
      return 2;
    case OCTET_DTYPE_E4M3:
    case OCTET_DTYPE_E5M2:
    case OCTET_DTYPE_E4M3FNUZ:
    case OCTET_DTYPE_E5M2FNUZ:
    case OCTET_DTYPE_E8M0:
      return 1;
    default:
      return 0;
  }
}

/* 1 when two views share at least one byte of memory, else 0 (empty views
 * and NULL data share nothing). Exact for strided views: two views
 * interleaved in one buffer without a common element do not overlap. For
 * the aliasing rules below (octet_norm_backward_args); header-only, so every
 * plugin applies the same test. */
static inline int octet_matrix_views_overlap(const octet_matrix_view* a, const octet_matrix_view* b) {
  int64_t esa, esb, oa, ob, la, lb, wa, wb, i;
  uintptr_t pa, pb, base;
  if (a->rows <= 0 || a->cols <= 0 || b->rows <= 0 || b->cols <= 0) return 0;
  if (a->data == NULL || b->data == NULL) return 0;
  /* An E2M1 or unknown dtype counts as one byte an element. */
  esa = (int64_t)octet_dtype_element_bytes(a->dtype);
  esb = (int64_t)octet_dtype_element_bytes(b->dtype);
  if (esa == 0) esa = 1;
  if (esb == 0) esb = 1;
  /* Byte offsets from the lower start (no pointer arithmetic across objects). */
  pa = (uintptr_t)a->data;
  pb = (uintptr_t)b->data;
  base = pa < pb ? pa : pb;
  oa = (int64_t)(pa - base);
  ob = (int64_t)(pb - base);
  la = a->ld * esa;
  wa = a->cols * esa;
  lb = b->ld * esb;
  wb = b->cols * esb;
  /* Whole spans first: [start, start + (rows - 1) * ld + cols). */
  if (oa + (a->rows - 1) * la + wa <= ob || ob + (b->rows - 1) * lb + wb <= oa) return 0;
  /* Row by row: row i of a is [s, s + wa); the first row j of b whose end
   * passes s meets it when it starts before s + wa. */
  for (i = 0; i < a->rows; ++i) {
    const int64_t s = oa + i * la;
    const int64_t t = s - ob - wb; /* j = floor(t / lb) + 1 */
    int64_t j = (t >= 0 ? t / lb : -((-t + lb - 1) / lb)) + 1;
    if (j < 0) j = 0;
    if (j < b->rows && ob + j * lb < s + wa) return 1;
  }
  return 0;
}

typedef struct octet_quantize_args {
  size_t struct_size;
  octet_matrix_view input;        /* FP32/BF16/FP16, rows x cols */
  int32_t out_dtype;              /* an FP8 dtype the backend declares */
  int32_t saturate;
  const float* scale;             /* device, 1 value */
  uint8_t* rowwise_out;           /* device, rows x cols, or NULL */
  uint8_t* columnwise_out;        /* device, cols x rows (transposed), or NULL */
  float* scale_inv_out;           /* device, 1 value (1/scale), or NULL */
  float* amax_out;                /* device, 1 value (max |x|), or NULL */
} octet_quantize_args;

typedef struct octet_dequantize_args {
  size_t struct_size;
  octet_matrix_view input;        /* FP8 codes of a dtype the backend declares */
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
  /* Plugin ABI 1.3 fields: a plugin reads them only when struct_size covers
   * them (the host always sends the whole struct). They start past the tail
   * padding of the 1.0-1.2 struct. */
  int32_t reserved_padding;       /* ignored */
  /* 1: the backend may accumulate FP8 products with reduced precision
   * (e.g. Hopper's fast accumulation): a request, never an obligation; the
   * result is then not held to numerics.md section 8's bound. */
  int32_t fast_accumulation;
  /* FP8 output (only sent to a backend whose caps set fp8_gemm_output):
   * d.dtype is an FP8 dtype and beta is 0. With r the FP32 value an FP32 D
   * would receive (alpha, scales, bias and epilogue applied, not rounded),
   * D = fp8(r * d_scale[0]) per numerics.md section 2 (saturating when
   * d_saturate), d_scale_inv_out[0] = 1 / d_scale[0] and d_amax_out[0] =
   * max |r| (NaN ignored), each output pointer optional. */
  int32_t d_saturate;
  const float* d_scale;           /* device, 1 value; NULL: D is not FP8 */
  float* d_scale_inv_out;         /* device, 1 value, or NULL */
  float* d_amax_out;              /* device, 1 value, or NULL */
} octet_gemm_args;

/* ---- Kernels for statistics and block scaling ---- */

/* Statistics of one quantize pass over n input values x, written to device
 * memory. With y the scaled value (x * scale, x / X for E8M0 scales, x *
 * block_scale for FP32 block scales):
 *   nan_count       x is NaN
 *   saturated_count x is not NaN and the non-saturating conversion of y
 *                   would overflow (E4M3 |y| > 464, E5M2 |y| >= 61440, or
 *                   y infinite)
 *   flushed_count   x is finite and non-zero but its code is +-0
 *   amax            max |x| (NaN ignored) */
typedef struct octet_quantize_statistics {
  uint64_t nan_count;
  uint64_t saturated_count;
  uint64_t flushed_count;
  float amax;
  uint32_t reserved;
} octet_quantize_statistics;

/* Block quantization of input (rows x cols) or, with transposed = 1, of its
 * transpose (cols x rows), into codes `out` (dense, rows_out x cols_out) with
 * one scale per block_rows x block_cols block; the grid is
 * ceil(rows_out / block_rows) x ceil(cols_out / block_cols), row-major, the
 * last blocks ragged (numerics.md, "Block scaling"). A block's amax is max |x|
 * over its finite elements (NaN and +-inf excluded); NaN encodes to the NaN
 * code of its sign, +-inf to +-max finite.
 *   scale_dtype E8M0: MX scales. e8m0_rounding 0 (RCEIL): code =
 *     e8m0_ceil(block_amax / fp8_max); 1 (FLOOR): 2^(floor(log2 amax) - emax);
 *     amax 0 -> 0x00 (never 0xFF). q = fp8_sat(x / X).
 *   scale_dtype FP32: scale = fp8_max / max(block_amax, amax_epsilon)
 *     (1 if that amax is 0 or inf; +inf -> FLT_MAX; power_of_two clears
 *     the mantissa); q = fp8_sat(x * scale); scale_inv_out holds 1/scale. */
typedef struct octet_block_quantize_args {
  size_t struct_size;
  octet_matrix_view input;        /* FP32/BF16/FP16 */
  int32_t transposed;
  int32_t out_dtype; /* an FP8 dtype the backend declares */
  int32_t block_rows;
  int32_t block_cols;
  int32_t scale_dtype;            /* OCTET_DTYPE_E8M0 or OCTET_DTYPE_FP32 */
  int32_t e8m0_rounding;
  int32_t power_of_two;
  float amax_epsilon;
  uint8_t* out;                   /* device */
  void* scale_inv_out;            /* device: uint8_t codes or floats */
  float* amax_out;                /* device, 1 value (max |x|, NaN ignored), or NULL */
  octet_quantize_statistics* stats_out; /* device, or NULL */
} octet_block_quantize_args;

typedef struct octet_block_dequantize_args {
  size_t struct_size;
  octet_matrix_view input;        /* codes, rows x cols */
  const void* scale_inv;          /* device, grid as in block quantize */
  int32_t scale_dtype;            /* E8M0 or FP32 */
  int32_t block_rows;
  int32_t block_cols;
  octet_matrix_view output;       /* FP32/BF16/FP16, rows x cols */
} octet_block_dequantize_args;

/* D[m,n] = alpha * sum over k-blocks kb of (sa[m,kb] * sb[n,kb]) * (sum over
 * k in kb of A[m,k] * B[n,k]) + beta * D + bias, then the epilogue. Both
 * operands are K-contiguous ([m,k] and [n,k]); their block_cols (the block
 * extent along k) must be equal. Scale grids are [ceil(m/a_block_rows),
 * ceil(k/a_block_cols)] and [ceil(n/b_block_rows), ceil(k/b_block_cols)]. */
typedef struct octet_block_gemm_args {
  size_t struct_size;
  int64_t m, n, k;
  octet_matrix_view a;
  octet_matrix_view b;
  const void* a_scale_inv;
  const void* b_scale_inv;
  int32_t scale_dtype;            /* E8M0 or FP32, the same for both */
  int32_t a_block_rows;
  int32_t a_block_cols;
  int32_t b_block_rows;
  int32_t b_block_cols;
  float alpha;
  float beta;
  octet_matrix_view d;
  octet_matrix_view bias;
  int32_t epilogue;
} octet_block_gemm_args;

/* ---- FP4 kernels (plugin ABI 1.4; numerics.md section 15) ----
 * E2M1 codes are packed two per byte, row by row (docs/abi.md, "Sub-byte
 * dtypes"): row r of a rows x cols code matrix starts at byte
 * r * ((cols + 1) / 2); element (r, c) is the low nibble of byte c / 2 of
 * its row when c is even, the high nibble when odd; an odd cols leaves each
 * row's last high nibble 0. Block shapes follow the scaling mode:
 * MXFP4_1X32 1x32 blocks with E8M0 scale codes; NVFP4_1X16 1x16 and
 * NVFP4_16X16 16x16 blocks with E4M3 scale codes and one FP32 tensor scale.
 * Scale grids are ceil(rows / br) x ceil(cols / bc), row-major, one byte a
 * block. A backend that provides fp4_quantize honours every field below
 * (stochastic rounding and the Hadamard transform included); random bits
 * come from <octet/octet_random.h>. */

/* Quantization of input (rows x cols) or, with transposed = 1, of its
 * transpose, into codes `out` (rows_out x cols_out), by numerics.md 15.3:
 *   1. rht != 0: every row's 16-element groups are replaced by their
 *      random Hadamard transform with sign mask rht_sign_mask (15.2);
 *      cols_out must be a multiple of 16;
 *   2. NVFP4: g = (max |y| over finite y) / 2688, 1 when that is 0;
 *   3. per block: the scale from the amax of its finite elements; a block
 *      holding a NaN gets the scale's NaN code and codes 0;
 *   4. elements: y / X encoded to E2M1, saturating, rounded to nearest even
 *      or, with stochastic_rounding != 0, stochastically with the random
 *      bits of (seed, offset, element index in the rows_out x cols_out
 *      matrix) (15.1). */
typedef struct octet_fp4_quantize_args {
  size_t struct_size;
  octet_matrix_view input; /* FP32/BF16/FP16 */
  int32_t transposed;
  int32_t scaling_mode;        /* MXFP4_1X32, NVFP4_1X16 or NVFP4_16X16 */
  int32_t e8m0_rounding;       /* MXFP4: 0 RCEIL, 1 FLOOR (as MXFP8) */
  int32_t stochastic_rounding; /* 0 or 1 */
  uint64_t seed;
  uint64_t offset;
  int32_t rht;                          /* 0 or 1 */
  uint32_t rht_sign_mask;               /* 16 bits: octet_rht_sign_mask(seed) */
  uint8_t* out;                         /* device, packed E2M1 */
  uint8_t* scale_inv_out;               /* device, one E8M0 or E4M3 code a block */
  float* tensor_scale_inv_out;          /* device, 1 value (g); NVFP4 only, else NULL */
  float* amax_out;                      /* device, 1 value (max |x| of the input,
                                           NaN ignored), or NULL */
  octet_quantize_statistics* stats_out; /* device, or NULL */
} octet_fp4_quantize_args;

/* x' = decode(q) * X, X the block's decode scale (E8M0 value; NVFP4:
 * E4M3 value * g, one FP32 multiply), rounded to output's dtype. */
typedef struct octet_fp4_dequantize_args {
  size_t struct_size;
  const uint8_t* input; /* device, packed E2M1, rows x cols */
  int64_t rows;
  int64_t cols;
  int32_t scaling_mode;
  int32_t reserved;
  const uint8_t* scale_inv;      /* device, the block grid */
  const float* tensor_scale_inv; /* device, 1 value; NVFP4 only, else NULL */
  octet_matrix_view output;      /* FP32/BF16/FP16, rows x cols */
} octet_fp4_dequantize_args;

/* D[m,n] = (alpha * (ga * gb)) * sum over k-blocks kb of
 * (sum over k in kb of A[m,k] * B[n,k]) * (sa[m,kb] * sb[n,kb]), then
 * beta, bias and the epilogue as octet_gemm_args (numerics.md 15.4). A is
 * m x k, B is n x k (packed, K-contiguous); both MXFP4 or both NVFP4 (1x16
 * and 16x16 mix). ga, gb: the NVFP4 tensor scales (1 for MXFP4). */
typedef struct octet_fp4_gemm_args {
  size_t struct_size;
  int64_t m, n, k;
  const uint8_t* a;
  const uint8_t* b;
  const uint8_t* a_scale_inv;
  const uint8_t* b_scale_inv;
  const float* a_tensor_scale_inv; /* device, 1 value; NVFP4 only */
  const float* b_tensor_scale_inv;
  int32_t a_scaling_mode;
  int32_t b_scaling_mode;
  float alpha;
  float beta;
  octet_matrix_view d;    /* FP32/BF16/FP16, m x n */
  octet_matrix_view bias; /* 1 x n, or data NULL */
  int32_t epilogue;
  int32_t reserved;
} octet_fp4_gemm_args;

/* ---- Grouped GEMMs (plugin ABI 1.5) ----
 * group_count independent GEMMs in one call: exactly one of gemms and
 * block_gemms is set, an array of group_count pointers to arguments, each
 * as the host would send them to gemm() or block_gemm() (with their own
 * struct_size, so the argument structs can grow; FP8 output never: d is
 * FP32, BF16 or FP16). Group g's D must receive exactly what gemm(&gemms[g]) (or
 * block_gemm(&block_gemms[g])) would write: the groups' D never overlap,
 * and the backend may run them in any order and at once. A backend that
 * provides grouped_gemm takes both kinds; without it the host calls gemm()
 * or block_gemm() group by group. */
typedef struct octet_grouped_gemm_args {
  size_t struct_size;
  int64_t group_count;                             /* >= 1 */
  const octet_gemm_args* const* gemms;             /* group_count pointers, or NULL */
  const octet_block_gemm_args* const* block_gemms; /* group_count pointers, or NULL */
} octet_grouped_gemm_args;

/* ---- Kernels for normalisation, activations and bias gradients ----
 * Their kinds are octet_norm_kind (OCTET_NORM_*) and octet_activation_kind
 * (OCTET_ACTIVATION_*) of octet_types.h. */

/* Row-wise normalisation of input (rows x cols), FP32 math in this order:
 *   LayerNorm: mean = (sum_j x_j) / cols; var = (sum_j (x_j - mean)^2) / cols;
 *              rstd = 1 / sqrtf(var + epsilon);
 *              y_j = ((x_j - mean) * rstd) * gamma_j + beta_j
 *   RMSNorm:   ms = (sum_j x_j^2) / cols; rstd = 1 / sqrtf(ms + epsilon);
 *              y_j = (x_j * rstd) * gamma_j      (sums left to right)
 * y is rounded to output.dtype and stored when output.data != NULL.
 * quantize (optional): the same pass also writes the per-tensor FP8 codes of
 * y (the value rounded to output.dtype) exactly as quantize() would with
 * that input: quantize->input is ignored, every other field is used. */
typedef struct octet_norm_forward_args {
  size_t struct_size;
  int32_t kind;                   /* OCTET_NORM_* */
  float epsilon;
  octet_matrix_view input;        /* FP32/BF16/FP16 */
  octet_matrix_view gamma;        /* 1 x cols */
  octet_matrix_view beta;         /* 1 x cols, LayerNorm only (data NULL: 0) */
  octet_matrix_view output;       /* rows x cols; dtype always set, data may be NULL */
  float* mean_out;                /* device, rows FP32 (LayerNorm), or NULL */
  float* rstd_out;                /* device, rows FP32, or NULL */
  const octet_quantize_args* quantize; /* host struct, or NULL */
} octet_norm_forward_args;

/* Gradients of the normalisation, FP32 math. With xhat_j = (x_j - mean) * rstd
 * (RMSNorm: x_j * rstd) and g_j = dy_j * gamma_j, per row:
 *   LayerNorm: dx_j = rstd * (g_j - mean_k(g_k) - xhat_j * mean_k(g_k * xhat_k))
 *   RMSNorm:   dx_j = rstd * (g_j - xhat_j * mean_k(g_k * xhat_k))
 * (means are left-to-right sums divided by cols). dgamma_out[j] = sum over rows
 * of dy_j * xhat_j and dbeta_out[j] = sum over rows of dy_j (rows in order),
 * FP32, overwritten.
 * Aliasing: grad_input may be grad_output itself (in place: the same data,
 * dtype and ld); the result is then bit for bit that of separate buffers.
 * Any other sharing of memory between grad_input and grad_output, and any
 * between grad_input and input, is refused with INVALID_ARGUMENT naming both
 * (views interleaved in one buffer without a common element do not share
 * memory). A backend reads all of dy (for dgamma/dbeta) and each row of x
 * and dy before it writes that row of dx. */
typedef struct octet_norm_backward_args {
  size_t struct_size;
  int32_t kind;
  int32_t reserved;
  octet_matrix_view input;        /* x, as in forward */
  octet_matrix_view grad_output;  /* dy, rows x cols */
  octet_matrix_view gamma;        /* 1 x cols */
  const float* mean;              /* device, rows (LayerNorm) */
  const float* rstd;              /* device, rows */
  octet_matrix_view grad_input;   /* dx, rows x cols */
  float* dgamma_out;              /* device, cols FP32 */
  float* dbeta_out;               /* device, cols FP32 (LayerNorm), or NULL */
} octet_norm_backward_args;

/* Activations, FP32 math, results rounded to the output dtype. tanhf and
 * expf are octet_math_tanhf and octet_math_expf (<octet/octet_math.h>), not
 * the platform's libm, here and in the GEMM's GELU epilogue.
 * Aliasing: output (forward) and grad_input (backward) may not share memory
 * with input or grad_output (octet_matrix_views_overlap); a backend refuses
 * such a call with INVALID_ARGUMENT naming both.
 *   GELU (tanh form, as the GEMM epilogue): input and output rows x n;
 *     y = 0.5f * x * (1 + tanhf(0.7978845608f * (x + 0.044715f * x^3)))
 *   SwiGLU: input rows x 2n = [a | b], output rows x n;
 *     y = silu(a) * b with silu(a) = a * s, s = 1 / (1 + expf(-a)) (the s of the
 *     backward below), each operation rounded to FP32 in that order.
 * Backward (grad_output dy rows x n, grad_input rows x cols of input):
 *   GELU: dx = dy * gelu'(x), gelu'(x) = 0.5f * (1 + t)
 *         + 0.5f * x * (1 - t^2) * 0.7978845608f * (1 + 3 * 0.044715f * x^2)
 *   SwiGLU: s = 1 / (1 + expf(-a)); da = dy * b * (s * (1 + a * (1 - s)));
 *           db = dy * (a * s). */
typedef struct octet_activation_args {
  size_t struct_size;
  int32_t kind;                   /* OCTET_ACTIVATION_* */
  int32_t reserved;
  octet_matrix_view input;        /* forward input (also read by backward) */
  octet_matrix_view output;       /* forward: y; backward: unused */
  octet_matrix_view grad_output;  /* backward only */
  octet_matrix_view grad_input;   /* backward only */
} octet_activation_args;

/* Column sums of dy (rows x cols) in FP32, rows in order, into sums_out
 * (device, cols floats, overwritten). quantize (optional): the same pass
 * writes dy's FP8 codes exactly as quantize() with input = dy would. */
typedef struct octet_bias_gradient_args {
  size_t struct_size;
  octet_matrix_view grad_output;
  float* sums_out;
  const octet_quantize_args* quantize; /* host struct, or NULL */
} octet_bias_gradient_args;

/* ---- Scaling kernels (numerics.md 14.1, 14.2) ----
 * A backend that provides all three entries (scale_from_amax,
 * delayed_scaling_update, amax_record) lets the host keep scaling state (a
 * scale, its inverse and an amax history) in the backend's memory and update
 * it there, with no copy to the host (docs/recipes.md, "Where the scaling
 * state lives"); with any of them missing the host keeps that state in host
 * memory. Every pointer below is device memory; each kernel reads its
 * inputs before writing, and a rejected call writes nothing. */

/* Current scaling (numerics.md 14.1) from a device amax:
 *   a = fmaxf(*amax, epsilon);
 *   scale = 1 if a is NaN, +-inf or 0, else fp8_max / a (FP32 RN division),
 *           +inf becoming FLT_MAX;
 *   power_of_two: scale's bits &= 0xFF800000 (mantissa cleared);
 *   *scale_out = scale; *scale_inv_out = 1.0f / scale (when not NULL).
 * fp8_max is finite and > 0; epsilon is finite and >= 0. */
typedef struct octet_scale_from_amax_args {
  size_t struct_size;             /* sizeof(octet_scale_from_amax_args) */
  const float* amax;              /* device, 1 value */
  float fp8_max;                  /* 448 (E4M3) or 57344 (E5M2) */
  float epsilon;
  int32_t power_of_two;           /* 0 or 1 */
  int32_t reserved;               /* 0 */
  float* scale_out;               /* device, 1 value */
  float* scale_inv_out;           /* device, 1 value, or NULL */
} octet_scale_from_amax_args;

/* How delayed_scaling_update takes the amax from the history. */
typedef int32_t octet_history_amax;
enum {
  OCTET_HISTORY_AMAX_MOST_RECENT = 0, /* history[current] */
  OCTET_HISTORY_AMAX_MAX = 1          /* the max over the history */
};

/* The delayed-scaling update (numerics.md 14.2 steps 1-5) of one scaling
 * state = [scale, scale_inv, history[history_len]] (the amax history is a
 * ring; history[current] is this step's amax):
 *   1. amax = history[current] (OCTET_HISTORY_AMAX_MOST_RECENT) or the fmaxf
 *      of 0 and every history entry (OCTET_HISTORY_AMAX_MAX; NaN ignored);
 *   2.-4. only when recompute != 0 (the host applies the interval) and amax
 *      is finite and > 0: candidate = ldexpf(fp8_max, -margin) / amax (+inf
 *      becoming FLT_MAX), or with power_of_two (Gaudi rule)
 *      2^(e - margin) where e = ilogbf(fp8_max / amax) (127 when that ratio
 *      is +inf), the power rounded as ldexpf(1, e - margin) rounds; scale =
 *      candidate unless the candidate is 0 (an underflow keeps the scale);
 *   5. scale_inv = 1.0f / scale (always rewritten), and
 *      history[(current + 1) % history_len] = 0 (the next step's slot).
 * The result equals, bit for bit, the host's update of the same state. */
typedef struct octet_delayed_scaling_update_args {
  size_t struct_size;             /* sizeof(octet_delayed_scaling_update_args) */
  float* state;                   /* device, 2 + history_len values, updated */
  uint32_t history_len;           /* >= 1 */
  uint32_t current;               /* < history_len */
  int32_t amax_compute_algo;      /* octet_history_amax */
  int32_t recompute;              /* 0: keep the scale (interval), 1: recompute */
  int32_t margin;                 /* 0..127 */
  int32_t power_of_two;           /* 0 or 1 */
  float fp8_max;                  /* finite and > 0 */
  int32_t reserved;               /* 0 */
} octet_delayed_scaling_update_args;

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
   * memory and memcpy); required for a device backend. mem_alloc and
   * mem_free are given together or both left NULL (else the plugin is
   * refused). */
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

  /* Plugin ABI 1.1 entries, all optional: the host reads them only when
   * struct_size covers them. */
  /* quantize() plus statistics into stats_out (device, required). */
  int32_t (*quantize_with_statistics)(octet_backend_context* context,
                                      const octet_quantize_args* args,
                                      octet_quantize_statistics* stats_out);
  int32_t (*block_quantize)(octet_backend_context* context,
                            const octet_block_quantize_args* args);
  int32_t (*block_dequantize)(octet_backend_context* context,
                              const octet_block_dequantize_args* args);
  int32_t (*block_gemm)(octet_backend_context* context, const octet_block_gemm_args* args);

  /* Plugin ABI 1.2 entries, all optional, read only inside struct_size. An
   * operation of the core that needs a missing one answers UNSUPPORTED
   * naming it. A backend that provides norm_forward or bias_gradient honours
   * a non-NULL args->quantize (the fused pass). */
  int32_t (*norm_forward)(octet_backend_context* context, const octet_norm_forward_args* args);
  int32_t (*norm_backward)(octet_backend_context* context, const octet_norm_backward_args* args);
  int32_t (*activation_forward)(octet_backend_context* context, const octet_activation_args* args);
  int32_t (*activation_backward)(octet_backend_context* context, const octet_activation_args* args);
  int32_t (*bias_gradient)(octet_backend_context* context, const octet_bias_gradient_args* args);
  /* y = x + y (accumulate != 0) or y = x, element-wise in FP32, rounded to
   * y's dtype; x and y have the same rows x cols, any high-precision dtypes. */
  int32_t (*accumulate)(octet_backend_context* context, const octet_matrix_view* x,
                        const octet_matrix_view* y, int32_t accumulate);

  /* Plugin ABI 1.3 entries ("Scaling kernels" above), optional, read only
   * when struct_size covers them. The host uses them only when all three are
   * present. */
  int32_t (*scale_from_amax)(octet_backend_context* context, const octet_scale_from_amax_args* args);
  int32_t (*delayed_scaling_update)(octet_backend_context* context,
                                    const octet_delayed_scaling_update_args* args);
  /* *slot = fmaxf(*slot, *amax): a step's amax is the max over its tensors
   * (a NaN amax leaves the slot, a NaN slot takes the amax). */
  int32_t (*amax_record)(octet_backend_context* context, const float* amax, float* slot);

  /* Plugin ABI 1.4 entries ("FP4 kernels" above), optional, read only when
   * struct_size covers them. A backend declaring an FP4 scaling mode
   * provides all three; the host uses them only when all three are present. */
  int32_t (*fp4_quantize)(octet_backend_context* context, const octet_fp4_quantize_args* args);
  int32_t (*fp4_dequantize)(octet_backend_context* context, const octet_fp4_dequantize_args* args);
  int32_t (*fp4_gemm)(octet_backend_context* context, const octet_fp4_gemm_args* args);

  /* Plugin ABI 1.5 entry ("Grouped GEMMs" above), optional, read only when
   * struct_size covers it. */
  int32_t (*grouped_gemm)(octet_backend_context* context, const octet_grouped_gemm_args* args);
} octet_backend_api;

/* The one symbol a plugin exports. */
typedef int32_t (*octet_backend_entry_fn)(uint32_t host_abi_major,
                                          uint32_t host_abi_minor,
                                          const octet_backend_api** api_out);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* OCTET_OCTET_BACKEND_H */
