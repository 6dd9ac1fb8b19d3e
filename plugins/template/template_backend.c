/* The template backend: a minimal host (CPU) backend written the way a third
 * party would write one, against octet_backend.h only. It provides a subset
 * of the optional entries (convert, amax, rowwise quantize, dequantize) and
 * leaves the rest NULL: the core then composes or answers UNSUPPORTED.
 *
 * To start a new backend, copy this folder, rename "template" everywhere
 * (see README.md) and replace the loops below with calls into your device. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <octet/octet_backend.h>

#include "template_codecs.h"

#define TEMPLATE_NAME "template"
#define TEMPLATE_VERSION "0.1.0"

/* The only exported symbol (the build also enforces it with a version script). */
OCTET_BACKEND_EXPORT int32_t octet_backend_entry(uint32_t host_abi_major,
                                                 uint32_t host_abi_minor,
                                                 const octet_backend_api** api_out);

/* ------------------------------------------------------------------------ */
/* Host services and error reporting                                         */
/* ------------------------------------------------------------------------ */

/* Written once by initialize() (single-threaded, per the ABI), then only read. */
static octet_host_services host_services;

static int32_t report(int32_t status, const char* format, ...) {
  char message[256];
  va_list args;
  va_start(args, format);
  vsnprintf(message, sizeof message, format, args);
  va_end(args);
  if (host_services.report_error != NULL) {
    host_services.report_error(host_services.host_data, status, message);
  }
  return status;
}

/* ------------------------------------------------------------------------ */
/* Element access                                                            */
/* ------------------------------------------------------------------------ */

#define HIGH_PRECISION_DTYPES                                              \
  (OCTET_DTYPE_BIT(OCTET_DTYPE_FP32) | OCTET_DTYPE_BIT(OCTET_DTYPE_BF16) | \
   OCTET_DTYPE_BIT(OCTET_DTYPE_FP16))
#define FP8_DTYPES (OCTET_DTYPE_BIT(OCTET_DTYPE_E4M3) | OCTET_DTYPE_BIT(OCTET_DTYPE_E5M2))
#define ALL_DTYPES (HIGH_PRECISION_DTYPES | FP8_DTYPES)
#define HIGH_PRECISION_NAMES "fp32, bf16 or fp16"
#define FP8_NAMES "e4m3 or e5m2"
#define ALL_NAMES "fp32, bf16, fp16, e4m3 or e5m2"

static int dtype_in(int32_t dtype, uint32_t set) {
  return dtype > 0 && dtype < 32 && (set & OCTET_DTYPE_BIT(dtype)) != 0;
}

/* Widens element `index` to FP32 (FP8 as raw codes: no scale). */
static float load_element(const void* base, int32_t dtype, size_t index) {
  const unsigned char* bytes = (const unsigned char*)base;
  switch (dtype) {
    case OCTET_DTYPE_FP32: {
      float value;
      memcpy(&value, bytes + index * 4, sizeof value);
      return value;
    }
    case OCTET_DTYPE_BF16: {
      uint16_t code;
      memcpy(&code, bytes + index * 2, sizeof code);
      return template_bf16_decode(code);
    }
    case OCTET_DTYPE_FP16: {
      uint16_t code;
      memcpy(&code, bytes + index * 2, sizeof code);
      return template_fp16_decode(code);
    }
    default: /* E4M3 or E5M2: the callers checked the dtype */
      return template_fp8_decode(bytes[index], dtype);
  }
}

static void store_element(void* base, int32_t dtype, size_t index, float value, int saturate) {
  unsigned char* bytes = (unsigned char*)base;
  switch (dtype) {
    case OCTET_DTYPE_FP32:
      memcpy(bytes + index * 4, &value, sizeof value);
      return;
    case OCTET_DTYPE_BF16: {
      const uint16_t code = template_bf16_encode(value);
      memcpy(bytes + index * 2, &code, sizeof code);
      return;
    }
    case OCTET_DTYPE_FP16: {
      const uint16_t code = template_fp16_encode(value);
      memcpy(bytes + index * 2, &code, sizeof code);
      return;
    }
    default:
      bytes[index] = template_fp8_encode(value, dtype, saturate);
      return;
  }
}

