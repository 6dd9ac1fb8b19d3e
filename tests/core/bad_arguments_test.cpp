// Every bad argument gets the right status and a message naming the argument
// and the rule; outputs stay untouched.
#include <cmath>
#include <cstdlib>
#include <string>

#include "test_helpers.hpp"

using namespace octet_test;
using testing::HasSubstr;

namespace {

#define EXPECT_FAILS_WITH(call, status, needle)                        \
  do {                                                                 \
    EXPECT_EQ((call), (status));                                       \
    EXPECT_THAT(std::string(octet_last_error_message()), HasSubstr(needle)); \
  } while (0)

class BadArguments : public testing::Test {
 protected:
  void SetUp() override { ctx = make_context("reference", OCTET_PROFILE_NATIVE); }
  ContextPtr ctx;
};

}  // namespace

TEST_F(BadArguments, ContextCreation) {
  octet_context* sentinel = reinterpret_cast<octet_context*>(0x1);
  octet_context* out = sentinel;
  octet_context_options o{};
  o.struct_size = sizeof(o);
  o.backend = "no_such_backend";
  EXPECT_FAILS_WITH(octet_context_create(&o, &out), OCTET_STATUS_NOT_FOUND, "'no_such_backend'");
  EXPECT_THAT(std::string(octet_last_error_message()), HasSubstr("reference"));  // lists what exists
  EXPECT_EQ(out, sentinel);
  o.backend = "reference";
  o.capability_profile = 7;
  EXPECT_FAILS_WITH(octet_context_create(&o, &out), OCTET_STATUS_INVALID_ARGUMENT, "capability_profile");
  o.capability_profile = 0;
  o.struct_size = 0;
  EXPECT_FAILS_WITH(octet_context_create(&o, &out), OCTET_STATUS_INVALID_ARGUMENT, "struct_size");
  EXPECT_FAILS_WITH(octet_context_create(nullptr, nullptr), OCTET_STATUS_INVALID_ARGUMENT, "'context'");
  EXPECT_EQ(out, sentinel);
  octet_context_destroy(nullptr);  // accepted
  octet_tensor_destroy(nullptr);
}

TEST_F(BadArguments, TensorDescriptors) {
  octet_tensor* out = nullptr;
  octet_tensor_desc d{};
  d.struct_size = sizeof(d);
  d.dtype = 99;
  d.ndim = 2;
  d.shape[0] = d.shape[1] = 4;
  EXPECT_FAILS_WITH(octet_tensor_create(ctx.get(), &d, &out), OCTET_STATUS_INVALID_ARGUMENT, "desc->dtype");
  d.dtype = OCTET_DTYPE_FP32;
  d.ndim = 0;
  EXPECT_FAILS_WITH(octet_tensor_create(ctx.get(), &d, &out), OCTET_STATUS_INVALID_ARGUMENT, "desc->ndim");
  d.ndim = 2;
  d.shape[1] = 0;
  EXPECT_FAILS_WITH(octet_tensor_create(ctx.get(), &d, &out), OCTET_STATUS_INVALID_ARGUMENT, "desc->shape[1]");
  d.shape[1] = 4;
  d.usages = OCTET_USAGE_ROWWISE;
  EXPECT_FAILS_WITH(octet_tensor_create(ctx.get(), &d, &out), OCTET_STATUS_INVALID_ARGUMENT, "desc->usages");
  d.dtype = OCTET_DTYPE_E4M3;
  d.usages = 4;
  EXPECT_FAILS_WITH(octet_tensor_create(ctx.get(), &d, &out), OCTET_STATUS_INVALID_ARGUMENT, "desc->usages");
  d.usages = 0;
  d.shape[0] = d.shape[1] = int64_t(1) << 40;
  EXPECT_FAILS_WITH(octet_tensor_create(ctx.get(), &d, &out), OCTET_STATUS_INVALID_ARGUMENT, "too large");
  EXPECT_FAILS_WITH(octet_tensor_create(ctx.get(), nullptr, &out), OCTET_STATUS_INVALID_ARGUMENT, "'desc'");
  EXPECT_EQ(out, nullptr);
}

