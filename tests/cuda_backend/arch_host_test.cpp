// Host checks of the cuda backend's dispatch decisions that no device test
// can reach on every architecture: the caps per SM (arch.hpp) and which GEMM
// path may serve a request (gemm_paths.hpp). Both headers are CUDA-free.
#include <gtest/gtest.h>

#include <octet/octet_backend.h>

#include "arch.hpp"
#include "gemm_paths.hpp"

namespace {

using octet_cuda::arch_profile;
using octet_cuda::cublaslt_eligible;

TEST(CudaArchOnHost, Fp8LayoutsFollowCublasLtPerSm) {
  // Hopper (9.x) and Blackwell GeForce (12.x): cuBLASLt runs FP8 in TN only.
  EXPECT_FALSE(arch_profile(9).fp8_all_layouts);
  EXPECT_FALSE(arch_profile(12).fp8_all_layouts);
  // Datacenter Blackwell (10.x) and 11.x: every layout.
  EXPECT_TRUE(arch_profile(10).fp8_all_layouts);
  EXPECT_TRUE(arch_profile(11).fp8_all_layouts);
  // An SM this build does not know: TN, which every FP8 cuBLASLt runs.
  EXPECT_FALSE(arch_profile(13).fp8_all_layouts);
}

TEST(CudaArchOnHost, Mxfp8OnlyFromSm10) {
  EXPECT_FALSE(arch_profile(9).mxfp8);
  EXPECT_TRUE(arch_profile(10).mxfp8);
  EXPECT_TRUE(arch_profile(12).mxfp8);
}

octet_gemm_args gemm(int32_t a_dtype, int32_t b_dtype, int64_t k) {
  octet_gemm_args args{};
  args.struct_size = sizeof args;
  args.m = 8;
  args.n = 8;
  args.k = k;
  args.a.dtype = a_dtype;
  args.b.dtype = b_dtype;
  args.d.dtype = OCTET_DTYPE_FP32;
  return args;
}

TEST(CudaGemmPathsOnHost, CublasLtServesWhatItComputesAsTheReferenceDoes) {
  EXPECT_TRUE(cublaslt_eligible(gemm(OCTET_DTYPE_E4M3, OCTET_DTYPE_E4M3, 16), true));
  EXPECT_TRUE(cublaslt_eligible(gemm(OCTET_DTYPE_E4M3, OCTET_DTYPE_E5M2, 16), true));
  EXPECT_TRUE(cublaslt_eligible(gemm(OCTET_DTYPE_E5M2, OCTET_DTYPE_E4M3, 16), true));
  EXPECT_FALSE(cublaslt_eligible(gemm(OCTET_DTYPE_E5M2, OCTET_DTYPE_E5M2, 16), true));
  EXPECT_TRUE(cublaslt_eligible(gemm(OCTET_DTYPE_BF16, OCTET_DTYPE_BF16, 16), false));
  EXPECT_FALSE(cublaslt_eligible(gemm(OCTET_DTYPE_BF16, OCTET_DTYPE_FP32, 16), false));
  EXPECT_FALSE(cublaslt_eligible(gemm(OCTET_DTYPE_E4M3, OCTET_DTYPE_E4M3, 0), true));
  EXPECT_FALSE(cublaslt_eligible(gemm(OCTET_DTYPE_FP32, OCTET_DTYPE_FP32, 0), false));
}

TEST(CudaGemmPathsOnHost, HighPrecisionScalesAreNotDropped) {
  // The reference computes alpha * sa * sb * A B^T for every dtype; cuBLASLt
  // takes scale pointers for FP8 operands only, so such a GEMM goes to the
  // scalar kernel, which applies them.
  const float scale = 2.0f;
  octet_gemm_args args = gemm(OCTET_DTYPE_FP32, OCTET_DTYPE_FP32, 16);
  args.a_scale_inv = &scale;
  EXPECT_FALSE(cublaslt_eligible(args, false));
  args.a_scale_inv = nullptr;
  args.b_scale_inv = &scale;
  EXPECT_FALSE(cublaslt_eligible(args, false));
  // FP8: the scales go to cuBLASLt's A/B_SCALE_POINTER.
  args = gemm(OCTET_DTYPE_E4M3, OCTET_DTYPE_E4M3, 16);
  args.a_scale_inv = &scale;
  args.b_scale_inv = &scale;
  EXPECT_TRUE(cublaslt_eligible(args, true));
}

}  // namespace
