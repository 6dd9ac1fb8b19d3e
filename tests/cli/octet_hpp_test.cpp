// octet.hpp: ownership (move-only handles, destroy once; borrowed views),
// error translation, and the wrappers of operations, recipes, quantizers,
// autocast and layers, checked against values computed here or against the
// same calls made through the raw C ABI.
#include <octet/octet.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
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

// Tensor::create in every scaling mode of octet_tensor_desc: the info the
// core reports, and component_bytes (hence download) sized from it. The
// expected block shapes and scale-grid sizes follow octet.h's description of
// each mode (numerics.md sections 11, 15 and 16).
TEST(OctetHpp, CreatesTensorsInEveryScalingMode) {
  octet::Context ctx("reference", OCTET_PROFILE_HOPPER_LIKE);
  const int64_t rows = 130, cols = 260;
  const auto ceil_div = [](int64_t n, int64_t d) { return (n + d - 1) / d; };
  struct Mode {
    octet_dtype dtype;
    int32_t mode;
    int32_t block_rows, block_cols;  // of the rowwise copy
    int32_t scale_dtype;
    size_t scale_size;
  };
  const Mode modes[] = {
      {OCTET_DTYPE_E4M3, OCTET_SCALING_MXFP8_1X32, 1, 32, OCTET_DTYPE_E8M0, 1},
      {OCTET_DTYPE_E4M3, OCTET_SCALING_BLOCK_1X128, 1, 128, OCTET_DTYPE_FP32, 4},
      {OCTET_DTYPE_E5M2, OCTET_SCALING_BLOCK_128X128, 128, 128, OCTET_DTYPE_FP32, 4},
      {OCTET_DTYPE_E4M3, OCTET_SCALING_PER_ROW, 1, static_cast<int32_t>(cols), OCTET_DTYPE_FP32, 4},
      {OCTET_DTYPE_E4M3, OCTET_SCALING_PER_COLUMN, static_cast<int32_t>(rows), 1, OCTET_DTYPE_FP32, 4},
      {OCTET_DTYPE_E2M1, OCTET_SCALING_MXFP4_1X32, 1, 32, OCTET_DTYPE_E8M0, 1},
      {OCTET_DTYPE_E2M1, OCTET_SCALING_NVFP4_1X16, 1, 16, OCTET_DTYPE_E4M3, 1},
      {OCTET_DTYPE_E2M1, OCTET_SCALING_NVFP4_16X16, 16, 16, OCTET_DTYPE_E4M3, 1},
  };
  for (const Mode& m : modes) {
    SCOPED_TRACE(m.mode);
    const octet::Tensor t = octet::Tensor::create(ctx, m.dtype, {rows, cols}, OCTET_USAGE_ROWWISE, m.mode);
    const octet_tensor_info info = t.info();
    EXPECT_EQ(info.dtype, m.dtype);
    EXPECT_EQ(info.usages, static_cast<uint32_t>(OCTET_USAGE_ROWWISE));
    EXPECT_EQ(info.scaling_mode, m.mode);
    EXPECT_EQ(info.block_rows, m.block_rows);
    EXPECT_EQ(info.block_cols, m.block_cols);
    EXPECT_EQ(info.scale_inv_dtype, m.scale_dtype);
    const size_t grid = static_cast<size_t>(ceil_div(rows, m.block_rows) * ceil_div(cols, m.block_cols));
    EXPECT_EQ(t.component_bytes(OCTET_COMPONENT_ROWWISE_SCALE_INV), grid * m.scale_size);
    EXPECT_EQ(t.download<uint8_t>(OCTET_COMPONENT_ROWWISE_SCALE_INV).size(), grid * m.scale_size);
    const size_t codes = m.dtype == OCTET_DTYPE_E2M1 ? rows * cols / 2 : rows * cols;  // E2M1: two per byte
    EXPECT_EQ(t.download<uint8_t>(OCTET_COMPONENT_DATA).size(), codes);
    if (m.mode == OCTET_SCALING_NVFP4_1X16 || m.mode == OCTET_SCALING_NVFP4_16X16)
      EXPECT_EQ(t.download<float>(OCTET_COMPONENT_SCALE_INV).size(), 2u);  // the two tensor scales
  }
  // 0 and PER_TENSOR are one mode; the default argument is that mode.
  for (int32_t mode : {0, static_cast<int32_t>(OCTET_SCALING_PER_TENSOR)}) {
    const octet::Tensor t = octet::Tensor::create(ctx, OCTET_DTYPE_E4M3, {rows, cols}, OCTET_USAGE_BOTH, mode);
    EXPECT_EQ(t.info().scaling_mode, static_cast<int32_t>(OCTET_SCALING_PER_TENSOR));
    EXPECT_EQ(t.info().has_columnwise_data, 1);  // hopper-like: a transposed copy
  }
  EXPECT_EQ(octet::Tensor::create(ctx, OCTET_DTYPE_E4M3, {rows, cols}, OCTET_USAGE_ROWWISE).info().scaling_mode,
            static_cast<int32_t>(OCTET_SCALING_PER_TENSOR));
  // On a context handle from the C ABI, the same tensor.
  const octet::Tensor from_handle =
      octet::Tensor::create(ctx.get(), OCTET_DTYPE_E4M3, {rows, cols}, OCTET_USAGE_ROWWISE, OCTET_SCALING_PER_ROW);
  EXPECT_EQ(from_handle.info().scaling_mode, static_cast<int32_t>(OCTET_SCALING_PER_ROW));
  EXPECT_EQ(from_handle.component_bytes(OCTET_COMPONENT_ROWWISE_SCALE_INV), size_t(rows) * 4);
  // The C ABI's checks apply: an FP4 mode takes E2M1 elements.
  EXPECT_THROW(
      octet::Tensor::create(ctx, OCTET_DTYPE_E4M3, {rows, cols}, OCTET_USAGE_ROWWISE, OCTET_SCALING_MXFP4_1X32),
      octet::Error);
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

// Three experts, one without rows: exact small integers, so each group's
// rows are checked against a plain loop; a bias on the last group only.
TEST(OctetHpp, GroupedGemmSplitsTheRowsBetweenExperts) {
  octet::Context ctx("reference");
  const std::vector<int64_t> splits = {2, 0, 3};
  const int64_t rows = 5, n = 2, k = 3;
  std::vector<float> x(rows * k), w(3 * n * k), bias = {1.0f, -1.0f};
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(int(i % 5) - 2);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(int(i % 3) - 1);
  octet::Tensor tx = octet::Tensor::create(ctx, OCTET_DTYPE_FP32, {rows, k});
  octet::Tensor tw = octet::Tensor::create(ctx, OCTET_DTYPE_FP32, {3, n, k});  // [G, N, K]
  octet::Tensor tbias = octet::Tensor::create(ctx, OCTET_DTYPE_FP32, {n});
  octet::Tensor y = octet::Tensor::create(ctx, OCTET_DTYPE_FP32, {rows, n});
  tx.upload(x);
  tw.upload(w);
  tbias.upload(bias);
  octet::GroupedGemmOptions options;
  options.bias = {octet::TensorView(), octet::TensorView(), tbias};
  octet::grouped_gemm(ctx, splits, {tx}, {tw}, {y}, options);
  const auto got = y.download<float>();
  const int64_t group_of_row[] = {0, 0, 2, 2, 2};
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < n; ++j) {
      const int64_t g = group_of_row[i];
      float s = g == 2 ? bias[j] : 0.0f;
      for (int64_t kk = 0; kk < k; ++kk) s += x[i * k + kk] * w[(g * n + j) * k + kk];
      EXPECT_EQ(got[i * n + j], s) << i << "," << j;
    }
  // Splits that do not add up to X's rows: the library's refusal.
  EXPECT_THROW(octet::grouped_gemm(ctx, {2, 0, 2}, {tx}, {tw}, {y}), octet::Error);
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

// ---- recipes, quantizers, autocast, layers -------------------------------

constexpr float kE4M3Max = 448.0f;
constexpr float kE5M2Max = 57344.0f;

// Expects a message naming `what` and the status.
template <typename F>
void expect_error(F&& f, octet_status status, const std::string& what) {
  try {
    f();
    ADD_FAILURE() << "expected octet::Error naming " << what;
  } catch (const octet::Error& e) {
    EXPECT_EQ(e.status(), status) << e.what();
    EXPECT_NE(e.message().find(what), std::string::npos) << e.what();
  }
}

// codes of fp8(x * scale): one FP32 multiply, then the codec (numerics.md 7).
std::vector<uint8_t> codes_of(const std::vector<float>& x, float scale, octet_dtype dtype) {
  std::vector<uint8_t> out;
  for (float v : x) out.push_back(octet_fp8_encode(v * scale, dtype, 1));
  return out;
}

TEST(OctetHpp, RecipeFactoriesInfoAndTensorFormats) {
  const octet::Recipe delayed = octet::Recipe::delayed();
  EXPECT_EQ(delayed.kind(), OCTET_RECIPE_DELAYED);
  EXPECT_EQ(delayed.info().format, OCTET_FORMAT_HYBRID);
  EXPECT_EQ(delayed.tensor_format(OCTET_ROLE_INPUT).dtype, OCTET_DTYPE_E4M3);
  EXPECT_EQ(delayed.tensor_format(OCTET_ROLE_GRADIENT).dtype, OCTET_DTYPE_E5M2);
  EXPECT_EQ(delayed.tensor_format(OCTET_ROLE_WEIGHT).scaling_mode,
            static_cast<int32_t>(OCTET_SCALING_PER_TENSOR));

  octet_delayed_scaling_options d = octet::delayed_scaling_options();
  EXPECT_EQ(d.amax_history_len, 1024);  // the _init defaults
  EXPECT_EQ(d.reduce_amax, 1);
  d.override_wgrad = 1;
  EXPECT_EQ(octet::Recipe::delayed(d).info().override_wgrad, 1);

  octet_current_scaling_options c = octet::current_scaling_options();
  EXPECT_EQ(c.struct_size, sizeof c);  // the sized init wrote the whole 1.5 struct
  c.format = OCTET_FORMAT_E5M2;
  const octet::Recipe current = octet::Recipe::current(c);
  EXPECT_EQ(current.kind(), OCTET_RECIPE_CURRENT);
  EXPECT_EQ(current.tensor_format(OCTET_ROLE_INPUT).dtype, OCTET_DTYPE_E5M2);

  EXPECT_EQ(octet::Recipe::static_scaling(2.0f).kind(), OCTET_RECIPE_STATIC);
  EXPECT_EQ(octet::Recipe::static_scaling().kind(), OCTET_RECIPE_STATIC);
  const octet::Recipe mx = octet::Recipe::mxfp8(octet::mxfp8_options());
  EXPECT_EQ(mx.kind(), OCTET_RECIPE_MXFP8);
  EXPECT_EQ(mx.tensor_format(OCTET_ROLE_INPUT).scaling_mode,
            static_cast<int32_t>(OCTET_SCALING_MXFP8_1X32));
  const octet::Recipe block = octet::Recipe::block(octet::block_scaling_options());
  EXPECT_EQ(block.kind(), OCTET_RECIPE_BLOCK);
  EXPECT_EQ(block.tensor_format(OCTET_ROLE_INPUT).scaling_mode,
            static_cast<int32_t>(OCTET_SCALING_BLOCK_1X128));
  EXPECT_EQ(block.tensor_format(OCTET_ROLE_WEIGHT).scaling_mode,
            static_cast<int32_t>(OCTET_SCALING_BLOCK_128X128));
  octet_rowwise_scaling_options ro = octet::rowwise_scaling_options();
  ro.high_precision_wgrad = 1;
  const octet::Recipe rowwise = octet::Recipe::rowwise(ro);
  EXPECT_EQ(rowwise.kind(), OCTET_RECIPE_ROWWISE);
  EXPECT_EQ(rowwise.info().override_wgrad, 1);
  EXPECT_EQ(rowwise.tensor_format(OCTET_ROLE_WEIGHT).scaling_mode, static_cast<int32_t>(OCTET_SCALING_PER_ROW));
  EXPECT_EQ(octet::Recipe::rowwise().info().override_wgrad, 0);
}

TEST(OctetHpp, BadArgumentsThrowWithStatusAndTheArgumentsName) {
  octet_delayed_scaling_options d = octet::delayed_scaling_options();
  d.amax_history_len = 0;
  expect_error([&] { octet::Recipe::delayed(d); }, OCTET_STATUS_INVALID_ARGUMENT,
               "amax_history_len");
  octet_static_scaling_options s = octet::static_scaling_options();
  s.scale = -1.0f;
  expect_error([&] { octet::Recipe::static_scaling(s); }, OCTET_STATUS_INVALID_ARGUMENT, "scale");

  octet::Context ctx("reference");
  octet_linear_options lo = octet::linear_options();
  lo.in_features = 0;
  lo.out_features = 3;
  expect_error([&] { octet::Layer::linear(ctx, lo); }, OCTET_STATUS_INVALID_ARGUMENT,
               "in_features");
  lo.in_features = 4;
  octet::Layer layer = octet::Layer::linear(ctx, lo);
  expect_error([&] { layer.find_parameter("no_such_parameter"); }, OCTET_STATUS_NOT_FOUND,
               "no_such_parameter");
  EXPECT_FALSE(layer.has_parameter("no_such_parameter"));
  expect_error([&] { layer.quantizer(1, OCTET_ROLE_INPUT); }, OCTET_STATUS_INVALID_ARGUMENT,
               "linear_index");

  // A current-scaling quantizer refuses an output of the wrong dtype.
  octet::Quantizer q(octet::Recipe::current(), OCTET_ROLE_INPUT);
  octet::Tensor in = octet::Tensor::create(ctx, OCTET_DTYPE_FP32, {4});
  octet::Tensor out = octet::Tensor::create(ctx, OCTET_DTYPE_E5M2, {4}, OCTET_USAGE_ROWWISE);
  in.upload(std::vector<float>{1, 2, 3, 4});
  EXPECT_THROW(q.quantize(ctx, in, out), octet::Error);
  // A recipe-less quantizer outside any scope.
  octet::Quantizer follows(OCTET_ROLE_INPUT);
  octet::Tensor out4 = octet::Tensor::create(ctx, OCTET_DTYPE_E4M3, {4}, OCTET_USAGE_ROWWISE);
  EXPECT_THROW(follows.quantize(ctx, in, out4), octet::Error);
}

TEST(OctetHpp, CurrentScalingQuantizerUsesFp8MaxOverAmax) {
  octet::Context ctx("reference");
  const octet::Recipe recipe = octet::Recipe::current();  // HYBRID
  const std::vector<float> x = {0.7f, -3.0f, 1.1f, 0.013f, -2.25f, 2.9f};
  octet::Tensor in = octet::Tensor::create(ctx, OCTET_DTYPE_FP32, {2, 3});
  in.upload(x);
  const float amax = 3.0f;

  struct Case {
    octet_tensor_role role;
    octet_dtype dtype;
    float fp8_max;
  };
  for (const Case& c : {Case{OCTET_ROLE_INPUT, OCTET_DTYPE_E4M3, kE4M3Max},
                        Case{OCTET_ROLE_GRADIENT, OCTET_DTYPE_E5M2, kE5M2Max}}) {
    octet::Quantizer q(recipe, c.role);
    ASSERT_EQ(recipe.tensor_format(c.role).dtype, c.dtype);
    octet::Tensor out = octet::Tensor::create(ctx, c.dtype, {2, 3}, OCTET_USAGE_ROWWISE);
    octet_quantize_stats stats = octet::quantize_stats();
    q.quantize(ctx, in, out, nullptr, &stats);
    const float scale = c.fp8_max / amax;  // numerics.md 14.1
    EXPECT_EQ(out.download<uint8_t>(), codes_of(x, scale, c.dtype));
    EXPECT_EQ(out.scale_inv(), 1.0f / scale);
    EXPECT_EQ(out.amax(), amax);
    EXPECT_EQ(stats.amax, amax);
    EXPECT_EQ(stats.total_count, 6u);
    const octet_quantizer_info info = q.info();
    EXPECT_EQ(info.role, c.role);
    EXPECT_EQ(info.recipe_kind, OCTET_RECIPE_CURRENT);
    EXPECT_EQ(info.scale, scale);
  }
}

// The delayed-scaling state of numerics.md 14.2, re-implemented here.
struct DelayedModel {
  int margin, interval;
  std::vector<float> history;  // newest first
  float scale = 1.0f;
  uint64_t count = 0;
  DelayedModel(int len, int m, int iv) : margin(m), interval(iv), history(len, 0.0f) {}
  void record(float amax) { history[0] = std::max(history[0], amax); }
  void update() {
    const float amax = *std::max_element(history.begin(), history.end());  // algo MAX
    ++count;
    if (count % interval == 0 && std::isfinite(amax) && amax > 0)
      scale = std::ldexp(kE4M3Max, -margin) / amax;
    for (size_t i = history.size() - 1; i > 0; --i) history[i] = history[i - 1];
    history[0] = 0.0f;
  }
};

TEST(OctetHpp, DelayedScalingOverStepsMatchesTheRule) {
  octet::Context ctx("reference");
  octet_delayed_scaling_options o = octet::delayed_scaling_options();
  o.amax_history_len = 3;
  o.margin = 1;
  o.interval = 2;
  octet::Quantizer q(octet::Recipe::delayed(o), OCTET_ROLE_INPUT);
  DelayedModel model(3, 1, 2);

  octet::Tensor in = octet::Tensor::create(ctx, OCTET_DTYPE_FP32, {4});
  octet::Tensor out = octet::Tensor::create(ctx, OCTET_DTYPE_E4M3, {4}, OCTET_USAGE_ROWWISE);
  // Two quantizes per step (the step's amax is the max of both), then an update.
  const std::vector<std::vector<float>> steps = {
      {0.5f, -1.5f, 0.25f, 1.0f}, {3.0f, 0.1f, -0.2f, 0.3f}, {-7.0f, 2.0f, 1.0f, 0.5f},
      {0.01f, 0.02f, -0.03f, 0.04f}, {0.6f, -0.7f, 0.8f, 0.9f}, {0.05f, 0.5f, 5.0f, -0.5f},
      {0.2f, 0.2f, 0.2f, 0.2f},      {1.25f, -0.75f, 0.5f, 0.125f}};
  for (size_t s = 0; s + 1 < steps.size(); s += 2) {
    for (size_t k = s; k < s + 2; ++k) {
      in.upload(steps[k]);
      q.quantize(ctx, in, out);
      EXPECT_EQ(out.download<uint8_t>(), codes_of(steps[k], model.scale, OCTET_DTYPE_E4M3))
          << "step input " << k;
      EXPECT_EQ(out.scale_inv(), 1.0f / model.scale);
      float a = 0;
      for (float v : steps[k]) a = std::max(a, std::fabs(v));
      model.record(a);
    }
    EXPECT_EQ(q.amax_history(), model.history);
    q.update_scale();
    model.update();
    const octet_quantizer_info info = q.info();
    EXPECT_EQ(info.scale, model.scale) << "after update " << model.count;
    EXPECT_EQ(info.update_count, model.count);
    EXPECT_EQ(q.amax_history(), model.history);
  }
  EXPECT_NE(model.scale, 1.0f);  // the interval let at least one update through

  // record_amax and set_scale go straight to the state.
  q.record_amax(12.0f);
  model.record(12.0f);
  EXPECT_EQ(q.amax_history(), model.history);
  q.set_scale(0.5f);
  EXPECT_EQ(q.info().scale, 0.5f);
  EXPECT_EQ(q.info().scale_inv, 2.0f);
}

TEST(OctetHpp, QuantizerSaveLoadRoundTrip) {
  octet::Context ctx("reference");
  octet_delayed_scaling_options o = octet::delayed_scaling_options();
  o.amax_history_len = 4;
  const octet::Recipe recipe = octet::Recipe::delayed(o);
  octet::Quantizer a(recipe, OCTET_ROLE_WEIGHT);
  for (float amax : {2.0f, 9.0f, 0.5f}) {
    a.record_amax(amax);
    a.update_scale();
  }
  a.record_amax(3.0f);
  const std::vector<uint8_t> bytes = a.save();
  ASSERT_FALSE(bytes.empty());
  EXPECT_EQ(std::string(bytes.begin(), bytes.begin() + 4), "OCTQ");

  octet::Quantizer b(recipe, OCTET_ROLE_WEIGHT);
  b.load(bytes);
  EXPECT_EQ(b.save(), bytes);
  EXPECT_EQ(b.amax_history(), a.amax_history());
  EXPECT_EQ(b.info().scale, a.info().scale);
  EXPECT_EQ(b.info().scale, kE4M3Max / 9.0f);
  EXPECT_EQ(b.info().update_count, 3u);

  std::vector<uint8_t> corrupt = bytes;
  corrupt.back() ^= 0x5A;
  EXPECT_THROW(b.load(corrupt), octet::Error);
  octet::Quantizer other_role(recipe, OCTET_ROLE_INPUT);
  EXPECT_THROW(other_role.load(bytes), octet::Error);
  EXPECT_EQ(b.save(), bytes);  // a failed load changes nothing
}

TEST(OctetHpp, AutocastScopeUpdatesScalesAtEnd) {
  octet::Context ctx("reference");
  octet_delayed_scaling_options o = octet::delayed_scaling_options();
  o.amax_history_len = 2;
  const octet::Recipe recipe = octet::Recipe::delayed(o);
  octet::Quantizer q(OCTET_ROLE_INPUT);  // follows autocast
  octet::Tensor in = octet::Tensor::create(ctx, OCTET_DTYPE_FP32, {3});
  octet::Tensor out = octet::Tensor::create(ctx, OCTET_DTYPE_E4M3, {3}, OCTET_USAGE_ROWWISE);
  in.upload(std::vector<float>{1.0f, -6.0f, 2.0f});
  EXPECT_EQ(ctx.autocast_depth(), 0);
  {
    octet::AutocastScope scope(ctx, recipe);
    EXPECT_TRUE(scope.active());
    EXPECT_EQ(ctx.autocast_depth(), 1);
    octet_recipe_info in_effect{};
    in_effect.struct_size = sizeof in_effect;
    ASSERT_NE(ctx.autocast_recipe(), nullptr);
    ASSERT_EQ(octet_recipe_get_info(ctx.autocast_recipe(), &in_effect), OCTET_STATUS_SUCCESS);
    EXPECT_EQ(in_effect.kind, OCTET_RECIPE_DELAYED);
    {
      octet::AutocastScope inner(ctx, recipe);
      EXPECT_EQ(ctx.autocast_depth(), 2);
      q.quantize(ctx, in, out);
      inner.end();
      EXPECT_FALSE(inner.active());
      EXPECT_EQ(q.info().scale, 1.0f);  // only the outermost end updates
    }
    scope.end();
    EXPECT_THROW(scope.end(), octet::Error);  // ended once
  }
  EXPECT_EQ(ctx.autocast_depth(), 0);
  EXPECT_EQ(ctx.autocast_recipe(), nullptr);
  EXPECT_EQ(q.info().scale, kE4M3Max / 6.0f);
  EXPECT_EQ(q.info().update_count, 1u);
}

TEST(OctetHpp, AutocastScopeEndsWhenAnExceptionUnwinds) {
  octet::Context ctx("reference");
  const octet::Recipe recipe = octet::Recipe::delayed();
  octet::Quantizer q(OCTET_ROLE_INPUT);
  octet::Tensor in = octet::Tensor::create(ctx, OCTET_DTYPE_FP32, {2});
  octet::Tensor out = octet::Tensor::create(ctx, OCTET_DTYPE_E4M3, {2}, OCTET_USAGE_ROWWISE);
  in.upload(std::vector<float>{4.0f, -1.0f});
  try {
    octet::AutocastScope scope(ctx, recipe);
    q.quantize(ctx, in, out);
    throw std::runtime_error("step abandoned");
  } catch (const std::runtime_error&) {
  }
  EXPECT_EQ(ctx.autocast_depth(), 0);
  // The destructor's end is a full end: the update ran.
  EXPECT_EQ(q.info().scale, kE4M3Max / 4.0f);
}

octet_status raise_to_100(float* values, size_t count, void* user_data) {
  ++*static_cast<int*>(user_data);
  for (size_t i = 0; i < count; ++i) values[i] = std::max(values[i], 100.0f);
  return OCTET_STATUS_SUCCESS;
}

TEST(OctetHpp, CommunicatorCAndStdFunctionForms) {
  octet::Context ctx("reference");
  const octet::Recipe recipe = octet::Recipe::delayed();  // reduce_amax 1
  octet::Tensor in = octet::Tensor::create(ctx, OCTET_DTYPE_FP32, {2});
  octet::Tensor out = octet::Tensor::create(ctx, OCTET_DTYPE_E4M3, {2}, OCTET_USAGE_ROWWISE);
  in.upload(std::vector<float>{4.0f, -1.0f});

  // C form: a function pointer and user_data; "another process" saw 100.
  int calls = 0;
  ctx.set_communicator(&raise_to_100, &calls);
  octet::Quantizer a(OCTET_ROLE_INPUT), b(OCTET_ROLE_INPUT);
  {
    octet::AutocastScope scope(ctx, recipe);
    a.quantize(ctx, in, out);
    b.quantize(ctx, in, out);
    scope.end();
  }
  EXPECT_EQ(calls, 1);  // one call for every quantizer of the scope
  EXPECT_EQ(a.info().scale, kE4M3Max / 100.0f);
  EXPECT_EQ(b.info().scale, kE4M3Max / 100.0f);

  // std::function form, with a capture.
  size_t seen = 0;
  ctx.set_communicator([&seen](float* values, size_t count) {
    seen += count;
    for (size_t i = 0; i < count; ++i) values[i] = std::max(values[i], 8.0f);
    return OCTET_STATUS_SUCCESS;
  });
  {
    octet::AutocastScope scope(ctx, recipe);
    a.quantize(ctx, in, out);
    scope.end();
  }
  EXPECT_EQ(seen, 1u);
  EXPECT_EQ(calls, 1);  // replaced
  // history MAX: 100 is still in the window
  EXPECT_EQ(a.info().scale, kE4M3Max / 100.0f);
  EXPECT_EQ(a.amax_history()[1], 8.0f);

  // A throwing communicator: end() throws, the scope is closed, nothing changed.
  ctx.set_communicator([](float*, size_t) -> octet_status { throw std::runtime_error("down"); });
  {
    octet::AutocastScope scope(ctx, recipe);
    a.quantize(ctx, in, out);
    try {
      scope.end();
      ADD_FAILURE() << "expected octet::Error";
    } catch (const octet::Error& e) {
      EXPECT_EQ(e.status(), OCTET_STATUS_BACKEND_ERROR) << e.what();
    }
    EXPECT_FALSE(scope.active());
  }
  EXPECT_EQ(ctx.autocast_depth(), 0);
  EXPECT_EQ(a.info().scale, kE4M3Max / 100.0f);
  EXPECT_EQ(a.info().update_count, 2u);
  // The destructor drops the same failure without throwing.
  EXPECT_NO_THROW({
    octet::AutocastScope scope(ctx, recipe);
    a.quantize(ctx, in, out);
  });
  EXPECT_EQ(ctx.autocast_depth(), 0);
  EXPECT_EQ(a.info().update_count, 2u);

  ctx.clear_communicator();
  {
    octet::AutocastScope scope(ctx, recipe);
    scope.end();
  }
  // The communicator moves with the Context object.
  ctx.set_communicator([&seen](float*, size_t count) {
    seen += count;
    return OCTET_STATUS_SUCCESS;
  });
  octet::Context moved(std::move(ctx));
  {
    octet::AutocastScope scope(moved, recipe);
    a.quantize(moved, in, out);
    scope.end();
  }
  EXPECT_EQ(seen, 2u);
}

// A "communicator" of one process whose collectives copy send to recv
// (scaled by `factor` for allreduce, so the test sees the entry ran).
struct OneProcess {
  float factor = 1.0f;
  int waits = 0;
};
octet_status one_max(float*, size_t, void*) { return OCTET_STATUS_SUCCESS; }
octet_status one_allreduce(const void* send, void* recv, size_t count, int32_t, int32_t, void** request,
                           void* user_data) {
  const auto* s = static_cast<const float*>(send);
  auto* r = static_cast<float*>(recv);
  for (size_t i = 0; i < count; ++i) r[i] = s[i] * static_cast<OneProcess*>(user_data)->factor;
  *request = nullptr;
  return OCTET_STATUS_SUCCESS;
}
octet_status one_allgather(const void* send, void* recv, size_t count, int32_t, void** request, void*) {
  std::memcpy(recv, send, count * sizeof(float));
  *request = nullptr;
  return OCTET_STATUS_SUCCESS;
}
octet_status one_wait(void*, void* user_data) {
  ++static_cast<OneProcess*>(user_data)->waits;
  return OCTET_STATUS_SUCCESS;
}

TEST(OctetHpp, CollectivesThroughAWholeCommunicator) {
  octet::Context ctx("reference");
  octet::Tensor a = octet::Tensor::create(ctx, OCTET_DTYPE_FP32, {2, 2});
  octet::Tensor b = octet::Tensor::create(ctx, OCTET_DTYPE_FP32, {2, 2});
  a.upload(std::vector<float>{1.0f, -2.0f, 3.0f, 0.5f});
  // No collective entry yet: UNSUPPORTED, thrown.
  ctx.set_communicator(&one_max, nullptr);
  try {
    octet::allgather(ctx, a, b);
    FAIL() << "allgather without the entry did not throw";
  } catch (const octet::Error& e) {
    EXPECT_EQ(e.status(), OCTET_STATUS_UNSUPPORTED);
  }
  OneProcess world;
  world.factor = 2.0f;
  octet_communicator c{};
  c.struct_size = sizeof c;
  c.allreduce_max = &one_max;
  c.user_data = &world;
  c.size = 1;
  c.memory_kinds = OCTET_COMM_HOST_MEMORY;
  c.allreduce = &one_allreduce;
  c.allgather = &one_allgather;
  c.wait = &one_wait;
  ctx.set_communicator(c);
  octet::allreduce(ctx, a, b, OCTET_REDUCE_SUM);
  EXPECT_EQ(b.download<float>(), (std::vector<float>{2.0f, -4.0f, 6.0f, 1.0f}));
  octet::allgather(ctx, a, b);
  EXPECT_EQ(b.download<float>(), (std::vector<float>{1.0f, -2.0f, 3.0f, 0.5f}));
  EXPECT_EQ(world.waits, 2);
  const octet_communication_stats stats = ctx.communication_stats();
  EXPECT_EQ(stats.calls[OCTET_COLLECTIVE_ALLREDUCE], 1u);
  EXPECT_EQ(stats.bytes_sent[OCTET_COLLECTIVE_ALLGATHER], 16u);
}

// x W^T + b in double.
std::vector<double> linear_reference(const std::vector<float>& x, const std::vector<float>& w,
                                     const std::vector<float>& b, int64_t rows, int64_t in,
                                     int64_t out) {
  std::vector<double> y(rows * out);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < out; ++o) {
      double s = b.empty() ? 0.0 : b[o];
      for (int64_t k = 0; k < in; ++k) s += double(x[r * in + k]) * double(w[o * in + k]);
      y[r * out + o] = s;
    }
  return y;
}