TEST_F(BadArguments, MisalignedWrap) {
  octet_backend_info info{};
  info.struct_size = sizeof(info);
  ASSERT_EQ(octet_context_get_info(ctx.get(), &info), OCTET_STATUS_SUCCESS);
  ASSERT_GT(info.alignment, 1u);
  std::vector<float> storage(64 + info.alignment);
  char* base = reinterpret_cast<char*>(storage.data());
  char* aligned = base + (info.alignment - reinterpret_cast<uintptr_t>(base) % info.alignment) % info.alignment;
  octet_tensor_desc d{};
  d.struct_size = sizeof(d);
  d.dtype = OCTET_DTYPE_FP32;
  d.ndim = 1;
  d.shape[0] = 16;
  octet_tensor* out = nullptr;
  // The element size, whatever the backend's caller_alignment (1 here).
  ASSERT_EQ(info.caller_alignment, 1u);
  EXPECT_FAILS_WITH(octet_tensor_wrap(ctx.get(), &d, aligned + 2, &out), OCTET_STATUS_INVALID_ARGUMENT,
                    "not aligned to 4 bytes");
  EXPECT_EQ(out, nullptr);
  ASSERT_EQ(octet_tensor_wrap(ctx.get(), &d, aligned + 4, &out), OCTET_STATUS_SUCCESS) << octet_last_error_message();
  octet_tensor_destroy(out);
  ASSERT_EQ(octet_tensor_wrap(ctx.get(), &d, aligned, &out), OCTET_STATUS_SUCCESS) << octet_last_error_message();
  octet_tensor_destroy(out);
  d.dtype = OCTET_DTYPE_E4M3;
  d.usages = OCTET_USAGE_ROWWISE;
  EXPECT_FAILS_WITH(octet_tensor_wrap(ctx.get(), &d, aligned, &out), OCTET_STATUS_INVALID_ARGUMENT, "desc->usages");
  EXPECT_FAILS_WITH(octet_tensor_wrap(ctx.get(), &d, nullptr, &out), OCTET_STATUS_INVALID_ARGUMENT, "'data'");
}

TEST_F(BadArguments, Copies) {
  TensorPtr t = make_tensor(ctx.get(), OCTET_DTYPE_FP32, {3, 5});
  float host[15] = {};
  EXPECT_FAILS_WITH(octet_tensor_copy_from_host(t.get(), OCTET_COMPONENT_DATA, host, 14 * sizeof(float)),
                    OCTET_STATUS_INVALID_ARGUMENT, "'bytes'");
  EXPECT_FAILS_WITH(octet_tensor_copy_to_host(t.get(), OCTET_COMPONENT_SCALE, host, 4), OCTET_STATUS_INVALID_ARGUMENT,
                    "quantized");
  EXPECT_FAILS_WITH(octet_tensor_copy_to_host(t.get(), 42, host, 4), OCTET_STATUS_INVALID_ARGUMENT, "'component'");
  EXPECT_FAILS_WITH(octet_tensor_copy_to_host(t.get(), OCTET_COMPONENT_DATA, nullptr, 60), OCTET_STATUS_INVALID_ARGUMENT,
                    "'dst'");
  EXPECT_FAILS_WITH(octet_tensor_copy_to_host(nullptr, OCTET_COMPONENT_DATA, host, 60), OCTET_STATUS_INVALID_ARGUMENT,
                    "'tensor'");
}

