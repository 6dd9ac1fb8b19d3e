// Tensors and element-wise operations through the users' ABI on the
// reference, checked against per-element expectations computed here.
#include <cmath>
#include <cstddef>
#include <cstring>
#include <limits>

#include "test_helpers.hpp"

using namespace octet_test;

namespace {
class Tensor : public BackendTest {};
OCTET_INSTANTIATE_FOR_BACKENDS(Tensor);

float max_abs_ignoring_nan(const std::vector<float>& v) {
  float m = 0.0f;
  for (float x : v)
    if (!std::isnan(x) && std::fabs(x) > m) m = std::fabs(x);
  return m;
}
}  // namespace

TEST_P(Tensor, CopyRoundTripAndInfo) {
  ContextPtr ctx = make_context(backend(), OCTET_PROFILE_NATIVE);
  auto values = random_values(2 * 3 * 7, 1.0f, 1);
  TensorPtr t = make_tensor(ctx.get(), OCTET_DTYPE_FP32, {2, 3, 7});
  ASSERT_EQ(octet_tensor_copy_from_host(t.get(), OCTET_COMPONENT_DATA, values.data(), values.size() * 4), 0);
  EXPECT_EQ(float_bits(read<float>(t.get(), OCTET_COMPONENT_DATA, values.size())), float_bits(values));
  octet_tensor_info info{};
  info.struct_size = sizeof(info);
  ASSERT_EQ(octet_tensor_get_info(t.get(), &info), 0);
  EXPECT_EQ(info.ndim, 3);
  EXPECT_EQ(info.shape[2], 7);
  EXPECT_EQ(info.total_bytes, values.size() * 4);
  EXPECT_EQ(info.owns_memory, 1);
}

TEST_P(Tensor, QuantizedTensorStartsWithUnitScale) {
  ContextPtr ctx = make_context(backend(), OCTET_PROFILE_NATIVE);
  TensorPtr q = make_tensor(ctx.get(), OCTET_DTYPE_E4M3, {3, 3}, OCTET_USAGE_ROWWISE);
  EXPECT_EQ(read<float>(q.get(), OCTET_COMPONENT_SCALE, 1)[0], 1.0f);
}

TEST_P(Tensor, WrappedMemoryIsUsedInPlace) {
  ContextPtr ctx = make_context(backend(), OCTET_PROFILE_NATIVE);
  alignas(64) float storage[4 * 16];
  for (int i = 0; i < 64; ++i) storage[i] = float(i) - 20.5f;
  octet_tensor_desc d{};
  d.struct_size = sizeof(d);
  d.dtype = OCTET_DTYPE_FP32;
  d.ndim = 2;
  d.shape[0] = 4;
  d.shape[1] = 16;
  octet_tensor* raw = nullptr;
  ASSERT_EQ(octet_tensor_wrap(ctx.get(), &d, storage, &raw), 0) << octet_last_error_message();
  TensorPtr t = TensorPtr::adopt(raw);
  float amax = -1;
  ASSERT_EQ(octet_amax(ctx.get(), t.get(), &amax), 0);
  EXPECT_EQ(amax, max_abs_ignoring_nan(std::vector<float>(storage, storage + 64)));
  storage[5] = -1000.0f;  // the tensor sees the caller's memory, not a copy
  ASSERT_EQ(octet_amax(ctx.get(), t.get(), &amax), 0);
  EXPECT_EQ(amax, 1000.0f);
}

TEST_P(Tensor, AmaxIgnoresNanAndCountsInf) {
  ContextPtr ctx = make_context(backend(), OCTET_PROFILE_NATIVE);
  std::vector<float> v = {1.0f, -3.0f, std::numeric_limits<float>::quiet_NaN(), 2.0f};
  float amax = 0;
  ASSERT_EQ(octet_amax(ctx.get(), make_fp32(ctx.get(), 1, 4, v).get(), &amax), 0);
  EXPECT_EQ(amax, 3.0f);
  v[3] = -std::numeric_limits<float>::infinity();
  ASSERT_EQ(octet_amax(ctx.get(), make_fp32(ctx.get(), 1, 4, v).get(), &amax), 0);
  EXPECT_TRUE(std::isinf(amax));
}

