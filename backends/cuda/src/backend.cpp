// The cuda backend's plugin table: initialize (device probe and
// capabilities), contexts, memory, and the element-wise entries. GEMM is in
// gemm.cpp, kernels in elementwise.cu / gemm_fallback.cu.
#include <octet/octet_backend.h>
#include <octet/octet_plugin.hpp>

#include <cuda_runtime_api.h>

#include <cstdio>
#include <memory>

#include "arch.hpp"
#include "checks.hpp"
#include "context.hpp"
#include "entries.hpp"
#include "errors.hpp"
#include "kernels.hpp"

extern "C" OCTET_BACKEND_EXPORT int32_t octet_backend_entry(uint32_t host_abi_major, uint32_t host_abi_minor,
                                                            const octet_backend_api** api_out);

namespace octet_cuda {
namespace {

DeviceInfo g_device;
char g_device_name[320] = "no CUDA device";

// What the backend declares: without `arch` (no usable device) only the
// device name and memory kind, which `octet info` shows for an unavailable
// backend. The host's caps are written within its struct_size (the plugin
// SDK's Capabilities::answer).
octet_backend_caps cuda_caps(const ArchProfile* arch_or_null) {
  octet_backend_caps caps{};
  caps.struct_size = sizeof caps;
  caps.device = g_device_name;
  caps.memory_kind = OCTET_MEMORY_DEVICE;
  if (arch_or_null == nullptr) return caps;
  const ArchProfile& arch = *arch_or_null;
  caps.dtypes = kAllDtypes;
  // Block modes are served by the plugin ABI 1.1 entries (block_entries.cpp).
  // MXFP8 is declared only where the hardware has MX scaling (SM 10.x
  // tensor cores, cuBLASLt's block-scaled FP8): on Hopper the exact kernel
  // would run it on CUDA cores, which no one should choose unknowingly.
  caps.scaling_modes = OCTET_SCALING_PER_TENSOR | OCTET_SCALING_BLOCK_1X128 | OCTET_SCALING_BLOCK_128X128 |
                       (arch.mxfp8 ? uint32_t(OCTET_SCALING_MXFP8_1X32) : 0u);
  // TN-only architectures (SM 9.x, 12.x: arch.hpp) get TN copies from the core.
  caps.native_columnwise = arch.fp8_all_layouts ? 1 : 0;
  caps.fp8_gemm_layouts = arch.fp8_all_layouts ? OCTET_GEMM_LAYOUT_ALL : OCTET_GEMM_LAYOUT_TN;
  caps.alignment = 256;
  caps.fused_cast_transpose = 1;
  return caps;
}

int32_t unavailable(const std::string& reason) { return report(OCTET_STATUS_UNAVAILABLE, reason); }

// True unless src is ordinary pageable host memory (cudaMemoryTypeUnregistered),
// i.e. when a cudaMemcpyAsync from it may still read it after returning.
bool source_needs_wait(const void* src) {
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, src) != cudaSuccess) {
    (void)cudaGetLastError();
    return true;  // unknown: be safe
  }
  return attributes.type != cudaMemoryTypeUnregistered;
}

int32_t cuda_initialize(const octet_host_services* host, octet_backend_caps* caps) {
  if (host == nullptr || caps == nullptr) return OCTET_STATUS_INVALID_ARGUMENT;
  set_host_services(host);
  try {
    // Known even without a device: shown by `octet info` for an unavailable backend.
    if (int32_t s = octet::plugin::Capabilities(cuda_caps(nullptr)).answer(octet_cuda::host(), caps)) return s;
    int count = 0;
    cudaError_t error = cudaGetDeviceCount(&count);
    if (error != cudaSuccess) {
      (void)cudaGetLastError();
      return unavailable("no CUDA device: cudaGetDeviceCount failed with " + cuda_error_text(error));
    }
    if (count <= 0) return unavailable("no CUDA device: cudaGetDeviceCount found 0 devices");
    int device = 0;
    error = cudaGetDevice(&device);
    if (error != cudaSuccess) return unavailable("no CUDA device: cudaGetDevice failed with " + cuda_error_text(error));
    cudaDeviceProp properties{};
    error = cudaGetDeviceProperties(&properties, device);
    if (error != cudaSuccess) {
      return unavailable("no CUDA device: cudaGetDeviceProperties failed with " + cuda_error_text(error));
    }
    g_device.device = device;
    g_device.major = properties.major;
    g_device.minor = properties.minor;
    std::snprintf(g_device_name, sizeof g_device_name, "%s (SM %d.%d)", properties.name, properties.major,
                  properties.minor);
    if (properties.major < 9) {
      return unavailable(concat("CUDA device ", g_device_name,
                                " has no FP8 tensor cores this backend uses (it needs SM 9.0 or newer)"));
    }
    error = probe_kernel_image();
    if (error != cudaSuccess) {
      (void)cudaGetLastError();
      return unavailable(concat("CUDA device ", g_device_name, ": this build has no kernel image for it (",
                                cuda_error_text(error),
                                "); rebuild with CMAKE_CUDA_ARCHITECTURES including its SM (e.g. 90a, 100a, 120a)"));
    }
    const ArchProfile arch = arch_profile(properties.major);
    return octet::plugin::Capabilities(cuda_caps(&arch)).answer(octet_cuda::host(), caps);
  } catch (...) {
    return report(OCTET_STATUS_INTERNAL, "cuda initialize: unexpected exception");
  }
}

