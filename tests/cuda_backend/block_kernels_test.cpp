// The cuda plugin's ABI 1.1 entries (quantize_with_statistics,
// block_quantize, block_dequantize, block_gemm) against the reference's
// table: the same input bytes go to both (host memory for the reference,
// device memory for cuda) and every output byte is compared: codes, scale
// grids, amax, statistics, dequantized values, GEMM outputs (bit for bit;
// with GELU included, both sides using octet_math_tanhf). Bad
// arguments must be refused with the status and a message naming the
// argument. Every test skips without a usable device.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "device_table.hpp"
#include "gemm_compare.hpp"

namespace {

using cuda_test::DeviceBuffer;
using cuda_test::Table;
using cuda_test::view;

uint32_t bits_of(float v) {
  uint32_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}
float float_of(uint32_t b) {
  float v;
  std::memcpy(&v, &b, sizeof v);
  return v;
}
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Values over a wide exponent range with specials (NaN both signs, a
// signalling NaN, infinities, zeros, FP32 subnormals, FP8 boundaries).
std::vector<float> mixed_values(size_t n, uint32_t seed, double special_rate, int min_exp = -40, int max_exp = 40) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> mantissa(-2.0f, 2.0f);
  std::uniform_int_distribution<int> exponent(min_exp, max_exp);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const float specials[] = {NAN, -NAN, INFINITY, -INFINITY, 0.0f, -0.0f, float_of(1u), float_of(0x80000005u),
                            1e-30f, 448.0f, 464.0f, 57344.0f, 61440.0f, FLT_MAX, float_of(0x7F800001u)};
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    v[i] = u(rng) < special_rate ? specials[rng() % (sizeof specials / sizeof specials[0])]
                                 : std::ldexp(mantissa(rng), exponent(rng));
  }
  return v;
}

// FP32 values stored as dtype (BF16/FP16 by round to nearest even through
// the reference's convert, so both tables see the same bytes).
std::vector<uint8_t> as_dtype(const std::vector<float>& v, int32_t dtype) {
  std::vector<uint8_t> out(v.size() * cuda_test::element_bytes(dtype));
  if (dtype == OCTET_DTYPE_FP32) {
    std::memcpy(out.data(), v.data(), out.size());
    return out;
  }
  Table ref = Table::reference();
  octet_matrix_view in = view(const_cast<float*>(v.data()), OCTET_DTYPE_FP32, 1, int64_t(v.size()));
  octet_matrix_view o = view(out.data(), dtype, 1, int64_t(v.size()));
  EXPECT_EQ(ref.api().convert(ref.context(), &in, &o, 1), OCTET_STATUS_SUCCESS) << ref.last_error();
  return out;
}

// First differing byte, or -1.
int64_t first_difference(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  if (a.size() != b.size()) return 0;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i]) return int64_t(i);
  return -1;
}

#define EXPECT_SAME_BYTES(got, expected, what)                                                             \
  do {                                                                                                     \
    const int64_t at_ = first_difference(got, expected);                                                   \
    EXPECT_EQ(at_, -1) << (what) << ": first difference at byte " << at_ << " (cuda "                       \
                       << (at_ >= 0 && size_t(at_) < (got).size() ? int((got)[size_t(at_)]) : -1)          \
                       << ", reference "                                                                   \
                       << (at_ >= 0 && size_t(at_) < (expected).size() ? int((expected)[size_t(at_)]) : -1) \
                       << ") of " << (expected).size();                                                    \
  } while (0)

// ---- block quantize ----

struct BlockOutputs {
  std::vector<uint8_t> out, scales, amax, stats;
};

