/* The kernel entries: each checks its arguments (reporting through the host
 * callback before anything is queued, so a refused call writes nothing),
 * resolves device pointers to (cl_mem, offset) and queues one or more
 * kernels of opencl_kernels.cl on the context's queue, without waiting. */
#include <string.h>

#include "opencl_backend.h"

/* Sets kernel arguments in order; the first failure is kept. */
typedef struct arguments {
  cl_kernel kernel;
  cl_uint next;
  cl_int error;
} arguments;

static void arg(arguments* a, size_t size, const void* value) {
  if (a->error == CL_SUCCESS) a->error = clSetKernelArg(a->kernel, a->next, size, value);
  ++a->next;
}
static void arg_view(arguments* a, const device_view* v, int with_dtype) {
  arg(a, sizeof v->mem, &v->mem);
  arg(a, sizeof v->offset, &v->offset);
  arg(a, sizeof v->ld, &v->ld);
  if (with_dtype) arg(a, sizeof v->dtype, &v->dtype);
}
static void arg_scalar(arguments* a, const device_scalar* s) {
  arg(a, sizeof s->mem, &s->mem);
  arg(a, sizeof s->offset, &s->offset);
}
static void arg_int(arguments* a, cl_int value) { arg(a, sizeof value, &value); }
static void arg_long(arguments* a, cl_long value) { arg(a, sizeof value, &value); }

/* Queues the kernel over `global` (and `local` when not NULL). */
static int32_t launch(octet_backend_context* context, const char* op, const arguments* a, cl_uint dims,
                      const size_t* global, const size_t* local) {
  cl_int error = a->error;
  if (error != CL_SUCCESS) return opencl_fail(op, "clSetKernelArg", error);
  error = clEnqueueNDRangeKernel(context->queue, a->kernel, dims, NULL, global, local, 0, NULL, NULL);
  return error == CL_SUCCESS ? OCTET_STATUS_SUCCESS : opencl_fail(op, "clEnqueueNDRangeKernel", error);
}

/* Element-wise kernels: global (cols, rows) rounded up to 16 x 16. */
static int32_t launch_elementwise(octet_backend_context* context, const char* op, const arguments* a, cl_long rows,
                                  cl_long cols) {
  size_t global[2];
  if (rows == 0 || cols == 0) return OCTET_STATUS_SUCCESS;
  global[0] = opencl_round_up(cols, 16);
  global[1] = opencl_round_up(rows, 16);
  return launch(context, op, a, 2, global, NULL);
}

static arguments start(octet_backend_context* context, int kernel) {
  arguments a;
  a.kernel = context->kernels[kernel];
  a.next = 0;
  a.error = CL_SUCCESS;
  return a;
}

static int32_t check_context(octet_backend_context* context, const char* op) {
  if (context == NULL) return opencl_report(OCTET_STATUS_INVALID_ARGUMENT, "opencl %s: context is NULL", op);
  return OCTET_STATUS_SUCCESS;
}

static int32_t check_same_shape(const char* op, const device_view* a, const device_view* b, const char* names) {
  if (a->rows != b->rows || a->cols != b->cols) {
    return opencl_report(OCTET_STATUS_INVALID_ARGUMENT,
                         "opencl %s: %s must have the same rows and cols (%lld x %lld and %lld x %lld)", op, names,
                         (long long)a->rows, (long long)a->cols, (long long)b->rows, (long long)b->cols);
  }
  return OCTET_STATUS_SUCCESS;
}

/* A dense rows x cols FP8 output at `pointer`. */
static int32_t check_codes(octet_backend_context* context, const char* op, const char* arg_name, uint8_t* pointer,
                           cl_long rows, cl_long cols, device_view* out) {
  octet_matrix_view view;
  memset(&view, 0, sizeof view);
  view.data = pointer;
  view.dtype = OCTET_DTYPE_E4M3;
  view.rows = rows;
  view.cols = cols;
  view.ld = cols;
  return opencl_check_view(context, op, arg_name, &view, FP8_DTYPES, out);
}