std::vector<float> ramp(size_t n, float step, float offset) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = std::sin(static_cast<float>(i) * step + offset);
  return v;
}

TEST(OctetHpp, LinearHighPrecisionForwardMatchesTripleLoop) {
  octet::Context ctx("reference");
  const int64_t rows = 6, in = 7, out = 5;
  octet_linear_options lo = octet::linear_options();
  lo.in_features = in;
  lo.out_features = out;
  octet::Layer layer = octet::Layer::linear(ctx, lo);
  EXPECT_EQ(layer.parameter_names(), (std::vector<std::string>{"weight", "bias"}));
  const std::vector<float> w = ramp(out * in, 0.37f, 0.1f), b = ramp(out, 1.3f, 0.5f),
                           x = ramp(rows * in, 0.71f, 0.2f);
  layer.parameter("weight").upload(w);
  layer.parameter("bias").upload(b);
  EXPECT_EQ(layer.parameter(layer.find_parameter("weight")).download<float>(), w);

  octet::Tensor tx = octet::Tensor::create(ctx, OCTET_DTYPE_FP32, {2, 3, in});  // rows = 2*3
  octet::Tensor ty = octet::Tensor::create(ctx, OCTET_DTYPE_FP32, {2, 3, out});
  tx.upload(x);
  octet::Saved none = layer.forward(tx, ty, /*training=*/false);
  EXPECT_FALSE(none);
  const std::vector<float> y = ty.download<float>();
  const std::vector<double> expect = linear_reference(x, w, b, rows, in, out);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < out; ++o) {
      // FP32 accumulation of in products and the bias: |error| <= gamma_{in+1} * sum |terms|.
      double mag = std::fabs(b[o]);
      for (int64_t k = 0; k < in; ++k) mag += std::fabs(double(x[r * in + k]) * w[o * in + k]);
      const double bound = (in + 2) * std::ldexp(1.0, -24) * mag;
      EXPECT_NEAR(y[r * out + o], expect[r * out + o], bound) << r << "," << o;
    }
}