// Runs block_quantize on both tables with `input` (bytes of a rows x cols
// matrix with leading dimension ld) and the other fields of `args`; every
// output buffer starts as 0xAB on both sides.
void compare_block_quantize(const std::vector<uint8_t>& input, octet_block_quantize_args args, bool want_amax,
                            bool want_stats, const std::string& what) {
  Table& cuda = Table::cuda();
  Table ref = Table::reference();
  ASSERT_TRUE(ref.available());
  const bool transposed = args.transposed != 0;
  const int64_t rows = transposed ? args.input.cols : args.input.rows;
  const int64_t cols = transposed ? args.input.rows : args.input.cols;
  const size_t blocks = size_t(ceil_div(rows, args.block_rows) * ceil_div(cols, args.block_cols));
  const size_t scale_bytes = blocks * (args.scale_dtype == OCTET_DTYPE_E8M0 ? 1 : 4);
  const size_t out_bytes = size_t(rows * cols);

  BlockOutputs expected{std::vector<uint8_t>(out_bytes, 0xAB), std::vector<uint8_t>(scale_bytes, 0xAB),
                        std::vector<uint8_t>(4, 0xAB), std::vector<uint8_t>(sizeof(octet_quantize_statistics), 0xAB)};
  octet_block_quantize_args r = args;
  std::vector<uint8_t> host_input = input;
  r.input.data = host_input.empty() ? nullptr : host_input.data();
  r.out = expected.out.empty() ? nullptr : expected.out.data();
  r.scale_inv_out = expected.scales.empty() ? static_cast<void*>(expected.amax.data()) : expected.scales.data();
  r.amax_out = want_amax ? reinterpret_cast<float*>(expected.amax.data()) : nullptr;
  r.stats_out = want_stats ? reinterpret_cast<octet_quantize_statistics*>(expected.stats.data()) : nullptr;
  // An empty grid still needs a non-NULL pointer (the entries require one).
  if (r.out == nullptr) r.out = expected.amax.data();
  ASSERT_EQ(ref.api().block_quantize(ref.context(), &r), OCTET_STATUS_SUCCESS) << what << ": " << ref.last_error();

  DeviceBuffer in(input.data(), input.size());
  DeviceBuffer out(out_bytes), scales(scale_bytes), amax(4), stats(sizeof(octet_quantize_statistics));
  const std::vector<uint8_t> fill_out(out_bytes, 0xAB), fill_scales(scale_bytes, 0xAB), fill4(4, 0xAB),
      fill_stats(sizeof(octet_quantize_statistics), 0xAB);
  out.upload(fill_out.data(), out_bytes);
  scales.upload(fill_scales.data(), scale_bytes);
  amax.upload(fill4.data(), 4);
  stats.upload(fill_stats.data(), fill_stats.size());
  octet_block_quantize_args c = args;
  c.input.data = input.empty() ? nullptr : in.get();
  c.out = static_cast<uint8_t*>(out.get());
  c.scale_inv_out = scales.get();
  c.amax_out = want_amax ? static_cast<float*>(amax.get()) : nullptr;
  c.stats_out = want_stats ? static_cast<octet_quantize_statistics*>(stats.get()) : nullptr;
  ASSERT_EQ(cuda.api().block_quantize(cuda.context(), &c), OCTET_STATUS_SUCCESS) << what << ": " << cuda.last_error();
  ASSERT_EQ(cuda.synchronize(), OCTET_STATUS_SUCCESS) << cuda.last_error();

  EXPECT_SAME_BYTES(out.download(), expected.out, what + ": codes");
  std::vector<uint8_t> got_scales = scales.download();
  got_scales.resize(scale_bytes);
  EXPECT_SAME_BYTES(got_scales, expected.scales, what + ": scales");
  if (want_amax) EXPECT_SAME_BYTES(amax.download(), expected.amax, what + ": amax");
  if (want_stats) {
    const auto got = stats.download_as<octet_quantize_statistics>();
    octet_quantize_statistics e;
    std::memcpy(&e, expected.stats.data(), sizeof e);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].nan_count, e.nan_count) << what;
    EXPECT_EQ(got[0].saturated_count, e.saturated_count) << what;
    EXPECT_EQ(got[0].flushed_count, e.flushed_count) << what;
    EXPECT_EQ(bits_of(got[0].amax), bits_of(e.amax)) << what;
    EXPECT_EQ(got[0].reserved, e.reserved) << what;
  }
}

octet_block_quantize_args block_args(int32_t in_dtype, int64_t rows, int64_t cols, int64_t ld, int32_t out_dtype,
                                     int32_t br, int32_t bc, int32_t scale_dtype) {
  octet_block_quantize_args a{};
  a.struct_size = sizeof a;
  a.input = view(nullptr, in_dtype, rows, cols, ld);
  a.out_dtype = out_dtype;
  a.block_rows = br;
  a.block_cols = bc;
  a.scale_dtype = scale_dtype;
  return a;
}

std::string describe(const octet_block_quantize_args& a) {
  return std::to_string(a.input.rows) + "x" + std::to_string(a.input.cols) + " ld " + std::to_string(a.input.ld) +
         " in " + std::to_string(a.input.dtype) + " out " + std::to_string(a.out_dtype) + " block " +
         std::to_string(a.block_rows) + "x" + std::to_string(a.block_cols) + " scale " +
         std::to_string(a.scale_dtype) + " rounding " + std::to_string(a.e8m0_rounding) + " pow2 " +
         std::to_string(a.power_of_two) + " eps " + std::to_string(a.amax_epsilon) + " transposed " +
         std::to_string(a.transposed);
}

struct Shape {
  int64_t rows, cols, ld;
};

TEST(CudaBlockKernels, Mxfp8MatchesTheReference) {
  OCTET_REQUIRE_CUDA_TABLE();
  const Shape shapes[] = {{1481, 677, 677}, {33, 95, 128}, {64, 64, 64}, {1, 1, 1}, {3, 200, 211}};
  uint32_t seed = 11;
  for (const Shape& s : shapes) {
    const std::vector<float> values = mixed_values(size_t(s.rows * s.ld), seed++, 0.01);
    for (int32_t in_dtype : {OCTET_DTYPE_FP32, OCTET_DTYPE_BF16, OCTET_DTYPE_FP16}) {
      const std::vector<uint8_t> input = as_dtype(values, in_dtype);
      for (int32_t out_dtype : {OCTET_DTYPE_E4M3, OCTET_DTYPE_E5M2}) {
        for (int32_t rounding : {0, 1}) {
          for (int32_t transposed : {0, 1}) {
            for (auto block : {std::pair<int32_t, int32_t>{1, 32}, std::pair<int32_t, int32_t>{32, 1}}) {
              octet_block_quantize_args a = block_args(in_dtype, s.rows, s.cols, s.ld, out_dtype, block.first,
                                                       block.second, OCTET_DTYPE_E8M0);
              a.e8m0_rounding = rounding;
              a.transposed = transposed;
              compare_block_quantize(input, a, true, true, describe(a));
              if (HasFatalFailure()) return;
            }
          }
        }
      }
    }
  }
}