int32_t opencl_convert(octet_backend_context* context, const octet_matrix_view* input, const octet_matrix_view* output,
                       int32_t saturate) {
  device_view in, out;
  arguments a;
  int32_t status;
  if ((status = check_context(context, "convert")) != 0) return status;
  if ((status = opencl_check_view(context, "convert", "input", input, ALL_DTYPES, &in)) != 0) return status;
  if ((status = opencl_check_view(context, "convert", "output", output, ALL_DTYPES, &out)) != 0) return status;
  if ((status = check_same_shape("convert", &in, &out, "input and output")) != 0) return status;
  a = start(context, KERNEL_CONVERT);
  arg_view(&a, &in, 1);
  arg_view(&a, &out, 1);
  arg_long(&a, in.rows);
  arg_long(&a, in.cols);
  arg_int(&a, saturate != 0);
  return launch_elementwise(context, "convert", &a, in.rows, in.cols);
}

static int32_t queue_amax(octet_backend_context* context, const char* op, const device_view* in,
                          const device_scalar* out) {
  arguments a = start(context, KERNEL_AMAX);
  size_t size = AMAX_GROUP;
  arg_view(&a, in, 1);
  arg_long(&a, in->rows);
  arg_long(&a, in->cols);
  arg_scalar(&a, out);
  return launch(context, op, &a, 1, &size, &size);
}

int32_t opencl_amax(octet_backend_context* context, const octet_matrix_view* input, float* amax_out) {
  device_view in;
  device_scalar out;
  int32_t status;
  if ((status = check_context(context, "amax")) != 0) return status;
  if ((status = opencl_check_view(context, "amax", "input", input, HIGH_PRECISION_DTYPES, &in)) != 0) return status;
  if ((status = opencl_check_scalar(context, "amax", "amax_out", amax_out, &out)) != 0) return status;
  return queue_amax(context, "amax", &in, &out);
}

int32_t opencl_quantize(octet_backend_context* context, const octet_quantize_args* given) {
  octet_quantize_args args;
  device_view in, rowwise, columnwise;
  device_scalar scale, scale_inv, amax;
  arguments a;
  int32_t status;
  if ((status = check_context(context, "quantize")) != 0) return status;
  if (given == NULL) return opencl_report(OCTET_STATUS_INVALID_ARGUMENT, "opencl quantize: args is NULL");
  if (given->struct_size < offsetof(octet_quantize_args, scale) + sizeof given->scale) {
    return opencl_report(OCTET_STATUS_INVALID_ARGUMENT,
                         "opencl quantize: args->struct_size (%zu) is too small to hold the scale", given->struct_size);
  }
  /* Output pointers beyond the caller's struct_size count as NULL. */
  memset(&args, 0, sizeof args);
  memcpy(&args, given, given->struct_size < sizeof args ? given->struct_size : sizeof args);
  if ((status = opencl_check_view(context, "quantize", "args->input", &args.input, HIGH_PRECISION_DTYPES, &in)) != 0) {
    return status;
  }
  if (args.out_dtype <= 0 || args.out_dtype >= 32 || !(FP8_DTYPES & OCTET_DTYPE_BIT(args.out_dtype))) {
    return opencl_report(OCTET_STATUS_INVALID_ARGUMENT, "opencl quantize: args->out_dtype (%d) must be e4m3 or e5m2",
                         (int)args.out_dtype);
  }
  if ((status = opencl_check_scalar(context, "quantize", "args->scale", args.scale, &scale)) != 0) return status;
  if (args.rowwise_out == NULL && args.columnwise_out == NULL && args.scale_inv_out == NULL && args.amax_out == NULL) {
    return opencl_report(OCTET_STATUS_INVALID_ARGUMENT,
                         "opencl quantize: args asks for no output (rowwise_out, columnwise_out, scale_inv_out and "
                         "amax_out are all NULL)");
  }
  if (args.rowwise_out != NULL && (status = check_codes(context, "quantize", "args->rowwise_out", args.rowwise_out,
                                                        in.rows, in.cols, &rowwise)) != 0) {
    return status;
  }
  if (args.columnwise_out != NULL && (status = check_codes(context, "quantize", "args->columnwise_out",
                                                           args.columnwise_out, in.cols, in.rows, &columnwise)) != 0) {
    return status;
  }
  if (args.scale_inv_out != NULL &&
      (status = opencl_check_scalar(context, "quantize", "args->scale_inv_out", args.scale_inv_out, &scale_inv)) != 0) {
    return status;
  }
  if (args.amax_out != NULL &&
      (status = opencl_check_scalar(context, "quantize", "args->amax_out", args.amax_out, &amax)) != 0) {
    return status;
  }
  if (args.rowwise_out != NULL || args.columnwise_out != NULL) {
    const device_view* none = args.rowwise_out != NULL ? &rowwise : &columnwise;
    const device_view* row = args.rowwise_out != NULL ? &rowwise : none;
    const device_view* col = args.columnwise_out != NULL ? &columnwise : none;
    a = start(context, KERNEL_QUANTIZE);
    arg_view(&a, &in, 1);
    arg_scalar(&a, &scale);
    arg_int(&a, args.out_dtype);
    arg_int(&a, args.saturate != 0);
    arg(&a, sizeof row->mem, &row->mem);
    arg(&a, sizeof row->offset, &row->offset);
    arg_int(&a, args.rowwise_out != NULL);
    arg(&a, sizeof col->mem, &col->mem);
    arg(&a, sizeof col->offset, &col->offset);
    arg_int(&a, args.columnwise_out != NULL);
    arg_long(&a, in.rows);
    arg_long(&a, in.cols);
    if ((status = launch_elementwise(context, "quantize", &a, in.rows, in.cols)) != 0) return status;
  }
  if (args.scale_inv_out != NULL) {
    size_t one = 1;
    a = start(context, KERNEL_RECIPROCAL);
    arg_scalar(&a, &scale);
    arg_scalar(&a, &scale_inv);
    if ((status = launch(context, "quantize", &a, 1, &one, &one)) != 0) return status;
  }
  if (args.amax_out != NULL) return queue_amax(context, "quantize", &in, &amax);
  return OCTET_STATUS_SUCCESS;
}

