// The core's transpose logic, exercised on the reference under the
// hopper-like and blackwell-like profiles: the same GEMMs give bit-identical
// results while the stored copies differ as each class of device needs.
#include <cmath>

#include "test_helpers.hpp"

using namespace octet_test;

namespace {

class CapabilityProfiles : public BackendTest {};
OCTET_INSTANTIATE_FOR_BACKENDS(CapabilityProfiles);

const int32_t kProfiles[] = {OCTET_PROFILE_NATIVE, OCTET_PROFILE_HOPPER_LIKE, OCTET_PROFILE_BLACKWELL_LIKE};

octet_tensor_info info_of(const octet_tensor* t) {
  octet_tensor_info info{};
  info.struct_size = sizeof(info);
  EXPECT_EQ(octet_tensor_get_info(t, &info), OCTET_STATUS_SUCCESS) << octet_last_error_message();
  return info;
}

// D = sa*sb*sum_k A'[m,k] B'[n,k] in double from the FP8 codes: the expected
// value before FP32 rounding, and sum |a*b| for the error bound.
struct Expected {
  std::vector<double> value;
  std::vector<double> magnitude;
};

Expected double_gemm(const std::vector<uint8_t>& a, int32_t a_dtype, bool trans_a, const std::vector<uint8_t>& b,
                     int32_t b_dtype, bool trans_b, int64_t m, int64_t n, int64_t k, double sa, double sb) {
  Expected e{std::vector<double>(size_t(m * n)), std::vector<double>(size_t(m * n))};
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0, mag = 0;
      for (int64_t p = 0; p < k; ++p) {
        double x = octet_fp8_decode(a[size_t(trans_a ? p * m + i : i * k + p)], a_dtype);
        double y = octet_fp8_decode(b[size_t(trans_b ? p * n + j : j * k + p)], b_dtype);
        sum += x * y;
        mag += std::fabs(x * y);
      }
      e.value[size_t(i * n + j)] = sum * sa * sb;
      e.magnitude[size_t(i * n + j)] = mag * sa * sb;
    }
  return e;
}

struct GemmCase {
  int64_t m, n, k;
  int32_t a_dtype, b_dtype;
  int32_t trans_a, trans_b;
};

std::vector<float> run_gemm(const char* backend, int32_t profile, const GemmCase& c, uint32_t usages, std::vector<uint8_t>* a_codes,
                            std::vector<uint8_t>* b_codes, float* sa, float* sb) {
  ContextPtr ctx = make_context(backend, profile);
  int64_t a_rows = c.trans_a ? c.k : c.m, a_cols = c.trans_a ? c.m : c.k;
  int64_t b_rows = c.trans_b ? c.k : c.n, b_cols = c.trans_b ? c.n : c.k;
  auto a_values = random_values(size_t(a_rows * a_cols), 3.0f, 11);
  auto b_values = random_values(size_t(b_rows * b_cols), 0.5f, 12);
  TensorPtr a = quantized(ctx.get(), a_rows, a_cols, a_values, c.a_dtype, 8.0f, usages);
  TensorPtr b = quantized(ctx.get(), b_rows, b_cols, b_values, c.b_dtype, 64.0f, usages);
  TensorPtr d = make_tensor(ctx.get(), OCTET_DTYPE_FP32, {c.m, c.n});
  octet_gemm_options options{};
  options.struct_size = sizeof(options);
  options.trans_a = c.trans_a;
  options.trans_b = c.trans_b;
  options.alpha = 1.0f;
  EXPECT_EQ(octet_gemm(ctx.get(), a.get(), b.get(), d.get(), &options), OCTET_STATUS_SUCCESS)
      << octet_last_error_message();
  if (a_codes != nullptr) {
    // The rowwise codes exist in every profile when the rowwise usage was asked for.
    *a_codes = read<uint8_t>(a.get(), OCTET_COMPONENT_DATA, size_t(a_rows * a_cols));
    *b_codes = read<uint8_t>(b.get(), OCTET_COMPONENT_DATA, size_t(b_rows * b_cols));
    *sa = read<float>(a.get(), OCTET_COMPONENT_SCALE_INV, 1)[0];
    *sb = read<float>(b.get(), OCTET_COMPONENT_SCALE_INV, 1)[0];
  }
  return read<float>(d.get(), OCTET_COMPONENT_DATA, size_t(c.m * c.n));
}

}  // namespace

