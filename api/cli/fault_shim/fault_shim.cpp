// liboctet_fault_shim.so: the plugin `octet conformance` puts between the
// core and the plugin under test for section (e), fault injection. It
// registers under the wrapped plugin's own name (so discovery's copy of
// that plugin is refused as a duplicate before its initialize() runs),
// forwards every entry, and can make one call fail: the Nth counted call
// after octet_fault_shim_arm(N) answers OUT_OF_MEMORY (mem_alloc) or
// BACKEND_ERROR (any other entry that returns a status), reported through
// the host callback, without calling the plugin. A host backend without
// memory entries gets host memory entries of the shim's own, so that the
// allocations of its tensors can be failed and counted too.
//
// A plugin like any other: it never links liboctet. Besides
// octet_backend_entry it exports the control functions below, which the
// CLI finds with dlsym on the same loaded file.
#include <octet/octet_backend.h>

#include <dlfcn.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

octet_backend_entry_fn g_real_entry = nullptr;
octet_backend_api g_real{};     // the wrapped plugin's table, as far as its minor defines it
octet_backend_api g_wrapped{};  // what the core sees
octet_host_services g_host{};
char g_name[128];
uint64_t g_alignment = 64;
bool g_own_memory = false;

std::atomic<uint64_t> g_calls{0};    // counted calls since the last arm
std::atomic<uint64_t> g_fail_at{0};  // 0: none
std::atomic<int> g_fired{0};
std::atomic<int64_t> g_live{0};  // blocks from mem_alloc not yet freed

size_t table_size_for_minor(uint32_t minor) {
  switch (minor) {
    case 0:
      return offsetof(octet_backend_api, quantize_with_statistics);
    case 1:
      return offsetof(octet_backend_api, norm_forward);
    case 2:
      return offsetof(octet_backend_api, scale_from_amax);
    default:
      return sizeof(octet_backend_api);
  }
}

// True when this counted call is the one to fail (reported already).
bool inject(int32_t status) {
  const uint64_t n = ++g_calls;
  const uint64_t at = g_fail_at.load();
  if (at == 0 || n != at) return false;
  g_fired = 1;
  char message[96];
  std::snprintf(message, sizeof message, "injected fault: backend call %llu fails", (unsigned long long)n);
  if (g_host.report_error) g_host.report_error(g_host.host_data, status, message);
  return true;
}

template <auto M>
struct Wrap;
template <typename... A, int32_t (*octet_backend_api::*M)(A...)>
struct Wrap<M> {
  static int32_t call(A... a) {
    if (inject(OCTET_STATUS_BACKEND_ERROR)) return OCTET_STATUS_BACKEND_ERROR;
    return (g_real.*M)(a...);
  }
};

int32_t shim_initialize(const octet_host_services* host, octet_backend_caps* caps) {
  if (host != nullptr)
    std::memcpy(&g_host, host, host->struct_size < sizeof g_host ? host->struct_size : sizeof g_host);
  const int32_t status = g_real.initialize(host, caps);
  if (caps != nullptr && caps->alignment != 0) g_alignment = caps->alignment;
  return status;
}

int32_t shim_mem_alloc(octet_backend_context* context, size_t bytes, void** ptr) {
  if (inject(OCTET_STATUS_OUT_OF_MEMORY)) return OCTET_STATUS_OUT_OF_MEMORY;
  int32_t status;
  if (g_own_memory) {
    const size_t a = g_alignment < sizeof(void*) ? sizeof(void*) : size_t(g_alignment);
    const size_t rounded = (bytes == 0 ? 1 : bytes + a - 1) / a * a;
    *ptr = std::aligned_alloc(a, rounded);
    status = *ptr ? OCTET_STATUS_SUCCESS : OCTET_STATUS_OUT_OF_MEMORY;
    if (!*ptr && g_host.report_error) g_host.report_error(g_host.host_data, status, "mem_alloc: out of host memory");
  } else {
    status = g_real.mem_alloc(context, bytes, ptr);
  }
  if (status == OCTET_STATUS_SUCCESS && *ptr) ++g_live;
  return status;
}

void shim_mem_free(octet_backend_context* context, void* ptr) {
  if (ptr) --g_live;
  if (g_own_memory)
    std::free(ptr);
  else
    g_real.mem_free(context, ptr);
}

