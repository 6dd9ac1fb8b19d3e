/* The opencl backend: an example of a device-memory backend, written against
 * octet_backend.h only. Its memory is OpenCL buffers (cl_mem) reached through
 * device addresses (opencl_memory.h), copied explicitly to and from the
 * host; each backend context carries an in-order command queue (the caller's
 * stream or its own) on which kernels run asynchronously until synchronize.
 *
 * This file: initialize/shutdown (the device, its OpenCL context and the
 * kernels' program), contexts, memory and the entry table. The kernels'
 * entry points are in opencl_ops.c, their OpenCL C in opencl_kernels.cl. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opencl_backend.h"
#include "opencl_kernels_source.h" /* generated from opencl_kernels.cl */

#define OPENCL_VERSION "0.1.0"

OCTET_BACKEND_EXPORT int32_t octet_backend_entry(uint32_t host_abi_major, uint32_t host_abi_minor,
                                                 const octet_backend_api** api_out);

static const char* const kernel_names[KERNEL_COUNT] = {"octet_convert",   "octet_quantize",    "octet_dequantize",
                                                       "octet_transpose", "octet_reciprocal",  "octet_amax",
                                                       "octet_gemm",      "octet_column_sums", "octet_accumulate"};

/* ------------------------------------------------------------------------ */
/* Errors                                                                    */
/* ------------------------------------------------------------------------ */

/* Written once by initialize() (single-threaded, per the ABI), then only read. */
static octet_host_services host_services;

int32_t opencl_report(int32_t status, const char* format, ...) {
  char message[512];
  va_list args;
  va_start(args, format);
  vsnprintf(message, sizeof message, format, args);
  va_end(args);
  if (host_services.report_error != NULL) host_services.report_error(host_services.host_data, status, message);
  return status;
}

const char* opencl_error_name(cl_int error) {
  switch (error) {
    case CL_DEVICE_NOT_FOUND:
      return "CL_DEVICE_NOT_FOUND";
    case CL_DEVICE_NOT_AVAILABLE:
      return "CL_DEVICE_NOT_AVAILABLE";
    case CL_MEM_OBJECT_ALLOCATION_FAILURE:
      return "CL_MEM_OBJECT_ALLOCATION_FAILURE";
    case CL_OUT_OF_RESOURCES:
      return "CL_OUT_OF_RESOURCES";
    case CL_OUT_OF_HOST_MEMORY:
      return "CL_OUT_OF_HOST_MEMORY";
    case CL_BUILD_PROGRAM_FAILURE:
      return "CL_BUILD_PROGRAM_FAILURE";
    case CL_INVALID_VALUE:
      return "CL_INVALID_VALUE";
    case CL_INVALID_CONTEXT:
      return "CL_INVALID_CONTEXT";
    case CL_INVALID_COMMAND_QUEUE:
      return "CL_INVALID_COMMAND_QUEUE";
    case CL_INVALID_MEM_OBJECT:
      return "CL_INVALID_MEM_OBJECT";
    case CL_INVALID_KERNEL_ARGS:
      return "CL_INVALID_KERNEL_ARGS";
    case CL_INVALID_WORK_GROUP_SIZE:
      return "CL_INVALID_WORK_GROUP_SIZE";
    case CL_INVALID_BUFFER_SIZE:
      return "CL_INVALID_BUFFER_SIZE";
    default:
      return "an OpenCL error";
  }
}

int32_t opencl_fail(const char* op, const char* call, cl_int error) {
  const int memory =
      error == CL_MEM_OBJECT_ALLOCATION_FAILURE || error == CL_OUT_OF_RESOURCES || error == CL_OUT_OF_HOST_MEMORY;
  return opencl_report(memory ? OCTET_STATUS_OUT_OF_MEMORY : OCTET_STATUS_BACKEND_ERROR,
                       "opencl %s: %s failed with %s (%d)", op, call, opencl_error_name(error), (int)error);
}

/* ------------------------------------------------------------------------ */
/* The device and its programs                                               */
/* ------------------------------------------------------------------------ */

/* Set by initialize(), read-only afterwards. */
static cl_device_id device;
static cl_context default_context;
static char device_name[256];

/* For each OpenCL context a queue was seen on (the default one, set up by
 * initialize, and those of callers' streams): the kernels' program and a
 * small buffer bound where a kernel argument is absent (a
 * buffer argument must belong to the queue's OpenCL context). */