TEST_P(CapabilityProfiles, ContextReportsTheCapabilitiesInEffect) {
  for (int32_t profile : kProfiles) {
    ContextPtr ctx = make_context(backend(), profile);
    octet_backend_info info{};
    info.struct_size = sizeof(info);
    ASSERT_EQ(octet_context_get_info(ctx.get(), &info), OCTET_STATUS_SUCCESS);
    EXPECT_STREQ(info.name, backend());
    if (profile == OCTET_PROFILE_HOPPER_LIKE) {
      EXPECT_EQ(info.native_columnwise, 0);
      EXPECT_EQ(info.fp8_gemm_layouts, uint32_t(OCTET_GEMM_LAYOUT_TN));
    } else {
      EXPECT_EQ(info.native_columnwise, 1);
      EXPECT_EQ(info.fp8_gemm_layouts, uint32_t(OCTET_GEMM_LAYOUT_ALL));
    }
  }
}

TEST_P(CapabilityProfiles, StoredCopiesFollowTheProfile) {
  const int64_t rows = 37, cols = 53;
  const uint64_t bytes = rows * cols;  // one byte per FP8 element
  const uint64_t scalars = 3 * sizeof(float);
  for (int32_t profile : {OCTET_PROFILE_HOPPER_LIKE, OCTET_PROFILE_BLACKWELL_LIKE}) {
    ContextPtr ctx = make_context(backend(), profile);
    bool hopper = profile == OCTET_PROFILE_HOPPER_LIKE;
    octet_tensor_info both = info_of(make_tensor(ctx.get(), OCTET_DTYPE_E4M3, {rows, cols}, OCTET_USAGE_BOTH).get());
    EXPECT_EQ(both.has_rowwise_data, 1);
    EXPECT_EQ(both.has_columnwise_data, hopper ? 1 : 0);
    EXPECT_EQ(both.total_bytes, (hopper ? 2 : 1) * bytes + scalars);

    octet_tensor_info col =
        info_of(make_tensor(ctx.get(), OCTET_DTYPE_E5M2, {rows, cols}, OCTET_USAGE_COLUMNWISE).get());
    EXPECT_EQ(col.has_rowwise_data, hopper ? 0 : 1);  // natively, one copy serves columns too
    EXPECT_EQ(col.has_columnwise_data, hopper ? 1 : 0);
    EXPECT_EQ(col.total_bytes, bytes + scalars);

    octet_tensor_info row = info_of(make_tensor(ctx.get(), OCTET_DTYPE_E4M3, {rows, cols}, OCTET_USAGE_ROWWISE).get());
    EXPECT_EQ(row.has_columnwise_data, 0);
    EXPECT_EQ(row.total_bytes, bytes + scalars);
  }
}

TEST_P(CapabilityProfiles, HopperColumnwiseCopyIsTheTransposeOfTheRowwiseCodes) {
  const int64_t rows = 19, cols = 70;
  ContextPtr ctx = make_context(backend(), OCTET_PROFILE_HOPPER_LIKE);
  auto values = random_values(size_t(rows * cols), 50.0f, 5);
  TensorPtr q = quantized(ctx.get(), rows, cols, values, OCTET_DTYPE_E4M3, 2.0f, OCTET_USAGE_BOTH);
  auto rowwise = read<uint8_t>(q.get(), OCTET_COMPONENT_DATA, values.size());
  auto columnwise = read<uint8_t>(q.get(), OCTET_COMPONENT_COLUMNWISE_DATA, values.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      uint8_t expected = octet_fp8_encode(values[size_t(r * cols + c)] * 2.0f, OCTET_DTYPE_E4M3, 1);
      ASSERT_EQ(rowwise[size_t(r * cols + c)], expected) << r << "," << c;
      ASSERT_EQ(columnwise[size_t(c * rows + r)], expected) << r << "," << c;
    }
}