TEST(CudaBlockKernels, Fp32BlocksMatchTheReference) {
  OCTET_REQUIRE_CUDA_TABLE();
  const Shape shapes[] = {{1481, 677, 700}, {33, 95, 95}, {256, 384, 384}, {129, 1, 1}};
  uint32_t seed = 101;
  for (const Shape& s : shapes) {
    const std::vector<float> values = mixed_values(size_t(s.rows * s.ld), seed++, 0.005);
    for (int32_t in_dtype : {OCTET_DTYPE_FP32, OCTET_DTYPE_BF16, OCTET_DTYPE_FP16}) {
      const std::vector<uint8_t> input = as_dtype(values, in_dtype);
      for (int32_t out_dtype : {OCTET_DTYPE_E4M3, OCTET_DTYPE_E5M2}) {
        for (auto block : {std::pair<int32_t, int32_t>{1, 128}, std::pair<int32_t, int32_t>{128, 128}}) {
          for (int32_t pow2 : {0, 1}) {
            for (float eps : {0.0f, 1e-4f}) {
              for (int32_t transposed : {0, 1}) {
                octet_block_quantize_args a = block_args(in_dtype, s.rows, s.cols, s.ld, out_dtype, block.first,
                                                         block.second, OCTET_DTYPE_FP32);
                a.power_of_two = pow2;
                a.amax_epsilon = eps;
                a.transposed = transposed;
                compare_block_quantize(input, a, true, true, describe(a));
                if (HasFatalFailure()) return;
              }
            }
          }
        }
      }
    }
  }
}

// Blocks that are all zero, all NaN, all tiny (the RCEIL quotient
// underflows), all infinite; odd block shapes; no amax/statistics asked.
TEST(CudaBlockKernels, SpecialBlocksMatchTheReference) {
  OCTET_REQUIRE_CUDA_TABLE();
  const int64_t rows = 64, cols = 256;
  std::vector<float> v(size_t(rows * cols), 0.0f);
  for (int64_t c = 0; c < cols; ++c) {
    v[size_t(1 * cols + c)] = c % 2 ? NAN : -NAN;
    v[size_t(2 * cols + c)] = float_of(1u + uint32_t(c));  // FP32 subnormals
    v[size_t(3 * cols + c)] = c % 3 ? INFINITY : -INFINITY;
    v[size_t(4 * cols + c)] = c == 7 ? NAN : float(c) - 100.0f;
    v[size_t(5 * cols + c)] = c % 5 == 0 ? -0.0f : 1e-38f * float(c);
  }
  const std::vector<float> rest = mixed_values(size_t((rows - 6) * cols), 5, 0.05, -140, 130);
  std::copy(rest.begin(), rest.end(), v.begin() + 6 * cols);
  const std::vector<uint8_t> input = as_dtype(v, OCTET_DTYPE_FP32);
  struct Block {
    int32_t br, bc, scale_dtype;
  };
  for (const Block b : {Block{1, 32, OCTET_DTYPE_E8M0}, Block{1, 128, OCTET_DTYPE_FP32}, Block{128, 128, OCTET_DTYPE_FP32},
                        Block{3, 7, OCTET_DTYPE_E8M0}, Block{1, 1, OCTET_DTYPE_E8M0}, Block{1000, 1000, OCTET_DTYPE_FP32},
                        Block{64, 64, OCTET_DTYPE_E8M0}}) {
    for (int32_t out_dtype : {OCTET_DTYPE_E4M3, OCTET_DTYPE_E5M2}) {
      for (int32_t variant : {0, 1}) {
        for (int32_t transposed : {0, 1}) {
          octet_block_quantize_args a =
              block_args(OCTET_DTYPE_FP32, rows, cols, cols, out_dtype, b.br, b.bc, b.scale_dtype);
          a.e8m0_rounding = variant;
          a.power_of_two = variant;
          a.amax_epsilon = variant ? 0.0f : float_of(1u);
          a.transposed = transposed;
          compare_block_quantize(input, a, variant == 0, variant == 0, describe(a));
          if (HasFatalFailure()) return;
        }
      }
    }
  }
}

TEST(CudaBlockKernels, EmptyMatricesGiveZeroAmaxAndStatistics) {
  OCTET_REQUIRE_CUDA_TABLE();
  for (const Shape s : {Shape{0, 5, 5}, Shape{7, 0, 0}, Shape{0, 0, 0}}) {
    for (int32_t transposed : {0, 1}) {
      octet_block_quantize_args a =
          block_args(OCTET_DTYPE_FP32, s.rows, s.cols, s.ld, OCTET_DTYPE_E4M3, 1, 32, OCTET_DTYPE_E8M0);
      a.transposed = transposed;
      compare_block_quantize({}, a, true, true, describe(a));
    }
  }
}

// ---- block dequantize ----