TEST(OctetHpp, LinearTrainingStepGivesTheSameBitsAsTheCAbi) {
  const int64_t rows = 4, in = 16, out = 8;
  const std::vector<float> w = ramp(out * in, 0.37f, 0.1f), b = ramp(out, 1.3f, 0.5f),
                           x = ramp(rows * in, 0.71f, 0.2f), dy = ramp(rows * out, 0.53f, 0.9f);
  octet_delayed_scaling_options ro = octet::delayed_scaling_options();
  ro.amax_history_len = 4;

  struct Result {
    std::vector<float> y, dx, dw, db;
    std::vector<uint8_t> q_input, q_grad;
  };
  const int steps = 2;

  // Through the wrapper.
  Result cpp;
  {
    octet::Context ctx("reference");
    const octet::Recipe recipe = octet::Recipe::delayed(ro);
    octet_linear_options lo = octet::linear_options();
    lo.in_features = in;
    lo.out_features = out;
    octet::Layer layer = octet::Layer::linear(ctx, lo);
    layer.parameter("weight").upload(w);
    layer.parameter("bias").upload(b);
    octet::Tensor tx = octet::Tensor::create(ctx, OCTET_DTYPE_FP32, {rows, in});
    octet::Tensor ty = octet::Tensor::create(ctx, OCTET_DTYPE_FP32, {rows, out});
    octet::Tensor tdy = octet::Tensor::create(ctx, OCTET_DTYPE_FP32, {rows, out});
    octet::Tensor tdx = octet::Tensor::create(ctx, OCTET_DTYPE_FP32, {rows, in});
    tx.upload(x);
    tdy.upload(dy);
    for (int s = 0; s < steps; ++s) {
      octet::AutocastScope scope(ctx, recipe);
      octet::Saved saved = layer.forward(tx, ty, /*training=*/true);
      EXPECT_TRUE(saved);
      layer.backward(saved, tdy, tdx, /*accumulate=*/false);
      EXPECT_FALSE(saved);  // consumed
      scope.end();
      layer.new_step();
    }
    cpp.y = ty.download<float>();
    cpp.dx = tdx.download<float>();
    cpp.dw = layer.gradient("weight").download<float>();
    cpp.db = layer.gradient("bias").download<float>();
    cpp.q_input = layer.quantizer(0, OCTET_ROLE_INPUT).save();
    cpp.q_grad = layer.quantizer(0, OCTET_ROLE_GRADIENT).save();
    EXPECT_EQ(layer.quantizer(0, OCTET_ROLE_INPUT).info().update_count, uint64_t(steps));
    // A consumed Saved is refused by a second backward.
    octet::Saved empty;
    EXPECT_THROW(layer.backward(empty, tdy, tdx), octet::Error);
  }

  // The same calls through the raw C ABI.
  Result c;
  {
    octet_context_options co;
    octet_context_options_init(&co);
    co.backend = "reference";
    octet_context* ctx = nullptr;
    ASSERT_EQ(octet_context_create(&co, &ctx), OCTET_STATUS_SUCCESS);
    octet_recipe* recipe = nullptr;
    ASSERT_EQ(octet_recipe_create_delayed(&ro, &recipe), OCTET_STATUS_SUCCESS);
    octet_linear_options lo;
    octet_linear_options_init(&lo);
    lo.in_features = in;
    lo.out_features = out;
    octet_layer* layer = nullptr;
    ASSERT_EQ(octet_layer_create_linear(ctx, &lo, &layer), OCTET_STATUS_SUCCESS);
    octet_tensor* pw = nullptr;
    octet_tensor* pb = nullptr;
    ASSERT_EQ(octet_layer_get_parameter(layer, 0, &pw), OCTET_STATUS_SUCCESS);
    ASSERT_EQ(octet_layer_get_parameter(layer, 1, &pb), OCTET_STATUS_SUCCESS);
    octet_tensor_copy_from_host(pw, OCTET_COMPONENT_DATA, w.data(), w.size() * 4);
    octet_tensor_copy_from_host(pb, OCTET_COMPONENT_DATA, b.data(), b.size() * 4);
    auto make = [&](int64_t r, int64_t cdim) {
      octet_tensor_desc d{};
      d.struct_size = sizeof d;
      d.dtype = OCTET_DTYPE_FP32;
      d.ndim = 2;
      d.shape[0] = r;
      d.shape[1] = cdim;
      octet_tensor* t = nullptr;
      EXPECT_EQ(octet_tensor_create(ctx, &d, &t), OCTET_STATUS_SUCCESS);
      return t;
    };
    octet_tensor *tx = make(rows, in), *ty = make(rows, out), *tdy = make(rows, out),
                 *tdx = make(rows, in);
    octet_tensor_copy_from_host(tx, OCTET_COMPONENT_DATA, x.data(), x.size() * 4);
    octet_tensor_copy_from_host(tdy, OCTET_COMPONENT_DATA, dy.data(), dy.size() * 4);
    for (int s = 0; s < steps; ++s) {
      ASSERT_EQ(octet_autocast_begin(ctx, recipe), OCTET_STATUS_SUCCESS);
      octet_saved* saved = nullptr;
      ASSERT_EQ(octet_layer_forward(layer, tx, ty, 1, &saved), OCTET_STATUS_SUCCESS);
      ASSERT_EQ(octet_layer_backward(layer, &saved, tdy, tdx, 0), OCTET_STATUS_SUCCESS);
      ASSERT_EQ(octet_autocast_end(ctx), OCTET_STATUS_SUCCESS);
      ASSERT_EQ(octet_layer_new_step(layer), OCTET_STATUS_SUCCESS);
    }
    auto down = [](const octet_tensor* t, size_t n) {
      std::vector<float> v(n);
      EXPECT_EQ(octet_tensor_copy_to_host(t, OCTET_COMPONENT_DATA, v.data(), n * 4),
                OCTET_STATUS_SUCCESS);
      return v;
    };
    c.y = down(ty, rows * out);
    c.dx = down(tdx, rows * in);
    octet_tensor *gw = nullptr, *gb = nullptr;
    ASSERT_EQ(octet_layer_get_gradient(layer, 0, &gw), OCTET_STATUS_SUCCESS);
    ASSERT_EQ(octet_layer_get_gradient(layer, 1, &gb), OCTET_STATUS_SUCCESS);
    c.dw = down(gw, out * in);
    c.db = down(gb, out);
    for (auto [role, dst] : {std::pair<int32_t, std::vector<uint8_t>*>{OCTET_ROLE_INPUT, &c.q_input},
                             {OCTET_ROLE_GRADIENT, &c.q_grad}}) {
      octet_quantizer* q = nullptr;
      ASSERT_EQ(octet_layer_get_quantizer(layer, 0, role, &q), OCTET_STATUS_SUCCESS);
      size_t size = 0;
      ASSERT_EQ(octet_quantizer_save(q, nullptr, 0, &size), OCTET_STATUS_SUCCESS);
      dst->resize(size);
      ASSERT_EQ(octet_quantizer_save(q, dst->data(), size, &size), OCTET_STATUS_SUCCESS);
    }
    for (octet_tensor* t : {tx, ty, tdy, tdx}) octet_tensor_destroy(t);
    octet_layer_destroy(layer);
    octet_recipe_destroy(recipe);
    octet_context_destroy(ctx);
  }

  auto bits = [](const std::vector<float>& v) {
    std::vector<uint32_t> out(v.size());
    std::memcpy(out.data(), v.data(), v.size() * 4);
    return out;
  };
  EXPECT_EQ(bits(cpp.y), bits(c.y));
  EXPECT_EQ(bits(cpp.dx), bits(c.dx));
  EXPECT_EQ(bits(cpp.dw), bits(c.dw));
  EXPECT_EQ(bits(cpp.db), bits(c.db));
  EXPECT_EQ(cpp.q_input, c.q_input);
  EXPECT_EQ(cpp.q_grad, c.q_grad);
  // Sanity: FP8 was in use (the output differs from high precision).
  const std::vector<double> hp = linear_reference(x, w, b, rows, in, out);
  bool differs = false;
  for (size_t i = 0; i < hp.size(); ++i) differs |= static_cast<float>(hp[i]) != cpp.y[i];
  EXPECT_TRUE(differs);
}