#define MAX_PROGRAMS 16
static struct {
  cl_context context;
  cl_program program;
  cl_mem absent_arg;
} programs[MAX_PROGRAMS];
static size_t program_count;
static pthread_mutex_t program_lock = PTHREAD_MUTEX_INITIALIZER;

/* The exact FP32 arithmetic numerics.md asks for: IEEE rounding, subnormals
 * kept, no relaxed math and no FMA contraction (the source says so too). */
static void build_options(char* out, size_t size) {
  snprintf(out, size, "-cl-std=CL1.2 -DOCTET_FP32=%d -DOCTET_BF16=%d -DOCTET_FP16=%d -DOCTET_E4M3=%d -DOCTET_E5M2=%d",
           OCTET_DTYPE_FP32, OCTET_DTYPE_BF16, OCTET_DTYPE_FP16, OCTET_DTYPE_E4M3, OCTET_DTYPE_E5M2);
}

/* Builds (once per OpenCL context) and returns the program and the
 * buffer for absent arguments of `context`, or reports. */
static int32_t program_for(cl_context context, const char* op, cl_program* out, cl_mem* absent_arg_out) {
  size_t i;
  cl_int error;
  cl_program program;
  cl_mem absent_arg;
  const char* source = opencl_kernels_source;
  char options[256];
  int32_t status = OCTET_STATUS_SUCCESS;
  pthread_mutex_lock(&program_lock);
  for (i = 0; i < program_count; ++i) {
    if (programs[i].context == context) {
      *out = programs[i].program;
      *absent_arg_out = programs[i].absent_arg;
      pthread_mutex_unlock(&program_lock);
      return OCTET_STATUS_SUCCESS;
    }
  }
  if (program_count == MAX_PROGRAMS) {
    pthread_mutex_unlock(&program_lock);
    return opencl_report(OCTET_STATUS_UNSUPPORTED, "opencl %s: stream: queues of more than %d OpenCL contexts", op,
                         MAX_PROGRAMS);
  }
  absent_arg = clCreateBuffer(context, CL_MEM_READ_WRITE, 64, NULL, &error);
  if (error != CL_SUCCESS) {
    pthread_mutex_unlock(&program_lock);
    return opencl_fail(op, "clCreateBuffer", error);
  }
  program = clCreateProgramWithSource(context, 1, &source, NULL, &error);
  if (error != CL_SUCCESS) {
    clReleaseMemObject(absent_arg);
    pthread_mutex_unlock(&program_lock);
    return opencl_fail(op, "clCreateProgramWithSource", error);
  }
  build_options(options, sizeof options);
  error = clBuildProgram(program, 1, &device, options, NULL, NULL);
  if (error != CL_SUCCESS) {
    char log[1024] = "";
    clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, NULL);
    status = opencl_report(OCTET_STATUS_BACKEND_ERROR, "opencl %s: building the kernels failed with %s: %s", op,
                           opencl_error_name(error), log);
    clReleaseProgram(program);
    clReleaseMemObject(absent_arg);
  } else {
    clRetainContext(context);
    programs[program_count].context = context;
    programs[program_count].program = program;
    programs[program_count].absent_arg = absent_arg;
    ++program_count;
    *out = program;
    *absent_arg_out = absent_arg;
  }
  pthread_mutex_unlock(&program_lock);
  return status;
}

/* The first device of the first platform that has one. */
static int32_t find_device(void) {
  cl_platform_id platforms[16];
  cl_uint count = 0, i;
  cl_int error = clGetPlatformIDs(16, platforms, &count);
  if (error != CL_SUCCESS || count == 0) {
    return opencl_report(OCTET_STATUS_UNAVAILABLE,
                         "opencl initialize: no OpenCL platform (clGetPlatformIDs: %s); install an ICD "
                         "such as pocl-opencl-icd",
                         error == CL_SUCCESS ? "none" : opencl_error_name(error));
  }
  for (i = 0; i < count && i < 16; ++i) {
    cl_uint devices = 0;
    if (clGetDeviceIDs(platforms[i], CL_DEVICE_TYPE_ALL, 1, &device, &devices) == CL_SUCCESS && devices > 0) {
      return OCTET_STATUS_SUCCESS;
    }
  }
  return opencl_report(OCTET_STATUS_UNAVAILABLE, "opencl initialize: no OpenCL platform has a device");
}

#define HOLDS(struct_size, type, field) (offsetof(type, field) + sizeof(((type*)0)->field) <= (struct_size))