TEST(CudaBlockKernels, BlockDequantizeMatchesTheReference) {
  OCTET_REQUIRE_CUDA_TABLE();
  Table& cuda = Table::cuda();
  Table ref = Table::reference();
  std::mt19937 rng(3);
  struct Case {
    int64_t rows, cols, in_ld, out_ld;
    int32_t br, bc, scale_dtype;
  };
  const Case cases[] = {{1481, 677, 677, 677, 1, 32, OCTET_DTYPE_E8M0},  {33, 95, 100, 97, 32, 1, OCTET_DTYPE_E8M0},
                        {300, 260, 260, 270, 128, 128, OCTET_DTYPE_FP32}, {5, 300, 301, 300, 1, 128, OCTET_DTYPE_FP32},
                        {256, 256, 256, 256, 1, 1, OCTET_DTYPE_E8M0},     {0, 4, 4, 4, 1, 32, OCTET_DTYPE_E8M0}};
  for (const Case& k : cases) {
    std::vector<uint8_t> codes(size_t(k.rows * k.in_ld));
    for (size_t i = 0; i < codes.size(); ++i) codes[i] = static_cast<uint8_t>(k.br == 1 && k.bc == 1 ? i : rng());
    const size_t blocks = size_t(ceil_div(k.rows, k.br) * ceil_div(k.cols, k.bc));
    std::vector<uint8_t> scales;
    if (k.scale_dtype == OCTET_DTYPE_E8M0) {
      scales.resize(blocks);
      // Every code when the blocks are 1x1 (row r gets code r); else a range
      // with the NaN code and both ends mixed in.
      for (size_t i = 0; i < blocks; ++i) {
        scales[i] = k.br == 1 && k.bc == 1 ? uint8_t(i / size_t(k.cols))
                                           : (i % 17 == 0 ? uint8_t(0xFF) : i % 19 == 0 ? uint8_t(i % 2 ? 0 : 0xFE)
                                                                                        : uint8_t(100 + rng() % 50));
      }
    } else {
      std::vector<float> f = mixed_values(blocks, 9, 0.1, -20, 20);
      scales = as_dtype(f, OCTET_DTYPE_FP32);
    }
    for (int32_t in_dtype : {OCTET_DTYPE_E4M3, OCTET_DTYPE_E5M2}) {
      for (int32_t out_dtype : {OCTET_DTYPE_FP32, OCTET_DTYPE_BF16, OCTET_DTYPE_FP16}) {
        const size_t out_bytes = size_t(k.rows * k.out_ld) * cuda_test::element_bytes(out_dtype);
        std::vector<uint8_t> expected(out_bytes, 0xAB);
        octet_block_dequantize_args args{};
        args.struct_size = sizeof args;
        args.input = view(codes.data(), in_dtype, k.rows, k.cols, k.in_ld);
        args.scale_inv = scales.data();
        args.scale_dtype = k.scale_dtype;
        args.block_rows = k.br;
        args.block_cols = k.bc;
        args.output = view(expected.data(), out_dtype, k.rows, k.cols, k.out_ld);
        ASSERT_EQ(ref.api().block_dequantize(ref.context(), &args), OCTET_STATUS_SUCCESS) << ref.last_error();

        DeviceBuffer in(codes.data(), codes.size()), grid(scales.data(), scales.size()), out(out_bytes);
        const std::vector<uint8_t> fill(out_bytes, 0xAB);
        out.upload(fill.data(), out_bytes);
        args.input.data = in.get();
        args.scale_inv = grid.get();
        args.output.data = out.get();
        ASSERT_EQ(cuda.api().block_dequantize(cuda.context(), &args), OCTET_STATUS_SUCCESS) << cuda.last_error();
        EXPECT_SAME_BYTES(out.download(), expected,
                          "block_dequantize " + std::to_string(k.rows) + "x" + std::to_string(k.cols) + " block " +
                              std::to_string(k.br) + "x" + std::to_string(k.bc) + " in " + std::to_string(in_dtype) +
                              " out " + std::to_string(out_dtype));
      }
    }
  }
}

// ---- block GEMM ----

std::vector<uint8_t> random_codes(size_t n, int32_t dtype, std::mt19937& rng, double special_rate) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const uint8_t e4m3_specials[] = {0x7F, 0xFF, 0x00, 0x80, 0x7E, 0xFE, 0x01};
  const uint8_t e5m2_specials[] = {0x7C, 0xFC, 0x7D, 0xFF, 0x00, 0x80, 0x7B};
  std::vector<uint8_t> v(n);
  for (auto& c : v) {
    if (u(rng) < special_rate) {
      c = dtype == OCTET_DTYPE_E4M3 ? e4m3_specials[rng() % 7] : e5m2_specials[rng() % 7];
    } else {
      // Finite codes only: E4M3 0x7F/0xFF and E5M2 0x7C-0x7F/0xFC-0xFF are not.
      do c = static_cast<uint8_t>(rng());
      while (dtype == OCTET_DTYPE_E4M3 ? (c & 0x7F) == 0x7F : (c & 0x7F) >= 0x7C);
    }
  }
  return v;
}

struct GemmCase {
  int64_t m, n, k;
  int32_t a_br, b_br, bk, scale_dtype, d_dtype;
  float alpha, beta;
  bool bias, gelu;
  double special_rate;
};

