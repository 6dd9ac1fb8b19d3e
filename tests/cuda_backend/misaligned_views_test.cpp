// The cuda table refuses views whose data is not aligned to their elements
// before anything is queued: on a device such a view would fault. From
// docs/backends/cuda.md, "What a review without a GPU establishes".
// Skips without a device.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "device_table.hpp"

namespace {

using cuda_test::DeviceBuffer;
using cuda_test::Table;

// A BF16/FP32 view whose data is not aligned to its elements would fault on
// the device (cudaErrorMisalignedAddress, sticky: the context is lost). It is
// refused before anything is queued, and the device keeps working.
TEST(CudaViewAlignment, MisalignedViewsAreRefused) {
  OCTET_REQUIRE_CUDA_TABLE();
  Table& cuda = Table::cuda();
  DeviceBuffer in(4096), out(4096);
  uint8_t* base_in = static_cast<uint8_t*>(in.get());
  uint8_t* base_out = static_cast<uint8_t*>(out.get());
  const octet_matrix_view odd_bf16 = cuda_test::view(base_in + 1, OCTET_DTYPE_BF16, 4, 8);
  const octet_matrix_view fp32 = cuda_test::view(base_out, OCTET_DTYPE_FP32, 4, 8);
  cuda.clear_errors();
  EXPECT_EQ(cuda.api().convert(cuda.context(), &odd_bf16, &fp32, 1), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(cuda.last_error().find("not aligned"), std::string::npos) << cuda.last_error();
  const octet_matrix_view odd_fp32 = cuda_test::view(base_out + 2, OCTET_DTYPE_FP32, 4, 8);
  const octet_matrix_view bf16 = cuda_test::view(base_in, OCTET_DTYPE_BF16, 4, 8);
  EXPECT_EQ(cuda.api().convert(cuda.context(), &bf16, &odd_fp32, 1), OCTET_STATUS_INVALID_ARGUMENT);
  // Empty views touch nothing: accepted wherever they point. FP8 codes are
  // bytes: any address.
  const octet_matrix_view empty = cuda_test::view(base_in + 1, OCTET_DTYPE_BF16, 0, 8);
  const octet_matrix_view empty_out = cuda_test::view(base_out + 3, OCTET_DTYPE_FP32, 0, 8);
  EXPECT_EQ(cuda.api().convert(cuda.context(), &empty, &empty_out, 1), OCTET_STATUS_SUCCESS) << cuda.last_error();
  const octet_matrix_view e4m3 = cuda_test::view(base_in + 1, OCTET_DTYPE_E4M3, 4, 8);
  EXPECT_EQ(cuda.api().convert(cuda.context(), &e4m3, &fp32, 1), OCTET_STATUS_SUCCESS) << cuda.last_error();
  // The context still works.
  EXPECT_EQ(cuda.api().convert(cuda.context(), &bf16, &fp32, 1), OCTET_STATUS_SUCCESS) << cuda.last_error();
  EXPECT_EQ(cuda.synchronize(), OCTET_STATUS_SUCCESS) << cuda.last_error();
}

}  // namespace