// Whether Layer::set_weight accepts a T (a temporary Tensor must not be borrowed).
template <typename T, typename = void>
struct SetWeightAccepts : std::false_type {};
template <typename T>
struct SetWeightAccepts<T, std::void_t<decltype(std::declval<octet::Layer&>().set_weight(
                               size_t{0}, std::declval<T>()))>> : std::true_type {};

TEST(OctetHpp, LayerNormLayersAndBorrowedViews) {
  static_assert(SetWeightAccepts<octet::Tensor&>::value);
  static_assert(SetWeightAccepts<octet::TensorView>::value);
  static_assert(!SetWeightAccepts<octet::Tensor&&>::value);
  static_assert(std::is_trivially_destructible_v<octet::TensorView>);
  static_assert(std::is_trivially_destructible_v<octet::QuantizerView>);
  static_assert(std::is_copy_constructible_v<octet::TensorView>);
  octet::Context ctx("reference");
  octet_linear_options lo = octet::linear_options();
  lo.in_features = 8;
  lo.out_features = 4;
  octet_layernorm_linear_options lno = octet::layernorm_linear_options();
  lno.norm = OCTET_LAYER_RMSNORM;
  octet::Layer lnl = octet::Layer::layernorm_linear(ctx, lo, lno);
  EXPECT_EQ(lnl.parameter_names(), (std::vector<std::string>{"norm_weight", "weight", "bias"}));
  lno.linear = &lo;  // the C struct as is
  lno.norm = OCTET_LAYER_LAYERNORM;
  EXPECT_EQ(octet::Layer::layernorm_linear(ctx, lno).parameter_count(), 4u);

  octet_layernorm_mlp_options mo = octet::layernorm_mlp_options();
  mo.ffn_features = 16;
  octet::Layer mlp = octet::Layer::layernorm_mlp(ctx, lo, mo);
  EXPECT_EQ(mlp.parameter_names(),
            (std::vector<std::string>{"norm_weight", "norm_bias", "fc1_weight", "fc1_bias",
                                      "fc2_weight", "fc2_bias"}));
  EXPECT_EQ(mlp.parameter("fc1_weight").info().shape[0], 16);
  EXPECT_TRUE(mlp.quantizer(1, OCTET_ROLE_GRADIENT));
  // Gradients asked before any backward are allocated zero-filled.
  const std::vector<float> g = mlp.gradient("fc2_bias").download<float>();
  EXPECT_EQ(g, std::vector<float>(8, 0.0f));

  // Views are copies of a pointer: dropping many of them destroys nothing.
  for (int i = 0; i < 3; ++i) {
    octet::TensorView v = mlp.parameter("fc2_bias");
    octet::TensorView copy = v;
    (void)copy;
  }
  mlp.parameter("fc2_bias").upload(std::vector<float>(8, 0.5f));
  EXPECT_EQ(mlp.parameter("fc2_bias").download<float>(), std::vector<float>(8, 0.5f));

  // skip_weight_allocation: set_weight takes a borrowed caller tensor.
  octet_linear_options so = octet::linear_options();
  so.in_features = 2;
  so.out_features = 2;
  so.bias = 0;
  so.skip_weight_allocation = 1;
  octet::Layer skip = octet::Layer::linear(ctx, so);
  EXPECT_THROW(skip.parameter("weight"), octet::Error);  // none yet
  octet::Tensor w = octet::Tensor::create(ctx, OCTET_DTYPE_FP32, {2, 2});
  w.upload(std::vector<float>{1, 2, 3, 4});
  skip.set_weight("weight", w);
  EXPECT_EQ(skip.parameter("weight").get(), w.get());
  octet::Tensor x = octet::Tensor::create(ctx, OCTET_DTYPE_FP32, {1, 2});
  octet::Tensor y = octet::Tensor::create(ctx, OCTET_DTYPE_FP32, {1, 2});
  x.upload(std::vector<float>{1, 1});
  skip.forward(x, y, false);
  EXPECT_EQ(y.download<float>(), (std::vector<float>{3, 7}));

  // FP8-only weights: load_weight quantizes with the layer's recipe.
  const octet::Recipe current = octet::Recipe::current();
  octet_linear_options fo = octet::linear_options();
  fo.in_features = 2;
  fo.out_features = 2;
  fo.bias = 0;
  fo.weight_storage = OCTET_WEIGHTS_FP8_ONLY;
  fo.recipe = current.get();
  octet::Layer fp8 = octet::Layer::linear(ctx, fo);
  fp8.load_weight("weight", w);
  const octet::TensorView qw = fp8.parameter("weight");
  EXPECT_EQ(qw.info().dtype, OCTET_DTYPE_E4M3);
  EXPECT_EQ(qw.scale_inv(), 4.0f / kE4M3Max);
  EXPECT_THROW(fp8.gradient("weight"), octet::Error);
}

