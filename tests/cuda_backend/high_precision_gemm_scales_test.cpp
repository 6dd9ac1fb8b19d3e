// A high-precision GEMM on the cuda table applies a_scale_inv and
// b_scale_inv, as every GEMM of the plugin ABI does, bit for bit with the
// reference's table. From
// docs/backends/cuda.md, "What a review without a GPU establishes".
// Skips without a device.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "device_table.hpp"

namespace {

using cuda_test::DeviceBuffer;
using cuda_test::Table;

// The plugin ABI (and the reference) apply a_scale_inv / b_scale_inv to every
// GEMM: D = alpha * sa * sb * A B^T. cuBLASLt takes scale pointers for FP8
// operands only, so a high-precision GEMM with scales must not go through it
// (gemm_paths.hpp). Small integers: every path is exact, so D must equal the
// reference's bits.
TEST(CudaGemmScales, HighPrecisionGemmAppliesTheScales) {
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

}  // namespace