int32_t opencl_transpose(octet_backend_context* context, const octet_matrix_view* input,
                         const octet_matrix_view* output) {
  device_view in, out;
  arguments a;
  int32_t status;
  cl_int size;
  if ((status = check_context(context, "transpose")) != 0) return status;
  if ((status = opencl_check_view(context, "transpose", "input", input, ALL_DTYPES, &in)) != 0) return status;
  if ((status = opencl_check_view(context, "transpose", "output", output, ALL_DTYPES, &out)) != 0) return status;
  if (out.rows != in.cols || out.cols != in.rows) {
    return opencl_report(OCTET_STATUS_INVALID_ARGUMENT,
                         "opencl transpose: output must be input's cols x rows (%lld x %lld), not %lld x %lld",
                         (long long)in.cols, (long long)in.rows, (long long)out.rows, (long long)out.cols);
  }
  size = in.dtype == OCTET_DTYPE_FP32 ? 4 : (in.dtype == OCTET_DTYPE_BF16 || in.dtype == OCTET_DTYPE_FP16) ? 2 : 1;
  if (out.dtype != in.dtype) {
    return opencl_report(OCTET_STATUS_INVALID_ARGUMENT,
                         "opencl transpose: output.dtype (%d) must be input.dtype (%d): a transpose moves bytes",
                         (int)out.dtype, (int)in.dtype);
  }
  a = start(context, KERNEL_TRANSPOSE);
  arg_view(&a, &in, 0);
  arg_view(&a, &out, 0);
  arg_int(&a, size);
  arg_long(&a, in.rows);
  arg_long(&a, in.cols);
  return launch_elementwise(context, "transpose", &a, in.rows, in.cols);
}