void compare_block_gemm(const GemmCase& c, int32_t da, int32_t db, std::mt19937& rng) {
  Table& cuda = Table::cuda();
  Table ref = Table::reference();
  const int64_t lda = c.k + 5, ldb = c.k, ldd = c.n + 2;
  const std::vector<uint8_t> a = random_codes(size_t(std::max<int64_t>(c.m * lda, 1)), da, rng, c.special_rate);
  const std::vector<uint8_t> b = random_codes(size_t(std::max<int64_t>(c.n * ldb, 1)), db, rng, c.special_rate);
  const int64_t kb = ceil_div(c.k, c.bk);
  const size_t sa_n = size_t(std::max<int64_t>(ceil_div(c.m, c.a_br) * kb, 1));
  const size_t sb_n = size_t(std::max<int64_t>(ceil_div(c.n, c.b_br) * kb, 1));
  const bool e8m0 = c.scale_dtype == OCTET_DTYPE_E8M0;
  std::vector<uint8_t> sa, sb;
  if (e8m0) {
    sa.resize(sa_n);
    sb.resize(sb_n);
    for (auto& s : sa) s = uint8_t(115 + rng() % 20);
    for (auto& s : sb) s = uint8_t(115 + rng() % 20);
    if (c.special_rate > 0) sa[0] = 0xFF;
  } else {
    sa = as_dtype(mixed_values(sa_n, uint32_t(rng()), c.special_rate, -8, 8), OCTET_DTYPE_FP32);
    sb = as_dtype(mixed_values(sb_n, uint32_t(rng()), c.special_rate, -8, 8), OCTET_DTYPE_FP32);
  }
  const std::vector<uint8_t> d0 =
      as_dtype(mixed_values(size_t(c.m * ldd), uint32_t(rng()), c.special_rate, -4, 4), c.d_dtype);
  const std::vector<uint8_t> bias = as_dtype(mixed_values(size_t(c.n), uint32_t(rng()), 0.0, -4, 4), OCTET_DTYPE_BF16);

  octet_block_gemm_args args{};
  args.struct_size = sizeof args;
  args.m = c.m;
  args.n = c.n;
  args.k = c.k;
  args.scale_dtype = c.scale_dtype;
  args.a_block_rows = c.a_br;
  args.a_block_cols = c.bk;
  args.b_block_rows = c.b_br;
  args.b_block_cols = c.bk;
  args.alpha = c.alpha;
  args.beta = c.beta;
  args.epilogue = c.gelu ? OCTET_EPILOGUE_GELU : OCTET_EPILOGUE_NONE;

  std::vector<uint8_t> a_host = a, b_host = b, sa_host = sa, sb_host = sb, d_ref = d0, bias_host = bias;
  octet_block_gemm_args r = args;
  r.a = view(a_host.data(), da, c.m, c.k, lda);
  r.b = view(b_host.data(), db, c.n, c.k, ldb);
  r.a_scale_inv = sa_host.data();
  r.b_scale_inv = sb_host.data();
  r.d = view(d_ref.data(), c.d_dtype, c.m, c.n, ldd);
  if (c.bias) r.bias = view(bias_host.data(), OCTET_DTYPE_BF16, 1, c.n);
  ASSERT_EQ(ref.api().block_gemm(ref.context(), &r), OCTET_STATUS_SUCCESS) << ref.last_error();

  DeviceBuffer a_dev(a.data(), a.size()), b_dev(b.data(), b.size()), sa_dev(sa.data(), sa.size()),
      sb_dev(sb.data(), sb.size()), d_dev(d0.data(), d0.size()), bias_dev(bias.data(), bias.size());
  octet_block_gemm_args g = args;
  g.a = view(a_dev.get(), da, c.m, c.k, lda);
  g.b = view(b_dev.get(), db, c.n, c.k, ldb);
  g.a_scale_inv = sa_dev.get();
  g.b_scale_inv = sb_dev.get();
  g.d = view(d_dev.get(), c.d_dtype, c.m, c.n, ldd);
  if (c.bias) g.bias = view(bias_dev.get(), OCTET_DTYPE_BF16, 1, c.n);
  ASSERT_EQ(cuda.api().block_gemm(cuda.context(), &g), OCTET_STATUS_SUCCESS) << cuda.last_error();
  const std::vector<uint8_t> got = d_dev.download();

  const std::string what = "block_gemm " + std::to_string(c.m) + "x" + std::to_string(c.n) + "x" +
                           std::to_string(c.k) + " a " + std::to_string(da) + " b " + std::to_string(db) +
                           " scale " + std::to_string(c.scale_dtype) + " blocks " + std::to_string(c.a_br) + "/" +
                           std::to_string(c.b_br) + "x" + std::to_string(c.bk) + " d " + std::to_string(c.d_dtype) +
                           (c.gelu ? " gelu" : "") + (c.bias ? " bias" : "");
  // GELU included: both sides use octet_math_tanhf (octet_math.h). A NaN
  // matches any NaN (gemm_compare.hpp).
  const int64_t at = octet_cuda_test::first_gemm_difference(got, d_ref, c.d_dtype);
  EXPECT_EQ(at, -1) << what << ": first differing element " << at << " of D";
}

TEST(CudaBlockKernels, BlockGemmMatchesTheReference) {
  OCTET_REQUIRE_CUDA_TABLE();
  const GemmCase cases[] = {
      {37, 29, 100, 1, 1, 32, OCTET_DTYPE_E8M0, OCTET_DTYPE_FP32, 1.0f, 0.0f, false, false, 0.0},
      {256, 192, 512, 1, 1, 32, OCTET_DTYPE_E8M0, OCTET_DTYPE_BF16, 1.0f, 0.0f, false, false, 0.0},
      {130, 70, 300, 1, 128, 128, OCTET_DTYPE_FP32, OCTET_DTYPE_FP32, 0.5f, 1.0f, true, false, 0.0},
      {200, 131, 384, 128, 128, 128, OCTET_DTYPE_FP32, OCTET_DTYPE_FP16, -1.5f, 0.25f, true, false, 0.0},
      {65, 66, 67, 2, 3, 5, OCTET_DTYPE_FP32, OCTET_DTYPE_FP32, 1.0f, 0.0f, false, false, 0.02},
      {64, 64, 96, 1, 1, 32, OCTET_DTYPE_E8M0, OCTET_DTYPE_BF16, 2.0f, -1.0f, true, false, 0.02},
      {33, 17, 0, 1, 1, 32, OCTET_DTYPE_E8M0, OCTET_DTYPE_FP32, 1.0f, 3.0f, true, false, 0.0},
      {70, 50, 160, 1, 128, 128, OCTET_DTYPE_FP32, OCTET_DTYPE_FP32, 1.0f, 0.0f, true, true, 0.0},
      {70, 50, 160, 1, 1, 32, OCTET_DTYPE_E8M0, OCTET_DTYPE_BF16, 1.0f, 0.5f, false, true, 0.01},
      {0, 5, 32, 1, 1, 32, OCTET_DTYPE_E8M0, OCTET_DTYPE_FP32, 1.0f, 0.0f, false, false, 0.0},
  };
  std::mt19937 rng(21);
  for (const GemmCase& c : cases) {
    for (auto pair : {std::pair<int32_t, int32_t>{OCTET_DTYPE_E4M3, OCTET_DTYPE_E4M3},
                      std::pair<int32_t, int32_t>{OCTET_DTYPE_E4M3, OCTET_DTYPE_E5M2},
                      std::pair<int32_t, int32_t>{OCTET_DTYPE_E5M2, OCTET_DTYPE_E5M2}}) {
      compare_block_gemm(c, pair.first, pair.second, rng);
      if (HasFatalFailure()) return;
    }
  }
}