TEST_P(Tensor, QuantizeWritesCodesScaleInvAndAmax) {
  ContextPtr ctx = make_context(backend(), OCTET_PROFILE_NATIVE);
  auto values = random_values(13 * 29, 10.0f, 2);
  values[7] = 1e6f;  // saturates
  values[8] = std::numeric_limits<float>::quiet_NaN();
  for (int32_t dtype : {OCTET_DTYPE_E4M3, OCTET_DTYPE_E5M2}) {
    for (int32_t saturate : {0, 1}) {
      TensorPtr x = make_fp32(ctx.get(), 13, 29, values);
      TensorPtr q = make_tensor(ctx.get(), dtype, {13, 29}, OCTET_USAGE_ROWWISE);
      const float scale = 3.0f;
      ASSERT_EQ(octet_tensor_copy_from_host(q.get(), OCTET_COMPONENT_SCALE, &scale, 4), 0);
      octet_quantize_options o{};
      o.struct_size = sizeof(o);
      o.saturate = saturate;
      ASSERT_EQ(octet_quantize(ctx.get(), x.get(), q.get(), &o), 0) << octet_last_error_message();
      auto codes = read<uint8_t>(q.get(), OCTET_COMPONENT_DATA, values.size());
      for (size_t i = 0; i < values.size(); ++i)
        ASSERT_EQ(codes[i], octet_fp8_encode(values[i] * scale, dtype, saturate)) << i;
      EXPECT_EQ(read<float>(q.get(), OCTET_COMPONENT_SCALE_INV, 1)[0], 1.0f / scale);
      EXPECT_EQ(read<float>(q.get(), OCTET_COMPONENT_AMAX, 1)[0], max_abs_ignoring_nan(values));

      TensorPtr back = make_tensor(ctx.get(), OCTET_DTYPE_FP32, {13, 29});
      ASSERT_EQ(octet_dequantize(ctx.get(), q.get(), back.get()), 0) << octet_last_error_message();
      auto decoded = read<float>(back.get(), OCTET_COMPONENT_DATA, values.size());
      for (size_t i = 0; i < values.size(); ++i) {
        float expected = octet_fp8_decode(codes[i], dtype) * (1.0f / scale);
        if (std::isnan(expected))
          ASSERT_TRUE(std::isnan(decoded[i])) << i;
        else
          ASSERT_EQ(decoded[i], expected) << i;
      }
    }
  }
}

TEST_P(Tensor, DequantizeFromTheTransposedCopyOnly) {
  ContextPtr ctx = make_context(backend(), OCTET_PROFILE_HOPPER_LIKE);
  auto values = random_values(6 * 11, 1.0f, 3);
  TensorPtr x = make_fp32(ctx.get(), 6, 11, values);
  TensorPtr q = make_tensor(ctx.get(), OCTET_DTYPE_E4M3, {6, 11}, OCTET_USAGE_COLUMNWISE);
  ASSERT_EQ(octet_quantize(ctx.get(), x.get(), q.get(), nullptr), 0) << octet_last_error_message();
  TensorPtr back = make_tensor(ctx.get(), OCTET_DTYPE_FP32, {6, 11});
  ASSERT_EQ(octet_dequantize(ctx.get(), q.get(), back.get()), 0) << octet_last_error_message();
  auto decoded = read<float>(back.get(), OCTET_COMPONENT_DATA, values.size());
  for (size_t i = 0; i < values.size(); ++i)
    ASSERT_EQ(decoded[i], octet_fp8_decode(octet_fp8_encode(values[i], OCTET_DTYPE_E4M3, 1), OCTET_DTYPE_E4M3));
}