static void release_globals(void) {
  size_t i;
  for (i = 0; i < program_count; ++i) {
    clReleaseProgram(programs[i].program);
    clReleaseMemObject(programs[i].absent_arg);
    clReleaseContext(programs[i].context);
  }
  program_count = 0;
  if (default_context != NULL) clReleaseContext(default_context);
  default_context = NULL;
}

static int32_t opencl_initialize(const octet_host_services* host, octet_backend_caps* caps) {
  size_t known;
  cl_int error;
  cl_device_fp_config fp = 0;
  cl_program program;
  cl_mem absent_arg;
  int32_t status;
  if (host == NULL || caps == NULL) return OCTET_STATUS_INVALID_ARGUMENT;
  known = host->struct_size < sizeof host_services ? host->struct_size : sizeof host_services;
  memset(&host_services, 0, sizeof host_services);
  memcpy(&host_services, host, known);

  if ((status = find_device()) != OCTET_STATUS_SUCCESS) return status;
  clGetDeviceInfo(device, CL_DEVICE_NAME, sizeof device_name - 1, device_name, NULL);
  /* The codecs are exact only with IEEE FP32: round to nearest even and
   * subnormals (a device that flushes them cannot pass numerics.md). */
  clGetDeviceInfo(device, CL_DEVICE_SINGLE_FP_CONFIG, sizeof fp, &fp, NULL);
  if (!(fp & CL_FP_DENORM) || !(fp & CL_FP_ROUND_TO_NEAREST)) {
    return opencl_report(OCTET_STATUS_UNAVAILABLE,
                         "opencl initialize: device '%s' has no IEEE single precision with subnormals "
                         "(CL_DEVICE_SINGLE_FP_CONFIG lacks CL_FP_DENORM or CL_FP_ROUND_TO_NEAREST)",
                         device_name);
  }
  default_context = clCreateContext(NULL, 1, &device, NULL, NULL, &error);
  if (error != CL_SUCCESS) {
    default_context = NULL;
    return opencl_report(OCTET_STATUS_UNAVAILABLE, "opencl initialize: clCreateContext failed with %s",
                         opencl_error_name(error));
  }
  if ((status = program_for(default_context, "initialize", &program, &absent_arg)) != OCTET_STATUS_SUCCESS) {
    release_globals();
    return status;
  }

  if (HOLDS(caps->struct_size, octet_backend_caps, device)) caps->device = device_name;
  if (HOLDS(caps->struct_size, octet_backend_caps, memory_kind)) caps->memory_kind = OCTET_MEMORY_DEVICE;
  if (HOLDS(caps->struct_size, octet_backend_caps, dtypes)) caps->dtypes = ALL_DTYPES;
  if (HOLDS(caps->struct_size, octet_backend_caps, scaling_modes)) caps->scaling_modes = OCTET_SCALING_PER_TENSOR;
  if (HOLDS(caps->struct_size, octet_backend_caps, native_columnwise)) caps->native_columnwise = 0;
  if (HOLDS(caps->struct_size, octet_backend_caps, fp8_gemm_layouts)) caps->fp8_gemm_layouts = OCTET_GEMM_LAYOUT_ALL;
  /* Device addresses are page-aligned reservations (opencl_memory.h). */
  if (HOLDS(caps->struct_size, octet_backend_caps, alignment)) caps->alignment = 256;
  if (HOLDS(caps->struct_size, octet_backend_caps, fused_cast_transpose)) caps->fused_cast_transpose = 1;
  if (HOLDS(caps->struct_size, octet_backend_caps, fp8_gemm_output)) caps->fp8_gemm_output = 0;
  return OCTET_STATUS_SUCCESS;
}

static void opencl_shutdown(void) { release_globals(); }

/* ------------------------------------------------------------------------ */
/* Contexts                                                                  */
/* ------------------------------------------------------------------------ */

static void opencl_context_destroy(octet_backend_context* context) {
  int i;
  if (context == NULL) return;
  if (context->queue != NULL) {
    clFinish(context->queue); /* nothing of this context runs after it is gone */
    clReleaseCommandQueue(context->queue);
  }
  for (i = 0; i < KERNEL_COUNT; ++i) {
    if (context->kernels[i] != NULL) clReleaseKernel(context->kernels[i]);
  }
  free(context);
}

/* stream: NULL (a queue of the backend's own) or a cl_command_queue on this
 * backend's device, of any OpenCL context (memory allocated through this
 * backend context then belongs to that OpenCL context). */