// ---- quantize with statistics ----

TEST(CudaBlockKernels, QuantizeWithStatisticsMatchesTheReference) {
  OCTET_REQUIRE_CUDA_TABLE();
  Table& cuda = Table::cuda();
  Table ref = Table::reference();
  const Shape shapes[] = {{1481, 677, 680}, {33, 95, 95}, {0, 8, 8}};
  uint32_t seed = 77;
  for (const Shape& s : shapes) {
    const std::vector<float> values = mixed_values(size_t(s.rows * s.ld), seed++, 0.01, -30, 30);
    for (int32_t in_dtype : {OCTET_DTYPE_FP32, OCTET_DTYPE_BF16, OCTET_DTYPE_FP16}) {
      const std::vector<uint8_t> input = as_dtype(values, in_dtype);
      for (int32_t out_dtype : {OCTET_DTYPE_E4M3, OCTET_DTYPE_E5M2}) {
        for (int32_t saturate : {0, 1}) {
          for (float scale : {1.0f, 1024.0f, 1e-6f}) {
            const size_t n = size_t(s.rows * s.cols);
            std::vector<uint8_t> in_host = input, rowwise(n, 0xAB), colwise(n, 0xAB);
            float scale_host = scale, scale_inv = -1.0f, amax = -1.0f;
            octet_quantize_args args{};
            args.struct_size = sizeof args;
            args.input = view(in_host.empty() ? nullptr : in_host.data(), in_dtype, s.rows, s.cols, s.ld);
            args.out_dtype = out_dtype;
            args.saturate = saturate;
            args.scale = &scale_host;
            args.rowwise_out = rowwise.data();
            args.columnwise_out = colwise.data();
            args.scale_inv_out = &scale_inv;
            args.amax_out = &amax;
            octet_quantize_statistics expected{};
            ASSERT_EQ(ref.api().quantize_with_statistics(ref.context(), &args, &expected), OCTET_STATUS_SUCCESS)
                << ref.last_error();

            DeviceBuffer in_dev(input.data(), input.size()), scale_dev(&scale, 4), row_dev(n), col_dev(n),
                inv_dev(4), amax_dev(4), stats_dev(sizeof(octet_quantize_statistics));
            octet_quantize_args c = args;
            c.input.data = input.empty() ? nullptr : in_dev.get();
            c.scale = static_cast<const float*>(scale_dev.get());
            c.rowwise_out = static_cast<uint8_t*>(row_dev.get());
            c.columnwise_out = static_cast<uint8_t*>(col_dev.get());
            c.scale_inv_out = static_cast<float*>(inv_dev.get());
            c.amax_out = static_cast<float*>(amax_dev.get());
            ASSERT_EQ(cuda.api().quantize_with_statistics(
                          cuda.context(), &c, static_cast<octet_quantize_statistics*>(stats_dev.get())),
                      OCTET_STATUS_SUCCESS)
                << cuda.last_error();
            const std::string what = std::to_string(s.rows) + "x" + std::to_string(s.cols) + " in " +
                                     std::to_string(in_dtype) + " out " + std::to_string(out_dtype) + " saturate " +
                                     std::to_string(saturate) + " scale " + std::to_string(scale);
            const auto stats = stats_dev.download_as<octet_quantize_statistics>();
            ASSERT_EQ(stats.size(), 1u);
            EXPECT_EQ(stats[0].nan_count, expected.nan_count) << what;
            EXPECT_EQ(stats[0].saturated_count, expected.saturated_count) << what;
            EXPECT_EQ(stats[0].flushed_count, expected.flushed_count) << what;
            EXPECT_EQ(bits_of(stats[0].amax), bits_of(expected.amax)) << what;
            EXPECT_EQ(stats[0].reserved, 0u) << what;
            std::vector<uint8_t> got_row = row_dev.download(), got_col = col_dev.download();
            got_row.resize(n);
            got_col.resize(n);
            EXPECT_SAME_BYTES(got_row, rowwise, what + ": rowwise codes");
            EXPECT_SAME_BYTES(got_col, colwise, what + ": columnwise codes");
            EXPECT_EQ(bits_of(inv_dev.download_as<float>().at(0)), bits_of(scale_inv)) << what;
            EXPECT_EQ(bits_of(amax_dev.download_as<float>().at(0)), bits_of(amax)) << what;
          }
        }
      }
    }
  }
}

// ---- capabilities and bad arguments ----

