// convert, amax and transpose through the backend table, against per-element
// expectations from the test's own codecs (element_oracle.hpp).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "backend_table.hpp"
#include "test_matrix.hpp"

namespace octet::test {
namespace {

class ElementwiseKernels : public BackendTableTest {};

TEST_P(ElementwiseKernels, ConvertsBetweenEveryPairOfDtypes) {
  OCTET_REQUIRE_ENTRY(convert);
  std::mt19937 rng(3);
  for (int32_t from : declared_dtypes()) {
    for (int32_t to : declared_dtypes()) {
      for (bool saturate : {true, false}) {
        TestMatrix in(from, 5, 7, 9), out(to, 5, 7, 8);
        // Wide range so FP8 targets overflow and FP16 saturates to inf.
        fill_finite(in, rng, 1e5f);
        in.set_bits(0, 0, oracle_store_bits(from, -0.0f, true));
        octet_matrix_view iv = in.view(), ov = out.view();
        expect_success(api_->convert(context_, &iv, &ov, saturate));
        for (int64_t r = 0; r < in.rows; ++r) {
          for (int64_t c = 0; c < in.cols; ++c) {
            const uint32_t expected = oracle_store_bits(to, in.load(r, c), saturate);
            ASSERT_TRUE(same_element(to, out.bits(r, c), expected))
                << "from " << from << " to " << to << " at " << r << "," << c << " got 0x"
                << std::hex << out.bits(r, c) << " expected 0x" << expected;
          }
        }
        EXPECT_TRUE(out.padding_untouched());
      }
    }
  }
}

TEST_P(ElementwiseKernels, AmaxIgnoresNanAndCountsInfinity) {
  OCTET_REQUIRE_ENTRY(amax);
  std::mt19937 rng(5);
  for (int32_t dtype : {OCTET_DTYPE_FP32, OCTET_DTYPE_BF16, OCTET_DTYPE_FP16}) {
    TestMatrix in(dtype, 6, 11, 13);
    fill_finite(in, rng, 100.0f);
    // Largest magnitude is negative, and a value bigger than it sits in the
    // padding, which must not be read.
    in.set_bits(3, 4, oracle_store_bits(dtype, -250.0f, true));
    in.set_bits(2, 5, oracle_store_bits(dtype, std::numeric_limits<float>::quiet_NaN(), true));
    for (int64_t c = in.cols; c < in.ld; ++c) in.set_bits(1, c, oracle_store_bits(dtype, 1e4f, true));
    double expected = 0;
    for (int64_t r = 0; r < in.rows; ++r) {
      for (int64_t c = 0; c < in.cols; ++c) {
        const float v = in.load(r, c);
        if (!std::isnan(v)) expected = std::max(expected, std::fabs(static_cast<double>(v)));
      }
    }
    float amax = -1.0f;
    octet_matrix_view iv = in.view();
    expect_success(api_->amax(context_, &iv, &amax));
    EXPECT_EQ(static_cast<double>(amax), expected) << "dtype " << dtype;

    in.set_bits(0, 1, oracle_store_bits(dtype, -std::numeric_limits<float>::infinity(), true));
    expect_success(api_->amax(context_, &iv, &amax));
    EXPECT_EQ(amax, std::numeric_limits<float>::infinity());
  }
}

// numerics.md section 6: every NaN is ignored, signalling ones too (glibc's
// fmaxf returns NaN for a signalling NaN operand, so an amax built on
// std::fmax alone restarts after one). The signalling NaNs sit after the
// largest value and last, where such a restart changes the result.
TEST_P(ElementwiseKernels, AmaxIgnoresSignallingNan) {
  OCTET_REQUIRE_ENTRY(amax);
  TestMatrix in(OCTET_DTYPE_FP32, 2, 4, 4);
  const uint32_t bits[] = {float_bits(1.5f), float_bits(-9.0f), 0x7F800001u, float_bits(2.0f),
                           0xFFA00000u,      float_bits(0.25f), float_bits(-3.0f), 0x7F812345u};
  for (int i = 0; i < 8; ++i) in.set_bits(i / 4, i % 4, bits[i]);
  float amax = -1.0f;
  octet_matrix_view iv = in.view();
  expect_success(api_->amax(context_, &iv, &amax));
  EXPECT_EQ(amax, 9.0f);
}

TEST_P(ElementwiseKernels, AmaxOfEmptyOrAllNanMatrixIsZero) {
  OCTET_REQUIRE_ENTRY(amax);
  TestMatrix in(OCTET_DTYPE_FP32, 2, 2, 2);
  for (int64_t r = 0; r < 2; ++r) {
    for (int64_t c = 0; c < 2; ++c) in.set_bits(r, c, 0x7FC00000u);
  }
  float amax = -1.0f;
  octet_matrix_view iv = in.view();
  expect_success(api_->amax(context_, &iv, &amax));
  EXPECT_EQ(amax, 0.0f);
  iv.rows = 0;
  amax = -1.0f;
  expect_success(api_->amax(context_, &iv, &amax));
  EXPECT_EQ(amax, 0.0f);
}

TEST_P(ElementwiseKernels, TransposesOneTwoAndFourByteElements) {
  OCTET_REQUIRE_ENTRY(transpose);
  std::mt19937 rng(9);
  for (int32_t dtype : declared_dtypes()) {
    for (auto [rows, cols] : {std::pair<int64_t, int64_t>{1, 1}, {7, 13}, {64, 3}}) {
      TestMatrix in(dtype, rows, cols, cols + 3), out(dtype, cols, rows, rows + 1);
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = 0; c < cols; ++c) in.set_bits(r, c, static_cast<uint32_t>(rng()));
      }
      octet_matrix_view iv = in.view(), ov = out.view();
      expect_success(api_->transpose(context_, &iv, &ov));
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = 0; c < cols; ++c) ASSERT_EQ(out.bits(c, r), in.bits(r, c));
      }
      EXPECT_TRUE(out.padding_untouched());
    }
  }
}

OCTET_BACKEND_SUITE(ElementwiseKernels);

}  // namespace
}  // namespace octet::test