static int32_t opencl_context_create(void* stream, octet_backend_context** out) {
  octet_backend_context* context;
  cl_program program;
  cl_int error;
  int32_t status;
  int i;
  if (out == NULL) return opencl_report(OCTET_STATUS_INVALID_ARGUMENT, "opencl context_create: context is NULL");
  context = (octet_backend_context*)calloc(1, sizeof *context);
  if (context == NULL) return opencl_report(OCTET_STATUS_OUT_OF_MEMORY, "opencl context_create: out of host memory");
  if (stream != NULL) {
    cl_command_queue queue = (cl_command_queue)stream;
    cl_device_id queue_device = NULL;
    cl_command_queue_properties properties = 0;
    error = clGetCommandQueueInfo(queue, CL_QUEUE_DEVICE, sizeof queue_device, &queue_device, NULL);
    if (error == CL_SUCCESS)
      error = clGetCommandQueueInfo(queue, CL_QUEUE_CONTEXT, sizeof context->cl, &context->cl, NULL);
    if (error == CL_SUCCESS) {
      error = clGetCommandQueueInfo(queue, CL_QUEUE_PROPERTIES, sizeof properties, &properties, NULL);
    }
    if (error != CL_SUCCESS) {
      free(context);
      return opencl_report(OCTET_STATUS_INVALID_ARGUMENT,
                           "opencl context_create: stream is not a cl_command_queue (%s)", opencl_error_name(error));
    }
    if (queue_device != device) {
      free(context);
      return opencl_report(OCTET_STATUS_INVALID_ARGUMENT,
                           "opencl context_create: stream is a queue of another device than '%s'", device_name);
    }
    if (properties & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE) {
      free(context);
      return opencl_report(OCTET_STATUS_INVALID_ARGUMENT,
                           "opencl context_create: stream must be an in-order queue (it has "
                           "CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE)");
    }
    clRetainCommandQueue(queue);
    context->queue = queue;
  } else {
    context->cl = default_context;
    context->queue = clCreateCommandQueue(default_context, device, 0, &error);
    if (error != CL_SUCCESS) {
      context->queue = NULL;
      opencl_context_destroy(context);
      return opencl_fail("context_create", "clCreateCommandQueue", error);
    }
  }
  if ((status = program_for(context->cl, "context_create", &program, &context->absent_arg)) != OCTET_STATUS_SUCCESS) {
    opencl_context_destroy(context);
    return status;
  }
  for (i = 0; i < KERNEL_COUNT; ++i) {
    context->kernels[i] = clCreateKernel(program, kernel_names[i], &error);
    if (error != CL_SUCCESS) {
      context->kernels[i] = NULL;
      opencl_context_destroy(context);
      return opencl_fail("context_create", "clCreateKernel", error);
    }
  }
  *out = context;
  return OCTET_STATUS_SUCCESS;
}

static int32_t opencl_synchronize(octet_backend_context* context) {
  cl_int error;
  if (context == NULL) return opencl_report(OCTET_STATUS_INVALID_ARGUMENT, "opencl synchronize: context is NULL");
  error = clFinish(context->queue);
  return error == CL_SUCCESS ? OCTET_STATUS_SUCCESS : opencl_fail("synchronize", "clFinish", error);
}

/* ------------------------------------------------------------------------ */
/* Memory                                                                    */
/* ------------------------------------------------------------------------ */

static int32_t opencl_mem_alloc(octet_backend_context* context, size_t bytes, void** ptr) {
  cl_int error;
  cl_mem mem;
  void* address;
  if (context == NULL || ptr == NULL) {
    return opencl_report(OCTET_STATUS_INVALID_ARGUMENT, "opencl mem_alloc: %s is NULL",
                         context == NULL ? "context" : "ptr");
  }
  if (bytes == 0) return opencl_report(OCTET_STATUS_INVALID_ARGUMENT, "opencl mem_alloc: bytes must be > 0");
  mem = clCreateBuffer(context->cl, CL_MEM_READ_WRITE, bytes, NULL, &error);
  if (error != CL_SUCCESS) return opencl_fail("mem_alloc", "clCreateBuffer", error);
  address = opencl_memory_register(mem, context->cl, bytes);
  if (address == NULL) {
    clReleaseMemObject(mem);
    return opencl_report(OCTET_STATUS_OUT_OF_MEMORY, "opencl mem_alloc: no address space left for %zu bytes", bytes);
  }
  *ptr = address;
  return OCTET_STATUS_SUCCESS;
}

