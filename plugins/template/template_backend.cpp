/* The template backend: a minimal host (CPU) backend written the way a third
 * party would write one, against the installed plugin SDK only
 * (octet_backend.h, the plain C ABI, and octet_plugin.hpp, its header-only
 * C++17 helpers). It provides a subset of the optional entries (convert,
 * amax, rowwise quantize, dequantize) and leaves the rest NULL: the core
 * then composes or answers UNSUPPORTED. The kernels are C++ inside; what
 * crosses the boundary is plain C (the table and octet_backend_entry).
 *
 * To start a new backend, copy this folder, rename "template" everywhere
 * (see README.md) and replace the loops below with calls into your device. */
#include <octet/octet_backend.h>
#include <octet/octet_plugin.hpp>

#include <cstdint>
#include <cstring>
#include <new>

#include "template_codecs.h"

#define TEMPLATE_NAME "template"
#define TEMPLATE_VERSION "0.1.0"

namespace plugin = octet::plugin;

/* The only exported symbol (the build also enforces it with a version script). */
extern "C" OCTET_BACKEND_EXPORT int32_t octet_backend_entry(uint32_t host_abi_major, uint32_t host_abi_minor,
                                                            const octet_backend_api** api_out);

namespace {

/* ------------------------------------------------------------------------ */
/* Host services, error reporting and capabilities (octet_plugin.hpp)        */
/* ------------------------------------------------------------------------ */

/* Written once by initialize() (single-threaded, per the ABI), then only
 * read. Every message starts with "template <entry>: ". */
plugin::Host host_services(TEMPLATE_NAME);

constexpr uint32_t HIGH_PRECISION_DTYPES = plugin::kHighPrecisionDtypes;
constexpr uint32_t FP8_DTYPES = plugin::kOcpFp8Dtypes;
constexpr uint32_t ALL_DTYPES = HIGH_PRECISION_DTYPES | FP8_DTYPES;

/* What this backend declares, in one place: initialize() answers from it. */
octet_backend_caps declared_caps() {
  octet_backend_caps caps{};
  caps.struct_size = sizeof caps;
  caps.device = "host CPU (template)";
  caps.memory_kind = OCTET_MEMORY_HOST;
  caps.dtypes = ALL_DTYPES;
  caps.scaling_modes = OCTET_SCALING_PER_TENSOR;
  caps.native_columnwise = 0;
  /* No gemm entry, so no FP8 GEMM layout: a declared layout must run
   * (`octet conformance` fails one that answers UNSUPPORTED). A backend with
   * a gemm declares the layouts it reads, e.g. OCTET_GEMM_LAYOUT_TN. */
  caps.fp8_gemm_layouts = 0;
  caps.alignment = 64;
  caps.caller_alignment = 1;  // scalar kernels: any element-aligned address
  caps.fused_cast_transpose = 0;
  return caps;
}

const plugin::Capabilities capabilities(declared_caps());

/* Reports "template <entry>: <what>" through the host; returns status. */
int32_t report(int32_t status, const char* entry, const char* what) {
  return host_services.report_at(status, entry, what);
}

/* ------------------------------------------------------------------------ */
/* Element access                                                            */
/* ------------------------------------------------------------------------ */

/* Widens element `index` to FP32 (FP8 as raw codes: no scale). */
float load_element(const void* base, int32_t dtype, size_t index) {
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

void store_element(void* base, int32_t dtype, size_t index, float value, int saturate) {
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

/* Checks a matrix view: dtype in `allowed`, sane shape, data present. A
 * dtype of octet_types.h that this backend does not store (E8M0) is a valid
 * request it cannot serve; any other dtype breaks the operation's rule. */
int32_t check_view(const char* op, const char* arg, const octet_matrix_view* view, uint32_t allowed) {
  if (view == nullptr) return plugin::check_not_null(host_services, op, arg, view);
  const int32_t outside = view->dtype == OCTET_DTYPE_E8M0 ? OCTET_STATUS_UNSUPPORTED : OCTET_STATUS_INVALID_ARGUMENT;
  return plugin::check_matrix(host_services, op, arg, *view, allowed, outside);
}

/* max |x| with NaN ignored (a NaN never compares greater) and inf counted. */
float amax_of(const octet_matrix_view* input) {
  float amax = 0.0f;
  for (int64_t r = 0; r < input->rows; ++r) {
    for (int64_t c = 0; c < input->cols; ++c) {
      const float x = load_element(input->data, input->dtype, (size_t)(r * input->ld + c));
      const float magnitude = x < 0.0f ? -x : x;
      if (magnitude > amax) amax = magnitude;
    }
  }
  return amax;
}

}  // namespace

/* ------------------------------------------------------------------------ */
/* Entry points                                                              */
/* ------------------------------------------------------------------------ */

struct octet_backend_context {
  int unused; /* a device backend keeps its stream, handles, workspaces here */
};

namespace {

int32_t template_initialize(const octet_host_services* host, octet_backend_caps* caps) {
  if (host == nullptr) return OCTET_STATUS_INVALID_ARGUMENT; /* no one to tell */
  host_services.remember(host);                              /* reads only what both sides know */
  /* Writes only the fields the host's caps struct has room for. */
  return capabilities.answer(host_services, caps);
}

/* Each entry runs its body through plugin::guard(): a C++ exception thrown
 * inside (std::bad_alloc from `new`, say) becomes a status reported through
 * the host, and never leaves the C entry point. */

int32_t template_context_create(void* stream, octet_backend_context** context) {
  (void)stream; /* a host backend runs synchronously on the calling thread */
  return plugin::guard(host_services, "context_create", [&]() -> int32_t {
    if (int32_t status = plugin::check_not_null(host_services, "context_create", "context", context)) return status;
    *context = new octet_backend_context{};
    return OCTET_STATUS_SUCCESS;
  });
}

void template_context_destroy(octet_backend_context* context) { delete context; }

int32_t template_convert(octet_backend_context* context, const octet_matrix_view* input,
                         const octet_matrix_view* output, int32_t saturate) {
  (void)context;
  return plugin::guard(host_services, "convert", [&]() -> int32_t {
    if (int32_t status = check_view("convert", "input", input, ALL_DTYPES)) return status;
    if (int32_t status = check_view("convert", "output", output, ALL_DTYPES)) return status;
    if (int32_t status = plugin::check_same_shape(host_services, "convert", "input and output", *input, *output))
      return status;
    for (int64_t r = 0; r < input->rows; ++r) {
      for (int64_t c = 0; c < input->cols; ++c) {
        const float x = load_element(input->data, input->dtype, (size_t)(r * input->ld + c));
        store_element(output->data, output->dtype, (size_t)(r * output->ld + c), x, saturate != 0);
      }
    }
    return OCTET_STATUS_SUCCESS;
  });
}

int32_t template_amax(octet_backend_context* context, const octet_matrix_view* input, float* amax_out) {
  (void)context;
  return plugin::guard(host_services, "amax", [&]() -> int32_t {
    if (int32_t status = check_view("amax", "input", input, HIGH_PRECISION_DTYPES)) return status;
    if (int32_t status = plugin::check_not_null(host_services, "amax", "amax_out", amax_out)) return status;
    *amax_out = amax_of(input);
    return OCTET_STATUS_SUCCESS;
  });
}

int32_t template_quantize(octet_backend_context* context, const octet_quantize_args* given) {
  (void)context;
  return plugin::guard(host_services, "quantize", [&]() -> int32_t {
    if (int32_t status = plugin::check_not_null(host_services, "quantize", "args", given)) return status;
    if (!OCTET_PLUGIN_HOLDS(given->struct_size, octet_quantize_args, scale)) {
      return report(OCTET_STATUS_INVALID_ARGUMENT, "quantize", "args->struct_size is too small to hold the scale");
    }
    /* Output pointers beyond the caller's struct_size count as NULL. */
    const octet_quantize_args args = plugin::read_struct(given);

    if (int32_t status = check_view("quantize", "args->input", &args.input, HIGH_PRECISION_DTYPES)) return status;
    if (!capabilities.declares_dtype(args.out_dtype) || !plugin::dtype_in(args.out_dtype, FP8_DTYPES)) {
      return report(OCTET_STATUS_INVALID_ARGUMENT, "quantize", "args->out_dtype must be E4M3 or E5M2");
    }
    if (int32_t status = plugin::check_not_null(host_services, "quantize", "args->scale", args.scale)) return status;
    if (args.columnwise_out != nullptr) {
      return report(OCTET_STATUS_UNSUPPORTED, "quantize",
                    "args->columnwise_out is not supported: this backend has no fused "
                    "cast+transpose and no transpose entry point (quantize rowwise only)");
    }
    if (args.rowwise_out == nullptr && args.input.rows > 0 && args.input.cols > 0 && args.scale_inv_out == nullptr &&
        args.amax_out == nullptr) {
      return report(OCTET_STATUS_INVALID_ARGUMENT, "quantize",
                    "args asks for no output (rowwise_out, scale_inv_out and amax_out are all NULL)");
    }

    const float scale = *args.scale;
    if (args.rowwise_out != nullptr) {
      for (int64_t r = 0; r < args.input.rows; ++r) {
        for (int64_t c = 0; c < args.input.cols; ++c) {
          const float x = load_element(args.input.data, args.input.dtype, (size_t)(r * args.input.ld + c));
          /* One FP32 multiply, then one rounding to FP8 (numerics.md section 7). */
          args.rowwise_out[r * args.input.cols + c] =
              template_fp8_encode(x * scale, args.out_dtype, args.saturate != 0);
        }
      }
    }
    if (args.scale_inv_out != nullptr) *args.scale_inv_out = 1.0f / scale;
    if (args.amax_out != nullptr) *args.amax_out = amax_of(&args.input);
    return OCTET_STATUS_SUCCESS;
  });
}

int32_t template_dequantize(octet_backend_context* context, const octet_dequantize_args* args) {
  (void)context;
  return plugin::guard(host_services, "dequantize", [&]() -> int32_t {
    if (int32_t status = plugin::check_not_null(host_services, "dequantize", "args", args)) return status;
    if (int32_t status =
            plugin::check_struct_size(host_services, "dequantize", "args", args->struct_size, sizeof *args))
      return status;
    if (int32_t status = check_view("dequantize", "args->input", &args->input, FP8_DTYPES)) return status;
    if (int32_t status = check_view("dequantize", "args->output", &args->output, HIGH_PRECISION_DTYPES)) return status;
    if (int32_t status = plugin::check_same_shape(host_services, "dequantize", "args->input and args->output",
                                                  args->input, args->output))
      return status;
    if (int32_t status = plugin::check_not_null(host_services, "dequantize", "args->scale_inv", args->scale_inv))
      return status;
    const float scale_inv = *args->scale_inv;
    for (int64_t r = 0; r < args->input.rows; ++r) {
      for (int64_t c = 0; c < args->input.cols; ++c) {
        const float q = load_element(args->input.data, args->input.dtype, (size_t)(r * args->input.ld + c));
        store_element(args->output.data, args->output.dtype, (size_t)(r * args->output.ld + c), q * scale_inv, 1);
      }
    }
    return OCTET_STATUS_SUCCESS;
  });
}

octet_backend_api make_api() {
  octet_backend_api api = octet::plugin::api_header(TEMPLATE_NAME, TEMPLATE_VERSION);
  api.initialize = template_initialize;
  api.context_create = template_context_create;
  api.context_destroy = template_context_destroy;
  /* Left NULL on purpose: shutdown (nothing global to release), synchronize
   * (everything runs synchronously), mem_alloc/mem_free/copy_* (the host
   * then uses aligned host memory), transpose and gemm (not provided: the
   * core answers UNSUPPORTED naming them). */
  api.convert = template_convert;
  api.amax = template_amax;
  api.quantize = template_quantize;
  api.dequantize = template_dequantize;
  return api;
}

/* Lives as long as the library (the ABI requires it to outlive every use). */
const octet_backend_api template_api = make_api();

}  // namespace

int32_t octet_backend_entry(uint32_t host_abi_major, uint32_t host_abi_minor, const octet_backend_api** api_out) {
  (void)host_abi_minor; /* any minor of our major is fine: fields are only appended */
  return octet::plugin::answer_entry(host_abi_major, api_out, &template_api);
}