int32_t cuda_context_create(void* stream, octet_backend_context** context) {
  return guarded("context_create", [&] {
    require(context != nullptr, "context is NULL");
    auto created = std::make_unique<octet_backend_context>();
    created->device = g_device.device;
    check_cuda(cudaSetDevice(created->device), "cudaSetDevice");
    if (stream != nullptr) {
      created->stream = static_cast<cudaStream_t>(stream);
    } else {
      check_cuda(cudaStreamCreateWithFlags(&created->stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
      created->owns_stream = true;
    }
    *context = created.release();
  });
}

void cuda_context_destroy(octet_backend_context* context) {
  if (context == nullptr) return;
  cudaSetDevice(context->device);
  cudaStreamSynchronize(context->stream);  // nothing queued may still use the pool
  if (context->lt != nullptr) cublasLtDestroy(context->lt);
  if (context->owns_stream) cudaStreamDestroy(context->stream);
  delete context;  // the pool frees its blocks
}

int32_t cuda_synchronize(octet_backend_context* context) {
  return guarded("synchronize", [&] {
    require(context != nullptr, "context is NULL");
    bind(context, "synchronize");
    check_cuda(cudaStreamSynchronize(context->stream), "cudaStreamSynchronize");
  });
}

int32_t cuda_mem_alloc(octet_backend_context* context, size_t bytes, void** ptr) {
  return guarded("mem_alloc", [&] {
    require(context != nullptr, "context is NULL");
    require(ptr != nullptr, "ptr is NULL");
    bind(context, "mem_alloc");
    *ptr = context->pool.allocate(bytes);
  });
}

void cuda_mem_free(octet_backend_context* context, void* ptr) {
  if (context == nullptr || ptr == nullptr) return;
  context->pool.release(ptr);
}

int32_t cuda_copy_from_host(octet_backend_context* context, void* dst, const void* src, size_t bytes) {
  return guarded("copy_from_host", [&] {
    require(context != nullptr, "context is NULL");
    if (bytes == 0) return;
    require(dst != nullptr && src != nullptr, dst == nullptr ? "dst" : "src", " is NULL");
    bind(context, "copy_from_host");
    // From pageable memory the copy has been staged when cudaMemcpyAsync
    // returns, so the caller may reuse src at once. From page-locked memory
    // (cudaMallocHost, cudaHostRegister) or managed memory it is a DMA that
    // runs when the stream gets there: wait for it, as the caller may
    // overwrite or free src as soon as this returns (octet.h's copies are
    // synchronous for the caller).
    check_cuda(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, context->stream), "cudaMemcpyAsync (to device)");
    if (source_needs_wait(src)) {
      check_cuda(cudaStreamSynchronize(context->stream), "cudaStreamSynchronize after the copy from page-locked memory");
    }
  });
}

int32_t cuda_copy_to_host(octet_backend_context* context, void* dst, const void* src, size_t bytes) {
  return guarded("copy_to_host", [&] {
    require(context != nullptr, "context is NULL");
    if (bytes == 0) return;
    require(dst != nullptr && src != nullptr, dst == nullptr ? "dst" : "src", " is NULL");
    bind(context, "copy_to_host");
    check_cuda(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, context->stream), "cudaMemcpyAsync (to host)");
    check_cuda(cudaStreamSynchronize(context->stream), "cudaStreamSynchronize after the copy to host");
  });
}

int32_t cuda_convert(octet_backend_context* context, const octet_matrix_view* input, const octet_matrix_view* output,
                     int32_t saturate) {
  return guarded("convert", [&] {
    require(context != nullptr, "context is NULL");
    check_view("input", input, kAllDtypes);
    check_view("output", output, kAllDtypes);
    check_same_shape(*input, *output, "input and output");
    bind(context, "convert");
    check_cuda(launch_convert(*input, *output, saturate != 0, context->stream), "convert kernel launch");
  });
}

int32_t cuda_amax(octet_backend_context* context, const octet_matrix_view* input, float* amax_out) {
  return guarded("amax", [&] {
    require(context != nullptr, "context is NULL");
    check_view("input", input, kHighPrecision);
    require(amax_out != nullptr, "amax_out is NULL");
    bind(context, "amax");
    check_cuda(launch_amax(*input, amax_out, context->stream), "amax kernel launch");
  });
}