TEST_F(BadArguments, Quantize) {
  TensorPtr x = make_tensor(ctx.get(), OCTET_DTYPE_FP32, {4, 8});
  TensorPtr q = make_tensor(ctx.get(), OCTET_DTYPE_E4M3, {4, 8}, OCTET_USAGE_ROWWISE);
  TensorPtr q_wrong_shape = make_tensor(ctx.get(), OCTET_DTYPE_E4M3, {8, 4}, OCTET_USAGE_ROWWISE);
  TensorPtr plain_codes = make_tensor(ctx.get(), OCTET_DTYPE_E4M3, {4, 8});
  EXPECT_FAILS_WITH(octet_quantize(ctx.get(), q.get(), q.get(), nullptr), OCTET_STATUS_INVALID_ARGUMENT, "'input'");
  EXPECT_FAILS_WITH(octet_quantize(ctx.get(), x.get(), q_wrong_shape.get(), nullptr), OCTET_STATUS_INVALID_ARGUMENT,
                    "shape 4x8");
  EXPECT_FAILS_WITH(octet_quantize(ctx.get(), x.get(), plain_codes.get(), nullptr), OCTET_STATUS_INVALID_ARGUMENT,
                    "'output' must be a quantized tensor");
  octet_quantize_options o{};
  o.struct_size = sizeof(o);
  o.usages = OCTET_USAGE_COLUMNWISE;
  o.saturate = 1;
  EXPECT_FAILS_WITH(octet_quantize(ctx.get(), x.get(), q.get(), &o), OCTET_STATUS_INVALID_ARGUMENT, "options->usages");
  EXPECT_FAILS_WITH(octet_quantize(nullptr, x.get(), q.get(), nullptr), OCTET_STATUS_INVALID_ARGUMENT, "'context'");
  ContextPtr other = make_context("reference", OCTET_PROFILE_NATIVE);
  EXPECT_FAILS_WITH(octet_quantize(other.get(), x.get(), q.get(), nullptr), OCTET_STATUS_INVALID_ARGUMENT,
                    "another context");
}

TEST_F(BadArguments, Gemm) {
  TensorPtr a = make_tensor(ctx.get(), OCTET_DTYPE_FP32, {4, 8});
  TensorPtr b = make_tensor(ctx.get(), OCTET_DTYPE_FP32, {5, 7});
  TensorPtr b_fp8 = make_tensor(ctx.get(), OCTET_DTYPE_E4M3, {5, 8}, OCTET_USAGE_ROWWISE);
  TensorPtr b_ok = make_tensor(ctx.get(), OCTET_DTYPE_FP32, {5, 8});
  TensorPtr d = make_tensor(ctx.get(), OCTET_DTYPE_FP32, {4, 5});
  TensorPtr d_wrong = make_tensor(ctx.get(), OCTET_DTYPE_FP32, {5, 4});
  TensorPtr d_fp8 = make_tensor(ctx.get(), OCTET_DTYPE_E4M3, {4, 5});
  TensorPtr bias_wrong = make_tensor(ctx.get(), OCTET_DTYPE_FP32, {4});
  EXPECT_FAILS_WITH(octet_gemm(ctx.get(), a.get(), b.get(), d.get(), nullptr), OCTET_STATUS_INVALID_ARGUMENT,
                    "inner dimensions");
  EXPECT_FAILS_WITH(octet_gemm(ctx.get(), a.get(), b_fp8.get(), d.get(), nullptr), OCTET_STATUS_INVALID_ARGUMENT,
                    "must both be FP8");
  EXPECT_FAILS_WITH(octet_gemm(ctx.get(), a.get(), b_ok.get(), d_wrong.get(), nullptr), OCTET_STATUS_INVALID_ARGUMENT,
                    "tensor 'd' is 5x4");
  // FP8 output needs a quantized D: plain codes have no SCALE to encode with.
  EXPECT_FAILS_WITH(octet_gemm(ctx.get(), a.get(), b_ok.get(), d_fp8.get(), nullptr), OCTET_STATUS_INVALID_ARGUMENT,
                    "per-tensor quantized tensor");
  octet_gemm_options o{};
  o.struct_size = sizeof(o);
  o.alpha = 1.0f;
  o.trans_a = 2;
  EXPECT_FAILS_WITH(octet_gemm(ctx.get(), a.get(), b_ok.get(), d.get(), &o), OCTET_STATUS_INVALID_ARGUMENT,
                    "options->trans_a");
  o.trans_a = 0;
  o.bias = bias_wrong.get();
  EXPECT_FAILS_WITH(octet_gemm(ctx.get(), a.get(), b_ok.get(), d.get(), &o), OCTET_STATUS_INVALID_ARGUMENT,
                    "options->bias");
  o.bias = nullptr;
  o.epilogue = 9;
  EXPECT_FAILS_WITH(octet_gemm(ctx.get(), a.get(), b_ok.get(), d.get(), &o), OCTET_STATUS_INVALID_ARGUMENT,
                    "options->epilogue");
  EXPECT_FAILS_WITH(octet_gemm(ctx.get(), nullptr, b_ok.get(), d.get(), nullptr), OCTET_STATUS_INVALID_ARGUMENT,
                    "argument 'a'");
}

