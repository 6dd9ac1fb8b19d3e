// Block quantize with NaN and infinities among the elements (numerics.md
// section 11): a block's scale comes from the largest |x| of its finite
// elements, NaN encodes to the NaN code of its sign and an infinity to the
// largest finite code of its sign; the tensor amax ignores NaN and counts
// infinities. Expectations come from the spec tables (element_oracle.hpp)
// and the scale rules written out here, for 1x32 E8M0 (RCEIL, FLOOR),
// 1x128 and 128x128 FP32 (power_of_two off and on), rowwise and transposed.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "backend_table.hpp"
#include "test_matrix.hpp"

namespace octet::test {
namespace {

struct Mode {
  const char* name;
  int32_t block_rows, block_cols, scale_dtype, rounding, power_of_two;
};

const Mode kModes[] = {
    {"1x32 e8m0 rceil", 1, 32, OCTET_DTYPE_E8M0, 0, 0}, {"1x32 e8m0 floor", 1, 32, OCTET_DTYPE_E8M0, 1, 0},
    {"1x128 fp32", 1, 128, OCTET_DTYPE_FP32, 0, 0},     {"1x128 fp32 pow2", 1, 128, OCTET_DTYPE_FP32, 0, 1},
    {"128x128 fp32", 128, 128, OCTET_DTYPE_FP32, 0, 0}, {"128x128 fp32 pow2", 128, 128, OCTET_DTYPE_FP32, 0, 1},
};

const Fp8Spec& spec_of(int32_t dtype) { return dtype == OCTET_DTYPE_E4M3 ? kE4M3Spec : kE5M2Spec; }

// The block multiplier (x * multiplier is the encoder's input) and the
// scale grid entry for a block whose finite amax is `amax`.
struct BlockScale {
  float multiplier;
  float scale_inv;
  uint8_t e8m0_code;
};

BlockScale block_scale(double amax, const Mode& m, int32_t dtype) {
  const double fp8_max = dtype == OCTET_DTYPE_E4M3 ? 448.0 : 57344.0;
  if (m.scale_dtype == OCTET_DTYPE_E8M0) {
    int exponent = 0;
    if (m.rounding == 0) {
      int e = 0;
      const double mantissa = std::frexp(amax / fp8_max, &e);
      exponent = mantissa == 0.5 ? e - 1 : e;
    } else if (amax != 0.0) {  // ilogb(0) is FP_ILOGB0: no exponent to take
      exponent = std::ilogb(amax) - (dtype == OCTET_DTYPE_E4M3 ? 8 : 15);
    }
    const int code = amax == 0.0 ? 0 : std::min(254, std::max(0, exponent + 127));
    return {float(std::ldexp(1.0, 127 - code)), float(std::ldexp(1.0, code - 127)), uint8_t(code)};
  }
  float scale = amax == 0.0 ? 1.0f : float(fp8_max / amax);
  if (m.power_of_two != 0) scale = float(std::ldexp(1.0, std::ilogb(scale)));
  return {scale, 1.0f / scale, 0};
}

uint8_t expected_code(float x, float multiplier, int32_t dtype) {
  const uint8_t sign = std::signbit(x) ? 0x80 : 0x00;
  if (std::isnan(x)) return sign | 0x7F;
  if (std::isinf(x)) return sign | uint8_t(spec_of(dtype).max_finite_magnitude);
  return fp8_expected_encode(x * multiplier, spec_of(dtype), true);
}

class BlockNonFinite : public BackendTableTest {
 protected:
  void SetUp() override {
    BackendTableTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    OCTET_REQUIRE_ENTRY(block_quantize);
  }

  struct Result {
    std::vector<uint8_t> codes, scales;
    float amax = 0.0f;
    octet_quantize_statistics stats{};
  };