TEST(CudaBlockKernels, CapabilitiesDeclareTheBlockModesAndEntries) {
  OCTET_REQUIRE_CUDA_TABLE();
  const Table& cuda = Table::cuda();
  const uint32_t modes = cuda.caps().scaling_modes;
  EXPECT_NE(modes & OCTET_SCALING_PER_TENSOR, 0u);
  // MXFP8 only on SM 10.x and newer (the device string ends "(SM <major>.<minor>)").
  const std::string device = cuda.caps().device;
  const size_t sm = device.rfind("(SM ");
  ASSERT_NE(sm, std::string::npos) << device;
  const int major = std::atoi(device.c_str() + sm + 4);
  EXPECT_EQ((modes & OCTET_SCALING_MXFP8_1X32) != 0u, major >= 10) << device;
  EXPECT_NE(modes & OCTET_SCALING_BLOCK_1X128, 0u);
  EXPECT_NE(modes & OCTET_SCALING_BLOCK_128X128, 0u);
  EXPECT_NE(cuda.api().quantize_with_statistics, nullptr);
  EXPECT_NE(cuda.api().block_quantize, nullptr);
  EXPECT_NE(cuda.api().block_dequantize, nullptr);
  EXPECT_NE(cuda.api().block_gemm, nullptr);
}

// Both tables refuse; cuda with `status` and a message containing `needle`.
template <typename Call>
void expect_refused(Call&& call, int32_t status, const std::string& needle, const std::string& what) {
  Table& cuda = Table::cuda();
  Table ref = Table::reference();
  cuda.clear_errors();
  EXPECT_EQ(call(cuda), status) << what;
  EXPECT_NE(cuda.last_error().find(needle), std::string::npos) << what << ": message was: " << cuda.last_error();
  EXPECT_NE(call(ref), OCTET_STATUS_SUCCESS) << what << " (the reference accepted it)";
}