TEST_F(BadArguments, ScalarCodecsAndDlpack) {
  EXPECT_EQ(octet_fp8_encode(1.0f, OCTET_DTYPE_FP32, 1), 0xFF);
  EXPECT_THAT(std::string(octet_last_error_message()), HasSubstr("'dtype'"));
  EXPECT_TRUE(std::isnan(octet_fp8_decode(0x38, OCTET_DTYPE_BF16)));
  EXPECT_FAILS_WITH(octet_fp8_encode_array(nullptr, nullptr, 3, OCTET_DTYPE_E4M3, 1), OCTET_STATUS_INVALID_ARGUMENT,
                    "'in'");
  float in[4] = {1, 2, 3, 4};
  EXPECT_FAILS_WITH(octet_fp8_encode_array(in, reinterpret_cast<uint8_t*>(in) + 1, 4, OCTET_DTYPE_E4M3, 1),
                    OCTET_STATUS_INVALID_ARGUMENT, "overlap");
  EXPECT_EQ(octet_e8m0_encode(1.0f, 5), 0xFF);
  EXPECT_THAT(std::string(octet_last_error_message()), HasSubstr("'rounding'"));
  uint8_t code = 0, bits = 0;
  EXPECT_FAILS_WITH(octet_dtype_to_dlpack(77, &code, &bits), OCTET_STATUS_INVALID_ARGUMENT, "'dtype'");
  octet_dtype dtype = 0;
  EXPECT_FAILS_WITH(octet_dtype_from_dlpack(2, 64, &dtype), OCTET_STATUS_UNSUPPORTED, "bits 64");
}

TEST(Dlpack, CodesMatchDlpackForEveryDtype) {
  // (dtype, DLPack code, bits) from dlpack.h's DLDataTypeCode.
  const int table[][3] = {{OCTET_DTYPE_FP32, 2, 32}, {OCTET_DTYPE_FP16, 2, 16}, {OCTET_DTYPE_BF16, 4, 16},
                          {OCTET_DTYPE_E4M3, 10, 8}, {OCTET_DTYPE_E5M2, 12, 8}, {OCTET_DTYPE_E8M0, 14, 8}};
  for (auto& row : table) {
    uint8_t code = 0, bits = 0;
    ASSERT_EQ(octet_dtype_to_dlpack(row[0], &code, &bits), OCTET_STATUS_SUCCESS);
    EXPECT_EQ(code, row[1]);
    EXPECT_EQ(bits, row[2]);
    octet_dtype back = 0;
    ASSERT_EQ(octet_dtype_from_dlpack(code, bits, &back), OCTET_STATUS_SUCCESS);
    EXPECT_EQ(back, row[0]);
    EXPECT_EQ(octet_dtype_size(row[0]) * 8, size_t(row[2]));
  }
}