int32_t opencl_dequantize(octet_backend_context* context, const octet_dequantize_args* args) {
  device_view in, out;
  device_scalar scale_inv;
  arguments a;
  int32_t status;
  if ((status = check_context(context, "dequantize")) != 0) return status;
  if (args == NULL) return opencl_report(OCTET_STATUS_INVALID_ARGUMENT, "opencl dequantize: args is NULL");
  if (args->struct_size < sizeof *args) {
    return opencl_report(OCTET_STATUS_INVALID_ARGUMENT,
                         "opencl dequantize: args->struct_size (%zu) is smaller than octet_dequantize_args (%zu)",
                         args->struct_size, sizeof *args);
  }
  if ((status = opencl_check_view(context, "dequantize", "args->input", &args->input, FP8_DTYPES, &in)) != 0) {
    return status;
  }
  if ((status = opencl_check_view(context, "dequantize", "args->output", &args->output, HIGH_PRECISION_DTYPES, &out)) !=
      0) {
    return status;
  }
  if ((status = check_same_shape("dequantize", &in, &out, "args->input and args->output")) != 0) return status;
  if ((status = opencl_check_scalar(context, "dequantize", "args->scale_inv", args->scale_inv, &scale_inv)) != 0) {
    return status;
  }
  a = start(context, KERNEL_DEQUANTIZE);
  arg_view(&a, &in, 1);
  arg_scalar(&a, &scale_inv);
  arg_view(&a, &out, 1);
  arg_long(&a, in.rows);
  arg_long(&a, in.cols);
  return launch_elementwise(context, "dequantize", &a, in.rows, in.cols);
}

/* D = alpha * (sa * sb) * A' B'^T + beta * D + bias: both operands FP8 (any
 * mix of E4M3 and E5M2, every layout) or both high precision; D FP32, BF16
 * or FP16. No GELU epilogue and no FP8 D (caps say so). */
