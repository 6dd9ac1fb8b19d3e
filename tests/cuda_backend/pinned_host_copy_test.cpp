// copy_from_host from page-locked host memory has finished reading the
// source when it returns. From
// docs/backends/cuda.md, "What a review without a GPU establishes".
// Skips without a device.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "device_table.hpp"

namespace {

using cuda_test::DeviceBuffer;
using cuda_test::Table;

// copy_from_host from page-locked memory is a DMA that runs when the stream
// gets to it; the caller may overwrite src as soon as the call returns. A slow
// GEMM (E5M2 x E5M2: the scalar kernel) keeps the stream busy, the pinned
// source is overwritten right after the copy returns, and the device must
// hold what src held at the call.
TEST(CudaPinnedCopies, CopyFromPinnedMemoryIsDoneWhenItReturns) {
  OCTET_REQUIRE_CUDA_TABLE();
  Table& cuda = Table::cuda();
  const int64_t m = 2048, n = 2048, k = 2048;
  DeviceBuffer a(size_t(m * k)), b(size_t(n * k)), d(size_t(m * n) * 4);
  octet_gemm_args args{};
  args.struct_size = sizeof args;
  args.m = m;
  args.n = n;
  args.k = k;
  args.alpha = 1.0f;
  args.a = cuda_test::view(a.get(), OCTET_DTYPE_E5M2, m, k);
  args.b = cuda_test::view(b.get(), OCTET_DTYPE_E5M2, n, k);
  args.d = cuda_test::view(d.get(), OCTET_DTYPE_FP32, m, n);

  const size_t bytes = size_t(1) << 20;
  void* pinned = nullptr;
  ASSERT_EQ(cudaMallocHost(&pinned, bytes), cudaSuccess);
  std::memset(pinned, 0x5A, bytes);
  DeviceBuffer target(bytes);
  ASSERT_EQ(cuda.api().gemm(cuda.context(), &args), OCTET_STATUS_SUCCESS) << cuda.last_error();
  ASSERT_EQ(cuda.api().copy_from_host(cuda.context(), target.get(), pinned, bytes), OCTET_STATUS_SUCCESS)
      << cuda.last_error();
  std::memset(pinned, 0xA5, bytes);  // the caller reuses its buffer at once
  const std::vector<uint8_t> back = target.download();
  cudaFreeHost(pinned);
  ASSERT_EQ(back.size(), bytes);
  size_t wrong = 0;
  for (uint8_t v : back) wrong += v != 0x5A;
  EXPECT_EQ(wrong, 0u) << "bytes that the device read after copy_from_host returned";
}

}  // namespace