static void opencl_mem_free(octet_backend_context* context, void* ptr) {
  (void)context;
  if (ptr == NULL) return;
  if (!opencl_memory_release(ptr)) {
    opencl_report(OCTET_STATUS_INVALID_ARGUMENT, "opencl mem_free: ptr %p was not returned by mem_alloc", ptr);
  }
}

/* The buffer range [device, device + bytes) of the context's OpenCL context. */
static int32_t device_range(octet_backend_context* context, const char* op, const char* arg, const void* pointer,
                            size_t bytes, cl_mem* mem, size_t* offset) {
  cl_context owner = NULL;
  if (!opencl_memory_find(pointer, bytes, mem, offset, &owner)) {
    return opencl_report(OCTET_STATUS_INVALID_ARGUMENT,
                         "opencl %s: %s (%p, %zu bytes) must lie inside one buffer from this backend's mem_alloc", op,
                         arg, pointer, bytes);
  }
  if (owner != context->cl) {
    return opencl_report(OCTET_STATUS_INVALID_ARGUMENT,
                         "opencl %s: %s is memory of another OpenCL context than the backend context's queue", op, arg);
  }
  return OCTET_STATUS_SUCCESS;
}

static int32_t opencl_copy_from_host(octet_backend_context* context, void* dst, const void* src, size_t bytes) {
  cl_mem mem;
  size_t offset;
  int32_t status;
  cl_int error;
  if (context == NULL) return opencl_report(OCTET_STATUS_INVALID_ARGUMENT, "opencl copy_from_host: context is NULL");
  if (bytes == 0) return OCTET_STATUS_SUCCESS;
  if (src == NULL) return opencl_report(OCTET_STATUS_INVALID_ARGUMENT, "opencl copy_from_host: src is NULL");
  if ((status = device_range(context, "copy_from_host", "dst", dst, bytes, &mem, &offset)) != 0) return status;
  /* Blocking: the caller may reuse src at once; the in-order queue runs the
   * write after the kernels queued before it. */
  error = clEnqueueWriteBuffer(context->queue, mem, CL_TRUE, offset, bytes, src, 0, NULL, NULL);
  return error == CL_SUCCESS ? OCTET_STATUS_SUCCESS : opencl_fail("copy_from_host", "clEnqueueWriteBuffer", error);
}

static int32_t opencl_copy_to_host(octet_backend_context* context, void* dst, const void* src, size_t bytes) {
  cl_mem mem;
  size_t offset;
  int32_t status;
  cl_int error;
  if (context == NULL) return opencl_report(OCTET_STATUS_INVALID_ARGUMENT, "opencl copy_to_host: context is NULL");
  if (bytes == 0) return OCTET_STATUS_SUCCESS;
  if (dst == NULL) return opencl_report(OCTET_STATUS_INVALID_ARGUMENT, "opencl copy_to_host: dst is NULL");
  if ((status = device_range(context, "copy_to_host", "src", src, bytes, &mem, &offset)) != 0) return status;
  /* Blocking: waits for the kernels queued before it, then the bytes are there. */
  error = clEnqueueReadBuffer(context->queue, mem, CL_TRUE, offset, bytes, dst, 0, NULL, NULL);
  return error == CL_SUCCESS ? OCTET_STATUS_SUCCESS : opencl_fail("copy_to_host", "clEnqueueReadBuffer", error);
}

/* ------------------------------------------------------------------------ */
/* Argument checks shared by the kernels                                     */
/* ------------------------------------------------------------------------ */

static int element_size(int32_t dtype) { return (int)octet_dtype_element_bytes(dtype); }

static const char* dtype_names(uint32_t allowed) {
  if (allowed == HIGH_PRECISION_DTYPES) return "fp32, bf16 or fp16";
  if (allowed == FP8_DTYPES) return "e4m3 or e5m2";
  return "fp32, bf16, fp16, e4m3 or e5m2";
}

