// liboctet_nccl's argument checks, which need no GPU: the rules of
// nccl_checks.hpp (what the entries check before a collective, the memory
// kind included) and the public calls that fail before any CUDA call. On a
// machine with no CUDA device, init with good arguments fails with CUDA's
// reason.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <octet/octet_nccl.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>

#include "nccl_checks.hpp"

namespace {

using octet_nccl::BufferKind;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

struct Args {
  octet_nccl_unique_id id{};
  octet_communicator comm{};
};

octet_status init(Args& a, int rank, int size, int device, size_t struct_size) {
  return octet_nccl_communicator_init_sized(&a.id, rank, size, device, &a.comm, struct_size);
}

TEST(NcclChecks, InitArgumentsFailBeforeCuda) {
  Args a;
  const size_t full = sizeof(octet_communicator);
  EXPECT_EQ(octet_nccl_communicator_init_sized(&a.id, 0, 1, 0, nullptr, full), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(octet_nccl_last_error_message(), "argument 'communicator' is NULL"));
  EXPECT_EQ(init(a, 0, 1, 0, 24), OCTET_STATUS_INVALID_ARGUMENT);  // a 1.0-1.6 struct
  EXPECT_TRUE(contains(octet_nccl_last_error_message(), "argument 'struct_size' (24)"));
  EXPECT_EQ(octet_nccl_communicator_init_sized(nullptr, 0, 1, 0, &a.comm, full), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(octet_nccl_last_error_message(), "argument 'id' is NULL"));
  EXPECT_EQ(init(a, 0, 0, 0, full), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(octet_nccl_last_error_message(), "argument 'size' (0) must be >= 1"));
  EXPECT_EQ(init(a, 2, 2, 0, full), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(octet_nccl_last_error_message(), "argument 'rank' (2) must be in [0, size) = [0, 2)"));
  EXPECT_EQ(init(a, -1, 2, 0, full), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(octet_nccl_last_error_message(), "argument 'rank' (-1)"));
  EXPECT_EQ(init(a, 0, 1, -3, full), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(octet_nccl_last_error_message(), "argument 'device' (-3) must be >= 0"));
  // The struct is untouched by a failed init.
  EXPECT_EQ(a.comm.allreduce_max, nullptr);
}

TEST(NcclChecks, TimeoutFromEnvironmentIsChecked) {
  Args a;
  ASSERT_EQ(setenv("OCTET_NCCL_TIMEOUT_SECONDS", "-2", 1), 0);
  EXPECT_EQ(init(a, 0, 1, 0, sizeof(octet_communicator)), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(octet_nccl_last_error_message(), "OCTET_NCCL_TIMEOUT_SECONDS ('-2') must be a number"));
  unsetenv("OCTET_NCCL_TIMEOUT_SECONDS");
  double s = 7;
  EXPECT_EQ(octet_nccl::timeout_from_text("2.5", &s), "");
  EXPECT_EQ(s, 2.5);
  EXPECT_NE(octet_nccl::timeout_from_text("soon", &s), "");
  EXPECT_NE(octet_nccl::timeout_from_text("inf", &s), "");
  EXPECT_EQ(octet_nccl::timeout_from_text(nullptr, &s), "");
  EXPECT_EQ(octet_nccl::check_timeout(0), "");
  EXPECT_TRUE(contains(octet_nccl::check_timeout(-1), "argument 'seconds'"));
  EXPECT_TRUE(contains(octet_nccl::check_timeout(std::nan("")), "must be finite and >= 0"));
}

TEST(NcclChecks, ForeignOrNullCommunicators) {
  octet_communicator foreign{};
  foreign.struct_size = sizeof foreign;
  EXPECT_EQ(octet_nccl_communicator_set_timeout(nullptr, 1.0), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(octet_nccl_communicator_set_timeout(&foreign, 1.0), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(octet_nccl_last_error_message(), "not made by octet_nccl_communicator_init"));
  octet_nccl_communicator_destroy(nullptr);   // does nothing
  octet_nccl_communicator_destroy(&foreign);  // not ours: untouched
  EXPECT_EQ(foreign.struct_size, sizeof foreign);
  EXPECT_EQ(octet_nccl_get_unique_id(nullptr), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(octet_nccl_last_error_message(), "argument 'id' is NULL"));
}

TEST(NcclChecks, Reductions) {
  for (int32_t dtype : {OCTET_DTYPE_FP32, OCTET_DTYPE_BF16, OCTET_DTYPE_FP16})
    for (int32_t op : {OCTET_REDUCE_SUM, OCTET_REDUCE_MAX})
      EXPECT_EQ(octet_nccl::check_reduction("allreduce", dtype, op), "");
  const std::string fp8 = octet_nccl::check_reduction("allreduce", OCTET_DTYPE_E4M3, OCTET_REDUCE_SUM);
  EXPECT_TRUE(contains(fp8, "allreduce: dtype e4m3 with op 0 has no reduction")) << fp8;
  EXPECT_TRUE(contains(octet_nccl::check_reduction("reduce_scatter", OCTET_DTYPE_FP32, 7), "reduce_scatter"));
  EXPECT_EQ(octet_nccl::element_bytes(OCTET_DTYPE_FP32), 4u);
  EXPECT_EQ(octet_nccl::element_bytes(OCTET_DTYPE_BF16), 2u);
  EXPECT_EQ(octet_nccl::element_bytes(OCTET_DTYPE_E8M0), 1u);
  EXPECT_EQ(octet_nccl::element_bytes(OCTET_DTYPE_E4M3FNUZ), 1u);  // FP8 codes travel as bytes, OCP or FNUZ
  EXPECT_EQ(octet_nccl::element_bytes(OCTET_DTYPE_E5M2FNUZ), 1u);
  EXPECT_EQ(octet_nccl::element_bytes(1234), 0u);
}

TEST(NcclChecks, Counts) {
  const size_t max = std::numeric_limits<size_t>::max();
  EXPECT_EQ(octet_nccl::check_count("allgather", max / 8, 4, 2), "");
  const std::string m = octet_nccl::check_count("allgather", max / 8 + 1, 4, 2);
  EXPECT_TRUE(contains(m, "allgather: count")) << m;
  EXPECT_TRUE(contains(m, "on 2 ranks exceeds the addressable bytes")) << m;
  EXPECT_NE(octet_nccl::check_count("allreduce", max / 2 + 1, 2, 1), "");
}

TEST(NcclChecks, MemoryKinds) {
  int x = 0;
  EXPECT_EQ(octet_nccl::check_buffer("allreduce", "send", &x, 1, BufferKind::device, 1, 1), "");
  EXPECT_EQ(octet_nccl::check_buffer("allreduce", "send", &x, 1, BufferKind::managed, -1, 1), "");
  for (BufferKind host : {BufferKind::unregistered_host, BufferKind::registered_host}) {
    const std::string m = octet_nccl::check_buffer("allgather", "recv", &x, 1, host, -1, 0);
    EXPECT_TRUE(contains(m, "allgather: argument 'recv' is host memory")) << m;
    EXPECT_TRUE(contains(m, "OCTET_COMM_DEVICE_MEMORY")) << m;
  }
  const std::string other = octet_nccl::check_buffer("reduce_scatter", "send", &x, 1, BufferKind::device, 1, 0);
  EXPECT_TRUE(contains(other, "is memory of CUDA device 1, not of the communicator's device 0")) << other;
  EXPECT_TRUE(contains(octet_nccl::check_buffer("allreduce", "send", nullptr, 3, BufferKind::device, 0, 0),
                       "argument 'send' is NULL"));
  EXPECT_EQ(octet_nccl::check_buffer("allreduce", "send", nullptr, 0, BufferKind::device, 0, 0), "");
}

// Without a CUDA device, good arguments fail at the first CUDA call with its reason.
TEST(NcclChecks, InitWithoutDeviceSaysWhy) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e == cudaSuccess && count > 0) GTEST_SKIP() << "a CUDA device is present: nccl_gpu_test runs instead";
  Args a;
  EXPECT_EQ(init(a, 0, 1, 0, sizeof(octet_communicator)), OCTET_STATUS_BACKEND_ERROR);
  const std::string m = octet_nccl_last_error_message();
  if (e != cudaSuccess)
    EXPECT_TRUE(contains(m, std::string("cudaGetDeviceCount failed: ") + cudaGetErrorName(e))) << m;
  else
    EXPECT_TRUE(contains(m, "no CUDA device")) << m;
  EXPECT_EQ(a.comm.allreduce_max, nullptr);
}

}  // namespace
