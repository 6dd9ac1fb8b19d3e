// The harness itself: the cuda table either opens with a device and a
// context whose memory round-trips, or reports why not (the no-device path
// every build machine takes).
#include <gtest/gtest.h>

#include <cstring>

#include "device_table.hpp"

TEST(CudaTableHarness, OpensOrSaysWhyNot) {
  cuda_test::Table& t = cuda_test::Table::cuda();
  if (!t.available()) {
    EXPECT_NE(t.unavailable_reason().find("CUDA"), std::string::npos) << t.unavailable_reason();
    return;
  }
  EXPECT_EQ(t.caps().memory_kind, OCTET_MEMORY_DEVICE);
  const unsigned char bytes[5] = {1, 2, 3, 250, 255};
  cuda_test::DeviceBuffer buffer(bytes, sizeof bytes);
  std::vector<uint8_t> back = buffer.download();
  ASSERT_EQ(back.size(), sizeof bytes);
  EXPECT_EQ(std::memcmp(back.data(), bytes, sizeof bytes), 0);
}

TEST(CudaTableHarness, ReferenceTableOpens) {
  cuda_test::Table ref = cuda_test::Table::reference();
  ASSERT_TRUE(ref.available()) << ref.unavailable_reason();
  EXPECT_EQ(ref.caps().memory_kind, OCTET_MEMORY_HOST);
}
