// The reference's plugin table: the same negotiation and entry points as a
// loadable plugin, so the core treats it like any other backend.
#include "octet_reference/reference_backend.h"

#include <new>
#include <string>

#include "argument_checks.hpp"
#include "host_errors.hpp"
#include "kernels.hpp"

struct octet_backend_context {
  // The reference runs synchronously on the calling thread and keeps no
  // per-context state; a context exists so the ABI's lifetime rules hold.
  int unused = 0;
};

namespace octet::ref {
namespace {

constexpr const char* kDeviceName = "host CPU (exact reference)";

octet_backend_caps reference_caps() {
  octet_backend_caps caps{};
  caps.struct_size = sizeof caps;
  caps.device = kDeviceName;
  caps.memory_kind = OCTET_MEMORY_HOST;
  caps.dtypes =
      OCTET_DTYPE_BIT(OCTET_DTYPE_FP32) | OCTET_DTYPE_BIT(OCTET_DTYPE_BF16) | OCTET_DTYPE_BIT(OCTET_DTYPE_FP16) |
      OCTET_DTYPE_BIT(OCTET_DTYPE_E4M3) | OCTET_DTYPE_BIT(OCTET_DTYPE_E5M2) | OCTET_DTYPE_BIT(OCTET_DTYPE_E8M0) |
      OCTET_DTYPE_BIT(OCTET_DTYPE_E4M3FNUZ) | OCTET_DTYPE_BIT(OCTET_DTYPE_E5M2FNUZ) | OCTET_DTYPE_BIT(OCTET_DTYPE_E2M1);
  caps.scaling_modes = OCTET_SCALING_PER_TENSOR | OCTET_SCALING_MXFP8_1X32 | OCTET_SCALING_BLOCK_1X128 |
                       OCTET_SCALING_BLOCK_128X128 | OCTET_SCALING_PER_ROW | OCTET_SCALING_PER_COLUMN |
                       OCTET_SCALING_MXFP4_1X32 | OCTET_SCALING_NVFP4_1X16 | OCTET_SCALING_NVFP4_16X16;
  caps.native_columnwise = 1;
  caps.fp8_gemm_layouts = OCTET_GEMM_LAYOUT_ALL;
  caps.alignment = 64;
  caps.caller_alignment = 1;  // scalar kernels: any element-aligned address
  caps.fused_cast_transpose = 1;
  caps.fp8_gemm_output = 1;
  return caps;
}

int32_t initialize(const octet_host_services* host, octet_backend_caps* caps) {
  if (host == nullptr) return OCTET_STATUS_INVALID_ARGUMENT;  // no one to tell
  return guarded("initialize", [&]() -> int32_t {
    remember_host_services(host);
    if (int32_t s = check_not_null("initialize", "caps", caps)) return s;
    // Written no further than the host's struct_size (an older host's is
    // smaller): the plugin SDK's capability table answers.
    return plugin::Capabilities(reference_caps()).answer(octet::ref::host(), caps);
  });
}

void shutdown() { remember_host_services(nullptr); }

int32_t context_create(void* /*stream: the reference always runs on the caller's thread*/,
                       octet_backend_context** context) {
  return guarded("context_create", [&]() -> int32_t {
    if (int32_t s = check_not_null("context_create", "context", context)) return s;
    auto* created = new (std::nothrow) octet_backend_context();
    if (created == nullptr) {
      return report(OCTET_STATUS_OUT_OF_MEMORY, "context_create: out of host memory");
    }
    *context = created;
    return OCTET_STATUS_SUCCESS;
  });
}

void context_destroy(octet_backend_context* context) { delete context; }

// Every kernel entry: check the context, then run the kernel with no
// exception escaping.
template <typename Kernel>
int32_t run_kernel(const char* name, const octet_backend_context* context, Kernel&& kernel) {
  return guarded(name, [&]() -> int32_t {
    if (int32_t s = check_not_null(name, "context", context)) return s;
    return kernel();
  });
}

int32_t convert(octet_backend_context* context, const octet_matrix_view* input,
                const octet_matrix_view* output, int32_t saturate) {
  return run_kernel("convert", context,
                    [&] { return convert_matrix(input, output, saturate); });
}

int32_t amax(octet_backend_context* context, const octet_matrix_view* input, float* amax_out) {
  return run_kernel("amax", context, [&] { return amax_of_matrix(input, amax_out); });
}

int32_t quantize(octet_backend_context* context, const octet_quantize_args* args) {
  return run_kernel("quantize", context, [&] { return quantize_matrix(args); });
}

int32_t transpose(octet_backend_context* context, const octet_matrix_view* input,
                  const octet_matrix_view* output) {
  return run_kernel("transpose", context, [&] { return transpose_matrix(input, output); });
}

int32_t dequantize(octet_backend_context* context, const octet_dequantize_args* args) {
  return run_kernel("dequantize", context, [&] { return dequantize_matrix(args); });
}

int32_t gemm_entry(octet_backend_context* context, const octet_gemm_args* args) {
  return run_kernel("gemm", context, [&] { return gemm(args); });
}

int32_t quantize_with_statistics(octet_backend_context* context, const octet_quantize_args* args,
                                 octet_quantize_statistics* stats_out) {
  return run_kernel("quantize_with_statistics", context,
                    [&] { return quantize_matrix_with_statistics(args, stats_out); });
}

int32_t block_quantize(octet_backend_context* context, const octet_block_quantize_args* args) {
  return run_kernel("block_quantize", context, [&] { return block_quantize_matrix(args); });
}

int32_t block_dequantize(octet_backend_context* context, const octet_block_dequantize_args* args) {
  return run_kernel("block_dequantize", context, [&] { return block_dequantize_matrix(args); });
}

int32_t block_gemm_entry(octet_backend_context* context, const octet_block_gemm_args* args) {
  return run_kernel("block_gemm", context, [&] { return block_gemm(args); });
}

int32_t norm_forward_entry(octet_backend_context* context, const octet_norm_forward_args* args) {
  return run_kernel("norm_forward", context, [&] { return norm_forward(args); });
}

int32_t norm_backward_entry(octet_backend_context* context, const octet_norm_backward_args* args) {
  return run_kernel("norm_backward", context, [&] { return norm_backward(args); });
}

int32_t activation_forward(octet_backend_context* context, const octet_activation_args* args) {
  return run_kernel("activation_forward", context, [&] { return activation(args, false); });
}

int32_t activation_backward(octet_backend_context* context, const octet_activation_args* args) {
  return run_kernel("activation_backward", context, [&] { return activation(args, true); });
}

int32_t bias_gradient_entry(octet_backend_context* context, const octet_bias_gradient_args* args) {
  return run_kernel("bias_gradient", context, [&] { return bias_gradient(args); });
}

int32_t accumulate(octet_backend_context* context, const octet_matrix_view* x, const octet_matrix_view* y,
                   int32_t accumulate_flag) {
  return run_kernel("accumulate", context, [&] { return accumulate_matrix(x, y, accumulate_flag); });
}

int32_t scale_from_amax_entry(octet_backend_context* context, const octet_scale_from_amax_args* args) {
  return run_kernel("scale_from_amax", context, [&] { return scale_from_amax(args); });
}

int32_t delayed_scaling_update_entry(octet_backend_context* context,
                                     const octet_delayed_scaling_update_args* args) {
  return run_kernel("delayed_scaling_update", context, [&] { return delayed_scaling_update(args); });
}

int32_t amax_record_entry(octet_backend_context* context, const float* amax, float* slot) {
  return run_kernel("amax_record", context, [&] { return amax_record(amax, slot); });
}

int32_t fp4_quantize(octet_backend_context* context, const octet_fp4_quantize_args* args) {
  return run_kernel("fp4_quantize", context, [&] { return fp4_quantize_matrix(args); });
}

int32_t fp4_dequantize(octet_backend_context* context, const octet_fp4_dequantize_args* args) {
  return run_kernel("fp4_dequantize", context, [&] { return fp4_dequantize_matrix(args); });
}

int32_t fp4_gemm_entry(octet_backend_context* context, const octet_fp4_gemm_args* args) {
  return run_kernel("fp4_gemm", context, [&] { return fp4_gemm(args); });
}

int32_t grouped_gemm_entry(octet_backend_context* context, const octet_grouped_gemm_args* args) {
  return run_kernel("grouped_gemm", context, [&] { return grouped_gemm(args); });
}

const octet_backend_api kReferenceApi = {
    sizeof(octet_backend_api),
    OCTET_PLUGIN_ABI_MAJOR,
    OCTET_PLUGIN_ABI_MINOR,
    "reference",
    "0.1.0",
    initialize,
    shutdown,
    context_create,
    context_destroy,
    /*synchronize=*/nullptr,  // every kernel has finished when it returns
                              // Memory: NULL, so the host uses its own aligned host memory and memcpy.
    /*mem_alloc=*/nullptr,
    /*mem_free=*/nullptr,
    /*copy_from_host=*/nullptr,
    /*copy_to_host=*/nullptr,
    convert,
    amax,
    quantize,
    transpose,
    dequantize,
    gemm_entry,
    quantize_with_statistics,
    block_quantize,
    block_dequantize,
    block_gemm_entry,
    norm_forward_entry,
    norm_backward_entry,
    activation_forward,
    activation_backward,
    bias_gradient_entry,
    accumulate,
    scale_from_amax_entry,
    delayed_scaling_update_entry,
    amax_record_entry,
    fp4_quantize,
    fp4_dequantize,
    fp4_gemm_entry,
    grouped_gemm_entry,
};

}  // namespace
}  // namespace octet::ref

extern "C" int32_t octet_reference_backend_entry(uint32_t host_abi_major,
                                                 uint32_t /*host_abi_minor: any minor works*/,
                                                 const octet_backend_api** api_out) {
  if (api_out == nullptr) return OCTET_STATUS_INVALID_ARGUMENT;
  if (host_abi_major != OCTET_PLUGIN_ABI_MAJOR) return OCTET_STATUS_ABI_MISMATCH;
  *api_out = &octet::ref::kReferenceApi;
  return OCTET_STATUS_SUCCESS;
}