int32_t opencl_gemm(octet_backend_context* context, const octet_gemm_args* given) {
  octet_gemm_args args;
  device_view A, B, D, bias;
  device_scalar sa, sb;
  arguments a;
  int32_t status;
  int fp8_a, fp8_b;
  cl_long a_rows, a_cols, b_rows, b_cols;
  size_t global[2], local[2] = {GEMM_TILE, GEMM_TILE};
  if ((status = check_context(context, "gemm")) != 0) return status;
  if (given == NULL) return opencl_report(OCTET_STATUS_INVALID_ARGUMENT, "opencl gemm: args is NULL");
  if (given->struct_size < offsetof(octet_gemm_args, epilogue) + sizeof given->epilogue) {
    return opencl_report(OCTET_STATUS_INVALID_ARGUMENT,
                         "opencl gemm: args->struct_size (%zu) is too small to hold the epilogue", given->struct_size);
  }
  memset(&args, 0, sizeof args);
  memcpy(&args, given, given->struct_size < sizeof args ? given->struct_size : sizeof args);
  if (args.m < 0 || args.n < 0 || args.k < 0) {
    return opencl_report(OCTET_STATUS_INVALID_ARGUMENT, "opencl gemm: args->m, n and k must be >= 0 (%lld, %lld, %lld)",
                         (long long)args.m, (long long)args.n, (long long)args.k);
  }
  if ((status = opencl_check_view(context, "gemm", "args->a", &args.a, ALL_DTYPES, &A)) != 0) return status;
  if ((status = opencl_check_view(context, "gemm", "args->b", &args.b, ALL_DTYPES, &B)) != 0) return status;
  if ((status = opencl_check_view(context, "gemm", "args->d", &args.d, ALL_DTYPES, &D)) != 0) return status;
  fp8_a = (FP8_DTYPES & OCTET_DTYPE_BIT(A.dtype)) != 0;
  fp8_b = (FP8_DTYPES & OCTET_DTYPE_BIT(B.dtype)) != 0;
  if (fp8_a != fp8_b) {
    return opencl_report(OCTET_STATUS_UNSUPPORTED,
                         "opencl gemm: args->a and args->b must be both FP8 or both high precision (dtypes %d and %d)",
                         (int)A.dtype, (int)B.dtype);
  }
  if (!(HIGH_PRECISION_DTYPES & OCTET_DTYPE_BIT(D.dtype))) {
    return opencl_report(OCTET_STATUS_UNSUPPORTED,
                         "opencl gemm: args->d.dtype (%d) must be fp32, bf16 or fp16: this backend writes no FP8 D "
                         "(caps.fp8_gemm_output is 0)",
                         (int)D.dtype);
  }
  if (args.d_scale != NULL) {
    return opencl_report(OCTET_STATUS_UNSUPPORTED,
                         "opencl gemm: args->d_scale must be NULL: this backend writes no FP8 D "
                         "(caps.fp8_gemm_output is 0)");
  }
  if (args.epilogue != OCTET_EPILOGUE_NONE) {
    return opencl_report(
        args.epilogue == OCTET_EPILOGUE_GELU ? OCTET_STATUS_UNSUPPORTED : OCTET_STATUS_INVALID_ARGUMENT,
        "opencl gemm: args->epilogue (%d) must be OCTET_EPILOGUE_NONE: this backend has no GELU "
        "epilogue",
        (int)args.epilogue);
  }
  a_rows = args.trans_a ? args.k : args.m;
  a_cols = args.trans_a ? args.m : args.k;
  b_rows = args.trans_b ? args.k : args.n;
  b_cols = args.trans_b ? args.n : args.k;
  if (A.rows != a_rows || A.cols != a_cols) {
    return opencl_report(OCTET_STATUS_INVALID_ARGUMENT,
                         "opencl gemm: args->a must be %lld x %lld (m %lld, k %lld%s), not %lld x %lld",
                         (long long)a_rows, (long long)a_cols, (long long)args.m, (long long)args.k,
                         args.trans_a ? ", trans_a" : "", (long long)A.rows, (long long)A.cols);
  }
  if (B.rows != b_rows || B.cols != b_cols) {
    return opencl_report(OCTET_STATUS_INVALID_ARGUMENT,
                         "opencl gemm: args->b must be %lld x %lld (n %lld, k %lld%s), not %lld x %lld",
                         (long long)b_rows, (long long)b_cols, (long long)args.n, (long long)args.k,
                         args.trans_b ? ", trans_b" : "", (long long)B.rows, (long long)B.cols);
  }
  if (D.rows != args.m || D.cols != args.n) {
    return opencl_report(OCTET_STATUS_INVALID_ARGUMENT,
                         "opencl gemm: args->d must be m x n (%lld x %lld), not %lld x %lld", (long long)args.m,
                         (long long)args.n, (long long)D.rows, (long long)D.cols);
  }
  bias.mem = context->absent_arg;
  bias.offset = 0;
  bias.dtype = OCTET_DTYPE_FP32;
  if (args.bias.data != NULL) {
    if ((status = opencl_check_view(context, "gemm", "args->bias", &args.bias, HIGH_PRECISION_DTYPES, &bias)) != 0) {
      return status;
    }
    if (bias.rows != 1 || bias.cols != args.n) {
      return opencl_report(OCTET_STATUS_INVALID_ARGUMENT,
                           "opencl gemm: args->bias must be 1 x n (1 x %lld), not %lld x %lld", (long long)args.n,
                           (long long)bias.rows, (long long)bias.cols);
    }
  }
  sa.mem = sb.mem = context->absent_arg;
  sa.offset = sb.offset = 0;
  if (args.a_scale_inv != NULL &&
      (status = opencl_check_scalar(context, "gemm", "args->a_scale_inv", args.a_scale_inv, &sa)) != 0) {
    return status;
  }
  if (args.b_scale_inv != NULL &&
      (status = opencl_check_scalar(context, "gemm", "args->b_scale_inv", args.b_scale_inv, &sb)) != 0) {
    return status;
  }
  if (args.m == 0 || args.n == 0) return OCTET_STATUS_SUCCESS;
  a = start(context, KERNEL_GEMM);
  arg_long(&a, args.m);
  arg_long(&a, args.n);
  arg_long(&a, args.k);
  arg_view(&a, &A, 1);
  arg_int(&a, args.trans_a != 0);
  arg_view(&a, &B, 1);
  arg_int(&a, args.trans_b != 0);
  arg_scalar(&a, &sa);
  arg_int(&a, args.a_scale_inv != NULL);
  arg_scalar(&a, &sb);
  arg_int(&a, args.b_scale_inv != NULL);
  arg(&a, sizeof args.alpha, &args.alpha);
  arg(&a, sizeof args.beta, &args.beta);
  arg_view(&a, &D, 1);
  arg(&a, sizeof bias.mem, &bias.mem);
  arg(&a, sizeof bias.offset, &bias.offset);
  arg_int(&a, bias.dtype);
  arg_int(&a, args.bias.data != NULL);
  global[0] = opencl_round_up(args.n, GEMM_TILE);
  global[1] = opencl_round_up(args.m, GEMM_TILE);
  return launch(context, "gemm", &a, 2, global, local);
}

