/* One deliberately broken plugin per build: exactly one BROKEN_* macro picks
 * the defect, everything else is a valid table, so each library tests one
 * rule of the loader. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <octet/octet_backend.h>

/* When OCTET_TEST_PLUGIN_LOG names a file, every plugin appends
 * "<name> initialize", "<name> shutdown" and "<name> unload" (from the
 * library's destructor) to it, so a test sees which of its entries the host
 * called, and in what order with respect to unloading. */
static void log_event(const char* event) {
  const char* path = getenv("OCTET_TEST_PLUGIN_LOG");
  if (path == NULL || *path == '\0') return;
  FILE* log = fopen(path, "a");
  if (log == NULL) return;
  fprintf(log, "%s %s\n", BROKEN_NAME, event);
  fclose(log);
}

__attribute__((destructor)) static void log_unload(void) { log_event("unload"); }

static void broken_shutdown(void) { log_event("shutdown"); }

struct octet_backend_context {
  int unused;
};

static struct octet_backend_context the_context;

static int32_t broken_initialize(const octet_host_services* host, octet_backend_caps* caps) {
  log_event("initialize");
#if defined(BROKEN_INIT_FAILS)
  /* A real failure whose message happens to say "ABI": the host must return
   * the plugin's status, not guess one from the words. */
  (void)caps;
  host->report_error(host->host_data, OCTET_STATUS_OUT_OF_MEMORY,
                     "initfails: cannot map the driver's ABI page");
  return OCTET_STATUS_OUT_OF_MEMORY;
#else
  (void)host;
  /* Each of these passes initialize() and then fails one of the host's
   * checks of what it declared. */
#if defined(BROKEN_HALF_MEMORY)
  /* Valid host capabilities, so that only the memory entries are at fault. */
  caps->memory_kind = OCTET_MEMORY_HOST;
  caps->alignment = 64;
#elif defined(BROKEN_MEMORY_KIND)
  caps->memory_kind = 99; /* neither host nor device */
  caps->alignment = 64;
#elif defined(BROKEN_ALIGNMENT)
  caps->memory_kind = OCTET_MEMORY_HOST;
  caps->alignment = 48;
#elif defined(BROKEN_HUGE_ALIGNMENT)
  caps->memory_kind = OCTET_MEMORY_HOST;
  caps->alignment = (uint64_t)1 << 63; /* a power of two, far past any limit */
#elif defined(BROKEN_CALLER_ALIGNMENT)
  caps->memory_kind = OCTET_MEMORY_HOST;
  caps->alignment = 64;
  caps->caller_alignment = 128; /* more than alignment */
#elif defined(BROKEN_HUGE_TABLE)
  /* Valid 1.0 capabilities, plus a 1.3 field that a 1.0 plugin does not own:
   * the host must not believe it. */
  caps->memory_kind = OCTET_MEMORY_HOST;
  caps->alignment = 64;
  caps->dtypes = OCTET_DTYPE_BIT(OCTET_DTYPE_FP32);
  caps->scaling_modes = OCTET_SCALING_PER_TENSOR;
  caps->fp8_gemm_output = 1;
  caps->caller_alignment = 1; /* plugin ABI 1.5: not a 1.0 plugin's either */
#elif defined(BROKEN_DEVICE_WITHOUT_MEMORY)
  /* Device memory, but no mem_alloc, mem_free or copies to reach it. */
  caps->memory_kind = OCTET_MEMORY_DEVICE;
  caps->alignment = 256;
#else
  (void)caps;
#endif
  return OCTET_STATUS_SUCCESS;
#endif
}

#if defined(BROKEN_HALF_MEMORY)
/* mem_alloc without mem_free: the host would release this memory with free(). */
static int32_t broken_mem_alloc(octet_backend_context* context, size_t bytes, void** ptr) {
  (void)context;
  (void)bytes;
  *ptr = NULL;
  return OCTET_STATUS_OUT_OF_MEMORY;
}
#endif

static int32_t broken_context_create(void* stream, octet_backend_context** context) {
  (void)stream;
  *context = &the_context;
  return OCTET_STATUS_SUCCESS;
}

static void broken_context_destroy(octet_backend_context* context) { (void)context; }

#if defined(BROKEN_HUGE_TABLE)
/* An entry the plugin's minor does not define: reaching it is the bug. */
static void trap(void) {
  log_event("trap");
  abort();
}
#endif