TEST(CudaBlockKernels, BadBlockQuantizeArgumentsAreRefused) {
  OCTET_REQUIRE_CUDA_TABLE();
  DeviceBuffer buffer(4096);
  struct Bad {
    std::string needle;
    void (*edit)(octet_block_quantize_args&);
  };
  const Bad bad[] = {
      {"struct_size", [](octet_block_quantize_args& a) { a.struct_size = 8; }},
      {"args->input.dtype", [](octet_block_quantize_args& a) { a.input.dtype = OCTET_DTYPE_E4M3; }},
      {"ld >= cols", [](octet_block_quantize_args& a) { a.input.ld = 3; }},
      {"args->out_dtype", [](octet_block_quantize_args& a) { a.out_dtype = OCTET_DTYPE_BF16; }},
      {"is 0x32 but a block", [](octet_block_quantize_args& a) { a.block_rows = 0; }},
      {"args->scale_dtype", [](octet_block_quantize_args& a) { a.scale_dtype = OCTET_DTYPE_FP16; }},
      {"args->e8m0_rounding", [](octet_block_quantize_args& a) { a.e8m0_rounding = 2; }},
      {"args->out is NULL", [](octet_block_quantize_args& a) { a.out = nullptr; }},
      {"args->scale_inv_out is NULL", [](octet_block_quantize_args& a) { a.scale_inv_out = nullptr; }},
  };
  for (const Bad& b : bad) {
    expect_refused(
        [&](Table& t) {
          // The same (device) pointers for both: the checks run before any access.
          octet_block_quantize_args a =
              block_args(OCTET_DTYPE_FP32, 4, 8, 8, OCTET_DTYPE_E4M3, 1, 32, OCTET_DTYPE_E8M0);
          a.input.data = buffer.get();
          a.out = static_cast<uint8_t*>(buffer.get());
          a.scale_inv_out = buffer.get();
          b.edit(a);
          return t.api().block_quantize(t.context(), &a);
        },
        OCTET_STATUS_INVALID_ARGUMENT, b.needle, "block_quantize: " + b.needle);
  }
  Table& cuda = Table::cuda();
  EXPECT_EQ(cuda.api().block_quantize(cuda.context(), nullptr), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(cuda.last_error().find("args is NULL"), std::string::npos) << cuda.last_error();
}

TEST(CudaBlockKernels, BadBlockDequantizeArgumentsAreRefused) {
  OCTET_REQUIRE_CUDA_TABLE();
  DeviceBuffer buffer(4096);
  struct Bad {
    std::string needle;
    void (*edit)(octet_block_dequantize_args&);
  };
  const Bad bad[] = {
      {"struct_size", [](octet_block_dequantize_args& a) { a.struct_size = 8; }},
      {"args->input.dtype", [](octet_block_dequantize_args& a) { a.input.dtype = OCTET_DTYPE_FP32; }},
      {"args->output.dtype", [](octet_block_dequantize_args& a) { a.output.dtype = OCTET_DTYPE_E5M2; }},
      {"same rows and cols", [](octet_block_dequantize_args& a) { a.output.cols = 7; }},
      {"is 1x-1 but a block", [](octet_block_dequantize_args& a) { a.block_cols = -1; }},
      {"args->scale_dtype", [](octet_block_dequantize_args& a) { a.scale_dtype = OCTET_DTYPE_E4M3; }},
      {"args->scale_inv is NULL", [](octet_block_dequantize_args& a) { a.scale_inv = nullptr; }},
  };
  for (const Bad& b : bad) {
    expect_refused(
        [&](Table& t) {
          octet_block_dequantize_args a{};
          a.struct_size = sizeof a;
          a.input = view(buffer.get(), OCTET_DTYPE_E4M3, 4, 8);
          a.output = view(buffer.get(), OCTET_DTYPE_FP32, 4, 8);
          a.scale_inv = buffer.get();
          a.scale_dtype = OCTET_DTYPE_E8M0;
          a.block_rows = 1;
          a.block_cols = 32;
          b.edit(a);
          return t.api().block_dequantize(t.context(), &a);
        },
        OCTET_STATUS_INVALID_ARGUMENT, b.needle, "block_dequantize: " + b.needle);
  }
}

TEST(CudaBlockKernels, BadBlockGemmArgumentsAreRefused) {
  OCTET_REQUIRE_CUDA_TABLE();
  DeviceBuffer buffer(4096);
  struct Bad {
    std::string needle;
    int32_t status;
    void (*edit)(octet_block_gemm_args&);
  };
  const Bad bad[] = {
      {"struct_size", OCTET_STATUS_INVALID_ARGUMENT, [](octet_block_gemm_args& a) { a.struct_size = 8; }},
      {"none may be negative", OCTET_STATUS_INVALID_ARGUMENT, [](octet_block_gemm_args& a) { a.k = -1; }},
      {"args->a.dtype", OCTET_STATUS_INVALID_ARGUMENT, [](octet_block_gemm_args& a) { a.a.dtype = OCTET_DTYPE_FP32; }},
      {"args->b must be", OCTET_STATUS_INVALID_ARGUMENT, [](octet_block_gemm_args& a) { a.b.rows = 3; }},
      {"args->scale_dtype", OCTET_STATUS_INVALID_ARGUMENT,
       [](octet_block_gemm_args& a) { a.scale_dtype = OCTET_DTYPE_BF16; }},
      {"a_block_cols == b_block_cols", OCTET_STATUS_INVALID_ARGUMENT,
       [](octet_block_gemm_args& a) { a.b_block_cols = 16; }},
      {"args->a_scale_inv is NULL", OCTET_STATUS_INVALID_ARGUMENT,
       [](octet_block_gemm_args& a) { a.a_scale_inv = nullptr; }},
      {"args->d.dtype is e4m3", OCTET_STATUS_UNSUPPORTED,
       [](octet_block_gemm_args& a) { a.d.dtype = OCTET_DTYPE_E4M3; }},
      {"args->d must be", OCTET_STATUS_INVALID_ARGUMENT, [](octet_block_gemm_args& a) { a.d.cols = 5; }},
      {"args->bias must be", OCTET_STATUS_INVALID_ARGUMENT, [](octet_block_gemm_args& a) { a.bias.cols = 3; }},
      {"args->epilogue", OCTET_STATUS_INVALID_ARGUMENT, [](octet_block_gemm_args& a) { a.epilogue = 9; }},
  };
  for (const Bad& b : bad) {
    expect_refused(
        [&](Table& t) {
          octet_block_gemm_args a{};
          a.struct_size = sizeof a;
          a.m = 4;
          a.n = 8;
          a.k = 32;
          a.a = view(buffer.get(), OCTET_DTYPE_E4M3, 4, 32);
          a.b = view(buffer.get(), OCTET_DTYPE_E4M3, 8, 32);
          a.a_scale_inv = buffer.get();
          a.b_scale_inv = buffer.get();
          a.scale_dtype = OCTET_DTYPE_E8M0;
          a.a_block_rows = a.b_block_rows = 1;
          a.a_block_cols = a.b_block_cols = 32;
          a.alpha = 1.0f;
          a.d = view(buffer.get(), OCTET_DTYPE_FP32, 4, 8);
          a.bias = view(buffer.get(), OCTET_DTYPE_FP32, 1, 8);
          b.edit(a);
          return t.api().block_gemm(t.context(), &a);
        },
        b.status, b.needle, "block_gemm: " + b.needle);
  }
}

TEST(CudaBlockKernels, BadQuantizeWithStatisticsArgumentsAreRefused) {
  OCTET_REQUIRE_CUDA_TABLE();
  DeviceBuffer buffer(4096);
  struct Bad {
    std::string needle;
    bool null_stats;
    void (*edit)(octet_quantize_args&);
  };
  const Bad bad[] = {
      {"stats_out is NULL", true, [](octet_quantize_args&) {}},
      {"args->input.dtype", false, [](octet_quantize_args& a) { a.input.dtype = OCTET_DTYPE_E5M2; }},
      {"args->out_dtype", false, [](octet_quantize_args& a) { a.out_dtype = OCTET_DTYPE_FP32; }},
      {"args->scale is NULL", false, [](octet_quantize_args& a) { a.scale = nullptr; }},
  };
  for (const Bad& b : bad) {
    expect_refused(
        [&](Table& t) {
          octet_quantize_args a{};
          a.struct_size = sizeof a;
          a.input = view(buffer.get(), OCTET_DTYPE_FP32, 4, 8);
          a.out_dtype = OCTET_DTYPE_E4M3;
          a.scale = static_cast<const float*>(buffer.get());
          a.rowwise_out = static_cast<uint8_t*>(buffer.get());
          b.edit(a);
          auto* stats = b.null_stats ? nullptr : static_cast<octet_quantize_statistics*>(buffer.get());
          return t.api().quantize_with_statistics(t.context(), &a, stats);
        },
        OCTET_STATUS_INVALID_ARGUMENT, b.needle, "quantize_with_statistics: " + b.needle);
  }
}

}  // namespace
