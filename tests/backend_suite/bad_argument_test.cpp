// Every kernel refuses bad arguments with the right status, reports one
// message naming the argument, and leaves its outputs untouched.
#include <gtest/gtest.h>

#include <vector>

#include "backend_table.hpp"
#include "test_matrix.hpp"

namespace octet::test {
namespace {

class BadArguments : public BackendTableTest {
 protected:
  octet_quantize_args quantize_args() {
    octet_quantize_args args{};
    args.struct_size = sizeof args;
    args.input = in_.view();
    args.out_dtype = OCTET_DTYPE_E4M3;
    args.saturate = 1;
    args.scale = &scale_;
    args.rowwise_out = codes_.data();
    args.amax_out = &amax_;
    return args;
  }
  octet_gemm_args gemm_args() {
    octet_gemm_args args{};
    args.struct_size = sizeof args;
    args.m = 4;
    args.n = 3;
    args.k = 5;
    args.a = a_.view();
    args.b = b_.view();
    args.alpha = 1;
    args.d = d_.view();
    return args;
  }
  bool d_untouched() const { return d_.bytes == MatrixBytes(d_.bytes.size(), TestMatrix::kPadding); }

  TestMatrix in_{OCTET_DTYPE_FP32, 4, 5, 5};
  TestMatrix a_{OCTET_DTYPE_E4M3, 4, 5, 5};  // [m,k]
  TestMatrix b_{OCTET_DTYPE_E5M2, 3, 5, 5};  // [n,k]
  TestMatrix d_{OCTET_DTYPE_FP32, 4, 3, 3};
  std::vector<uint8_t> codes_ = std::vector<uint8_t>(20, 0x11);
  float scale_ = 1.0f, amax_ = -1.0f;
};

TEST_P(BadArguments, ConvertRefusesNullUnknownDtypeLdAndShape) {
  OCTET_REQUIRE_ENTRY(convert);
  TestMatrix out(OCTET_DTYPE_BF16, 4, 5, 5);
  octet_matrix_view iv = in_.view(), ov = out.view();
  expect_failure(api_->convert(context_, nullptr, &ov, 1), OCTET_STATUS_INVALID_ARGUMENT, {"input"});
  expect_failure(api_->convert(nullptr, &iv, &ov, 1), OCTET_STATUS_INVALID_ARGUMENT, {"context"});
  octet_matrix_view bad = ov;
  bad.dtype = 42;
  expect_failure(api_->convert(context_, &iv, &bad, 1), OCTET_STATUS_INVALID_ARGUMENT,
                 {"output.dtype", "42"});
  bad = iv;
  bad.ld = 4;
  expect_failure(api_->convert(context_, &bad, &ov, 1), OCTET_STATUS_INVALID_ARGUMENT,
                 {"input.ld", "cols"});
  bad = ov;
  bad.rows = 3;
  expect_failure(api_->convert(context_, &iv, &bad, 1), OCTET_STATUS_INVALID_ARGUMENT,
                 {"output", "4x5"});
  bad = iv;
  bad.data = nullptr;
  expect_failure(api_->convert(context_, &bad, &ov, 1), OCTET_STATUS_INVALID_ARGUMENT,
                 {"input.data", "NULL"});
  EXPECT_EQ(out.bytes, MatrixBytes(out.bytes.size(), TestMatrix::kPadding));
}

TEST_P(BadArguments, AmaxRefusesFp8InputAndNullOutput) {
  OCTET_REQUIRE_ENTRY(amax);
  octet_matrix_view codes = a_.view();
  expect_failure(api_->amax(context_, &codes, &amax_), OCTET_STATUS_INVALID_ARGUMENT,
                 {"input.dtype", "e4m3"});
  octet_matrix_view iv = in_.view();
  expect_failure(api_->amax(context_, &iv, nullptr), OCTET_STATUS_INVALID_ARGUMENT, {"amax_out"});
  EXPECT_EQ(amax_, -1.0f);
}

TEST_P(BadArguments, TransposeRefusesShapeAndDtypeMismatch) {
  OCTET_REQUIRE_ENTRY(transpose);
  TestMatrix out(OCTET_DTYPE_FP32, 5, 4, 4);
  octet_matrix_view iv = in_.view(), ov = out.view();
  octet_matrix_view bad = ov;
  bad.rows = 4;
  bad.cols = 5;
  bad.ld = 5;
  expect_failure(api_->transpose(context_, &iv, &bad), OCTET_STATUS_INVALID_ARGUMENT,
                 {"output", "5x4"});
  bad = ov;
  bad.dtype = OCTET_DTYPE_FP16;
  expect_failure(api_->transpose(context_, &iv, &bad), OCTET_STATUS_INVALID_ARGUMENT,
                 {"output.dtype", "fp16"});
  bad = ov;
  bad.ld = 3;
  expect_failure(api_->transpose(context_, &iv, &bad), OCTET_STATUS_INVALID_ARGUMENT,
                 {"output.ld"});
}

TEST_P(BadArguments, QuantizeRefusesEachBrokenRule) {
  OCTET_REQUIRE_ENTRY(quantize);
  octet_quantize_args args = quantize_args();
  expect_failure(api_->quantize(context_, nullptr), OCTET_STATUS_INVALID_ARGUMENT, {"args"});
  args.struct_size = 8;
  expect_failure(api_->quantize(context_, &args), OCTET_STATUS_INVALID_ARGUMENT,
                 {"struct_size"});
  args = quantize_args();
  args.out_dtype = OCTET_DTYPE_BF16;
  expect_failure(api_->quantize(context_, &args), OCTET_STATUS_INVALID_ARGUMENT,
                 {"out_dtype", "bf16"});
  args = quantize_args();
  args.input.dtype = OCTET_DTYPE_E5M2;
  expect_failure(api_->quantize(context_, &args), OCTET_STATUS_INVALID_ARGUMENT,
                 {"input.dtype", "e5m2"});
  args = quantize_args();
  args.scale = nullptr;
  expect_failure(api_->quantize(context_, &args), OCTET_STATUS_INVALID_ARGUMENT, {"scale"});
  args = quantize_args();
  args.input.ld = 2;
  expect_failure(api_->quantize(context_, &args), OCTET_STATUS_INVALID_ARGUMENT,
                 {"input.ld"});
  EXPECT_EQ(codes_, std::vector<uint8_t>(20, 0x11));
  EXPECT_EQ(amax_, -1.0f);
}

TEST_P(BadArguments, DequantizeRefusesEachBrokenRule) {
  OCTET_REQUIRE_ENTRY(dequantize);
  TestMatrix out(OCTET_DTYPE_FP16, 4, 5, 5);
  float scale_inv = 1;
  octet_dequantize_args args{};
  args.struct_size = sizeof args;
  args.input = a_.view();
  args.scale_inv = &scale_inv;
  args.output = out.view();
  const octet_dequantize_args good = args;
  args.input = in_.view();
  expect_failure(api_->dequantize(context_, &args), OCTET_STATUS_INVALID_ARGUMENT,
                 {"input.dtype", "fp32"});
  args = good;
  args.scale_inv = nullptr;
  expect_failure(api_->dequantize(context_, &args), OCTET_STATUS_INVALID_ARGUMENT,
                 {"scale_inv"});
  args = good;
  args.output.dtype = OCTET_DTYPE_E4M3;
  expect_failure(api_->dequantize(context_, &args), OCTET_STATUS_INVALID_ARGUMENT,
                 {"output.dtype"});
  args = good;
  args.output.cols = 4;
  expect_failure(api_->dequantize(context_, &args), OCTET_STATUS_INVALID_ARGUMENT,
                 {"output", "4x5"});
  EXPECT_EQ(out.bytes, MatrixBytes(out.bytes.size(), TestMatrix::kPadding));
}

TEST_P(BadArguments, GemmRefusesShapesLdAndFlags) {
  OCTET_REQUIRE_ENTRY(gemm);
  octet_gemm_args args = gemm_args();
  args.k = 6;
  expect_failure(api_->gemm(context_, &args), OCTET_STATUS_INVALID_ARGUMENT,
                 {"args->a", "4x6", "trans_a"});
  args = gemm_args();
  args.trans_b = 1;  // B stored [n,k] but declared [k,n]
  expect_failure(api_->gemm(context_, &args), OCTET_STATUS_INVALID_ARGUMENT,
                 {"args->b", "5x3", "trans_b"});
  args = gemm_args();
  args.trans_a = 2;
  expect_failure(api_->gemm(context_, &args), OCTET_STATUS_INVALID_ARGUMENT, {"trans_a"});
  args = gemm_args();
  args.d.ld = 2;
  expect_failure(api_->gemm(context_, &args), OCTET_STATUS_INVALID_ARGUMENT, {"args->d.ld"});
  args = gemm_args();
  args.d.rows = 3;
  expect_failure(api_->gemm(context_, &args), OCTET_STATUS_INVALID_ARGUMENT,
                 {"args->d", "[m,n]"});
  args = gemm_args();
  args.m = -1;
  expect_failure(api_->gemm(context_, &args), OCTET_STATUS_INVALID_ARGUMENT, {"args->m"});
  args = gemm_args();
  TestMatrix bias(OCTET_DTYPE_FP32, 1, 4, 4);
  args.bias = bias.view();
  expect_failure(api_->gemm(context_, &args), OCTET_STATUS_INVALID_ARGUMENT,
                 {"args->bias", "1x3"});
  args = gemm_args();
  args.epilogue = 9;
  expect_failure(api_->gemm(context_, &args), OCTET_STATUS_INVALID_ARGUMENT, {"epilogue"});
  args = gemm_args();
  args.a.data = nullptr;
  expect_failure(api_->gemm(context_, &args), OCTET_STATUS_INVALID_ARGUMENT, {"args->a.data"});
  expect_failure(api_->gemm(context_, nullptr), OCTET_STATUS_INVALID_ARGUMENT, {"args"});
  EXPECT_TRUE(d_untouched());
}

TEST_P(BadArguments, GemmAnswersUnsupportedForMixedOperandsAndFp8Output) {
  OCTET_REQUIRE_ENTRY(gemm);
  octet_gemm_args args = gemm_args();
  TestMatrix hp_b(OCTET_DTYPE_BF16, 3, 5, 5);
  args.b = hp_b.view();
  expect_failure(api_->gemm(context_, &args), OCTET_STATUS_UNSUPPORTED,
                 {"args->a.dtype is e4m3", "args->b.dtype is bf16"});
  args = gemm_args();
  TestMatrix scales(OCTET_DTYPE_E8M0, 4, 5, 5);
  args.a = scales.view();
  expect_failure(api_->gemm(context_, &args), OCTET_STATUS_UNSUPPORTED, {"e8m0"});
  args = gemm_args();
  TestMatrix fp8_d(OCTET_DTYPE_E4M3, 4, 3, 3);
  args.d = fp8_d.view();
  if (caps_.fp8_gemm_output) {
    // FP8 output is offered, but only with d_scale saying how to encode.
    expect_failure(api_->gemm(context_, &args), OCTET_STATUS_INVALID_ARGUMENT, {"args->d", "d_scale"});
    const float d_scale = 1.0f;
    args.d_scale = &d_scale;
    args.beta = 1.0f;
    expect_failure(api_->gemm(context_, &args), OCTET_STATUS_INVALID_ARGUMENT, {"args->beta", "FP8"});
    args.beta = 0.0f;
    args.d_saturate = 2;
    expect_failure(api_->gemm(context_, &args), OCTET_STATUS_INVALID_ARGUMENT, {"args->d_saturate"});
  } else {
    expect_failure(api_->gemm(context_, &args), OCTET_STATUS_UNSUPPORTED, {"args->d.dtype"});
  }
  args = gemm_args();
  args.fast_accumulation = 2;
  expect_failure(api_->gemm(context_, &args), OCTET_STATUS_INVALID_ARGUMENT, {"args->fast_accumulation"});
  EXPECT_TRUE(d_untouched());
}

OCTET_BACKEND_SUITE(BadArguments);

}  // namespace
}  // namespace octet::test
