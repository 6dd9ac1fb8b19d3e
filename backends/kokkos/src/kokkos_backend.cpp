// The kokkos backend's plugin table: negotiation, Kokkos' lifetime, memory
// in the default execution space's memory space, and the entry points.
// Every entry catches all exceptions (checks.hpp) and reports failures
// through the host.
//
// Kokkos lifetime: initialize() starts Kokkos only when the host program has
// not (Kokkos::is_initialized()). Kokkos started here stays up across
// shutdown() and a later initialize(), and is finalised once, when the
// plugin is unloaded or the process exits: Kokkos 3 cannot be initialised
// again in a process after Kokkos::finalize (Serial's team scratch outlives
// finalize, and the next kernel that resizes it writes into freed memory).
// A host program that runs Kokkos itself keeps it.
//
// Threads: a Kokkos execution space instance is not made for concurrent
// dispatch from several host threads (Serial's scratch space, an OpenMP
// team), and the plugin ABI lets different contexts be used concurrently,
// so kernels are serialised by one mutex.
#include <octet/octet_backend.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <string>

#include "checks.hpp"
#include "views.hpp"

struct octet_backend_context {
  // Kernels run on the default execution space instance and finish before
  // they return; a context holds nothing else.
  int unused = 0;
};

namespace octet_kokkos {
namespace {

std::mutex& kernel_mutex() {
  static std::mutex m;
  return m;
}
bool g_started_kokkos = false;

// Registered with std::atexit when this plugin starts Kokkos: glibc runs it
// when the plugin is unloaded (dlclose) or the process exits, whichever
// comes first.
void finalize_started_kokkos() {
  std::lock_guard<std::mutex> lock(kernel_mutex());
  if (g_started_kokkos && Kokkos::is_initialized()) Kokkos::finalize();
}

std::string& device_name() {
  static std::string name;
  return name;
}

octet_backend_caps kokkos_caps() {
  octet_backend_caps caps{};
  caps.struct_size = sizeof caps;
  device_name() = std::string("Kokkos ") + ExecSpace::name() + " execution space (Kokkos " +
                  std::to_string(KOKKOS_VERSION / 10000) + "." + std::to_string(KOKKOS_VERSION / 100 % 100) + "." +
                  std::to_string(KOKKOS_VERSION % 100) + ", " + MemSpace::name() + ")";
  caps.device = device_name().c_str();
  // Host-accessible memory space (Serial, OpenMP, Threads): host memory;
  // CUDA/HIP/SYCL device memory otherwise.
  caps.memory_kind = kHostMemory ? OCTET_MEMORY_HOST : OCTET_MEMORY_DEVICE;
  caps.dtypes = OCTET_DTYPE_BIT(OCTET_DTYPE_FP32) | OCTET_DTYPE_BIT(OCTET_DTYPE_BF16) |
                OCTET_DTYPE_BIT(OCTET_DTYPE_FP16) | OCTET_DTYPE_BIT(OCTET_DTYPE_E4M3) |
                OCTET_DTYPE_BIT(OCTET_DTYPE_E5M2) | OCTET_DTYPE_BIT(OCTET_DTYPE_E8M0) |
                OCTET_DTYPE_BIT(OCTET_DTYPE_E4M3FNUZ) | OCTET_DTYPE_BIT(OCTET_DTYPE_E5M2FNUZ);
  // PER_ROW / PER_COLUMN reach the block kernels as FP32 blocks spanning a
  // whole row or column (plugin ABI 1.4), which block.cpp and the block
  // GEMM take as any other block shape.
  caps.scaling_modes = OCTET_SCALING_PER_TENSOR | OCTET_SCALING_MXFP8_1X32 | OCTET_SCALING_BLOCK_1X128 |
                       OCTET_SCALING_BLOCK_128X128 | OCTET_SCALING_PER_ROW | OCTET_SCALING_PER_COLUMN;
  // The GEMM kernels read either operand along rows or columns (gemm.cpp
  // widens op(X) through the view's strides), in every execution space.
  caps.native_columnwise = 1;
  caps.fp8_gemm_layouts = OCTET_GEMM_LAYOUT_ALL;
  // Kokkos allocations (kokkos_malloc) start 64-byte aligned.
  caps.alignment = 64;
  caps.caller_alignment = 1;  // unmanaged views over any element-aligned address
  caps.fused_cast_transpose = 1;
  caps.fp8_gemm_output = 1;
  return caps;
}

int32_t initialize(const octet_host_services* host, octet_backend_caps* caps) {
  if (host == nullptr) return OCTET_STATUS_INVALID_ARGUMENT;  // no one to tell
  remember_host_services(host);
  return guarded("initialize", [&]() -> int32_t {
    if (int32_t s = check_not_null("initialize", "caps", caps)) return s;
    {
      std::lock_guard<std::mutex> lock(kernel_mutex());
      if (!Kokkos::is_initialized()) {
        if (g_started_kokkos) {
          return report(OCTET_STATUS_BACKEND_ERROR,
                        "initialize: Kokkos, which this plugin started, was finalized by someone else, and Kokkos "
                        "cannot be initialized again in this process");
        }
        Kokkos::InitArguments arguments;
        arguments.disable_warnings = true;
        Kokkos::initialize(arguments);
        g_started_kokkos = true;
        std::atexit(finalize_started_kokkos);
      }
    }
    // Written no further than the host's struct_size (the SDK's table).
    return octet::plugin::Capabilities(kokkos_caps()).answer(octet_kokkos::host(), caps);
  });
}

// Kokkos stays up (see the lifetime note at the top).
void shutdown() { remember_host_services(nullptr); }

int32_t context_create(void* /*stream: kernels run on the default execution space instance*/,
                       octet_backend_context** context) {
  return guarded("context_create", [&]() -> int32_t {
    if (int32_t s = check_not_null("context_create", "context", context)) return s;
    *context = new octet_backend_context();
    return OCTET_STATUS_SUCCESS;
  });
}

void context_destroy(octet_backend_context* context) { delete context; }

template <typename Kernel>
int32_t run(const char* name, const octet_backend_context* context, Kernel&& kernel) {
  return guarded(name, [&]() -> int32_t {
    if (int32_t s = check_not_null(name, "context", context)) return s;
    std::lock_guard<std::mutex> lock(kernel_mutex());
    if (!Kokkos::is_initialized()) {
      return report(OCTET_STATUS_BACKEND_ERROR,
                    std::string(name) + ": Kokkos is not initialized (the host program finalized it)");
    }
    return kernel();
  });
}

int32_t synchronize(octet_backend_context* c) {
  return run("synchronize", c, [] {
    Kokkos::fence();
    return OCTET_STATUS_SUCCESS;
  });
}

// Memory: kokkos_malloc in the default memory space; copies are deep_copy
// between unmanaged Views (memcpy for host spaces, a transfer for devices).
int32_t mem_alloc(octet_backend_context* c, size_t bytes, void** ptr) {
  return run("mem_alloc", c, [&]() -> int32_t {
    if (int32_t s = check_not_null("mem_alloc", "ptr", ptr)) return s;
    void* p = nullptr;
    try {
      p = Kokkos::kokkos_malloc<MemSpace>("octet_kokkos::buffer", std::max<size_t>(bytes, 1));
    } catch (const std::exception& e) {
      return report(OCTET_STATUS_OUT_OF_MEMORY, std::string("mem_alloc: cannot allocate ") + std::to_string(bytes) +
                                                    " bytes in " + MemSpace::name() + ": " + e.what());
    }
    if (p == nullptr) {
      return report(OCTET_STATUS_OUT_OF_MEMORY,
                    std::string("mem_alloc: cannot allocate ") + std::to_string(bytes) + " bytes");
    }
    *ptr = p;
    return OCTET_STATUS_SUCCESS;
  });
}

void mem_free(octet_backend_context* /*context*/, void* ptr) {
  if (ptr == nullptr) return;
  try {
    std::lock_guard<std::mutex> lock(kernel_mutex());
    if (Kokkos::is_initialized()) Kokkos::kokkos_free<MemSpace>(ptr);
  } catch (...) {
    // Nothing may leave a void entry; a failed free leaks.
  }
}

int32_t copy_from_host(octet_backend_context* c, void* dst, const void* src, size_t bytes) {
  return run("copy_from_host", c, [&]() -> int32_t {
    if (bytes == 0) return OCTET_STATUS_SUCCESS;
    if (int32_t s = check_not_null("copy_from_host", "dst", dst)) return s;
    if (int32_t s = check_not_null("copy_from_host", "src", src)) return s;
    Kokkos::deep_copy(DeviceView<unsigned char>(static_cast<unsigned char*>(dst), bytes),
                      HostView<unsigned char>(static_cast<unsigned char*>(const_cast<void*>(src)), bytes));
    return OCTET_STATUS_SUCCESS;
  });
}

int32_t copy_to_host(octet_backend_context* c, void* dst, const void* src, size_t bytes) {
  return run("copy_to_host", c, [&]() -> int32_t {
    if (bytes == 0) return OCTET_STATUS_SUCCESS;
    if (int32_t s = check_not_null("copy_to_host", "dst", dst)) return s;
    if (int32_t s = check_not_null("copy_to_host", "src", src)) return s;
    Kokkos::deep_copy(HostView<unsigned char>(static_cast<unsigned char*>(dst), bytes),
                      DeviceView<unsigned char>(static_cast<unsigned char*>(const_cast<void*>(src)), bytes));
    return OCTET_STATUS_SUCCESS;
  });
}

int32_t convert(octet_backend_context* c, const octet_matrix_view* in, const octet_matrix_view* out,
                int32_t saturate) {
  return run("convert", c, [&] { return convert_kernel(in, out, saturate); });
}
int32_t amax(octet_backend_context* c, const octet_matrix_view* in, float* amax_out) {
  return run("amax", c, [&] { return amax_kernel(in, amax_out); });
}
int32_t quantize(octet_backend_context* c, const octet_quantize_args* args) {
  return run("quantize", c, [&] { return quantize_kernel(args, nullptr); });
}
int32_t transpose(octet_backend_context* c, const octet_matrix_view* in, const octet_matrix_view* out) {
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
  return run("quantize_with_statistics", c, [&]() -> int32_t {
    if (int32_t s = check_not_null("quantize_with_statistics", "stats_out", stats_out)) return s;
    return quantize_kernel(args, stats_out);
  });
}
int32_t block_quantize(octet_backend_context* c, const octet_block_quantize_args* args) {
  return run("block_quantize", c, [&] { return block_quantize_kernel(args); });
}
int32_t block_dequantize(octet_backend_context* c, const octet_block_dequantize_args* args) {
  return run("block_dequantize", c, [&] { return block_dequantize_kernel(args); });
}
int32_t block_gemm(octet_backend_context* c, const octet_block_gemm_args* args) {
  return run("block_gemm", c, [&] { return block_gemm_kernel(args); });
}
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
int32_t accumulate(octet_backend_context* c, const octet_matrix_view* x, const octet_matrix_view* y,
                   int32_t accumulate_flag) {
  return run("accumulate", c, [&] { return accumulate_kernel(x, y, accumulate_flag); });
}
int32_t scale_from_amax(octet_backend_context* c, const octet_scale_from_amax_args* args) {
  return run("scale_from_amax", c, [&] { return scale_from_amax_kernel(args); });
}
int32_t delayed_scaling_update(octet_backend_context* c, const octet_delayed_scaling_update_args* args) {
  return run("delayed_scaling_update", c, [&] { return delayed_scaling_update_kernel(args); });
}
int32_t amax_record(octet_backend_context* c, const float* amax, float* slot) {
  return run("amax_record", c, [&] { return amax_record_kernel(amax, slot); });
}

octet_backend_api make_api() {
  octet_backend_api api = octet::plugin::api_header("kokkos", "0.1.0");
  api.initialize = initialize;
  api.shutdown = shutdown;
  api.context_create = context_create;
  api.context_destroy = context_destroy;
  api.synchronize = synchronize;
  api.mem_alloc = mem_alloc;
  api.mem_free = mem_free;
  api.copy_from_host = copy_from_host;
  api.copy_to_host = copy_to_host;
  api.convert = convert;
  api.amax = amax;
  api.quantize = quantize;
  api.transpose = transpose;
  api.dequantize = dequantize;
  api.gemm = gemm;
  api.quantize_with_statistics = quantize_with_statistics;
  api.block_quantize = block_quantize;
  api.block_dequantize = block_dequantize;
  api.block_gemm = block_gemm;
  api.norm_forward = norm_forward;
  api.norm_backward = norm_backward;
  api.activation_forward = activation_forward;
  api.activation_backward = activation_backward;
  api.bias_gradient = bias_gradient;
  api.accumulate = accumulate;
  api.scale_from_amax = scale_from_amax;
  api.delayed_scaling_update = delayed_scaling_update;
  api.amax_record = amax_record;
  return api;
}

const octet_backend_api kApi = make_api();

}  // namespace
}  // namespace octet_kokkos

extern "C" OCTET_BACKEND_EXPORT int32_t octet_backend_entry(uint32_t host_abi_major, uint32_t /*any minor works*/,
                                                            const octet_backend_api** api_out) {
  return octet::plugin::answer_entry(host_abi_major, api_out, &octet_kokkos::kApi);
}
