// A test plugin: the reference's table under another name, with
// copy_to_host/copy_from_host entries that count their calls (host memory,
// memcpy), so a test can see how often the core copies between the
// backend's memory and the host. Built twice: "counting" keeps the plugin
// ABI 1.3 scaling entries (the core keeps quantizer state in backend
// memory), "counting_host" drops them (the core's host path).
#include <octet/octet_backend.h>

#include <atomic>
#include <cstring>

#include "octet_reference/reference_backend.h"

namespace {

std::atomic<uint64_t> g_to_host{0};
std::atomic<uint64_t> g_from_host{0};
octet_backend_api g_api;

int32_t counting_copy_to_host(octet_backend_context* /*context*/, void* dst, const void* src, size_t bytes) {
  ++g_to_host;
  if (bytes != 0) std::memcpy(dst, src, bytes);
  return OCTET_STATUS_SUCCESS;
}

int32_t counting_copy_from_host(octet_backend_context* /*context*/, void* dst, const void* src, size_t bytes) {
  ++g_from_host;
  if (bytes != 0) std::memcpy(dst, src, bytes);
  return OCTET_STATUS_SUCCESS;
}

}  // namespace

extern "C" OCTET_BACKEND_EXPORT int32_t octet_backend_entry(uint32_t host_abi_major, uint32_t host_abi_minor,
                                                            const octet_backend_api** api_out) {
  const octet_backend_api* reference = nullptr;
  const int32_t status = octet_reference_backend_entry(host_abi_major, host_abi_minor, &reference);
  if (status != OCTET_STATUS_SUCCESS) return status;
  g_api = *reference;
  g_api.name = OCTET_COUNTING_NAME;
  g_api.copy_to_host = counting_copy_to_host;
  g_api.copy_from_host = counting_copy_from_host;
#ifndef OCTET_COUNTING_DEVICE_SCALING
  g_api.scale_from_amax = nullptr;
  g_api.delayed_scaling_update = nullptr;
  g_api.amax_record = nullptr;
#endif
  *api_out = &g_api;
  return OCTET_STATUS_SUCCESS;
}

// Read by the test through dlsym on the already loaded library.
extern "C" OCTET_BACKEND_EXPORT void octet_test_counting_copies(uint64_t* to_host, uint64_t* from_host) {
  *to_host = g_to_host.load();
  *from_host = g_from_host.load();
}
