// FP8 GEMM output (users' ABI 1.4) on every backend: the codes of D must be
// fp8(r * SCALE) where r is what the same GEMM writes into an FP32 D, with
// SCALE_INV = 1/SCALE and AMAX = max |r| (octet.h, octet_gemm). The expected
// codes come from the library's scalar codec applied to that FP32 result,
// independently of whether the backend encodes in its GEMM (reference) or
// the core composes GEMM + quantize (cpu). On the reference the FP32 result
// itself is also recomputed here, in the documented order.
#include <cmath>
#include <cstddef>
#include <cstring>

#include "test_helpers.hpp"

using namespace octet_test;

namespace {

class GemmFp8Output : public BackendTest {};
OCTET_INSTANTIATE_FOR_BACKENDS(GemmFp8Output);

constexpr int64_t kM = 37, kN = 29, kK = 45;

struct Operands {
  TensorPtr a, b, bias;
};

Operands make_operands(octet_context* ctx, float spread) {
  Operands o;
  o.a = quantized(ctx, kM, kK, random_values(size_t(kM * kK), spread, 101), OCTET_DTYPE_E4M3, 16.0f,
                  OCTET_USAGE_ROWWISE);
  o.b = quantized(ctx, kN, kK, random_values(size_t(kN * kK), 0.5f, 102), OCTET_DTYPE_E4M3, 64.0f,
                  OCTET_USAGE_ROWWISE);
  o.bias = make_fp32(ctx, 1, kN, random_values(size_t(kN), 0.25f, 103));
  return o;
}

octet_gemm_options options_with(float alpha, const octet_tensor* bias, int32_t epilogue) {
  octet_gemm_options o{};
  EXPECT_EQ(octet_gemm_options_init(&o), OCTET_STATUS_SUCCESS);
  o.alpha = alpha;
  o.bias = bias;
  o.epilogue = epilogue;
  return o;
}

// The FP32 result of the same GEMM on the same backend.
std::vector<float> fp32_result(octet_context* ctx, const Operands& ops, const octet_gemm_options& o) {
  TensorPtr d = make_tensor(ctx, OCTET_DTYPE_FP32, {kM, kN});
  EXPECT_EQ(octet_gemm(ctx, ops.a.get(), ops.b.get(), d.get(), &o), OCTET_STATUS_SUCCESS)
      << octet_last_error_message();
  return read<float>(d.get(), OCTET_COMPONENT_DATA, size_t(kM * kN));
}

struct Fp8Result {
  std::vector<uint8_t> rowwise, columnwise;
  float scale_inv = 0.0f, amax = 0.0f;
};

Fp8Result fp8_result(octet_context* ctx, const Operands& ops, const octet_gemm_options& o, int32_t dtype,
                     float scale, uint32_t usages) {
  TensorPtr d = make_tensor(ctx, dtype, {kM, kN}, usages);
  EXPECT_EQ(octet_tensor_copy_from_host(d.get(), OCTET_COMPONENT_SCALE, &scale, sizeof scale), OCTET_STATUS_SUCCESS);
  EXPECT_EQ(octet_gemm(ctx, ops.a.get(), ops.b.get(), d.get(), &o), OCTET_STATUS_SUCCESS)
      << octet_last_error_message();
  octet_tensor_info info{};
  info.struct_size = sizeof info;
  EXPECT_EQ(octet_tensor_get_info(d.get(), &info), OCTET_STATUS_SUCCESS);
  Fp8Result r;
  if (info.has_rowwise_data)
    r.rowwise = read<uint8_t>(d.get(), OCTET_COMPONENT_DATA, size_t(kM * kN));
  if (info.has_columnwise_data)
    r.columnwise = read<uint8_t>(d.get(), OCTET_COMPONENT_COLUMNWISE_DATA, size_t(kM * kN));
  r.scale_inv = read<float>(d.get(), OCTET_COMPONENT_SCALE_INV, 1)[0];
  r.amax = read<float>(d.get(), OCTET_COMPONENT_AMAX, 1)[0];
  return r;
}

std::vector<uint8_t> expected_codes(const std::vector<float>& r, float scale, int32_t dtype, int saturate) {
  std::vector<uint8_t> out(r.size());
  for (size_t i = 0; i < r.size(); ++i) out[i] = octet_fp8_encode(r[i] * scale, dtype, saturate);
  return out;
}

float expected_amax(const std::vector<float>& r) {
  float amax = 0.0f;
  for (float v : r) amax = std::fmax(amax, std::fabs(v));
  return amax;
}

std::vector<uint8_t> transposed(const std::vector<uint8_t>& codes) {
  std::vector<uint8_t> t(codes.size());
  for (int64_t i = 0; i < kM; ++i)
    for (int64_t j = 0; j < kN; ++j) t[size_t(j * kM + i)] = codes[size_t(i * kN + j)];
  return t;
}

void expect_matches(const Fp8Result& got, const std::vector<float>& r, float scale, int32_t dtype, int saturate) {
  const std::vector<uint8_t> codes = expected_codes(r, scale, dtype, saturate);
  ASSERT_FALSE(got.rowwise.empty() && got.columnwise.empty()) << "D stores no copy";
  if (!got.rowwise.empty()) {
    EXPECT_EQ(got.rowwise, codes);
  }
  if (!got.columnwise.empty()) {
    EXPECT_EQ(got.columnwise, transposed(codes));
  }
  EXPECT_EQ(got.scale_inv, 1.0f / scale);
  EXPECT_EQ(got.amax, expected_amax(r));
}

TEST_P(GemmFp8Output, CodesAreTheFp32ResultEncodedWithDsScale) {
  for (int32_t profile : {OCTET_PROFILE_NATIVE, OCTET_PROFILE_HOPPER_LIKE}) {
    ContextPtr ctx = make_context(backend(), profile);
    Operands ops = make_operands(ctx.get(), 2.0f);
    for (int32_t epilogue : {OCTET_EPILOGUE_NONE, OCTET_EPILOGUE_GELU}) {
      const octet_gemm_options o = options_with(0.75f, ops.bias.get(), epilogue);
      const std::vector<float> r = fp32_result(ctx.get(), ops, o);
      for (int32_t dtype : {OCTET_DTYPE_E4M3, OCTET_DTYPE_E5M2}) {
        for (uint32_t usages : {uint32_t(OCTET_USAGE_ROWWISE), uint32_t(OCTET_USAGE_COLUMNWISE),
                                uint32_t(OCTET_USAGE_BOTH)}) {
          SCOPED_TRACE(testing::Message() << "profile " << profile << " epilogue " << epilogue << " dtype " << dtype
                                          << " usages " << usages);
          const float scale = 3.0f;
          expect_matches(fp8_result(ctx.get(), ops, o, dtype, scale, usages), r, scale, dtype, 1);
        }
      }
    }
  }
}

TEST_P(GemmFp8Output, OverflowSaturatesOrNot) {
  ContextPtr ctx = make_context(backend(), OCTET_PROFILE_NATIVE);
  Operands ops = make_operands(ctx.get(), 2.0f);
  octet_gemm_options o = options_with(1.0f, nullptr, OCTET_EPILOGUE_NONE);
  const std::vector<float> r = fp32_result(ctx.get(), ops, o);
  // A scale that pushes most results past the formats' ranges.
  const float scale = 1.0e6f;
  for (int32_t dtype : {OCTET_DTYPE_E4M3, OCTET_DTYPE_E5M2}) {
    for (int saturate : {0, 1}) {
      SCOPED_TRACE(testing::Message() << "dtype " << dtype << " saturate " << saturate);
      o.saturate_output = saturate;
      Fp8Result got = fp8_result(ctx.get(), ops, o, dtype, scale, OCTET_USAGE_ROWWISE);
      expect_matches(got, r, scale, dtype, saturate);
      // The expectation itself must contain the overflow codes, so the
      // test sees the rule and not only in-range values.
      const std::vector<uint8_t> codes = expected_codes(r, scale, dtype, saturate);
      const uint8_t max_code = dtype == OCTET_DTYPE_E4M3 ? 0x7E : 0x7B;
      const uint8_t overflow_code = saturate ? max_code : (dtype == OCTET_DTYPE_E4M3 ? 0x7F : 0x7C);
      bool seen = false;
      for (uint8_t c : codes) seen = seen || (c & 0x7F) == overflow_code;
      EXPECT_TRUE(seen);
    }
  }
}

TEST_P(GemmFp8Output, ReferenceResultMatchesTheDocumentedOrder) {
  if (std::string(backend()) != "reference") GTEST_SKIP() << "bit-exact FP32 order is the reference's contract";
  ContextPtr ctx = make_context(backend(), OCTET_PROFILE_NATIVE);
  Operands ops = make_operands(ctx.get(), 2.0f);
  const octet_gemm_options o = options_with(0.5f, ops.bias.get(), OCTET_EPILOGUE_NONE);
  const auto a = read<uint8_t>(ops.a.get(), OCTET_COMPONENT_DATA, size_t(kM * kK));
  const auto b = read<uint8_t>(ops.b.get(), OCTET_COMPONENT_DATA, size_t(kN * kK));
  const float sa = read<float>(ops.a.get(), OCTET_COMPONENT_SCALE_INV, 1)[0];
  const float sb = read<float>(ops.b.get(), OCTET_COMPONENT_SCALE_INV, 1)[0];
  const auto bias = read<float>(ops.bias.get(), OCTET_COMPONENT_DATA, size_t(kN));
  // numerics.md section 8: products exact, FP32 sums in ascending k, then
  // alpha * (sa * sb) * acc + bias, each operation rounded on its own.
  std::vector<float> r(size_t(kM * kN));
  for (int64_t i = 0; i < kM; ++i)
    for (int64_t j = 0; j < kN; ++j) {
      volatile float acc = 0.0f;
      for (int64_t k = 0; k < kK; ++k) {
        volatile float product = octet_fp8_decode(a[size_t(i * kK + k)], OCTET_DTYPE_E4M3) *
                                 octet_fp8_decode(b[size_t(j * kK + k)], OCTET_DTYPE_E4M3);
        acc = acc + product;
      }
      volatile float scaled = (o.alpha * (sa * sb)) * acc;
      r[size_t(i * kN + j)] = scaled + bias[size_t(j)];
    }
  const float scale = 5.0f;
  expect_matches(fp8_result(ctx.get(), ops, o, OCTET_DTYPE_E4M3, scale, OCTET_USAGE_BOTH), r, scale,
                 OCTET_DTYPE_E4M3, 1);
}

TEST_P(GemmFp8Output, FastAccumulationIsAPermissionNotADifferentProduct) {
  ContextPtr ctx = make_context(backend(), OCTET_PROFILE_NATIVE);
  Operands ops = make_operands(ctx.get(), 2.0f);
  octet_gemm_options o = options_with(1.0f, nullptr, OCTET_EPILOGUE_NONE);
  const std::vector<float> exact = fp32_result(ctx.get(), ops, o);
  o.fast_accumulation = 1;
  const std::vector<float> fast = fp32_result(ctx.get(), ops, o);
  // Host backends have no reduced-precision mode: the flag is a permission
  // they ignore, so the bits stay the same.
  octet_backend_info info{};
  info.struct_size = sizeof info;
  size_t count = 0;
  ASSERT_EQ(octet_backend_count(&count), OCTET_STATUS_SUCCESS);
  for (size_t i = 0; i < count; ++i) {
    ASSERT_EQ(octet_backend_get_info(i, &info), OCTET_STATUS_SUCCESS);
    if (std::string(info.name) == backend()) break;
  }
  if (info.memory_kind == OCTET_MEMORY_HOST) {
    EXPECT_EQ(float_bits(fast), float_bits(exact));
    return;
  }
  // A device may trade accuracy for speed, but the result must still be the
  // same product: within 1% of the largest exact value.
  float largest = 0.0f;
  for (float v : exact) largest = std::fmax(largest, std::fabs(v));
  for (size_t i = 0; i < exact.size(); ++i) EXPECT_NEAR(fast[i], exact[i], 0.01f * largest) << "element " << i;
}

TEST_P(GemmFp8Output, BadRequestsNameTheArgumentAndTheRule) {
  ContextPtr ctx = make_context(backend(), OCTET_PROFILE_NATIVE);
  Operands ops = make_operands(ctx.get(), 1.0f);
  TensorPtr d = make_tensor(ctx.get(), OCTET_DTYPE_E4M3, {kM, kN}, OCTET_USAGE_ROWWISE);
  octet_gemm_options o = options_with(1.0f, nullptr, OCTET_EPILOGUE_NONE);

  o.beta = 1.0f;
  EXPECT_EQ(octet_gemm(ctx.get(), ops.a.get(), ops.b.get(), d.get(), &o), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(octet_last_error_message()).find("beta"), std::string::npos) << octet_last_error_message();
  o.beta = 0.0f;

  o.saturate_output = 2;
  EXPECT_EQ(octet_gemm(ctx.get(), ops.a.get(), ops.b.get(), d.get(), &o), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(octet_last_error_message()).find("saturate_output"), std::string::npos);
  o.saturate_output = 1;

  o.fast_accumulation = -1;
  EXPECT_EQ(octet_gemm(ctx.get(), ops.a.get(), ops.b.get(), d.get(), &o), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(octet_last_error_message()).find("fast_accumulation"), std::string::npos);
  o.fast_accumulation = 0;

  // Plain FP8 codes have no SCALE to encode with.
  TensorPtr plain = make_tensor(ctx.get(), OCTET_DTYPE_E4M3, {kM, kN});
  EXPECT_EQ(octet_gemm(ctx.get(), ops.a.get(), ops.b.get(), plain.get(), &o), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(octet_last_error_message()).find("per-tensor quantized"), std::string::npos)
      << octet_last_error_message();

  // The same call with valid options succeeds (the checks above were the cause).
  EXPECT_EQ(octet_gemm(ctx.get(), ops.a.get(), ops.b.get(), d.get(), &o), OCTET_STATUS_SUCCESS)
      << octet_last_error_message();
}

TEST_P(GemmFp8Output, OptionsFromAnOlderCallerGetTheDefaults) {
  // A caller built against ABI 1.3 passes a struct that ends before
  // fast_accumulation: the core must read saturate_output as its default (1).
  ContextPtr ctx = make_context(backend(), OCTET_PROFILE_NATIVE);
  Operands ops = make_operands(ctx.get(), 2.0f);
  octet_gemm_options full = options_with(1.0f, nullptr, OCTET_EPILOGUE_NONE);
  const std::vector<float> r = fp32_result(ctx.get(), ops, full);
  octet_gemm_options old = full;
  old.struct_size = offsetof(octet_gemm_options, fast_accumulation);
  old.saturate_output = 0;  // beyond struct_size: must not be read
  const float scale = 1.0e6f;
  expect_matches(fp8_result(ctx.get(), ops, old, OCTET_DTYPE_E4M3, scale, OCTET_USAGE_ROWWISE), r, scale,
                 OCTET_DTYPE_E4M3, 1);
}

}  // namespace