TEST_P(Tensor, ConvertBetweenEveryPairOfFloatingDtypes) {
  ContextPtr ctx = make_context(backend(), OCTET_PROFILE_NATIVE);
  auto values = random_values(5 * 9, 100.0f, 4);
  TensorPtr x = make_fp32(ctx.get(), 5, 9, values);
  TensorPtr bf = make_tensor(ctx.get(), OCTET_DTYPE_BF16, {5, 9});
  TensorPtr h = make_tensor(ctx.get(), OCTET_DTYPE_FP16, {5, 9});
  TensorPtr e5 = make_tensor(ctx.get(), OCTET_DTYPE_E5M2, {5, 9});
  ASSERT_EQ(octet_convert(ctx.get(), x.get(), bf.get(), 1), 0) << octet_last_error_message();
  ASSERT_EQ(octet_convert(ctx.get(), x.get(), h.get(), 1), 0);
  ASSERT_EQ(octet_convert(ctx.get(), x.get(), e5.get(), 0), 0);
  auto bf_codes = read<uint16_t>(bf.get(), OCTET_COMPONENT_DATA, values.size());
  auto h_codes = read<uint16_t>(h.get(), OCTET_COMPONENT_DATA, values.size());
  auto e5_codes = read<uint8_t>(e5.get(), OCTET_COMPONENT_DATA, values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    EXPECT_EQ(bf_codes[i], octet_bf16_encode(values[i]));
    EXPECT_EQ(h_codes[i], octet_fp16_encode(values[i]));
    EXPECT_EQ(e5_codes[i], octet_fp8_encode(values[i], OCTET_DTYPE_E5M2, 0));
  }
}