TEST(OctetHpp, MovedFromHandlesAreEmptyAndSafe) {
  static_assert(!std::is_copy_constructible_v<octet::Recipe>);
  static_assert(!std::is_copy_constructible_v<octet::Quantizer>);
  static_assert(!std::is_copy_constructible_v<octet::Layer>);
  static_assert(!std::is_copy_constructible_v<octet::Saved>);
  static_assert(!std::is_copy_assignable_v<octet::Layer>);
  static_assert(std::is_nothrow_move_constructible_v<octet::Recipe>);
  static_assert(std::is_nothrow_move_assignable_v<octet::Quantizer>);
  static_assert(std::is_nothrow_move_constructible_v<octet::Layer>);
  static_assert(std::is_nothrow_move_assignable_v<octet::Saved>);
  static_assert(!std::is_copy_constructible_v<octet::AutocastScope>);
  static_assert(!std::is_move_constructible_v<octet::AutocastScope>);

  octet::Context ctx("reference");
  octet::Recipe r = octet::Recipe::delayed();
  octet::Recipe r2(std::move(r));
  EXPECT_FALSE(r);
  EXPECT_TRUE(r2);
  EXPECT_THROW(r.info(), octet::Error);  // an empty handle is refused, not used

  octet::Quantizer q(r2, OCTET_ROLE_INPUT);
  r2 = octet::Recipe();  // the quantizer keeps its recipe alive
  q.record_amax(2.0f);
  q.update_scale();
  EXPECT_EQ(q.info().scale, kE4M3Max / 2.0f);
  octet::Quantizer q2;
  q2 = std::move(q);
  EXPECT_FALSE(q);
  EXPECT_THROW(q.info(), octet::Error);
  const octet::QuantizerView view = q2;
  EXPECT_EQ(view.get(), q2.get());
  EXPECT_EQ(view.info().scale, kE4M3Max / 2.0f);

  octet_linear_options lo = octet::linear_options();
  lo.in_features = 3;
  lo.out_features = 2;
  octet::Layer a = octet::Layer::linear(ctx, lo);
  a.parameter("weight").upload(std::vector<float>(6, 1.0f));
  a.parameter("bias").upload(std::vector<float>(2, 0.0f));
  octet::Tensor x = octet::Tensor::create(ctx, OCTET_DTYPE_FP32, {1, 3});
  octet::Tensor y = octet::Tensor::create(ctx, OCTET_DTYPE_FP32, {1, 2});
  x.upload(std::vector<float>{1, 2, 3});
  octet::Saved s1 = a.forward(x, y, true);
  octet::Saved s2(std::move(s1));
  EXPECT_FALSE(s1);
  EXPECT_TRUE(s2);
  octet::Layer b(std::move(a));
  EXPECT_FALSE(a);
  EXPECT_THROW(a.parameter_count(), octet::Error);
  EXPECT_EQ(b.parameter_count(), 2u);
  octet::Saved s3 = b.forward(x, y, true);
  s3.reset();  // released without a backward
  EXPECT_FALSE(s3);
  b = octet::Layer();  // destroying the layer leaves s2 valid to destroy
  EXPECT_FALSE(b);
}

}  // namespace

