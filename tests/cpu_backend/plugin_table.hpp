// The cpu plugin's table, loaded straight from its file (no liboctet), for
// the table-level suites.
#pragma once

#include <octet/octet_backend.h>

namespace cpu_test {
// The plugin's octet_backend_entry; aborts the test program if the plugin
// cannot be opened.
octet_backend_entry_fn cpu_plugin_entry();
}  // namespace cpu_test
