// Linked into each cpu test program that ctest runs with a forced path
// (tests/cpu_backend/CMakeLists.txt): skips all of its tests, naming the
// ISA, when this CPU lacks the path forced (forced_path.hpp). The device
// string comes from the plugin's own table, opened here with dlopen.
#include <dlfcn.h>

#include <octet/octet_backend.h>

#include <string>

#include "forced_path.hpp"

namespace cpu_test {
namespace {

std::string plugin_device() {
  void* handle = dlopen(OCTET_CPU_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) return "";
  auto entry = reinterpret_cast<octet_backend_entry_fn>(dlsym(handle, OCTET_BACKEND_ENTRY_SYMBOL));
  const octet_backend_api* api = nullptr;
  std::string device;
  if (entry != nullptr && entry(OCTET_PLUGIN_ABI_MAJOR, OCTET_PLUGIN_ABI_MINOR, &api) == OCTET_STATUS_SUCCESS) {
    octet_host_services host{};
    host.struct_size = sizeof host;
    host.abi_major = OCTET_PLUGIN_ABI_MAJOR;
    host.abi_minor = OCTET_PLUGIN_ABI_MINOR;
    host.report_error = [](void*, int32_t, const char*) {};
    octet_backend_caps caps{};
    caps.struct_size = sizeof caps;
    if (api->initialize(&host, &caps) == OCTET_STATUS_SUCCESS && caps.device != nullptr) device = caps.device;
    if (api->shutdown) api->shutdown();
  }
  dlclose(handle);
  return device;
}

const bool registered = (skip_all_when_forced_path_is_missing(plugin_device), true);

}  // namespace
}  // namespace cpu_test
