// A backend's plugin table driven the way the core drives it: negotiate,
// initialize with host services that record every reported error, create a
// context. BackendTableTest is the fixture of the suites every backend joins
// (tests/backend_suite): parameterised by a BackendFactory, it skips, with
// the reason, where the backend is not built, has no device, keeps its
// memory on the device, or does not join the suite.
#pragma once

#include <gtest/gtest.h>

#include <octet/octet_backend.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "backend_factory.hpp"

namespace octet::test {

struct ReportedError {
  int32_t status;
  std::string message;
};

// Every dtype of the plugin ABI's element-wise kernels.
const std::vector<int32_t>& all_dtypes();

class BackendTable {
 protected:
  // Negotiates the plugin ABI with `entry`, initializes the backend and
  // creates a context (fatal failures on any error). Returns the status of
  // initialize, which `needs_device` backends may answer with an error.
  int32_t open(octet_backend_entry_fn entry);
  // Destroys the context and shuts the backend down (once opened).
  void close();

  // all_dtypes() that the backend under test declares (the FNUZ formats,
  // for one, are optional).
  std::vector<int32_t> declared_dtypes() const;

  // The call failed with `status` and reported one error whose message
  // contains every one of `fragments`.
  void expect_failure(int32_t returned, int32_t status, std::initializer_list<const char*> fragments);
  // The call succeeded and reported nothing.
  void expect_success(int32_t returned);

  const octet_backend_api* api_ = nullptr;
  octet_host_services host_{};
  octet_backend_caps caps_{};
  octet_backend_context* context_ = nullptr;
  std::vector<ReportedError> errors_;

 private:
  static void record_error(void* host_data, int32_t status, const char* message);
  bool initialized_ = false;
};

// The fixture of the factory-driven suites.
class BackendTableTest : public ::testing::TestWithParam<BackendFactory>, protected BackendTable {
 protected:
  void SetUp() override;
  void TearDown() override { close(); }
  const std::string& backend_name() const { return GetParam().name; }
};

}  // namespace octet::test

// Skips the running test when the backend's table leaves an optional entry
// point NULL, naming it.
#define OCTET_REQUIRE_ENTRY(entry)                                                           \
  do {                                                                                       \
    if (api_->entry == nullptr) GTEST_SKIP() << backend_name() << "'s table has no " #entry; \
  } while (0)

// Instantiates a suite of BackendTableTest tests for every backend of
// backends_under_test().
#define OCTET_BACKEND_SUITE(suite)                                                                         \
  INSTANTIATE_TEST_SUITE_P(BackendTable, suite, ::testing::ValuesIn(::octet::test::backends_under_test()), \
                           ::octet::test::backend_param_name)