/* Column sums of dy into sums_out; with args->quantize, dy's codes too. */
int32_t opencl_bias_gradient(octet_backend_context* context, const octet_bias_gradient_args* args) {
  device_view dy, sums;
  size_t global;
  arguments a;
  int32_t status;
  octet_matrix_view sums_view;
  if ((status = check_context(context, "bias_gradient")) != 0) return status;
  if (args == NULL) return opencl_report(OCTET_STATUS_INVALID_ARGUMENT, "opencl bias_gradient: args is NULL");
  if (args->struct_size < sizeof *args) {
    return opencl_report(OCTET_STATUS_INVALID_ARGUMENT,
                         "opencl bias_gradient: args->struct_size (%zu) is smaller than octet_bias_gradient_args (%zu)",
                         args->struct_size, sizeof *args);
  }
  if ((status = opencl_check_view(context, "bias_gradient", "args->grad_output", &args->grad_output,
                                  HIGH_PRECISION_DTYPES, &dy)) != 0) {
    return status;
  }
  if (args->sums_out == NULL) {
    return opencl_report(OCTET_STATUS_INVALID_ARGUMENT, "opencl bias_gradient: args->sums_out is NULL");
  }
  memset(&sums_view, 0, sizeof sums_view);
  sums_view.data = args->sums_out;
  sums_view.dtype = OCTET_DTYPE_FP32;
  sums_view.rows = 1;
  sums_view.cols = dy.cols;
  sums_view.ld = dy.cols;
  if ((status = opencl_check_view(context, "bias_gradient", "args->sums_out", &sums_view, HIGH_PRECISION_DTYPES,
                                  &sums)) != 0) {
    return status;
  }
  if (args->quantize != NULL) {
    /* The fused pass: quantize() of dy (its own checks run before it queues
     * anything; every check of this call has passed already). */
    octet_quantize_args q;
    const size_t given = args->quantize->struct_size;
    memset(&q, 0, sizeof q);
    memcpy(&q, args->quantize, given < sizeof q ? given : sizeof q);
    q.struct_size = given < sizeof q ? given : sizeof q;
    q.input = args->grad_output;
    if ((status = opencl_quantize(context, &q)) != 0) return status;
  }
  if (dy.cols == 0) return OCTET_STATUS_SUCCESS;
  a = start(context, KERNEL_COLUMN_SUMS);
  arg_view(&a, &dy, 1);
  arg_long(&a, dy.rows);
  arg_long(&a, dy.cols);
  arg(&a, sizeof sums.mem, &sums.mem);
  arg(&a, sizeof sums.offset, &sums.offset);
  global = opencl_round_up(dy.cols, 64);
  return launch(context, "bias_gradient", &a, 1, &global, NULL);
}

int32_t opencl_accumulate(octet_backend_context* context, const octet_matrix_view* x, const octet_matrix_view* y,
                          int32_t accumulate) {
  device_view in, out;
  arguments a;
  int32_t status;
  if ((status = check_context(context, "accumulate")) != 0) return status;
  if ((status = opencl_check_view(context, "accumulate", "x", x, HIGH_PRECISION_DTYPES, &in)) != 0) return status;
  if ((status = opencl_check_view(context, "accumulate", "y", y, HIGH_PRECISION_DTYPES, &out)) != 0) return status;
  if ((status = check_same_shape("accumulate", &in, &out, "x and y")) != 0) return status;
  a = start(context, KERNEL_ACCUMULATE);
  arg_view(&a, &in, 1);
  arg_view(&a, &out, 1);
  arg_long(&a, in.rows);
  arg_long(&a, in.cols);
  arg_int(&a, accumulate != 0);
  return launch_elementwise(context, "accumulate", &a, in.rows, in.cols);
}
