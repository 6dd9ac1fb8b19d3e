// The reference's own plugin-table suites (those no other backend joins:
// the reference's declared capabilities, its FP4 kernels): the support
// library's BackendTable opened on octet_reference_backend_entry. The suites
// every backend joins are in tests/backend_suite.
#pragma once

#include <gtest/gtest.h>

#include "backend_table.hpp"
#include "octet_reference/reference_backend.h"
#include "test_matrix.hpp"

namespace octet::test {

class ReferenceBackendTest : public ::testing::Test, protected BackendTable {
 protected:
  void SetUp() override { ASSERT_EQ(open(octet_reference_backend_entry), OCTET_STATUS_SUCCESS); }
  void TearDown() override { close(); }
};

}  // namespace octet::test
