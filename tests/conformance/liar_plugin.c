/* A plugin that follows every rule of the plugin ABI yet does not do what
 * it declares, for the negative tests of `octet conformance`: exactly one
 * LIAR_* macro picks the lie.
 *   LIAR_UNSUPPORTED  provides amax (so declares the feature) and answers
 *                     every call UNSUPPORTED
 *   LIAR_WRONG        provides amax and answers max |x| + 1
 *   LIAR_NO_CHECKS    computes right, but its convert (FP32 to FP32) trusts
 *                     its arguments: a shape mismatch is not refused
 * Host memory (the host allocates), FP32 only, per-tensor scaling. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include <octet/octet_backend.h>

struct octet_backend_context {
  int unused;
};

static struct octet_backend_context the_context;
static octet_host_services host_services;

static int32_t liar_initialize(const octet_host_services* host, octet_backend_caps* caps) {
  if (host == NULL || caps == NULL || caps->struct_size < offsetof(octet_backend_caps, reserved_padding))
    return OCTET_STATUS_INVALID_ARGUMENT;
  host_services = *host;
  caps->device = "host CPU (liar)";
  caps->memory_kind = OCTET_MEMORY_HOST;
  caps->dtypes = OCTET_DTYPE_BIT(OCTET_DTYPE_FP32);
  caps->scaling_modes = OCTET_SCALING_PER_TENSOR;
  caps->native_columnwise = 0;
  caps->fp8_gemm_layouts = 0;
  caps->alignment = 64;
  caps->fused_cast_transpose = 0;
  return OCTET_STATUS_SUCCESS;
}

static int32_t liar_context_create(void* stream, octet_backend_context** context) {
  (void)stream;
  if (context == NULL) return OCTET_STATUS_INVALID_ARGUMENT;
  *context = &the_context;
  return OCTET_STATUS_SUCCESS;
}

static void liar_context_destroy(octet_backend_context* context) { (void)context; }

static int32_t liar_amax(octet_backend_context* context, const octet_matrix_view* input, float* amax_out) {
  (void)context;
#if defined(LIAR_UNSUPPORTED)
  (void)input;
  (void)amax_out;
  host_services.report_error(host_services.host_data, OCTET_STATUS_UNSUPPORTED,
                             "amax: this test plugin declares amax and refuses every call (it lies)");
  return OCTET_STATUS_UNSUPPORTED;
#else
  float m = 0.0f;
  int64_t r, c;
  if (input->dtype != OCTET_DTYPE_FP32) {
    host_services.report_error(host_services.host_data, OCTET_STATUS_UNSUPPORTED, "amax: input dtype must be fp32");
    return OCTET_STATUS_UNSUPPORTED;
  }
  for (r = 0; r < input->rows; ++r)
    for (c = 0; c < input->cols; ++c) {
      const float v = fabsf(((const float*)input->data)[r * input->ld + c]);
      if (v > m) m = v;
    }
#if defined(LIAR_WRONG)
  m += 1.0f; /* the lie */
#endif
  *amax_out = m;
  return OCTET_STATUS_SUCCESS;
#endif
}

#if defined(LIAR_NO_CHECKS)
/* Copies input's rows x cols into output without comparing their shapes. */
static int32_t liar_convert(octet_backend_context* context, const octet_matrix_view* input,
                            const octet_matrix_view* output, int32_t saturate) {
  int64_t r, c;
  (void)context;
  (void)saturate;
  if (input->dtype != OCTET_DTYPE_FP32 || output->dtype != OCTET_DTYPE_FP32) {
    host_services.report_error(host_services.host_data, OCTET_STATUS_UNSUPPORTED, "convert: fp32 to fp32 only");
    return OCTET_STATUS_UNSUPPORTED;
  }
  for (r = 0; r < input->rows; ++r)
    for (c = 0; c < input->cols; ++c)
      ((float*)output->data)[(r * input->cols + c) / output->cols * output->ld + (r * input->cols + c) % output->cols] =
          ((const float*)input->data)[r * input->ld + c];
  return OCTET_STATUS_SUCCESS;
}
#endif

static const octet_backend_api liar_api = {
    .struct_size = sizeof(octet_backend_api),
    .abi_major = OCTET_PLUGIN_ABI_MAJOR,
    .abi_minor = OCTET_PLUGIN_ABI_MINOR,
    .name = LIAR_NAME,
    .version = "0",
    .initialize = liar_initialize,
    .context_create = liar_context_create,
    .context_destroy = liar_context_destroy,
    .amax = liar_amax,
#if defined(LIAR_NO_CHECKS)
    .convert = liar_convert,
#endif
};

OCTET_BACKEND_EXPORT int32_t octet_backend_entry(uint32_t host_abi_major, uint32_t host_abi_minor,
                                                 const octet_backend_api** api_out);

int32_t octet_backend_entry(uint32_t host_abi_major, uint32_t host_abi_minor, const octet_backend_api** api_out) {
  (void)host_abi_minor;
  if (host_abi_major != OCTET_PLUGIN_ABI_MAJOR) return OCTET_STATUS_ABI_MISMATCH;
  *api_out = &liar_api;
  return OCTET_STATUS_SUCCESS;
}
