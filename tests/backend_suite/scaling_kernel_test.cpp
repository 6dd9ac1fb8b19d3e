// quantize and dequantize through the backend table against a naive
// per-element computation with the test's own codecs (numerics.md section 7).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "backend_table.hpp"
#include "test_matrix.hpp"

namespace octet::test {
namespace {

class ScalingKernels : public BackendTableTest {
 protected:
  // Quantizes `in` rowwise to E4M3 (saturating) at `scale` into `rowwise`
  // and returns the amax the call reports.
  float quantize_rowwise_with_amax(TestMatrix& in, float scale, std::vector<uint8_t>& rowwise) {
    float amax = -1.0f;
    octet_quantize_args args{};
    args.struct_size = sizeof args;
    args.input = in.view();
    args.out_dtype = OCTET_DTYPE_E4M3;
    args.saturate = 1;
    args.scale = &scale;
    args.rowwise_out = rowwise.data();
    args.amax_out = &amax;
    expect_success(api_->quantize(context_, &args));
    return amax;
  }
};

struct QuantizeCase {
  int32_t in_dtype;
  int32_t out_dtype;
  bool saturate;
  float scale;
};

TEST_P(ScalingKernels, QuantizesRowwiseColumnwiseOrBoth) {
  OCTET_REQUIRE_ENTRY(quantize);
  std::mt19937 rng(11);
  const float inf = std::numeric_limits<float>::infinity();
  for (int32_t in_dtype : {OCTET_DTYPE_FP32, OCTET_DTYPE_BF16, OCTET_DTYPE_FP16}) {
    for (int32_t out_dtype : {OCTET_DTYPE_E4M3, OCTET_DTYPE_E5M2}) {
      for (bool saturate : {true, false}) {
        for (float scale : {1.0f, 37.3f, 0.0123f}) {
          for (int usages = 1; usages <= 3; ++usages) {
            const int64_t rows = 9, cols = 17;
            TestMatrix in(in_dtype, rows, cols, cols + 5);
            fill_finite(in, rng, 20.0f);
            in.set_bits(1, 2, oracle_store_bits(in_dtype, std::nanf(""), true));
            in.set_bits(4, 4, oracle_store_bits(in_dtype, -inf, true));
            in.set_bits(5, 6, oracle_store_bits(in_dtype, -0.0f, true));
            in.set_bits(6, 1, oracle_store_bits(in_dtype, 3000.0f, true));  // overflows * 37.3
            std::vector<uint8_t> rowwise(rows * cols, 0x5A), columnwise(rows * cols, 0x5A);
            float scale_inv = 0, amax = -1;
            octet_quantize_args args{};
            args.struct_size = sizeof args;
            args.input = in.view();
            args.out_dtype = out_dtype;
            args.saturate = saturate;
            args.scale = &scale;
            args.rowwise_out = (usages & 1) ? rowwise.data() : nullptr;
            args.columnwise_out = (usages & 2) ? columnwise.data() : nullptr;
            args.scale_inv_out = &scale_inv;
            args.amax_out = &amax;
            expect_success(api_->quantize(context_, &args));

            const Fp8Spec& spec = out_dtype == OCTET_DTYPE_E4M3 ? kE4M3Spec : kE5M2Spec;
            float expected_amax = 0;
            for (int64_t r = 0; r < rows; ++r) {
              for (int64_t c = 0; c < cols; ++c) {
                const float x = in.load(r, c);
                if (!std::isnan(x)) expected_amax = std::max(expected_amax, std::fabs(x));
                const uint8_t q = fp8_expected_encode(x * scale, spec, saturate);
                if (usages & 1) {
                  ASSERT_EQ(rowwise[r * cols + c], q) << r << "," << c;
                }
                if (usages & 2) {
                  ASSERT_EQ(columnwise[c * rows + r], q) << r << "," << c;
                }
              }
            }
            if (usages != 3) {
              for (uint8_t untouched : (usages & 1) ? columnwise : rowwise) {
                ASSERT_EQ(untouched, 0x5A) << "unrequested usage written";
              }
            }
            EXPECT_EQ(float_bits(scale_inv), float_bits(1.0f / scale));
            EXPECT_EQ(amax, expected_amax);
            EXPECT_EQ(amax, inf);  // the -inf element counts
          }
        }
      }
    }
  }
}

TEST_P(ScalingKernels, QuantizeAmaxOfFiniteInputIsTheLargestMagnitude) {
  OCTET_REQUIRE_ENTRY(quantize);
  TestMatrix in(OCTET_DTYPE_FP32, 2, 3, 3);
  const float values[] = {1.5f, -7.25f, 3.0f, std::nanf(""), 0.5f, -2.0f};
  for (int i = 0; i < 6; ++i) in.set_bits(i / 3, i % 3, float_bits(values[i]));
  std::vector<uint8_t> rowwise(6);
  EXPECT_EQ(quantize_rowwise_with_amax(in, 2.0f, rowwise), 7.25f);
  EXPECT_EQ(rowwise[3], 0x7F);  // NaN stays NaN
}

// The fused amax of quantize ignores signalling NaNs too (numerics.md 6, 7).
TEST_P(ScalingKernels, QuantizeAmaxIgnoresSignallingNan) {
  OCTET_REQUIRE_ENTRY(quantize);
  TestMatrix in(OCTET_DTYPE_FP32, 1, 5, 5);
  const uint32_t bits[] = {float_bits(-6.5f), 0x7F800001u, float_bits(1.0f), float_bits(4.0f),
                           0xFF800002u};
  for (int i = 0; i < 5; ++i) in.set_bits(0, i, bits[i]);
  std::vector<uint8_t> rowwise(5);
  EXPECT_EQ(quantize_rowwise_with_amax(in, 1.0f, rowwise), 6.5f);
  EXPECT_EQ(rowwise[1], 0x7F);  // a NaN (signalling or not) encodes as NaN
  EXPECT_EQ(rowwise[4], 0xFF);
}

TEST_P(ScalingKernels, DequantizesToEveryHighPrecisionDtype) {
  OCTET_REQUIRE_ENTRY(dequantize);
  std::mt19937 rng(13);
  for (int32_t in_dtype : {OCTET_DTYPE_E4M3, OCTET_DTYPE_E5M2}) {
    for (int32_t out_dtype : {OCTET_DTYPE_FP32, OCTET_DTYPE_BF16, OCTET_DTYPE_FP16}) {
      for (float scale_inv : {1.0f, 0.0371f, 3.0f}) {
        // Every code once (NaN and inf included), with ld padding on both sides.
        TestMatrix in(in_dtype, 16, 16, 19), out(out_dtype, 16, 16, 17);
        for (int code = 0; code < 256; ++code) in.set_bits(code / 16, code % 16, code);
        octet_dequantize_args args{};
        args.struct_size = sizeof args;
        args.input = in.view();
        args.scale_inv = &scale_inv;
        args.output = out.view();
        expect_success(api_->dequantize(context_, &args));
        for (int code = 0; code < 256; ++code) {
          const float value = in.load(code / 16, code % 16) * scale_inv;  // FP32 multiply
          const uint32_t expected = oracle_store_bits(out_dtype, value, true);
          ASSERT_TRUE(same_element(out_dtype, out.bits(code / 16, code % 16), expected))
              << "code " << code << " out dtype " << out_dtype;
        }
        EXPECT_TRUE(out.padding_untouched());
      }
    }
  }
}

OCTET_BACKEND_SUITE(ScalingKernels);

}  // namespace
}  // namespace octet::test