/* Checks a matrix view: dtype in `allowed`, sane shape, data present. */
static int32_t check_view(const char* op, const char* arg, const octet_matrix_view* view,
                          uint32_t allowed, const char* allowed_names) {
  if (view == NULL) return report(OCTET_STATUS_INVALID_ARGUMENT, "template %s: %s is NULL", op, arg);
  if (!dtype_in(view->dtype, allowed)) {
    /* A dtype of octet_types.h that this backend does not store is a valid request
     * it cannot serve; anything else breaks the operation's rule. */
    const int not_stored = view->dtype == OCTET_DTYPE_E8M0;
    return report(not_stored ? OCTET_STATUS_UNSUPPORTED : OCTET_STATUS_INVALID_ARGUMENT,
                  "template %s: %s.dtype (%d) must be %s", op, arg, (int)view->dtype,
                  allowed_names);
  }
  if (view->rows < 0 || view->cols < 0 || view->ld < view->cols) {
    return report(OCTET_STATUS_INVALID_ARGUMENT,
                  "template %s: %s must have rows >= 0, cols >= 0 and ld >= cols "
                  "(it has rows %lld, cols %lld, ld %lld)",
                  op, arg, (long long)view->rows, (long long)view->cols, (long long)view->ld);
  }
  if (view->data == NULL && view->rows > 0 && view->cols > 0) {
    return report(OCTET_STATUS_INVALID_ARGUMENT, "template %s: %s.data is NULL", op, arg);
  }
  return OCTET_STATUS_SUCCESS;
}

static int32_t check_same_shape(const char* op, const octet_matrix_view* a,
                                const octet_matrix_view* b, const char* names) {
  if (a->rows != b->rows || a->cols != b->cols) {
    return report(OCTET_STATUS_INVALID_ARGUMENT, "template %s: %s must have the same rows and cols",
                  op, names);
  }
  return OCTET_STATUS_SUCCESS;
}

/* max |x| with NaN ignored (a NaN never compares greater) and inf counted. */
static float amax_of(const octet_matrix_view* input) {
  float amax = 0.0f;
  int64_t r, c;
  for (r = 0; r < input->rows; ++r) {
    for (c = 0; c < input->cols; ++c) {
      const float x = load_element(input->data, input->dtype, (size_t)(r * input->ld + c));
      const float magnitude = x < 0.0f ? -x : x;
      if (magnitude > amax) amax = magnitude;
    }
  }
  return amax;
}

/* ------------------------------------------------------------------------ */
/* Entry points                                                              */
/* ------------------------------------------------------------------------ */

struct octet_backend_context {
  int unused; /* a device backend keeps its stream, handles, workspaces here */
};

/* True when a host-provided struct of `struct_size` bytes holds `field`. */
#define HOLDS(struct_size, type, field) \
  (offsetof(type, field) + sizeof(((type*)0)->field) <= (struct_size))

static int32_t template_initialize(const octet_host_services* host, octet_backend_caps* caps) {
  size_t known;
  if (host == NULL || caps == NULL) return OCTET_STATUS_INVALID_ARGUMENT;
  /* Read only what both sides know (ABI rule 4). */
  known = host->struct_size < sizeof host_services ? host->struct_size : sizeof host_services;
  memset(&host_services, 0, sizeof host_services);
  memcpy(&host_services, host, known);

  /* Write only the fields the host's caps struct has room for. */
  if (HOLDS(caps->struct_size, octet_backend_caps, device)) caps->device = "host CPU (template)";
  if (HOLDS(caps->struct_size, octet_backend_caps, memory_kind)) caps->memory_kind = OCTET_MEMORY_HOST;
  if (HOLDS(caps->struct_size, octet_backend_caps, dtypes)) caps->dtypes = ALL_DTYPES;
  if (HOLDS(caps->struct_size, octet_backend_caps, scaling_modes)) {
    caps->scaling_modes = OCTET_SCALING_PER_TENSOR;
  }
  if (HOLDS(caps->struct_size, octet_backend_caps, native_columnwise)) caps->native_columnwise = 0;
  /* No gemm entry, so no FP8 GEMM layout: a declared layout must run
   * (`octet conformance` fails one that answers UNSUPPORTED). A backend with
   * a gemm declares the layouts it reads, e.g. OCTET_GEMM_LAYOUT_TN. */
  if (HOLDS(caps->struct_size, octet_backend_caps, fp8_gemm_layouts)) caps->fp8_gemm_layouts = 0;
  if (HOLDS(caps->struct_size, octet_backend_caps, alignment)) caps->alignment = 64;
  if (HOLDS(caps->struct_size, octet_backend_caps, fused_cast_transpose)) {
    caps->fused_cast_transpose = 0;
  }
  return OCTET_STATUS_SUCCESS;
}

