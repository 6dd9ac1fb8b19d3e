// octet.hpp: ownership (move-only handles, destroy once), error translation,
// and the thin operation wrappers, checked against values computed here.
#include <octet/octet.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

namespace {

// E4M3 value of a code from the format definition (bias 7, 3 mantissa bits).
double e4m3_value(unsigned code) {
  const unsigned e = (code >> 3) & 0xF, m = code & 7;
  const double v = e == 0 ? std::ldexp(m, -9) : std::ldexp(1.0 + m / 8.0, static_cast<int>(e) - 7);
  return (code & 0x80) ? -v : v;
}

// Saturating round-to-nearest-even by search over the finite codes.
uint8_t e4m3_nearest(double x) {
  const double ax = std::fmin(std::fabs(x), 448.0);
  unsigned best = 0;
  double best_d = INFINITY;
  for (unsigned c = 0; c < 0x7F; ++c) {
    const double d = std::fabs(e4m3_value(c) - ax);
    if (d < best_d || (d == best_d && (c & 1) == 0)) best = c, best_d = d;
  }
  return static_cast<uint8_t>(best | (x < 0 ? 0x80 : 0));
}

TEST(OctetHpp, HandlesAreMoveOnly) {
  static_assert(!std::is_copy_constructible_v<octet::Context>);
  static_assert(!std::is_copy_assignable_v<octet::Tensor>);
  static_assert(std::is_nothrow_move_constructible_v<octet::Tensor>);
  octet::Context a("reference");
  octet_context* raw = a.get();
  ASSERT_NE(raw, nullptr);
  octet::Context b(std::move(a));
  EXPECT_EQ(a.get(), nullptr);
  EXPECT_EQ(b.get(), raw);
  octet::Context c;
  EXPECT_FALSE(c);
  c = std::move(b);
  EXPECT_EQ(c.get(), raw);
  EXPECT_EQ(c.info().name, "reference");
}

TEST(OctetHpp, TensorMoveKeepsContentsAndOutlivesContext) {
  octet::Tensor kept;
  const std::vector<float> values = {1.5f, -2.0f, 0.25f, 7.0f, -0.5f, 3.0f};
  {
    octet::Context ctx("reference");
    octet::Tensor t = octet::Tensor::create(ctx, OCTET_DTYPE_FP32, {2, 3});
    t.upload(values);
    kept = std::move(t);
    EXPECT_FALSE(t);
  }
  // octet.h: a context may be destroyed before its tensors.
  EXPECT_EQ(kept.download<float>(), values);
  const octet_tensor_info info = kept.info();
  EXPECT_EQ(info.ndim, 2);
  EXPECT_EQ(info.shape[0], 2);
  EXPECT_EQ(info.shape[1], 3);
  EXPECT_EQ(kept.component_bytes(OCTET_COMPONENT_DATA), values.size() * sizeof(float));
}

TEST(OctetHpp, FailuresBecomeErrorsWithStatusAndMessage) {
  try {
    octet::Context ctx("no_such_backend");
    FAIL() << "expected octet::Error";
  } catch (const octet::Error& e) {
    EXPECT_EQ(e.status(), OCTET_STATUS_NOT_FOUND);
    EXPECT_FALSE(e.message().empty());
    EXPECT_EQ(std::string(e.what()).rfind("OCTET_STATUS_NOT_FOUND: ", 0), 0u) << e.what();
  }
  octet::Context ctx("reference");
  octet::Tensor t = octet::Tensor::create(ctx, OCTET_DTYPE_FP32, {4});
  std::vector<float> small(3);
  try {
    t.upload(small);  // 12 bytes into a 16-byte tensor
    FAIL() << "expected octet::Error";
  } catch (const octet::Error& e) {
    EXPECT_EQ(e.status(), OCTET_STATUS_INVALID_ARGUMENT);
    EXPECT_FALSE(e.message().empty());
  }
  EXPECT_THROW(octet::Tensor::create(ctx, OCTET_DTYPE_FP32, {}), octet::Error);
  EXPECT_THROW(octet::Tensor::create(ctx, OCTET_DTYPE_FP32, {2, -1}), octet::Error);
  EXPECT_NO_THROW(octet::check(OCTET_STATUS_SUCCESS));
  EXPECT_THROW(octet::check(OCTET_STATUS_UNSUPPORTED), octet::Error);
}

TEST(OctetHpp, BackendListMatchesTheCAbi) {
  const auto list = octet::backends();
  size_t count = 0;
  ASSERT_EQ(octet_backend_count(&count), OCTET_STATUS_SUCCESS);
  ASSERT_EQ(list.size(), count);
  ASSERT_FALSE(list.empty());
  EXPECT_EQ(list[0].name, "reference");
  EXPECT_EQ(list[0].path, "(embedded)");
  EXPECT_TRUE(list[0].available);
  for (size_t i = 0; i < count; ++i) {
    octet_backend_info c{};
    c.struct_size = sizeof c;
    ASSERT_EQ(octet_backend_get_info(i, &c), OCTET_STATUS_SUCCESS);
    EXPECT_EQ(list[i].name, c.name);
    EXPECT_EQ(list[i].dtypes, c.dtypes);
    EXPECT_EQ(list[i].alignment, c.alignment);
  }
  size_t failures = 0;
  ASSERT_EQ(octet_backend_failure_count(&failures), OCTET_STATUS_SUCCESS);
  EXPECT_EQ(octet::backend_failures().size(), failures);
}

TEST(OctetHpp, QuantizeAmaxDequantizeMatchTheFormatDefinition) {
  octet::Context ctx("reference", OCTET_PROFILE_HOPPER_LIKE);
  const std::vector<float> x = {0.1f, -3.0f, 2.5f, 100.0f, -0.003f, 7.0f};
  const float scale = 4.0f;
  octet::Tensor in = octet::Tensor::create(ctx, OCTET_DTYPE_FP32, {2, 3});
  in.upload(x);
  EXPECT_EQ(octet::amax(ctx, in), 100.0f);

  octet::Tensor q = octet::Tensor::create(ctx, OCTET_DTYPE_E4M3, {2, 3}, OCTET_USAGE_BOTH);
  q.set_scale(scale);
  octet::quantize(ctx, in, q);
  EXPECT_EQ(q.scale_inv(), 0.25f);
  EXPECT_EQ(q.amax(), 100.0f);
  const auto rows = q.download<uint8_t>(OCTET_COMPONENT_DATA);
  const auto cols = q.download<uint8_t>(OCTET_COMPONENT_COLUMNWISE_DATA);  // hopper-like: a copy
  ASSERT_EQ(rows.size(), 6u);
  ASSERT_EQ(cols.size(), 6u);
  for (int r = 0; r < 2; ++r)
    for (int c = 0; c < 3; ++c) {
      const uint8_t expected = e4m3_nearest(static_cast<double>(x[r * 3 + c] * scale));
      EXPECT_EQ(rows[r * 3 + c], expected) << r << "," << c;
      EXPECT_EQ(cols[c * 2 + r], expected) << r << "," << c;
    }

  octet::Tensor back = octet::Tensor::create(ctx, OCTET_DTYPE_FP32, {2, 3});
  octet::dequantize(ctx, q, back);
  const auto deq = back.download<float>();
  for (size_t i = 0; i < deq.size(); ++i)
    EXPECT_EQ(deq[i], static_cast<float>(e4m3_value(rows[i])) * 0.25f);
}

TEST(OctetHpp, ConvertToE5M2WithoutSaturation) {
  octet::Context ctx("reference");
  octet::Tensor in = octet::Tensor::create(ctx, OCTET_DTYPE_FP32, {3});
  in.upload(std::vector<float>{1.0f, 61440.0f, -1.0e9f});
  octet::Tensor out = octet::Tensor::create(ctx, OCTET_DTYPE_E5M2, {3});
  octet::convert(ctx, in, out, /*saturate=*/false);
  // E5M2 1.0 = bias 15 -> 0 01111 00; overflow gives +-inf (0x7C / 0xFC).
  EXPECT_EQ(out.download<uint8_t>(), (std::vector<uint8_t>{0x3C, 0x7C, 0xFC}));
  octet::convert(ctx, in, out, /*saturate=*/true);
  EXPECT_EQ(out.download<uint8_t>(), (std::vector<uint8_t>{0x3C, 0x7B, 0xFB}));
}

TEST(OctetHpp, GemmWithTransposesAlphaBetaBias) {
  octet::Context ctx("reference");
  const int64_t m = 3, n = 2, k = 4;
  // Small integers: every product and sum is exact in FP32.
  std::vector<float> a_stored(k * m), b_stored(k * n), bias = {1.0f, -2.0f};
  for (size_t i = 0; i < a_stored.size(); ++i) a_stored[i] = static_cast<float>(int(i % 5) - 2);
  for (size_t i = 0; i < b_stored.size(); ++i) b_stored[i] = static_cast<float>(int(i % 3) - 1);
  const std::vector<float> d_old = {1, 2, 3, 4, 5, 6};
  octet::Tensor a = octet::Tensor::create(ctx, OCTET_DTYPE_FP32, {k, m});  // trans_a
  octet::Tensor b = octet::Tensor::create(ctx, OCTET_DTYPE_FP32, {k, n});  // trans_b
  octet::Tensor tb = octet::Tensor::create(ctx, OCTET_DTYPE_FP32, {n});
  octet::Tensor d = octet::Tensor::create(ctx, OCTET_DTYPE_FP32, {m, n});
  a.upload(a_stored);
  b.upload(b_stored);
  tb.upload(bias);
  d.upload(d_old);
  octet::GemmOptions options;
  options.trans_a = options.trans_b = true;
  options.alpha = 2.0f;
  options.beta = 0.5f;
  options.bias = &tb;
  octet::gemm(ctx, a, b, d, options);
  const auto got = d.download<float>();
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      float s = 0;
      for (int64_t kk = 0; kk < k; ++kk) s += a_stored[kk * m + i] * b_stored[kk * n + j];
      EXPECT_EQ(got[i * n + j], 2.0f * s + 0.5f * d_old[i * n + j] + bias[j]) << i << "," << j;
    }
  // B's K must match A's: the wrapper surfaces the library's refusal.
  octet::Tensor wrong = octet::Tensor::create(ctx, OCTET_DTYPE_FP32, {k + 1, n});
  EXPECT_THROW(octet::gemm(ctx, a, wrong, d, options), octet::Error);
}

TEST(OctetHpp, WrapUsesCallerMemory) {
  octet::Context ctx("reference");
  const uint64_t alignment = ctx.info().alignment;
  std::vector<unsigned char> raw(64 + 2 * alignment);
  const size_t offset = (alignment - reinterpret_cast<uintptr_t>(raw.data()) % alignment) % alignment;
  float* data = reinterpret_cast<float*>(raw.data() + offset);
  for (int i = 0; i < 8; ++i) data[i] = static_cast<float>(i) * 0.5f;
  octet::Tensor t = octet::Tensor::wrap(ctx, OCTET_DTYPE_FP32, {8}, data);
  EXPECT_EQ(t.info().owns_memory, 0);
  EXPECT_EQ(octet::amax(ctx, t), 3.5f);
  data[3] = -9.0f;  // no copy was made
  EXPECT_EQ(octet::amax(ctx, t), 9.0f);
}

}  // namespace