int32_t own_copy(octet_backend_context*, void* dst, const void* src, size_t bytes) {
  if (inject(OCTET_STATUS_BACKEND_ERROR)) return OCTET_STATUS_BACKEND_ERROR;
  std::memcpy(dst, src, bytes);
  return OCTET_STATUS_SUCCESS;
}

#define OCTET_SHIM_WRAP(field) \
  if (g_real.field) g_wrapped.field = Wrap<&octet_backend_api::field>::call

}  // namespace

extern "C" {

// Names the plugin file to wrap; before the core loads the shim. 0 on success.
OCTET_BACKEND_EXPORT int octet_fault_shim_configure(const char* path) {
  void* handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) return -1;
  g_real_entry = reinterpret_cast<octet_backend_entry_fn>(dlsym(handle, OCTET_BACKEND_ENTRY_SYMBOL));
  return g_real_entry ? 0 : -1;
}

// From now on the Nth counted call fails (0: none); resets the count.
OCTET_BACKEND_EXPORT void octet_fault_shim_arm(uint64_t n) {
  g_fail_at = 0;
  g_calls = 0;
  g_fired = 0;
  g_fail_at = n;
}
OCTET_BACKEND_EXPORT uint64_t octet_fault_shim_calls(void) { return g_calls.load(); }
OCTET_BACKEND_EXPORT int octet_fault_shim_fired(void) { return g_fired.load(); }
OCTET_BACKEND_EXPORT int64_t octet_fault_shim_live_blocks(void) { return g_live.load(); }

OCTET_BACKEND_EXPORT int32_t octet_backend_entry(uint32_t host_abi_major, uint32_t host_abi_minor,
                                                 const octet_backend_api** api_out) {
  if (g_real_entry == nullptr || api_out == nullptr) return OCTET_STATUS_INVALID_ARGUMENT;
  const octet_backend_api* real = nullptr;
  const int32_t status = g_real_entry(host_abi_major, host_abi_minor, &real);
  if (status != OCTET_STATUS_SUCCESS || real == nullptr)
    return status != OCTET_STATUS_SUCCESS ? status : OCTET_STATUS_INVALID_ARGUMENT;
  size_t bytes = table_size_for_minor(real->abi_minor);
  if (real->struct_size < bytes) bytes = real->struct_size;
  std::memset(&g_real, 0, sizeof g_real);
  std::memcpy(&g_real, real, bytes);
  g_wrapped = g_real;
  g_wrapped.struct_size = sizeof g_wrapped;
  g_wrapped.abi_minor = OCTET_PLUGIN_ABI_MINOR;
  std::snprintf(g_name, sizeof g_name, "%s", real->name ? real->name : "");
  g_wrapped.name = g_name;
  g_wrapped.initialize = shim_initialize;
  g_own_memory = g_real.mem_alloc == nullptr;
  g_wrapped.mem_alloc = shim_mem_alloc;
  g_wrapped.mem_free = shim_mem_free;
  if (g_own_memory) {
    g_wrapped.copy_from_host = own_copy;
    g_wrapped.copy_to_host = own_copy;
  } else {
    OCTET_SHIM_WRAP(copy_from_host);
    OCTET_SHIM_WRAP(copy_to_host);
  }
  OCTET_SHIM_WRAP(context_create);
  OCTET_SHIM_WRAP(synchronize);
  OCTET_SHIM_WRAP(convert);
  OCTET_SHIM_WRAP(amax);
  OCTET_SHIM_WRAP(quantize);
  OCTET_SHIM_WRAP(transpose);
  OCTET_SHIM_WRAP(dequantize);
  OCTET_SHIM_WRAP(gemm);
  OCTET_SHIM_WRAP(quantize_with_statistics);
  OCTET_SHIM_WRAP(block_quantize);
  OCTET_SHIM_WRAP(block_dequantize);
  OCTET_SHIM_WRAP(block_gemm);
  OCTET_SHIM_WRAP(norm_forward);
  OCTET_SHIM_WRAP(norm_backward);
  OCTET_SHIM_WRAP(activation_forward);
  OCTET_SHIM_WRAP(activation_backward);
  OCTET_SHIM_WRAP(bias_gradient);
  OCTET_SHIM_WRAP(accumulate);
  OCTET_SHIM_WRAP(scale_from_amax);
  OCTET_SHIM_WRAP(delayed_scaling_update);
  OCTET_SHIM_WRAP(amax_record);
  *api_out = &g_wrapped;
  return OCTET_STATUS_SUCCESS;
}

}  // extern "C"
