// Device regressions of the review before the first GPU run (docs/backends/
// cuda.md, "What a review without a GPU establishes"): each failed, or would have, on
// a device only. Skip without one.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "device_table.hpp"

namespace {

using cuda_test::DeviceBuffer;
using cuda_test::Table;

// A BF16/FP32 view whose data is not aligned to its elements would fault on
// the device (cudaErrorMisalignedAddress, sticky: the context is lost). It is
// refused before anything is queued, and the device keeps working.
TEST(CudaReviewRegressions, MisalignedViewsAreRefused) {
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

// The plugin ABI (and the reference) apply a_scale_inv / b_scale_inv to every
// GEMM: D = alpha * sa * sb * A B^T. cuBLASLt takes scale pointers for FP8
// operands only, so a high-precision GEMM with scales must not go through it
// (gemm_paths.hpp). Small integers: every path is exact, so D must equal the
// reference's bits.
TEST(CudaReviewRegressions, HighPrecisionGemmAppliesTheScales) {
  OCTET_REQUIRE_CUDA_TABLE();
  Table& cuda = Table::cuda();
  Table ref = Table::reference();
  const int64_t m = 32, n = 16, k = 64;
  std::vector<float> a(size_t(m * k)), b(size_t(n * k));
  for (size_t i = 0; i < a.size(); ++i) a[i] = float(int(i % 7) - 3);
  for (size_t i = 0; i < b.size(); ++i) b[i] = float(int(i % 5) - 2);
  const float scales[2] = {2.0f, 4.0f};
  for (int with_scales = 0; with_scales < 2; ++with_scales) {
    std::vector<float> want(size_t(m * n), 0.0f);
    octet_gemm_args args{};
    args.struct_size = sizeof args;
    args.m = m;
    args.n = n;
    args.k = k;
    args.alpha = 1.0f;
    args.a = cuda_test::view(a.data(), OCTET_DTYPE_FP32, m, k);
    args.b = cuda_test::view(b.data(), OCTET_DTYPE_FP32, n, k);
    args.d = cuda_test::view(want.data(), OCTET_DTYPE_FP32, m, n);
    args.a_scale_inv = with_scales ? &scales[0] : nullptr;
    args.b_scale_inv = with_scales ? &scales[1] : nullptr;
    ASSERT_EQ(ref.api().gemm(ref.context(), &args), OCTET_STATUS_SUCCESS) << ref.last_error();

    DeviceBuffer da(a.data(), a.size() * 4), db(b.data(), b.size() * 4), dd(size_t(m * n) * 4),
        ds(scales, sizeof scales);
    args.a.data = da.get();
    args.b.data = db.get();
    args.d.data = dd.get();
    args.a_scale_inv = with_scales ? static_cast<const float*>(ds.get()) : nullptr;
    args.b_scale_inv = with_scales ? static_cast<const float*>(ds.get()) + 1 : nullptr;
    ASSERT_EQ(cuda.api().gemm(cuda.context(), &args), OCTET_STATUS_SUCCESS) << cuda.last_error();
    const std::vector<float> got = dd.download_as<float>();
    ASSERT_EQ(got.size(), want.size());
    EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size() * 4), 0) << "with_scales " << with_scales;
  }
}

// copy_from_host from page-locked memory is a DMA that runs when the stream
// gets to it; the caller may overwrite src as soon as the call returns. A slow
// GEMM (E5M2 x E5M2: the scalar kernel) keeps the stream busy, the pinned
// source is overwritten right after the copy returns, and the device must
// hold what src held at the call.
TEST(CudaReviewRegressions, CopyFromPinnedMemoryIsDoneWhenItReturns) {
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