TEST_P(CapabilityProfiles, ColumnwiseOnlyQuantizationOnHopperWritesOnlyTheTransposedCopy) {
  const int64_t rows = 5, cols = 9;
  ContextPtr ctx = make_context(backend(), OCTET_PROFILE_HOPPER_LIKE);
  auto values = random_values(size_t(rows * cols), 1.0f, 6);
  TensorPtr q = quantized(ctx.get(), rows, cols, values, OCTET_DTYPE_E5M2, 1.0f, OCTET_USAGE_COLUMNWISE);
  auto columnwise = read<uint8_t>(q.get(), OCTET_COMPONENT_COLUMNWISE_DATA, values.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      ASSERT_EQ(columnwise[size_t(c * rows + r)], octet_fp8_encode(values[size_t(r * cols + c)], OCTET_DTYPE_E5M2, 1));
  uint8_t probe[rows * cols];
  EXPECT_EQ(octet_tensor_copy_to_host(q.get(), OCTET_COMPONENT_DATA, probe, sizeof(probe)),
            OCTET_STATUS_INVALID_ARGUMENT);
}

TEST_P(CapabilityProfiles, GemmIsBitIdenticalAcrossProfilesForEveryLayout) {
  const GemmCase shapes[] = {{1, 1, 1, 0, 0, 0, 0}, {7, 13, 5, 0, 0, 0, 0}, {67, 31, 29, 0, 0, 0, 0},
                             {33, 65, 130, 0, 0, 0, 0}};
  const int32_t dtype_pairs[][2] = {{OCTET_DTYPE_E4M3, OCTET_DTYPE_E4M3},
                                    {OCTET_DTYPE_E4M3, OCTET_DTYPE_E5M2},
                                    {OCTET_DTYPE_E5M2, OCTET_DTYPE_E4M3}};
  for (GemmCase c : shapes)
    for (auto& dtypes : dtype_pairs)
      for (int32_t ta = 0; ta < 2; ++ta)
        for (int32_t tb = 0; tb < 2; ++tb) {
          c.a_dtype = dtypes[0];
          c.b_dtype = dtypes[1];
          c.trans_a = ta;
          c.trans_b = tb;
          SCOPED_TRACE(testing::Message() << c.m << "x" << c.n << "x" << c.k << " trans " << ta << tb << " dtypes "
                                          << dtypes[0] << "," << dtypes[1]);
          std::vector<uint8_t> a_codes, b_codes;
          float sa = 0, sb = 0;
          auto native = run_gemm(backend(), OCTET_PROFILE_NATIVE, c, OCTET_USAGE_BOTH, &a_codes, &b_codes, &sa, &sb);
          auto hopper = run_gemm(backend(), OCTET_PROFILE_HOPPER_LIKE, c, OCTET_USAGE_BOTH, nullptr, nullptr, nullptr, nullptr);
          auto blackwell = run_gemm(backend(), OCTET_PROFILE_BLACKWELL_LIKE, c, OCTET_USAGE_BOTH, nullptr, nullptr, nullptr, nullptr);
          EXPECT_EQ(float_bits(hopper), float_bits(native));
          EXPECT_EQ(float_bits(blackwell), float_bits(native));
          // And the common answer is right: within numerics.md's bound of a double computation.
          Expected e = double_gemm(a_codes, c.a_dtype, ta, b_codes, c.b_dtype, tb, c.m, c.n, c.k, sa, sb);
          for (size_t i = 0; i < native.size(); ++i) {
            double bound = double(c.k) * std::ldexp(1.0, -23) * e.magnitude[i] + std::ldexp(std::fabs(e.value[i]), -23);
            ASSERT_LE(std::fabs(native[i] - e.value[i]), bound) << "element " << i;
          }
        }
}

TEST_P(CapabilityProfiles, HopperTransposesOnTheFlyWhenNoStoredCopyFits) {
  // Quantized for the rowwise usage only, then used transposed (NT): the core
  // must produce K-contiguous copies itself and still give the same bits.
  GemmCase c{23, 17, 41, OCTET_DTYPE_E4M3, OCTET_DTYPE_E4M3, 1, 1};
  auto native = run_gemm(backend(), OCTET_PROFILE_NATIVE, c, OCTET_USAGE_ROWWISE, nullptr, nullptr, nullptr, nullptr);
  auto hopper = run_gemm(backend(), OCTET_PROFILE_HOPPER_LIKE, c, OCTET_USAGE_ROWWISE, nullptr, nullptr, nullptr, nullptr);
  EXPECT_EQ(float_bits(hopper), float_bits(native));
}

TEST_P(CapabilityProfiles, LinearUsagesGiveIdenticalGradientsOnBothClasses) {
  // forward y = x W^T, wgrad dW = dy^T x, dgrad dx = dy W (docs/layers.md, "Precision").
  const int64_t tokens = 24, in = 40, out = 12;
  auto x_values = random_values(size_t(tokens * in), 1.0f, 21);
  auto w_values = random_values(size_t(out * in), 0.1f, 22);
  auto dy_values = random_values(size_t(tokens * out), 1e-3f, 23);
  std::vector<std::vector<float>> results[2];
  int index = 0;
  for (int32_t profile : {OCTET_PROFILE_HOPPER_LIKE, OCTET_PROFILE_BLACKWELL_LIKE}) {
    ContextPtr ctx = make_context(backend(), profile);
    TensorPtr x = quantized(ctx.get(), tokens, in, x_values, OCTET_DTYPE_E4M3, 100.0f, OCTET_USAGE_BOTH);
    TensorPtr w = quantized(ctx.get(), out, in, w_values, OCTET_DTYPE_E4M3, 1000.0f, OCTET_USAGE_BOTH);
    TensorPtr dy = quantized(ctx.get(), tokens, out, dy_values, OCTET_DTYPE_E5M2, 1e4f, OCTET_USAGE_BOTH);
    TensorPtr y = make_tensor(ctx.get(), OCTET_DTYPE_FP32, {tokens, out});
    TensorPtr dw = make_tensor(ctx.get(), OCTET_DTYPE_FP32, {out, in});
    TensorPtr dx = make_tensor(ctx.get(), OCTET_DTYPE_BF16, {tokens, in});
    octet_gemm_options o{};
    o.struct_size = sizeof(o);
    o.alpha = 1.0f;
    ASSERT_EQ(octet_gemm(ctx.get(), x.get(), w.get(), y.get(), &o), OCTET_STATUS_SUCCESS) << octet_last_error_message();
    o.trans_a = 1;
    o.trans_b = 1;
    ASSERT_EQ(octet_gemm(ctx.get(), dy.get(), x.get(), dw.get(), &o), OCTET_STATUS_SUCCESS) << octet_last_error_message();
    o.trans_a = 0;
    o.trans_b = 1;
    ASSERT_EQ(octet_gemm(ctx.get(), dy.get(), w.get(), dx.get(), &o), OCTET_STATUS_SUCCESS) << octet_last_error_message();
    auto dx_bits = read<uint16_t>(dx.get(), OCTET_COMPONENT_DATA, size_t(tokens * in));
    std::vector<float> dx_widened(dx_bits.size());
    for (size_t i = 0; i < dx_bits.size(); ++i) dx_widened[i] = octet_bf16_decode(dx_bits[i]);
    results[index++] = {read<float>(y.get(), OCTET_COMPONENT_DATA, size_t(tokens * out)),
                        read<float>(dw.get(), OCTET_COMPONENT_DATA, size_t(out * in)), dx_widened};
  }
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(float_bits(results[0][i]), float_bits(results[1][i])) << "GEMM " << i;
}
