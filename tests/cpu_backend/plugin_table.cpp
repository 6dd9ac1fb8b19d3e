#include "plugin_table.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "backend_factory.hpp"

namespace cpu_test {

octet_backend_entry_fn cpu_plugin_entry() {
  static octet_backend_entry_fn entry = [] {
    std::string error;
    octet_backend_entry_fn fn = octet::test::open_plugin_entry(OCTET_CPU_PLUGIN_PATH, &error);
    if (fn == nullptr) {
      std::fprintf(stderr, "%s\n", error.c_str());
      std::abort();
    }
    return fn;
  }();
  return entry;
}

}  // namespace cpu_test