TEST_P(Tensor, HighPrecisionGemmWithBiasAlphaBeta) {
  ContextPtr ctx = make_context(backend(), OCTET_PROFILE_HOPPER_LIKE);
  const int64_t m = 9, n = 6, k = 17;
  auto a = random_values(size_t(m * k), 1.0f, 7), b = random_values(size_t(k * n), 1.0f, 8);
  auto c = random_values(size_t(m * n), 1.0f, 9), bias = random_values(size_t(n), 1.0f, 10);
  TensorPtr ta = make_fp32(ctx.get(), k, m, a);  // stored [K,M]: trans_a = 1
  TensorPtr tb = make_fp32(ctx.get(), k, n, b);  // stored [K,N]: trans_b = 1
  TensorPtr td = make_fp32(ctx.get(), m, n, c);
  TensorPtr tbias = make_fp32(ctx.get(), 1, n, bias);
  octet_gemm_options o{};
  o.struct_size = sizeof(o);
  o.trans_a = 1;
  o.trans_b = 1;
  o.alpha = 0.5f;
  o.beta = 2.0f;
  o.bias = tbias.get();
  ASSERT_EQ(octet_gemm(ctx.get(), ta.get(), tb.get(), td.get(), &o), 0) << octet_last_error_message();
  auto d = read<float>(td.get(), OCTET_COMPONENT_DATA, size_t(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0, mag = 0;
      for (int64_t p = 0; p < k; ++p) {
        double prod = double(a[size_t(p * m + i)]) * b[size_t(p * n + j)];
        sum += prod;
        mag += std::fabs(prod);
      }
      double expected = 0.5 * sum + 2.0 * c[size_t(i * n + j)] + bias[size_t(j)];
      double bound = (k + 3) * std::ldexp(1.0, -23) * (0.5 * mag + std::fabs(2.0 * c[size_t(i * n + j)]) +
                                                        std::fabs(bias[size_t(j)]));
      ASSERT_NEAR(d[size_t(i * n + j)], expected, bound) << i << "," << j;
    }
}

TEST(Options, InitFunctionsSetStructSizeAndNonZeroDefaults) {
  octet_gemm_options g;
  std::memset(&g, 0xAB, sizeof(g));
  ASSERT_EQ(octet_gemm_options_init(&g), OCTET_STATUS_SUCCESS);
  EXPECT_EQ(g.struct_size, sizeof(g));
  EXPECT_EQ(g.alpha, 1.0f);
  EXPECT_EQ(g.beta, 0.0f);
  EXPECT_EQ(g.trans_a, 0);
  EXPECT_EQ(g.bias, nullptr);
  octet_quantize_options q;
  std::memset(&q, 0xAB, sizeof(q));
  ASSERT_EQ(octet_quantize_options_init(&q), OCTET_STATUS_SUCCESS);
  EXPECT_EQ(q.struct_size, sizeof(q));
  EXPECT_EQ(q.saturate, 1);
  EXPECT_EQ(q.usages, 0u);
  octet_context_options c;
  std::memset(&c, 0xAB, sizeof(c));
  ASSERT_EQ(octet_context_options_init(&c), OCTET_STATUS_SUCCESS);
  EXPECT_EQ(c.backend, nullptr);
  EXPECT_EQ(c.capability_profile, OCTET_PROFILE_NATIVE);
  EXPECT_EQ((octet_gemm_options_init)(nullptr), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(octet_gemm_options_init_sized(nullptr, sizeof(octet_gemm_options)), OCTET_STATUS_INVALID_ARGUMENT);
}

TEST(Options, GemmOptionsInitNeverOverrunsAnOlderCallersStruct) {
  // A binary built against ABI 1.3 calls the unsized symbol with the 1.3
  // struct (it ends before fast_accumulation): the bytes after it must stay.
  const size_t old_size = offsetof(octet_gemm_options, fast_accumulation);
  unsigned char buffer[sizeof(octet_gemm_options) + 16];
  std::memset(buffer, 0xAB, sizeof buffer);
  auto* o = reinterpret_cast<octet_gemm_options*>(buffer);
  ASSERT_EQ((octet_gemm_options_init)(o), OCTET_STATUS_SUCCESS);
  EXPECT_EQ(o->struct_size, old_size);
  EXPECT_EQ(o->alpha, 1.0f);
  for (size_t i = old_size; i < sizeof buffer; ++i) EXPECT_EQ(buffer[i], 0xAB) << "byte " << i;
  // The sized form writes exactly what it is told.
  std::memset(buffer, 0xAB, sizeof buffer);
  ASSERT_EQ(octet_gemm_options_init_sized(o, old_size + sizeof(int32_t)), OCTET_STATUS_SUCCESS);
  EXPECT_EQ(o->struct_size, old_size + sizeof(int32_t));
  EXPECT_EQ(o->fast_accumulation, 0);
  for (size_t i = old_size + sizeof(int32_t); i < sizeof buffer; ++i) EXPECT_EQ(buffer[i], 0xAB) << "byte " << i;
  // A newer caller's bigger struct gets the library's size.
  ASSERT_EQ(octet_gemm_options_init_sized(o, sizeof buffer), OCTET_STATUS_SUCCESS);
  EXPECT_EQ(o->struct_size, sizeof(octet_gemm_options));
  EXPECT_EQ(o->saturate_output, 1);
  // Through the header's macro: the full current struct.
  octet_gemm_options current;
  ASSERT_EQ(octet_gemm_options_init(&current), OCTET_STATUS_SUCCESS);
  EXPECT_EQ(current.struct_size, sizeof current);
  EXPECT_EQ(current.saturate_output, 1);
  EXPECT_EQ(octet_gemm_options_init_sized(&current, 4), OCTET_STATUS_INVALID_ARGUMENT);
}

TEST(Options, InitialisedGemmOptionsGiveTheSameResultAsNull) {
  ContextPtr ctx = make_context("reference", OCTET_PROFILE_NATIVE);
  auto a = random_values(4 * 6, 1.0f, 31), b = random_values(5 * 6, 1.0f, 32);
  TensorPtr ta = make_fp32(ctx.get(), 4, 6, a), tb = make_fp32(ctx.get(), 5, 6, b);
  TensorPtr d1 = make_tensor(ctx.get(), OCTET_DTYPE_FP32, {4, 5}), d2 = make_tensor(ctx.get(), OCTET_DTYPE_FP32, {4, 5});
  octet_gemm_options o;
  ASSERT_EQ(octet_gemm_options_init(&o), 0);
  ASSERT_EQ(octet_gemm(ctx.get(), ta.get(), tb.get(), d1.get(), &o), 0);
  ASSERT_EQ(octet_gemm(ctx.get(), ta.get(), tb.get(), d2.get(), nullptr), 0);
  auto r1 = read<float>(d1.get(), OCTET_COMPONENT_DATA, 20);
  EXPECT_EQ(float_bits(r1), float_bits(read<float>(d2.get(), OCTET_COMPONENT_DATA, 20)));
  // alpha really is 1: D[0,0] equals the plain dot product within rounding.
  double dot = 0;
  for (int p = 0; p < 6; ++p) dot += double(a[size_t(p)]) * b[size_t(p)];
  EXPECT_NEAR(r1[0], dot, 1e-5 * (1 + std::fabs(dot)));
}