int32_t opencl_check_view(octet_backend_context* context, const char* op, const char* arg,
                          const octet_matrix_view* view, uint32_t allowed, device_view* out) {
  size_t bytes, offset = 0;
  int32_t status;
  if (view == NULL) return opencl_report(OCTET_STATUS_INVALID_ARGUMENT, "opencl %s: %s is NULL", op, arg);
  if (view->dtype <= 0 || view->dtype >= 32 || !(allowed & OCTET_DTYPE_BIT(view->dtype))) {
    const int valid = view->dtype > 0 && view->dtype < 32 && (ALL_DTYPES & OCTET_DTYPE_BIT(view->dtype));
    const int stored_elsewhere = view->dtype == OCTET_DTYPE_E8M0;
    return opencl_report(stored_elsewhere && !valid ? OCTET_STATUS_UNSUPPORTED : OCTET_STATUS_INVALID_ARGUMENT,
                         "opencl %s: %s.dtype (%d) must be %s", op, arg, (int)view->dtype, dtype_names(allowed));
  }
  /* Shapes bounded by 2^31 each keep every index below in 64 bits. */
  if (view->rows < 0 || view->cols < 0 || view->ld < view->cols || view->rows > INT32_MAX || view->ld > INT32_MAX) {
    return opencl_report(OCTET_STATUS_INVALID_ARGUMENT,
                         "opencl %s: %s must have 0 <= rows < 2^31 and 0 <= cols <= ld < 2^31 "
                         "(it has rows %lld, cols %lld, ld %lld)",
                         op, arg, (long long)view->rows, (long long)view->cols, (long long)view->ld);
  }
  out->rows = view->rows;
  out->cols = view->cols;
  out->ld = view->ld;
  out->dtype = view->dtype;
  if (view->rows == 0 || view->cols == 0) {
    out->mem = context->absent_arg;
    out->offset = 0;
    return OCTET_STATUS_SUCCESS;
  }
  if (view->data == NULL) return opencl_report(OCTET_STATUS_INVALID_ARGUMENT, "opencl %s: %s.data is NULL", op, arg);
  bytes = (size_t)((view->rows - 1) * view->ld + view->cols) * (size_t)element_size(view->dtype);
  if ((status = device_range(context, op, arg, view->data, bytes, &out->mem, &offset)) != 0) return status;
  out->offset = offset;
  return OCTET_STATUS_SUCCESS;
}

int32_t opencl_check_scalar(octet_backend_context* context, const char* op, const char* arg, const void* pointer,
                            device_scalar* out) {
  size_t offset = 0;
  int32_t status;
  if (pointer == NULL) return opencl_report(OCTET_STATUS_INVALID_ARGUMENT, "opencl %s: %s is NULL", op, arg);
  if ((status = device_range(context, op, arg, pointer, sizeof(float), &out->mem, &offset)) != 0) return status;
  out->offset = offset;
  return OCTET_STATUS_SUCCESS;
}

size_t opencl_round_up(cl_long n, size_t multiple) { return ((size_t)n + multiple - 1) / multiple * multiple; }

/* ------------------------------------------------------------------------ */
/* The table                                                                 */
/* ------------------------------------------------------------------------ */

static const octet_backend_api opencl_api = {
    .struct_size = sizeof(octet_backend_api),
    .abi_major = OCTET_PLUGIN_ABI_MAJOR,
    .abi_minor = OCTET_PLUGIN_ABI_MINOR,
    .name = OPENCL_NAME,
    .version = OPENCL_VERSION,
    .initialize = opencl_initialize,
    .shutdown = opencl_shutdown,
    .context_create = opencl_context_create,
    .context_destroy = opencl_context_destroy,
    .synchronize = opencl_synchronize,
    .mem_alloc = opencl_mem_alloc,
    .mem_free = opencl_mem_free,
    .copy_from_host = opencl_copy_from_host,
    .copy_to_host = opencl_copy_to_host,
    .convert = opencl_convert,
    .amax = opencl_amax,
    .quantize = opencl_quantize,
    .transpose = opencl_transpose,
    .dequantize = opencl_dequantize,
    .gemm = opencl_gemm,
    .bias_gradient = opencl_bias_gradient,
    .accumulate = opencl_accumulate,
    /* Left NULL: statistics, block scaling, norms, activations and the
     * scaling kernels. The core answers UNSUPPORTED naming the entry (or
     * keeps scaling state on the host). */
};

int32_t octet_backend_entry(uint32_t host_abi_major, uint32_t host_abi_minor, const octet_backend_api** api_out) {
  (void)host_abi_minor;
  if (api_out == NULL) return OCTET_STATUS_INVALID_ARGUMENT;
  if (host_abi_major != OCTET_PLUGIN_ABI_MAJOR) return OCTET_STATUS_ABI_MISMATCH;
  *api_out = &opencl_api;
  return OCTET_STATUS_SUCCESS;
}