#if defined(BROKEN_WRONG_MAJOR)
#define TABLE_MAJOR (OCTET_PLUGIN_ABI_MAJOR + 1)
#else
#define TABLE_MAJOR OCTET_PLUGIN_ABI_MAJOR
#endif

#if defined(BROKEN_SMALL_TABLE)
/* Ends before context_create: an old or corrupt table. */
#define TABLE_SIZE offsetof(octet_backend_api, context_create)
#elif defined(BROKEN_HUGE_TABLE)
/* Claims every byte there is, yet declares minor 0: the host must read only
 * the 1.0 entries. The later ones are traps. */
#define TABLE_SIZE SIZE_MAX
#define TABLE_MINOR 0
#else
#define TABLE_SIZE sizeof(octet_backend_api)
#endif

#if defined(BROKEN_BAD_NAME)
#define TABLE_NAME "Bad-Name"
#else
#define TABLE_NAME BROKEN_NAME
#endif

static const octet_backend_api broken_api = {
    .struct_size = TABLE_SIZE,
    .abi_major = TABLE_MAJOR,
#if defined(TABLE_MINOR)
    .abi_minor = TABLE_MINOR,
#else
    .abi_minor = OCTET_PLUGIN_ABI_MINOR,
#endif
    .name = TABLE_NAME,
    .version = "0",
    .initialize = broken_initialize,
    .shutdown = broken_shutdown,
    .context_create = broken_context_create,
#if !defined(BROKEN_MISSING_ENTRY)
    .context_destroy = broken_context_destroy,
#endif
#if defined(BROKEN_HALF_MEMORY)
    .mem_alloc = broken_mem_alloc,
#endif
#if defined(BROKEN_HUGE_TABLE)
#define TRAP(type) (type)(void (*)(void))trap
    .quantize_with_statistics = TRAP(int32_t(*)(octet_backend_context*, const octet_quantize_args*,
                                                octet_quantize_statistics*)),
    .block_quantize = TRAP(int32_t(*)(octet_backend_context*, const octet_block_quantize_args*)),
    .block_dequantize = TRAP(int32_t(*)(octet_backend_context*, const octet_block_dequantize_args*)),
    .block_gemm = TRAP(int32_t(*)(octet_backend_context*, const octet_block_gemm_args*)),
    .norm_forward = TRAP(int32_t(*)(octet_backend_context*, const octet_norm_forward_args*)),
    .norm_backward = TRAP(int32_t(*)(octet_backend_context*, const octet_norm_backward_args*)),
    .activation_forward = TRAP(int32_t(*)(octet_backend_context*, const octet_activation_args*)),
    .activation_backward = TRAP(int32_t(*)(octet_backend_context*, const octet_activation_args*)),
    .bias_gradient = TRAP(int32_t(*)(octet_backend_context*, const octet_bias_gradient_args*)),
    .accumulate = TRAP(int32_t(*)(octet_backend_context*, const octet_matrix_view*, const octet_matrix_view*,
                                  int32_t)),
    .scale_from_amax = TRAP(int32_t(*)(octet_backend_context*, const octet_scale_from_amax_args*)),
    .delayed_scaling_update = TRAP(int32_t(*)(octet_backend_context*, const octet_delayed_scaling_update_args*)),
    .amax_record = TRAP(int32_t(*)(octet_backend_context*, const float*, float*)),
#endif
};

#if defined(BROKEN_MISSING_SYMBOL)
/* Exported under a near-miss name: the loader must find no entry point. */
#define ENTRY_NAME octet_backend_entry_v0
#else
#define ENTRY_NAME octet_backend_entry
#endif

OCTET_BACKEND_EXPORT int32_t ENTRY_NAME(uint32_t host_abi_major, uint32_t host_abi_minor,
                                        const octet_backend_api** api_out);

int32_t ENTRY_NAME(uint32_t host_abi_major, uint32_t host_abi_minor,
                   const octet_backend_api** api_out) {
  (void)host_abi_major;
  (void)host_abi_minor;
#if defined(BROKEN_REFUSES_ABI)
  (void)api_out;
  return OCTET_STATUS_ABI_MISMATCH;
#elif defined(BROKEN_NULL_TABLE)
  *api_out = NULL;
  return OCTET_STATUS_SUCCESS;
#else
  *api_out = &broken_api;
  return OCTET_STATUS_SUCCESS;
#endif
}