  // Quantizes x [rows, cols] (transposed: its transpose) and checks the
  // codes and the scale grid against the rule; returns the result.
  Result quantize_and_check(const std::vector<float>& x, int64_t rows, int64_t cols, bool transposed, const Mode& m,
                            int32_t dtype, const std::string& where) {
    const int64_t out_rows = transposed ? cols : rows, out_cols = transposed ? rows : cols;
    const int64_t grid_rows = (out_rows + m.block_rows - 1) / m.block_rows;
    const int64_t grid_cols = (out_cols + m.block_cols - 1) / m.block_cols;
    const bool e8m0 = m.scale_dtype == OCTET_DTYPE_E8M0;
    Result r;
    r.codes.assign(std::size_t(out_rows * out_cols), 0xAB);
    r.scales.assign(std::size_t(grid_rows * grid_cols) * (e8m0 ? 1 : 4), 0xAB);
    std::vector<float> input = x;
    octet_block_quantize_args a{};
    a.struct_size = sizeof a;
    a.input = {input.data(), OCTET_DTYPE_FP32, 0, rows, cols, cols};
    a.transposed = transposed ? 1 : 0;
    a.out_dtype = dtype;
    a.block_rows = m.block_rows;
    a.block_cols = m.block_cols;
    a.scale_dtype = m.scale_dtype;
    a.e8m0_rounding = m.rounding;
    a.power_of_two = m.power_of_two;
    a.out = r.codes.data();
    a.scale_inv_out = r.scales.data();
    a.amax_out = &r.amax;
    a.stats_out = &r.stats;
    expect_success(api_->block_quantize(context_, &a));

    auto value = [&](int64_t i, int64_t j) {
      return transposed ? x[std::size_t(j * cols + i)] : x[std::size_t(i * cols + j)];
    };
    for (int64_t gr = 0; gr < grid_rows; ++gr) {
      for (int64_t gc = 0; gc < grid_cols; ++gc) {
        const int64_t i0 = gr * m.block_rows, i1 = std::min(out_rows, i0 + m.block_rows);
        const int64_t j0 = gc * m.block_cols, j1 = std::min(out_cols, j0 + m.block_cols);
        double amax = 0.0;
        for (int64_t i = i0; i < i1; ++i)
          for (int64_t j = j0; j < j1; ++j)
            if (std::isfinite(value(i, j))) amax = std::max(amax, std::fabs(double(value(i, j))));
        const BlockScale s = block_scale(amax, m, dtype);
        const std::size_t g = std::size_t(gr * grid_cols + gc);
        if (e8m0) {
          EXPECT_EQ(int(r.scales[g]), int(s.e8m0_code)) << where << " block " << g;
        } else {
          float got = 0.0f;
          std::memcpy(&got, &r.scales[g * 4], 4);
          EXPECT_EQ(float_bits(got), float_bits(s.scale_inv)) << where << " block " << g;
        }
        for (int64_t i = i0; i < i1; ++i) {
          for (int64_t j = j0; j < j1; ++j) {
            const uint8_t want = expected_code(value(i, j), s.multiplier, dtype);
            EXPECT_EQ(int(r.codes[std::size_t(i * out_cols + j)]), int(want))
                << where << " element (" << i << ", " << j << ") of value " << value(i, j);
          }
        }
      }
    }
    return r;
  }
};

// The case: 1000s and one NaN per block. Each finite value comes
// back as decode(q) * scale_inv within an eighth of 1000 (FP8 rounding, or
// FLOOR's clamp to 896), the NaN as a NaN.
TEST_P(BlockNonFinite, ThousandsWithOneNanDequantizeToThousandsAndOneNan) {
  const int64_t rows = 130, cols = 260;  // ragged for every block shape
  for (const Mode& m : kModes) {
    for (int32_t dtype : {OCTET_DTYPE_E4M3, OCTET_DTYPE_E5M2}) {
      for (bool transposed : {false, true}) {
        std::vector<float> x(std::size_t(rows * cols), 1000.0f);
        for (int64_t i = 0; i < rows; ++i) x[std::size_t(i * cols + (i * 7) % cols)] = i % 2 ? -NAN : NAN;
        const std::string where = std::string(m.name) + (dtype == OCTET_DTYPE_E4M3 ? " e4m3" : " e5m2") +
                                  (transposed ? " transposed" : " rowwise");
        const Result r = quantize_and_check(x, rows, cols, transposed, m, dtype, where);
        EXPECT_EQ(r.amax, 1000.0f) << where;
        EXPECT_EQ(r.stats.nan_count, uint64_t(rows)) << where;
        const int64_t out_cols = transposed ? rows : cols;
        const int64_t grid_cols = (out_cols + m.block_cols - 1) / m.block_cols;
        for (int64_t e = 0; e < rows * cols; ++e) {
          const int64_t i = e / out_cols, j = e % out_cols;
          const std::size_t g = std::size_t((i / m.block_rows) * grid_cols + j / m.block_cols);
          float scale_inv = 0.0f;
          if (m.scale_dtype == OCTET_DTYPE_E8M0) {
            scale_inv = oracle_e8m0_decode(r.scales[g]);
          } else {
            std::memcpy(&scale_inv, &r.scales[g * 4], 4);
          }
          const float back = oracle_fp8_decode(r.codes[std::size_t(e)], spec_of(dtype)) * scale_inv;
          const float original = transposed ? x[std::size_t(j * cols + i)] : x[std::size_t(i * cols + j)];
          if (std::isnan(original)) {
            ASSERT_TRUE(std::isnan(back)) << where << " element " << e;
          } else {
            ASSERT_LE(std::fabs(back - 1000.0f), 125.0f) << where << " element " << e << " came back as " << back;
          }
        }
      }
    }
  }
}

// In numbers, for E4M3 1x128 without power_of_two: scale 448/1000, every
// 1000 encodes to 448 (0x7E) and decodes to 448 * (1000/448).
TEST_P(BlockNonFinite, Fp32BlockOfThousandsAndANanKeepsTheScaleOfTheThousands) {
  std::vector<float> x(128, 1000.0f);
  x[5] = NAN;
  const Result r = quantize_and_check(x, 1, 128, false, kModes[2], OCTET_DTYPE_E4M3, "1x128");
  float scale_inv = 0.0f;
  std::memcpy(&scale_inv, r.scales.data(), 4);
  EXPECT_EQ(scale_inv, 1.0f / (448.0f / 1000.0f));
  EXPECT_EQ(int(r.codes[0]), 0x7E);
  EXPECT_EQ(int(r.codes[5]), 0x7F);
  EXPECT_NEAR(448.0f * scale_inv, 1000.0f, 1e-3f);
}

// Infinities: the finite values keep their scale, each infinity becomes the
// largest finite code of its sign (counted as saturated), the tensor amax
// is inf; a block of NaN only (or infinities only) has amax 0.
TEST_P(BlockNonFinite, InfinitiesSaturateAndAllNonFiniteBlocksTakeTheZeroAmaxScale) {
  const int64_t rows = 128, cols = 256;
  for (const Mode& m : kModes) {
    for (int32_t dtype : {OCTET_DTYPE_E4M3, OCTET_DTYPE_E5M2}) {
      for (bool transposed : {false, true}) {
        std::vector<float> x(std::size_t(rows * cols));
        for (int64_t i = 0; i < rows; ++i) {
          for (int64_t j = 0; j < cols; ++j) {
            float& v = x[std::size_t(i * cols + j)];
            if (j < 128) {
              v = float(std::ldexp(1.0 + double((i + j) % 8) / 8, (i + j) % 5));  // 1 .. 30
            } else {
              v = j % 3 == 0 ? -NAN : NAN;  // the right half: NaN only
            }
          }
          x[std::size_t(i * cols + (i % 128))] = i % 2 ? -INFINITY : INFINITY;
          if (i >= 64) x[std::size_t(i * cols + 200)] = INFINITY;  // with NaN only
        }
        const std::string where = std::string(m.name) + (dtype == OCTET_DTYPE_E4M3 ? " e4m3" : " e5m2") +
                                  (transposed ? " transposed" : " rowwise");
        const Result r = quantize_and_check(x, rows, cols, transposed, m, dtype, where);
        EXPECT_EQ(r.amax, INFINITY) << where;
        EXPECT_EQ(r.stats.amax, INFINITY) << where;
        EXPECT_EQ(r.stats.nan_count, uint64_t(rows * 128 - 64)) << where;
        EXPECT_GE(r.stats.saturated_count, uint64_t(rows + 64)) << where;
      }
    }
  }
}

OCTET_BACKEND_SUITE(BlockNonFinite);

}  // namespace
}  // namespace octet::test
