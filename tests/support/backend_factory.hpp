// Backends under test as the plugin-table suites see them: a name and a
// factory that gives the backend's octet_backend_entry (the embedded
// reference's, or a plugin file's opened with dlopen), in the manner of
// PJRT's plugin test suite. A factory that cannot give one says why, and
// every test of its instantiation skips with that reason.
#pragma once

#include <gtest/gtest.h>

#include <octet/octet_backend.h>

#include <functional>
#include <map>
#include <ostream>
#include <string>
#include <vector>

namespace octet::test {

struct BackendFactory {
  // The backend's name, also the GoogleTest parameter name ("cpu" gives
  // BackendTable/ElementwiseKernels.ConvertsBetweenEveryPairOfDtypes/cpu).
  std::string name;
  // The entry point, or nullptr with *unavailable saying why the backend
  // cannot be tested here (not built in this configuration). A plugin file
  // that should exist but cannot be opened is a failure, not a skip.
  std::function<octet_backend_entry_fn(std::string* unavailable)> entry;
  // Suites ("GemmKernels") or single tests ("ScalingKernels.QuantizesRowwise
  // ColumnwiseOrBoth") this backend does not join, each with the reason;
  // their tests skip naming it.
  std::map<std::string, std::string> not_joined;
  // Whether initialize may fail for want of a device (a GPU backend on a
  // machine without one): then the tests skip with the backend's message
  // instead of failing.
  bool needs_device = false;
};

// The octet_backend_entry of a plugin file, opened with dlopen (RTLD_NOW |
// RTLD_LOCAL, once per process and path; never closed), or nullptr with
// *error saying why.
octet_backend_entry_fn open_plugin_entry(const std::string& path, std::string* error);

// A plugin file opened with open_plugin_entry. Failing to open it, or to
// find the symbol, fails the test that asked.
BackendFactory plugin_backend(std::string name, std::string path);

// A backend this build does not have: every test of its instantiation skips,
// saying `why` (e.g. "not built: configure with -DOCTET_WITH_KOKKOS=ON").
BackendFactory unbuilt_backend(std::string name, std::string why);

// The backends an executable's suites are instantiated for, in order;
// defined by each executable that links the suites (backends_under_test.cpp).
const std::vector<BackendFactory>& backends_under_test();

// GoogleTest's name for a parameter (the backend's name) and its printer.
std::string backend_param_name(const ::testing::TestParamInfo<BackendFactory>& info);
inline void PrintTo(const BackendFactory& factory, std::ostream* os) { *os << factory.name; }

}  // namespace octet::test
