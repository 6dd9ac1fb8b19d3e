#include "plugin_table.hpp"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

#include "octet_reference/reference_backend.h"

namespace cpu_test {

octet_backend_entry_fn cpu_plugin_entry() {
  static octet_backend_entry_fn entry = [] {
    void* handle = dlopen(OCTET_CPU_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      std::fprintf(stderr, "cannot open %s: %s\n", OCTET_CPU_PLUGIN_PATH, dlerror());
      std::abort();
    }
    auto fn = reinterpret_cast<octet_backend_entry_fn>(dlsym(handle, OCTET_BACKEND_ENTRY_SYMBOL));
    if (fn == nullptr) {
      std::fprintf(stderr, "%s has no %s\n", OCTET_CPU_PLUGIN_PATH, OCTET_BACKEND_ENTRY_SYMBOL);
      std::abort();
    }
    return fn;
  }();
  return entry;
}

}  // namespace cpu_test

extern "C" int32_t octet_reference_backend_entry(uint32_t major, uint32_t minor,
                                                 const octet_backend_api** api_out) {
  return cpu_test::cpu_plugin_entry()(major, minor, api_out);
}
