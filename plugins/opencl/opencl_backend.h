/* What the opencl backend's files share: the device picked at initialize(),
 * the backend context (a queue and its kernels), error reporting through the
 * host callback, and the argument checks that turn the core's device
 * pointers into (cl_mem, offset) pairs. */
#ifndef OCTET_OPENCL_BACKEND_H
#define OCTET_OPENCL_BACKEND_H

#include <octet/octet_backend.h>

#include "opencl_memory.h"

#define OPENCL_NAME "opencl"

/* The kernels of opencl_kernels.cl, in this order. */
enum {
  KERNEL_CONVERT,
  KERNEL_QUANTIZE,
  KERNEL_DEQUANTIZE,
  KERNEL_TRANSPOSE,
  KERNEL_RECIPROCAL,
  KERNEL_AMAX,
  KERNEL_GEMM,
  KERNEL_COLUMN_SUMS,
  KERNEL_ACCUMULATE,
  KERNEL_COUNT
};
#define AMAX_GROUP 256 /* as in opencl_kernels.cl */
#define GEMM_TILE 16

/* One backend context: an in-order queue (the caller's stream or one of its
 * own) and its own kernel objects (clSetKernelArg is not thread safe, and
 * contexts may run on different threads at once). */
struct octet_backend_context {
  cl_context cl; /* the queue's OpenCL context */
  cl_command_queue queue;
  cl_mem absent_arg; /* bound for absent buffer arguments (not owned) */
  cl_kernel kernels[KERNEL_COUNT];
};

/* Reports through the host callback and returns status. */
int32_t opencl_report(int32_t status, const char* format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* The OpenCL error's name (CL_INVALID_VALUE, ...). */
const char* opencl_error_name(cl_int error);

/* BACKEND_ERROR (OUT_OF_MEMORY for the allocation failures) naming the
 * operation, the OpenCL call and its error. */
int32_t opencl_fail(const char* op, const char* call, cl_int error);

/* A view argument resolved to device memory. */
typedef struct device_view {
  cl_mem mem;
  cl_ulong offset;
  cl_long rows, cols, ld;
  cl_int dtype;
} device_view;

/* A single device value (scales, amax) resolved likewise. */
typedef struct device_scalar {
  cl_mem mem;
  cl_ulong offset;
} device_scalar;

#define HIGH_PRECISION_DTYPES \
  (OCTET_DTYPE_BIT(OCTET_DTYPE_FP32) | OCTET_DTYPE_BIT(OCTET_DTYPE_BF16) | OCTET_DTYPE_BIT(OCTET_DTYPE_FP16))
#define FP8_DTYPES (OCTET_DTYPE_BIT(OCTET_DTYPE_E4M3) | OCTET_DTYPE_BIT(OCTET_DTYPE_E5M2))
#define ALL_DTYPES (HIGH_PRECISION_DTYPES | FP8_DTYPES)

/* Checks view (dtype in `allowed`, rows, cols >= 0, ld >= cols, data in
 * device memory of the context's OpenCL context covering every element)
 * and resolves it. An empty view resolves to the context's buffer for absent arguments. */
int32_t opencl_check_view(octet_backend_context* context, const char* op, const char* arg,
                          const octet_matrix_view* view, uint32_t allowed, device_view* out);

/* Checks that `pointer` (named arg) holds one float of device memory of the
 * context's OpenCL context and resolves it. */
int32_t opencl_check_scalar(octet_backend_context* context, const char* op, const char* arg, const void* pointer,
                            device_scalar* out);

/* Global work size: n rounded up to a multiple of `multiple`. */
size_t opencl_round_up(cl_long n, size_t multiple);

/* Kernel entries of opencl_ops.c. */
int32_t opencl_convert(octet_backend_context* context, const octet_matrix_view* input, const octet_matrix_view* output,
                       int32_t saturate);
int32_t opencl_amax(octet_backend_context* context, const octet_matrix_view* input, float* amax_out);
int32_t opencl_quantize(octet_backend_context* context, const octet_quantize_args* args);
int32_t opencl_transpose(octet_backend_context* context, const octet_matrix_view* input,
                         const octet_matrix_view* output);
int32_t opencl_dequantize(octet_backend_context* context, const octet_dequantize_args* args);
int32_t opencl_gemm(octet_backend_context* context, const octet_gemm_args* args);
int32_t opencl_bias_gradient(octet_backend_context* context, const octet_bias_gradient_args* args);
int32_t opencl_accumulate(octet_backend_context* context, const octet_matrix_view* x, const octet_matrix_view* y,
                          int32_t accumulate);

#endif /* OCTET_OPENCL_BACKEND_H */