TEST(OctetHpp, GroupedLinearSendsEachExpertItsRows) {
  octet::Context ctx("reference");
  octet_linear_options lo = octet::linear_options();
  lo.in_features = 2;
  lo.out_features = 2;
  lo.bias = 0;
  octet::Layer experts = octet::Layer::grouped_linear(ctx, lo, 3);
  EXPECT_EQ(experts.parameter_names(), (std::vector<std::string>{"weight0", "weight1", "weight2"}));
  // Expert g's weight is (g + 1) times the identity: each row comes back
  // scaled by its expert's number, which says which expert it went through.
  for (int g = 0; g < 3; ++g) {
    const float s = float(g + 1);
    experts.parameter("weight" + std::to_string(g)).upload(std::vector<float>{s, 0, 0, s});
  }
  octet::Tensor x = octet::Tensor::create(ctx, OCTET_DTYPE_FP32, {3, 2});
  octet::Tensor y = octet::Tensor::create(ctx, OCTET_DTYPE_FP32, {3, 2});
  x.upload(std::vector<float>{1, 2, 3, 4, 5, 6});
  octet::Saved saved = experts.forward_grouped(x, {1, 0, 2}, y, true);
  EXPECT_EQ(y.download<float>(), (std::vector<float>{1, 2, 9, 12, 15, 18}));  // rows 1-2 through expert 2
  octet::Tensor dy = octet::Tensor::create(ctx, OCTET_DTYPE_FP32, {3, 2});
  dy.upload(std::vector<float>{1, 0, 0, 1, 1, 1});
  experts.backward(saved, dy);
  EXPECT_EQ(experts.gradient("weight1").download<float>(), std::vector<float>(4, 0.0f));  // no rows
  // dW2 = dy[1:]^T x[1:] with dy[1:] = [[0, 1], [1, 1]], x[1:] = [[3, 4], [5, 6]]
  EXPECT_EQ(experts.gradient("weight2").download<float>(), (std::vector<float>{5, 6, 8, 10}));
  EXPECT_THROW(experts.forward(x, y, false), octet::Error);                  // a grouped layer needs its splits
  EXPECT_THROW(experts.forward_grouped(x, {1, 1}, y, false), octet::Error);  // not num_groups of them
}
