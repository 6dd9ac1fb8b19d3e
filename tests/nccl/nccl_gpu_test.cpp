// liboctet_nccl on a GPU, one rank: every entry against the host's own
// computation (nccl_collectives.hpp), the memory-kind and argument checks
// of the entries, and set_timeout/destroy. Without a CUDA device every test
// skips, saying why (CUDA's error text, or no device).
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <octet/octet_nccl.h>

#include <string>
#include <vector>

#include "nccl_collectives.hpp"

namespace {

class NcclGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    int count = 0;
    const cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess)
      GTEST_SKIP() << "no GPU: cudaGetDeviceCount failed: " << cudaGetErrorName(e) << ": " << cudaGetErrorString(e);
    if (count == 0) GTEST_SKIP() << "no GPU: cudaGetDeviceCount found 0 devices";
    octet_nccl_unique_id id;
    ASSERT_EQ(octet_nccl_get_unique_id(&id), OCTET_STATUS_SUCCESS) << octet_nccl_last_error_message();
    ASSERT_EQ(octet_nccl_communicator_init(&id, 0, 1, 0, &comm_), OCTET_STATUS_SUCCESS)
        << octet_nccl_last_error_message();
    ASSERT_EQ(octet_nccl_communicator_set_timeout(&comm_, 60.0), OCTET_STATUS_SUCCESS);
  }
  void TearDown() override { octet_nccl_communicator_destroy(&comm_); }
  octet_communicator comm_{};
};

TEST_F(NcclGpu, StructFields) {
  EXPECT_EQ(comm_.struct_size, sizeof(octet_communicator));
  EXPECT_EQ(comm_.rank, 0);
  EXPECT_EQ(comm_.size, 1);
  EXPECT_EQ(comm_.memory_kinds, uint32_t(OCTET_COMM_DEVICE_MEMORY));
  EXPECT_NE(comm_.allreduce, nullptr);
  EXPECT_NE(comm_.allgather, nullptr);
  EXPECT_NE(comm_.reduce_scatter, nullptr);
  EXPECT_NE(comm_.wait, nullptr);
}

TEST_F(NcclGpu, CollectivesOnOneRank) {
  std::vector<std::string> failures;
  nccl_test::run_collectives(comm_, 0, 1, &failures);
  for (const std::string& f : failures) ADD_FAILURE() << f;
}

TEST_F(NcclGpu, EntriesRejectHostMemoryAndBadArguments) {
  std::vector<float> host(4, 1.0f);
  nccl_test::Device device(16);
  void* request = nullptr;
  EXPECT_EQ(comm_.allreduce(host.data(), device.p, 4, OCTET_DTYPE_FP32, OCTET_REDUCE_SUM, &request, comm_.user_data),
            OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(octet_nccl_last_error_message()).find("allreduce: argument 'send' is host memory"),
            std::string::npos)
      << octet_nccl_last_error_message();
  EXPECT_EQ(comm_.allgather(device.p, host.data(), 4, OCTET_DTYPE_E4M3, &request, comm_.user_data),
            OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(octet_nccl_last_error_message()).find("allgather: argument 'recv' is host memory"),
            std::string::npos);
  EXPECT_EQ(comm_.reduce_scatter(device.p, device.p, 4, OCTET_DTYPE_E4M3, OCTET_REDUCE_SUM, &request, comm_.user_data),
            OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(comm_.allreduce(device.p, device.p, 4, OCTET_DTYPE_FP32, 9, &request, comm_.user_data),
            OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(comm_.allreduce(device.p, device.p, 4, OCTET_DTYPE_FP32, OCTET_REDUCE_SUM, &request, nullptr),
            OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(comm_.wait(nullptr, comm_.user_data), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(octet_nccl_communicator_set_timeout(&comm_, -1.0), OCTET_STATUS_INVALID_ARGUMENT);
  // Still usable after rejected calls.
  std::vector<std::string> failures;
  nccl_test::run_collectives(comm_, 0, 1, &failures);
  EXPECT_TRUE(failures.empty()) << failures.front();
}

TEST_F(NcclGpu, DestroyZeroesTheEntries) {
  octet_nccl_communicator_destroy(&comm_);
  EXPECT_EQ(comm_.allreduce_max, nullptr);
  EXPECT_EQ(comm_.user_data, nullptr);
  EXPECT_EQ(comm_.struct_size, sizeof(octet_communicator));
  octet_nccl_communicator_destroy(&comm_);  // a second destroy does nothing
}

}  // namespace