static int32_t template_context_create(void* stream, octet_backend_context** context) {
  octet_backend_context* created;
  (void)stream; /* a host backend runs synchronously on the calling thread */
  if (context == NULL) {
    return report(OCTET_STATUS_INVALID_ARGUMENT, "template %s: %s is NULL", "context_create", "context");
  }
  created = (octet_backend_context*)calloc(1, sizeof *created);
  if (created == NULL) {
    return report(OCTET_STATUS_OUT_OF_MEMORY, "template %s: %s", "context_create", "out of host memory");
  }
  *context = created;
  return OCTET_STATUS_SUCCESS;
}

static void template_context_destroy(octet_backend_context* context) { free(context); }

static int32_t template_convert(octet_backend_context* context, const octet_matrix_view* input,
                                const octet_matrix_view* output, int32_t saturate) {
  int32_t status;
  int64_t r, c;
  (void)context;
  if ((status = check_view("convert", "input", input, ALL_DTYPES, ALL_NAMES)) != 0) return status;
  if ((status = check_view("convert", "output", output, ALL_DTYPES, ALL_NAMES)) != 0) return status;
  if ((status = check_same_shape("convert", input, output, "input and output")) != 0) return status;
  for (r = 0; r < input->rows; ++r) {
    for (c = 0; c < input->cols; ++c) {
      const float x = load_element(input->data, input->dtype, (size_t)(r * input->ld + c));
      store_element(output->data, output->dtype, (size_t)(r * output->ld + c), x, saturate != 0);
    }
  }
  return OCTET_STATUS_SUCCESS;
}

static int32_t template_amax(octet_backend_context* context, const octet_matrix_view* input,
                             float* amax_out) {
  int32_t status;
  (void)context;
  if ((status = check_view("amax", "input", input, HIGH_PRECISION_DTYPES, HIGH_PRECISION_NAMES)) != 0) return status;
  if (amax_out == NULL) return report(OCTET_STATUS_INVALID_ARGUMENT, "template %s: %s is NULL", "amax", "amax_out");
  *amax_out = amax_of(input);
  return OCTET_STATUS_SUCCESS;
}

static int32_t template_quantize(octet_backend_context* context, const octet_quantize_args* given) {
  octet_quantize_args args;
  int32_t status;
  int64_t r, c;
  float scale;
  (void)context;
  if (given == NULL) return report(OCTET_STATUS_INVALID_ARGUMENT, "template %s: %s is NULL", "quantize", "args");
  if (!HOLDS(given->struct_size, octet_quantize_args, scale)) {
    return report(OCTET_STATUS_INVALID_ARGUMENT, "template %s: %s", "quantize",
                  "args->struct_size is too small to hold the scale");
  }
  /* Output pointers beyond the caller's struct_size count as NULL. */
  memset(&args, 0, sizeof args);
  memcpy(&args, given, given->struct_size < sizeof args ? given->struct_size : sizeof args);

  if ((status = check_view("quantize", "args->input", &args.input, HIGH_PRECISION_DTYPES,
                           HIGH_PRECISION_NAMES)) != 0) {
    return status;
  }
  if (!dtype_in(args.out_dtype, FP8_DTYPES)) {
    return report(OCTET_STATUS_INVALID_ARGUMENT, "template %s: %s", "quantize",
                  "args->out_dtype must be E4M3 or E5M2");
  }
  if (args.scale == NULL) return report(OCTET_STATUS_INVALID_ARGUMENT, "template %s: %s is NULL", "quantize", "args->scale");
  if (args.columnwise_out != NULL) {
    return report(OCTET_STATUS_UNSUPPORTED, "template %s: %s", "quantize",
                  "args->columnwise_out is not supported: this backend has no fused "
                  "cast+transpose and no transpose entry point (quantize rowwise only)");
  }
  if (args.rowwise_out == NULL && args.input.rows > 0 && args.input.cols > 0 &&
      args.scale_inv_out == NULL && args.amax_out == NULL) {
    return report(OCTET_STATUS_INVALID_ARGUMENT, "template %s: %s", "quantize",
                  "args asks for no output (rowwise_out, scale_inv_out and amax_out are all NULL)");
  }

  scale = *args.scale;
  if (args.rowwise_out != NULL) {
    for (r = 0; r < args.input.rows; ++r) {
      for (c = 0; c < args.input.cols; ++c) {
        const float x = load_element(args.input.data, args.input.dtype,
                                     (size_t)(r * args.input.ld + c));
        /* One FP32 multiply, then one rounding to FP8 (numerics.md section 7). */
        args.rowwise_out[r * args.input.cols + c] =
            template_fp8_encode(x * scale, args.out_dtype, args.saturate != 0);
      }
    }
  }
  if (args.scale_inv_out != NULL) *args.scale_inv_out = 1.0f / scale;
  if (args.amax_out != NULL) *args.amax_out = amax_of(&args.input);
  return OCTET_STATUS_SUCCESS;
}

