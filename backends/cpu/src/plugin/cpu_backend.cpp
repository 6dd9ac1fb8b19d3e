// The cpu backend's plugin table and entry points. Every entry catches all
// exceptions (plugin/errors.hpp) and reports failures through the host.
#include <octet/octet_backend.h>

#include <omp.h>

#include <new>
#include <string>

#include "dispatch/isa.hpp"
#include "elementwise/row_kernels.hpp"
#include "fp4/fp4_kernels.hpp"
#include "fp4/gemm_fp4.hpp"
#include "gemm/decode_gemm_fp8_avx2.hpp"
#include "gemm/decode_gemm_fp8_avx512.hpp"
#include "gemm/fp8_gemm_engine.hpp"
#include "gemm/gemm_fp8.hpp"
#include "gemm/gemm_fp8_amx.hpp"
#include "layers/layer_kernels.hpp"
#include "plugin/checks.hpp"
#include "plugin/errors.hpp"
#include "plugin/kernels.hpp"

struct octet_backend_context {
  // Nothing is kept between calls: every GEMM allocates its panels and
  // accumulator for the call and frees them before it returns (issue 21:
  // no workspace held for the context's life, outside the memory
  // statistics).
  int unused = 0;
};

namespace octet_cpu {
namespace {

constexpr std::size_t kMaxDeviceChars = 256;

std::string& device_name() {
  static std::string name;
  return name;
}

// The device string's words for the low-precision GEMM paths.
const char* gemm_paths() {
  if (cpu_isa() < Isa::Avx512Bf16 || !fp8_gemm_bf16_built() || !fp4_gemm_bf16_built()) {
    const bool decodes =
        (cpu_isa() >= Isa::Avx512 && fp8_decode_fma_built()) || (cpu_isa() == Isa::Avx2 && fp8_decode_avx2_built());
    return decodes ? "FP8/FP4 GEMM sgemm tiles (FP8 decode shapes fma)" : "FP8/FP4 GEMM sgemm tiles";
  }
  switch (fp8_gemm_engine()) {
    case Fp8GemmEngine::Amx:
      return "FP8 GEMM amx tdpbf16ps, FP4 sgemm tiles";
    case Fp8GemmEngine::Bf16Dot:
      return "FP8/FP4 GEMM vdpbf16ps";
    case Fp8GemmEngine::OnednnBf16:
      return "FP8 GEMM oneDNN bf16 matmul (decode shapes fma), FP4 sgemm tiles";
    case Fp8GemmEngine::Fp32Fma:
      break;
  }
  return "FP8/FP4 GEMM sgemm tiles (decode shapes fma/vdpbf16ps)";
}

int32_t initialize(const octet_host_services* host, octet_backend_caps* caps) {
  if (host == nullptr) return OCTET_STATUS_INVALID_ARGUMENT;
  set_host_services(host);
  return guarded("initialize", [&]() -> int32_t {
    if (int32_t s = require_pointer("initialize", "caps", caps)) return s;
    const RowKernels& k = row_kernels();
    const std::string paths = std::string("; ") + k.name + " element-wise; " + gemm_paths() +
                              ", high-precision GEMM oneDNN sgemm; " + std::to_string(omp_get_max_threads()) +
                              " OpenMP threads)";
    // The plugin ABI's device string is at most 256 characters: where the
    // CPU's feature list would take it past that, the list is left out
    // (`octet info` still names the level).
    device_name() = "host CPU (" + isa_description() + paths;
    if (device_name().size() > kMaxDeviceChars)
      device_name() = "host CPU (isa " + std::string(isa_name(cpu_isa())) + paths;
    octet_backend_caps filled{};
    filled.struct_size = sizeof filled;
    filled.device = device_name().c_str();
    filled.memory_kind = OCTET_MEMORY_HOST;
    filled.dtypes =
        OCTET_DTYPE_BIT(OCTET_DTYPE_FP32) | OCTET_DTYPE_BIT(OCTET_DTYPE_BF16) | OCTET_DTYPE_BIT(OCTET_DTYPE_FP16) |
        OCTET_DTYPE_BIT(OCTET_DTYPE_E4M3) | OCTET_DTYPE_BIT(OCTET_DTYPE_E5M2) | OCTET_DTYPE_BIT(OCTET_DTYPE_E4M3FNUZ) |
        OCTET_DTYPE_BIT(OCTET_DTYPE_E5M2FNUZ) | OCTET_DTYPE_BIT(OCTET_DTYPE_E8M0) | OCTET_DTYPE_BIT(OCTET_DTYPE_E2M1);
    filled.scaling_modes = OCTET_SCALING_PER_TENSOR | OCTET_SCALING_MXFP8_1X32 | OCTET_SCALING_BLOCK_1X128 |
                           OCTET_SCALING_BLOCK_128X128 | OCTET_SCALING_PER_ROW | OCTET_SCALING_PER_COLUMN |
                           OCTET_SCALING_MXFP4_1X32 | OCTET_SCALING_NVFP4_1X16 | OCTET_SCALING_NVFP4_16X16;
    filled.native_columnwise = 1;  // host memory: any layout can be read
    filled.fp8_gemm_layouts = OCTET_GEMM_LAYOUT_ALL;
    filled.alignment = 64;
    // Unaligned SIMD loads and stores on caller data (aligned ones only on
    // the kernels' own scratch): any element-aligned address, which the
    // backend suites pass (tests/support/test_matrix.hpp).
    filled.caller_alignment = 1;
    filled.fused_cast_transpose = 1;
    // Written no further than the host's struct_size (the SDK's table).
    return octet::plugin::Capabilities(filled).answer(octet_cpu::host(), caps);
  });
}

void shutdown() { set_host_services(nullptr); }

int32_t context_create(void* /*stream: kernels run on the calling thread's OpenMP team*/,
                       octet_backend_context** context) {
  return guarded("context_create", [&]() -> int32_t {
    if (int32_t s = require_pointer("context_create", "context", context)) return s;
    *context = new octet_backend_context();
    return OCTET_STATUS_SUCCESS;
  });
}

void context_destroy(octet_backend_context* context) { delete context; }

template <typename Kernel>
int32_t run(const char* name, const octet_backend_context* context, Kernel&& kernel) {
  return guarded(name, [&]() -> int32_t {
    if (int32_t s = require_pointer(name, "context", context)) return s;
    return kernel();
  });
}

int32_t convert(octet_backend_context* c, const octet_matrix_view* in,
                const octet_matrix_view* out, int32_t saturate) {
  return run("convert", c, [&] { return convert_kernel(in, out, saturate); });
}
int32_t amax(octet_backend_context* c, const octet_matrix_view* in, float* amax_out) {
  return run("amax", c, [&] { return amax_kernel(in, amax_out); });
}
int32_t quantize(octet_backend_context* c, const octet_quantize_args* args) {
  return run("quantize", c, [&] { return quantize_kernel(args); });
}
int32_t transpose(octet_backend_context* c, const octet_matrix_view* in,
                  const octet_matrix_view* out) {
  return run("transpose", c, [&] { return transpose_kernel(in, out); });
}
int32_t dequantize(octet_backend_context* c, const octet_dequantize_args* args) {
  return run("dequantize", c, [&] { return dequantize_kernel(args); });
}
int32_t gemm(octet_backend_context* c, const octet_gemm_args* args) {
  return run("gemm", c, [&] { return gemm_kernel(args); });
}
int32_t quantize_with_statistics(octet_backend_context* c, const octet_quantize_args* args,
                                 octet_quantize_statistics* stats_out) {
  return run("quantize_with_statistics", c,
             [&] { return quantize_with_statistics_kernel(args, stats_out); });
}
int32_t block_quantize(octet_backend_context* c, const octet_block_quantize_args* args) {
  return run("block_quantize", c, [&] { return block_quantize_kernel(args); });
}
int32_t block_dequantize(octet_backend_context* c, const octet_block_dequantize_args* args) {
  return run("block_dequantize", c, [&] { return block_dequantize_kernel(args); });
}
int32_t grouped_gemm(octet_backend_context* c, const octet_grouped_gemm_args* args) {
  return run("grouped_gemm", c, [&] { return grouped_gemm_kernel(args); });
}
int32_t block_gemm(octet_backend_context* c, const octet_block_gemm_args* args) {
  return run("block_gemm", c, [&] {
    GemmWorkspace workspace;  // freed when the call returns
    return block_gemm_kernel(args, workspace);
  });
}

// Plugin ABI 1.2 (layers/layer_kernels.cpp).
int32_t norm_forward(octet_backend_context* c, const octet_norm_forward_args* args) {
  return run("norm_forward", c, [&] { return norm_forward_kernel(args); });
}
int32_t norm_backward(octet_backend_context* c, const octet_norm_backward_args* args) {
  return run("norm_backward", c, [&] { return norm_backward_kernel(args); });
}
int32_t activation_forward(octet_backend_context* c, const octet_activation_args* args) {
  return run("activation_forward", c, [&] { return activation_kernel(args, false); });
}
int32_t activation_backward(octet_backend_context* c, const octet_activation_args* args) {
  return run("activation_backward", c, [&] { return activation_kernel(args, true); });
}
int32_t bias_gradient(octet_backend_context* c, const octet_bias_gradient_args* args) {
  return run("bias_gradient", c, [&] { return bias_gradient_kernel(args); });
}
int32_t accumulate(octet_backend_context* c, const octet_matrix_view* x,
                   const octet_matrix_view* y, int32_t accumulate_flag) {
  return run("accumulate", c, [&] { return accumulate_kernel(x, y, accumulate_flag); });
}

// Plugin ABI 1.4 (fp4/quantize_fp4.cpp, fp4/gemm_fp4_kernel.cpp).
int32_t fp4_quantize(octet_backend_context* c, const octet_fp4_quantize_args* args) {
  return run("fp4_quantize", c, [&] { return fp4_quantize_kernel(args); });
}
int32_t fp4_dequantize(octet_backend_context* c, const octet_fp4_dequantize_args* args) {
  return run("fp4_dequantize", c, [&] { return fp4_dequantize_kernel(args); });
}
int32_t fp4_gemm(octet_backend_context* c, const octet_fp4_gemm_args* args) {
  return run("fp4_gemm", c, [&] { return fp4_gemm_kernel(args); });
}

octet_backend_api make_api() {
  octet_backend_api api = octet::plugin::api_header("cpu", "0.1.0");
  api.initialize = initialize;
  api.shutdown = shutdown;
  api.context_create = context_create;
  api.context_destroy = context_destroy;
  api.synchronize = nullptr;  // every kernel has finished when it returns
  // Memory entries stay NULL: the host allocates aligned host memory.
  api.convert = convert;
  api.amax = amax;
  api.quantize = quantize;
  api.transpose = transpose;
  api.dequantize = dequantize;
  api.gemm = gemm;
  // Plugin ABI 1.1.
  api.quantize_with_statistics = quantize_with_statistics;
  api.block_quantize = block_quantize;
  api.block_dequantize = block_dequantize;
  api.block_gemm = block_gemm;
  // Plugin ABI 1.2: the layers' kernels.
  api.norm_forward = norm_forward;
  api.norm_backward = norm_backward;
  api.activation_forward = activation_forward;
  api.activation_backward = activation_backward;
  api.bias_gradient = bias_gradient;
  api.accumulate = accumulate;
  // Plugin ABI 1.4: the FP4 kernels (every FP4 scaling mode above).
  api.fp4_quantize = fp4_quantize;
  api.fp4_dequantize = fp4_dequantize;
  api.fp4_gemm = fp4_gemm;
  // Plugin ABI 1.5: grouped GEMMs (gemm/grouped_gemm_kernel.cpp).
  api.grouped_gemm = grouped_gemm;
  return api;
}

const octet_backend_api kApi = make_api();

}  // namespace
}  // namespace octet_cpu

extern "C" OCTET_BACKEND_EXPORT int32_t octet_backend_entry(uint32_t host_abi_major,
                                                            uint32_t /*any minor works*/,
                                                            const octet_backend_api** api_out) {
  return octet::plugin::answer_entry(host_abi_major, api_out, &octet_cpu::kApi);
}