int32_t cuda_quantize(octet_backend_context* context, const octet_quantize_args* given) {
  return guarded("quantize", [&] {
    require(context != nullptr, "context is NULL");
    require(given != nullptr, "args is NULL");
    require(OCTET_PLUGIN_HOLDS(given->struct_size, octet_quantize_args, scale),
            "args->struct_size is too small to hold the scale");
    // Fields beyond the caller's struct_size count as NULL.
    const octet_quantize_args args = octet::plugin::read_struct(given);
    check_view("args->input", &args.input, kHighPrecision);
    require(args.out_dtype == OCTET_DTYPE_E4M3 || args.out_dtype == OCTET_DTYPE_E5M2,
            "args->out_dtype (", args.out_dtype, ") must be E4M3 or E5M2");
    require(args.scale != nullptr, "args->scale is NULL");
    const bool empty = args.input.rows == 0 || args.input.cols == 0;
    require(empty || args.rowwise_out != nullptr || args.columnwise_out != nullptr || args.scale_inv_out != nullptr ||
                args.amax_out != nullptr,
            "args asks for no output (rowwise_out, columnwise_out, scale_inv_out and amax_out are all NULL)");
    bind(context, "quantize");
    check_cuda(launch_quantize(args, context->stream), "quantize kernel launch");
  });
}

int32_t cuda_transpose(octet_backend_context* context, const octet_matrix_view* input,
                       const octet_matrix_view* output) {
  return guarded("transpose", [&] {
    require(context != nullptr, "context is NULL");
    check_view("input", input, kAllDtypes);
    check_view("output", output, kAllDtypes);
    require(output->dtype == input->dtype, "output.dtype is ", dtype_label(output->dtype), " but must equal input.dtype (",
            dtype_label(input->dtype), ")");
    require(output->rows == input->cols && output->cols == input->rows, "output must be ", input->cols, "x",
            input->rows, " (the transpose of input) but is ", output->rows, "x", output->cols);
    bind(context, "transpose");
    check_cuda(launch_transpose(*input, *output, dtype_bytes(input->dtype), context->stream),
               "transpose kernel launch");
  });
}

int32_t cuda_dequantize(octet_backend_context* context, const octet_dequantize_args* args) {
  return guarded("dequantize", [&] {
    require(context != nullptr, "context is NULL");
    require(args != nullptr, "args is NULL");
    require_struct_size("args", args->struct_size, sizeof *args);
    check_view("args->input", &args->input, kFp8);
    check_view("args->output", &args->output, kHighPrecision);
    check_same_shape(args->input, args->output, "args->input and args->output");
    require(args->scale_inv != nullptr, "args->scale_inv is NULL");
    bind(context, "dequantize");
    check_cuda(launch_dequantize(*args, context->stream), "dequantize kernel launch");
  });
}

int32_t cuda_gemm(octet_backend_context* context, const octet_gemm_args* args) {
  return guarded("gemm", [&] {
    require(context != nullptr, "context is NULL");
    require(args != nullptr, "args is NULL");
    require_struct_size("args", args->struct_size, sizeof *args);
    bind(context, "gemm");
    run_gemm(context, *args);
  });
}

octet_backend_api make_api() {
  octet_backend_api api = octet::plugin::api_header("cuda", "0.1.0");
  api.initialize = cuda_initialize;
  api.shutdown = nullptr;  // contexts own everything; nothing global to release
  api.context_create = cuda_context_create;
  api.context_destroy = cuda_context_destroy;
  api.synchronize = cuda_synchronize;
  api.mem_alloc = cuda_mem_alloc;
  api.mem_free = cuda_mem_free;
  api.copy_from_host = cuda_copy_from_host;
  api.copy_to_host = cuda_copy_to_host;
  api.convert = cuda_convert;
  api.amax = cuda_amax;
  api.quantize = cuda_quantize;
  api.transpose = cuda_transpose;
  api.dequantize = cuda_dequantize;
  api.gemm = cuda_gemm;
  add_block_entries(api);
  add_layer_entries(api);
  add_scaling_entries(api);
  return api;
}

// Lives as long as the library.
const octet_backend_api g_api = make_api();

}  // namespace

const DeviceInfo& device_info() { return g_device; }

void bind(octet_backend_context* context, const char* entry) {
  (void)entry;
  int current = -1;
  if (cudaGetDevice(&current) == cudaSuccess && current == context->device) return;
  check_cuda(cudaSetDevice(context->device), "cudaSetDevice");
}

}  // namespace octet_cuda

int32_t octet_backend_entry(uint32_t host_abi_major, uint32_t host_abi_minor, const octet_backend_api** api_out) {
  (void)host_abi_minor;  // fields are only ever appended within a major
  return octet::plugin::answer_entry(host_abi_major, api_out, &octet_cuda::g_api);
}