static int32_t template_dequantize(octet_backend_context* context,
                                   const octet_dequantize_args* args) {
  int32_t status;
  int64_t r, c;
  float scale_inv;
  (void)context;
  if (args == NULL) return report(OCTET_STATUS_INVALID_ARGUMENT, "template %s: %s is NULL", "dequantize", "args");
  if (args->struct_size < sizeof *args) {
    return report(OCTET_STATUS_INVALID_ARGUMENT, "template %s: %s", "dequantize",
                  "args->struct_size is smaller than octet_dequantize_args");
  }
  if ((status = check_view("dequantize", "args->input", &args->input, FP8_DTYPES, FP8_NAMES)) != 0) return status;
  if ((status = check_view("dequantize", "args->output", &args->output, HIGH_PRECISION_DTYPES,
                           HIGH_PRECISION_NAMES)) != 0) {
    return status;
  }
  if ((status = check_same_shape("dequantize", &args->input, &args->output,
                                 "args->input and args->output")) != 0) {
    return status;
  }
  if (args->scale_inv == NULL) {
    return report(OCTET_STATUS_INVALID_ARGUMENT, "template %s: %s is NULL", "dequantize", "args->scale_inv");
  }
  scale_inv = *args->scale_inv;
  for (r = 0; r < args->input.rows; ++r) {
    for (c = 0; c < args->input.cols; ++c) {
      const float q = load_element(args->input.data, args->input.dtype,
                                   (size_t)(r * args->input.ld + c));
      store_element(args->output.data, args->output.dtype, (size_t)(r * args->output.ld + c),
                    q * scale_inv, 1);
    }
  }
  return OCTET_STATUS_SUCCESS;
}

/* Lives as long as the library (the ABI requires it to outlive every use). */
static const octet_backend_api template_api = {
    .struct_size = sizeof(octet_backend_api),
    .abi_major = OCTET_PLUGIN_ABI_MAJOR,
    .abi_minor = OCTET_PLUGIN_ABI_MINOR,
    .name = TEMPLATE_NAME,
    .version = TEMPLATE_VERSION,
    .initialize = template_initialize,
    .context_create = template_context_create,
    .context_destroy = template_context_destroy,
    /* Left NULL on purpose: shutdown (nothing global to release), synchronize
     * (everything runs synchronously), mem_alloc/mem_free/copy_* (the host
     * then uses aligned host memory), transpose and gemm (not provided: the
     * core answers UNSUPPORTED naming them). */
    .convert = template_convert,
    .amax = template_amax,
    .quantize = template_quantize,
    .dequantize = template_dequantize,
};

int32_t octet_backend_entry(uint32_t host_abi_major, uint32_t host_abi_minor,
                            const octet_backend_api** api_out) {
  (void)host_abi_minor; /* any minor of our major is fine: fields are only appended */
  if (api_out == NULL) return OCTET_STATUS_INVALID_ARGUMENT;
  if (host_abi_major != OCTET_PLUGIN_ABI_MAJOR) return OCTET_STATUS_ABI_MISMATCH;
  *api_out = &template_api;
  return OCTET_STATUS_SUCCESS;
}
