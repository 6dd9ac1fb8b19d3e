// cpu GEMMs against the reference: every FP8 dtype pair and high-precision
// pair, every layout, FP32/BF16/FP16 output, with and without alpha, beta,
// bias and GELU, within the bound of docs/numerics.md section 8 (the cpu
// backend sums in oneDNN's order). And the Hopper-like profile on cpu gives
// bit-identical results to native cpu.
#include <gtest/gtest.h>
#ifndef OCTET_TEST_SKIP_CPU_ONLY
#include <omp.h>  // the thread-count tests set the plugin's team size
#endif

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "abi_helpers.hpp"

namespace cpu_test {
namespace {

struct Dims {
  int64_t m, n, k;
};
const Dims kDims[] = {{1, 1, 1}, {7, 13, 5}, {67, 131, 29}, {33, 17, 300}};

// Values of an operand as stored (rows x cols), and its raw elements.
struct Operand {
  std::vector<uint8_t> raw;
  std::vector<double> value;
};

bool is_fp8_dtype(int32_t d) {
  return d == OCTET_DTYPE_E4M3 || d == OCTET_DTYPE_E5M2 || d == OCTET_DTYPE_E4M3FNUZ || d == OCTET_DTYPE_E5M2FNUZ;
}

// The FP8 families a GEMM takes (both operands from one: numerics.md
// section 1): OCP, and FNUZ where the backend under test declares it.
std::vector<std::vector<int32_t>> fp8_families() {
  std::vector<std::vector<int32_t>> f = {{OCTET_DTYPE_E4M3, OCTET_DTYPE_E5M2}};
  if (tested_backend_declares_dtype(OCTET_DTYPE_E4M3FNUZ) && tested_backend_declares_dtype(OCTET_DTYPE_E5M2FNUZ)) {
    f.push_back({OCTET_DTYPE_E4M3FNUZ, OCTET_DTYPE_E5M2FNUZ});
  }
  return f;
}

Operand make_operand(int32_t dtype, int64_t rows, int64_t cols, std::mt19937& rng) {
  Operand op;
  const std::size_t n = static_cast<std::size_t>(rows * cols);
  const std::size_t size = octet_dtype_size(dtype);
  op.raw.resize(n * size);
  op.value.resize(n);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  for (std::size_t i = 0; i < n; ++i) {
    if (is_fp8_dtype(dtype)) {
      uint8_t code;
      do {
        code = static_cast<uint8_t>(rng());
      } while (!std::isfinite(octet_fp8_decode(code, dtype)) || std::fabs(octet_fp8_decode(code, dtype)) > 1000.0f);
      op.raw[i] = code;
      op.value[i] = octet_fp8_decode(code, dtype);
    } else {
      const float x = normal(rng);
      if (dtype == OCTET_DTYPE_FP32) {
        std::memcpy(&op.raw[i * 4], &x, 4);
        op.value[i] = x;
      } else {
        const uint16_t h = dtype == OCTET_DTYPE_BF16 ? octet_bf16_encode(x) : octet_fp16_encode(x);
        std::memcpy(&op.raw[i * 2], &h, 2);
        op.value[i] = dtype == OCTET_DTYPE_BF16 ? octet_bf16_decode(h) : octet_fp16_decode(h);
      }
    }
  }
  return op;
}

double load_as_double(const std::vector<uint8_t>& raw, int32_t dtype, std::size_t i) {
  if (dtype == OCTET_DTYPE_FP32) {
    float f;
    std::memcpy(&f, &raw[i * 4], 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, &raw[i * 2], 2);
  return dtype == OCTET_DTYPE_BF16 ? octet_bf16_decode(h) : octet_fp16_decode(h);
}

// Relative spacing of the output dtype (one unit in the last place).
double output_ulp(int32_t dtype) {
  return dtype == OCTET_DTYPE_FP32 ? 0.0 : dtype == OCTET_DTYPE_BF16 ? 0x1p-7 : 0x1p-10;
}

struct Case {
  int32_t a_dtype, b_dtype, d_dtype;
  int32_t trans_a, trans_b;
  bool extras;  // alpha, beta, bias, GELU
};

std::string case_name(const Case& c, Dims s) {
  return std::string(octet_dtype_name(c.a_dtype)) + "x" + octet_dtype_name(c.b_dtype) + "->" +
         octet_dtype_name(c.d_dtype) + " trans " + std::to_string(c.trans_a) + std::to_string(c.trans_b) +
         (c.extras ? " alpha/beta/bias/gelu " : " plain ") + std::to_string(s.m) + "x" + std::to_string(s.n) + "x" +
         std::to_string(s.k);
}

void run_case(octet_context* cpu, octet_context* ref, const Case& c, Dims s, uint32_t seed) {
  SCOPED_TRACE(case_name(c, s));
  std::mt19937 rng(seed);
  const bool fp8 = is_fp8_dtype(c.a_dtype);
  const int64_t a_rows = c.trans_a ? s.k : s.m, a_cols = c.trans_a ? s.m : s.k;
  const int64_t b_rows = c.trans_b ? s.k : s.n, b_cols = c.trans_b ? s.n : s.k;
  const Operand a = make_operand(c.a_dtype, a_rows, a_cols, rng);
  const Operand b = make_operand(c.b_dtype, b_rows, b_cols, rng);
  const Operand d_old = make_operand(c.d_dtype, s.m, s.n, rng);
  const Operand bias = make_operand(OCTET_DTYPE_BF16, 1, s.n, rng);
  const float sa = fp8 ? 0.0625f : 1.0f, sb = fp8 ? 1.5f : 1.0f;
  const float alpha = c.extras ? 0.75f : 1.0f, beta = c.extras ? -0.5f : 0.0f;

  std::vector<uint8_t> results[2];
  for (int backend = 0; backend < 2; ++backend) {
    octet_context* ctx = backend == 0 ? cpu : ref;
    const uint32_t usages = fp8 ? uint32_t(OCTET_USAGE_ROWWISE) : 0u;
    Tensor ta = tensor(ctx, c.a_dtype, a_rows, a_cols, usages);
    Tensor tb = tensor(ctx, c.b_dtype, b_rows, b_cols, usages);
    Tensor td = tensor(ctx, c.d_dtype, s.m, s.n);
    Tensor tbias = tensor(ctx, OCTET_DTYPE_BF16, 1, s.n);
    upload(ta.get(), OCTET_COMPONENT_DATA, a.raw.data(), a.raw.size());
    upload(tb.get(), OCTET_COMPONENT_DATA, b.raw.data(), b.raw.size());
    if (fp8) {
      upload(ta.get(), OCTET_COMPONENT_SCALE_INV, &sa, 4);
      upload(tb.get(), OCTET_COMPONENT_SCALE_INV, &sb, 4);
    }
    upload(td.get(), OCTET_COMPONENT_DATA, d_old.raw.data(), d_old.raw.size());
    upload(tbias.get(), OCTET_COMPONENT_DATA, bias.raw.data(), bias.raw.size());
    octet_gemm_options o{};
    o.struct_size = sizeof o;
    o.trans_a = c.trans_a;
    o.trans_b = c.trans_b;
    o.alpha = alpha;
    o.beta = beta;
    o.bias = c.extras ? tbias.get() : nullptr;
    o.epilogue = c.extras ? OCTET_EPILOGUE_GELU : OCTET_EPILOGUE_NONE;
    ASSERT_EQ(octet_gemm(ctx, ta.get(), tb.get(), td.get(), &o), OCTET_STATUS_SUCCESS) << octet_last_error_message();
    results[backend] = download(td.get(), OCTET_COMPONENT_DATA);
  }

  const double scale = std::fabs(double(alpha) * sa * sb);
  const double unit = 0x1p-23;
  // |A'| [m, k] and |B'| [n, k], K-contiguous whatever the layout.
  auto magnitudes_of = [](const Operand& op, bool trans, int64_t outer, int64_t k, int64_t cols) {
    std::vector<double> abs_rows(static_cast<std::size_t>(outer * k));
    for (int64_t r = 0; r < outer; ++r) {
      for (int64_t kk = 0; kk < k; ++kk) {
        abs_rows[std::size_t(r * k + kk)] =
            std::fabs(trans ? op.value[std::size_t(kk * cols + r)] : op.value[std::size_t(r * cols + kk)]);
      }
    }
    return abs_rows;
  };
  const std::vector<double> abs_a = magnitudes_of(a, c.trans_a != 0, s.m, s.k, a_cols);
  const std::vector<double> abs_b = magnitudes_of(b, c.trans_b != 0, s.n, s.k, b_cols);
  for (int64_t i = 0; i < s.m; ++i) {
    for (int64_t j = 0; j < s.n; ++j) {
      double magnitude = 0.0;  // sum_k |A'[i,k] B'[j,k]|
      const double* x = &abs_a[std::size_t(i * s.k)];
      const double* y = &abs_b[std::size_t(j * s.k)];
      for (int64_t kk = 0; kk < s.k; ++kk) magnitude += x[kk] * y[kk];
      const std::size_t e = static_cast<std::size_t>(i * s.n + j);
      const double got = load_as_double(results[0], c.d_dtype, e);
      const double want = load_as_double(results[1], c.d_dtype, e);
      // Summation order (GELU's slope is below 1.13), the rounding of the
      // scaling, beta and bias terms, and one unit of the output dtype.
      const double extra_terms =
          std::fabs(beta * d_old.value[e]) + (c.extras ? std::fabs(bias.value[std::size_t(j)]) : 0.0);
      const double bound = 1.13 * (double(s.k) * unit * magnitude * scale) +
                           4 * unit * (std::fabs(want) + extra_terms + magnitude * scale) +
                           output_ulp(c.d_dtype) * std::max(std::fabs(got), std::fabs(want)) +
                           (c.d_dtype == OCTET_DTYPE_FP16 ? 0x1p-24 : 0.0);
      ASSERT_FALSE(std::isnan(got)) << "D[" << i << "," << j << "]";
      if (got == want) continue;  // equal, infinities (FP16 overflow) included
      ASSERT_LE(std::fabs(got - want), bound) << "D[" << i << "," << j << "] cpu " << got << " reference " << want;
    }
  }
}

TEST(CpuGemm, Fp8EveryPairLayoutAndOutputWithinTheBound) {
  Context cpu = context(OCTET_TEST_BACKEND), ref = context("reference");
  uint32_t seed = 1;
  for (Dims s : kDims) {
    for (const std::vector<int32_t>& family : fp8_families()) {
      for (int32_t ad : family) {
        for (int32_t bd : family) {
          for (int32_t dd : high_precision_dtypes()) {
            for (int layout = 0; layout < 4; ++layout) {
              for (bool extras : {false, true}) {
                run_case(cpu.get(), ref.get(), Case{ad, bd, dd, layout & 1, layout >> 1, extras}, s, seed++);
              }
            }
          }
        }
      }
    }
  }
}

// Shapes that reach every branch of the FP8 kernels (gemm/gemm_fp8_avx512_bf16.cpp,
// and the tiles and K slices of the sgemm path): on VDPBF16PS, the decode
// kernel fused in registers (m <= 6 with 4 weight rows, m <= 12 with 2, ragged n), decode kernel with
// a weight buffer (12 < m <= 32, K over one 1024 block, odd K tail); on
// FP32 FMAs, fused for m <= 4 (8 weight rows for m = 1, else 4, ragged n:
// {1, 3, 64}, {2, 11, 1000}, {4, 13, 96}) and buffered above; with K
// padded to a multiple of 64 and to 64 plus a 32-code tail (the VBMI
// decoder's chunk and tail);
// blocked kernel with several K panels (k > 1024, with a 6-k tail), M
// blocks (m > 96), N blocks (n > 1024) and edge tiles; m = 33 (just past
// the decode kernel).
// Transposed B with small m goes to the blocked kernel too. Small shapes
// run on one thread and the larger ones ({3, 700, 1000} and
// {24, 530, 1100}: over 512 KiB of weights for the decode kernel;
// {200, 1100, 600} and {100, 40, 1030} for the blocked one) share their
// output among the threads (dispatch/parallel_policy.hpp). Each layout, both FP8
// dtypes, FP32 and BF16 output.
TEST(CpuGemm, Fp8KernelPathsWithinTheBound) {
  Context cpu = context("cpu"), ref = context("reference");
  const Dims dims[] = {{5, 9, 1100},    {9, 7, 70},    {20, 37, 2101}, {16, 9, 1100},   {1, 3, 64},
                       {32, 5, 300},    {33, 50, 40},  {3, 700, 1000}, {24, 530, 1100}, {200, 1100, 600},
                       {100, 40, 1030}, {2, 11, 1000}, {4, 13, 96}};
  uint32_t seed = 5000;
  int i = 0;
  for (const std::vector<int32_t>& family : fp8_families()) {
    for (Dims s : dims) {
      for (int layout = 0; layout < 4; ++layout) {
        for (int32_t dd : {OCTET_DTYPE_FP32, OCTET_DTYPE_BF16}) {
          const int32_t ad = family[(i & 1) ? 1 : 0];
          const int32_t bd = family[(i & 2) ? 1 : 0];
          run_case(cpu.get(), ref.get(), Case{ad, bd, dd, layout & 1, layout >> 1, (i % 3) == 0}, s, seed++);
          ++i;
        }
      }
    }
  }
}

TEST(CpuGemm, HighPrecisionEveryPairLayoutAndOutputWithinTheBound) {
  Context cpu = context(OCTET_TEST_BACKEND), ref = context("reference");
  uint32_t seed = 1000;
  for (Dims s : kDims) {
    for (int32_t ad : high_precision_dtypes()) {
      for (int32_t bd : high_precision_dtypes()) {
        for (int32_t dd : high_precision_dtypes()) {
          for (int layout = 0; layout < 4; ++layout) {
            run_case(cpu.get(), ref.get(), Case{ad, bd, dd, layout & 1, layout >> 1, layout == 2}, s, seed++);
          }
        }
      }
    }
  }
}

// Quantize the same inputs on native cpu and Hopper-like cpu, then run every
// transpose combination: the core presents other copies and flags to the
// Hopper-like context (or transposes into a workspace), yet the bits match.
TEST(CpuGemm, HopperLikeProfileGivesBitIdenticalResults) {
  Context native = context(OCTET_TEST_BACKEND), hopper = context(OCTET_TEST_BACKEND, OCTET_PROFILE_HOPPER_LIKE);
  const int64_t m = 67, n = 45, k = 131;
  std::mt19937 rng(7);
  for (uint32_t usages : {uint32_t(OCTET_USAGE_BOTH), uint32_t(OCTET_USAGE_ROWWISE)}) {
    for (int layout = 0; layout < 4; ++layout) {
      const int32_t trans_a = layout & 1, trans_b = layout >> 1;
      const int64_t a_rows = trans_a ? k : m, a_cols = trans_a ? m : k;
      const int64_t b_rows = trans_b ? k : n, b_cols = trans_b ? n : k;
      const Operand a = make_operand(OCTET_DTYPE_FP32, a_rows, a_cols, rng);
      const Operand b = make_operand(OCTET_DTYPE_FP32, b_rows, b_cols, rng);
      std::vector<uint8_t> out[2];
      for (int p = 0; p < 2; ++p) {
        octet_context* ctx = p == 0 ? native.get() : hopper.get();
        Tensor ha = tensor(ctx, OCTET_DTYPE_FP32, a_rows, a_cols);
        Tensor hb = tensor(ctx, OCTET_DTYPE_FP32, b_rows, b_cols);
        upload(ha.get(), OCTET_COMPONENT_DATA, a.raw.data(), a.raw.size());
        upload(hb.get(), OCTET_COMPONENT_DATA, b.raw.data(), b.raw.size());
        Tensor qa = tensor(ctx, OCTET_DTYPE_E4M3, a_rows, a_cols, usages);
        Tensor qb = tensor(ctx, OCTET_DTYPE_E5M2, b_rows, b_cols, usages);
        const float scale_a = 8.0f, scale_b = 0.5f;
        upload(qa.get(), OCTET_COMPONENT_SCALE, &scale_a, 4);
        upload(qb.get(), OCTET_COMPONENT_SCALE, &scale_b, 4);
        ASSERT_EQ(octet_quantize(ctx, ha.get(), qa.get(), nullptr), OCTET_STATUS_SUCCESS) << octet_last_error_message();
        ASSERT_EQ(octet_quantize(ctx, hb.get(), qb.get(), nullptr), OCTET_STATUS_SUCCESS) << octet_last_error_message();
        Tensor d = tensor(ctx, OCTET_DTYPE_FP32, m, n);
        octet_gemm_options o{};
        o.struct_size = sizeof o;
        o.trans_a = trans_a;
        o.trans_b = trans_b;
        o.alpha = 1.25f;
        ASSERT_EQ(octet_gemm(ctx, qa.get(), qb.get(), d.get(), &o), OCTET_STATUS_SUCCESS) << octet_last_error_message();
        out[p] = download(d.get(), OCTET_COMPONENT_DATA);
      }
      EXPECT_EQ(first_difference(out[0], out[1], 4), -1) << "usages " << usages << " trans " << trans_a << trans_b;
    }
  }
}

}  // namespace
}  // namespace cpu_test

namespace cpu_test {
namespace {

// One row of A (1 x k) times `rows` rows of B (rows x k), FP8 codes given,
// scale_inv sa and sb, FP32 output, on cpu and on the reference. The m = 1
// shape goes to the decode kernel; m = 40 (the row repeated) to the
// blocked one.
struct EdgeResult {
  std::vector<float> cpu, ref;
};

EdgeResult edge_gemm(octet_context* cpu, octet_context* ref, int32_t a_dtype, const std::vector<uint8_t>& a_row,
                     int32_t b_dtype, const std::vector<uint8_t>& b, int64_t rows, float sa, float sb, int64_t m) {
  const int64_t k = static_cast<int64_t>(a_row.size());
  std::vector<uint8_t> a;
  for (int64_t i = 0; i < m; ++i) a.insert(a.end(), a_row.begin(), a_row.end());
  EdgeResult r;
  for (int backend = 0; backend < 2; ++backend) {
    octet_context* ctx = backend == 0 ? cpu : ref;
    Tensor ta = tensor(ctx, a_dtype, m, k, OCTET_USAGE_ROWWISE);
    Tensor tb = tensor(ctx, b_dtype, rows, k, OCTET_USAGE_ROWWISE);
    Tensor td = tensor(ctx, OCTET_DTYPE_FP32, m, rows);
    upload(ta.get(), OCTET_COMPONENT_DATA, a.data(), a.size());
    upload(tb.get(), OCTET_COMPONENT_DATA, b.data(), b.size());
    upload(ta.get(), OCTET_COMPONENT_SCALE_INV, &sa, 4);
    upload(tb.get(), OCTET_COMPONENT_SCALE_INV, &sb, 4);
    EXPECT_EQ(octet_gemm(ctx, ta.get(), tb.get(), td.get(), nullptr), OCTET_STATUS_SUCCESS)
        << octet_last_error_message();
    const std::vector<uint8_t> raw = download(td.get(), OCTET_COMPONENT_DATA);
    std::vector<float>& out = backend == 0 ? r.cpu : r.ref;
    out.resize(static_cast<std::size_t>(m * rows));
    std::memcpy(out.data(), raw.data(), out.size() * 4);
  }
  return r;
}

uint8_t code_of(float x, int32_t dtype) {
  const uint8_t c = octet_fp8_encode(x, dtype, 1);
  EXPECT_EQ(octet_fp8_decode(c, dtype), x) << x << " is not an FP8 value";
  return c;
}

// docs/numerics.md section 8, "FP8 GEMMs on BF16 dot products": VDPBF16PS
// flushes denormal inputs and results to zero and adds its two products
// one after the other; FP8 products and their sums are multiples of 2^-32,
// so nothing is flushed, and scales (applied after the sum, in FP32 with
// gradual underflow) keep their subnormal results. Each case on the decode
// (m = 1) and blocked (m = 40) kernels, on every path the machine runs.
TEST(CpuGemm, Fp8EdgeCasesKeepTheBound) {
  Context cpu = context("cpu"), ref = context("reference");
  const int32_t e4 = OCTET_DTYPE_E4M3, e5 = OCTET_DTYPE_E5M2;
  for (int64_t m : {int64_t(1), int64_t(40)}) {
    SCOPED_TRACE("m = " + std::to_string(m));
    // 1. E5M2 subnormal x subnormal: 1000 products of 2^-16 * 2^-16 = 2^-32,
    //    exact in every order. Unscaled, scaled into the normal range, and
    //    scaled into FP32 subnormals (2^-60 * 2^-60 * 1000 * 2^-32).
    {
      const std::vector<uint8_t> a(1000, code_of(0x1p-16f, e5)), b(1000, code_of(0x1p-16f, e5));
      for (auto [sa, sb] : {std::pair{1.0f, 1.0f}, std::pair{0x1p-20f, 0x1p-30f}, std::pair{0x1p-60f, 0x1p-60f}}) {
        const EdgeResult r = edge_gemm(cpu.get(), ref.get(), e5, a, e5, b, 1, sa, sb, m);
        const double exact = 1000.0 * 0x1p-32 * double(sa) * double(sb);
        for (std::size_t i = 0; i < r.cpu.size(); ++i) {
          EXPECT_EQ(bits(r.cpu[i]), bits(r.ref[i])) << "scale " << sa * sb;
          EXPECT_EQ(double(r.cpu[i]), double(float(exact))) << "scale " << sa * sb;
          EXPECT_NE(r.cpu[i], 0.0f);
        }
      }
    }
    // 2. Cancellation down to the smallest product: 2^-16 * 2^-16, then
    //    +57344^2 and -57344^2. The exact sum is 2^-32; the reference's
    //    ascending order loses it (0). Any order is within k * 2^-23 *
    //    sum |p|; the result is never NaN and never a denormal.
    {
      const std::vector<uint8_t> a = {code_of(0x1p-16f, e5), code_of(57344.0f, e5), code_of(-57344.0f, e5)};
      const std::vector<uint8_t> b = {code_of(0x1p-16f, e5), code_of(57344.0f, e5), code_of(57344.0f, e5)};
      const EdgeResult r = edge_gemm(cpu.get(), ref.get(), e5, a, e5, b, 1, 1.0f, 1.0f, m);
      const double magnitude = 2.0 * 57344.0 * 57344.0 + 0x1p-32;
      const double bound = 3 * 0x1p-23 * magnitude;
      for (std::size_t i = 0; i < r.cpu.size(); ++i) {
        EXPECT_LE(std::fabs(double(r.cpu[i]) - 0x1p-32), bound);
        EXPECT_TRUE(r.cpu[i] == 0.0f || std::fabs(r.cpu[i]) >= 0x1p-32f) << r.cpu[i];
      }
    }
    // 3. Large cancellation with many small terms, E4M3 x E5M2: 448 * 57344,
    //    62 products 2^-9 * 2^-16, then -448 * 57344: exact 62 * 2^-25.
    {
      std::vector<uint8_t> a(64, code_of(0x1p-9f, e4)), b(64, code_of(0x1p-16f, e5));
      a[0] = code_of(448.0f, e4);
      b[0] = code_of(57344.0f, e5);
      a[63] = code_of(-448.0f, e4);
      b[63] = code_of(57344.0f, e5);
      const EdgeResult r = edge_gemm(cpu.get(), ref.get(), e4, a, e5, b, 1, 0.5f, 4.0f, m);
      const double magnitude = (2.0 * 448.0 * 57344.0 + 62 * 0x1p-25) * 2.0;
      const double bound = 64 * 0x1p-23 * magnitude;
      for (std::size_t i = 0; i < r.cpu.size(); ++i) {
        EXPECT_LE(std::fabs(double(r.cpu[i]) - 62 * 0x1p-25 * 2.0), bound);
        EXPECT_LE(std::fabs(double(r.cpu[i]) - double(r.ref[i])), bound);
      }
    }
    // 4. Overflow and infinities. The largest products (57344^2, four of
    //    them) are exact unscaled and overflow FP32 to +inf when scaled by
    //    2^100 * 2^30 in the epilogue, like the reference. An E5M2 inf
    //    operand gives +-inf, inf * 0 gives NaN, and +inf and -inf products
    //    in one sum give NaN, in any order.
    {
      const uint8_t big = code_of(57344.0f, e5);
      const std::vector<uint8_t> a(4, big), b(4, big);
      for (auto [sa, sb] : {std::pair{1.0f, 1.0f}, std::pair{0x1p100f, 0x1p30f}}) {
        const EdgeResult r = edge_gemm(cpu.get(), ref.get(), e5, a, e5, b, 1, sa, sb, m);
        for (std::size_t i = 0; i < r.cpu.size(); ++i) {
          EXPECT_EQ(r.cpu[i], r.ref[i]);
          EXPECT_EQ(r.cpu[i], sa == 1.0f ? float(4.0 * 57344.0 * 57344.0) : std::numeric_limits<float>::infinity());
        }
      }
      const uint8_t inf = 0x7C, ninf = 0xFC, zero = 0x00, one = code_of(1.0f, e5), minus_one = code_of(-1.0f, e5);
      const std::vector<uint8_t> a_inf = {inf, one, one};
      const std::vector<uint8_t> b_inf = {one,       one, one,   // +inf
                                          minus_one, one, one,   // -inf
                                          zero,      one, one};  // inf * 0: NaN
      const float want[] = {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(), 0.0f};
      for (auto [sa, sb] : {std::pair{1.0f, 1.0f}, std::pair{0x1p-70f, 0x1p-70f}}) {
        const EdgeResult r = edge_gemm(cpu.get(), ref.get(), e5, a_inf, e5, b_inf, 3, sa, sb, m);
        for (std::size_t i = 0; i < r.cpu.size(); ++i) {
          if (i % 3 == 2) {
            EXPECT_TRUE(std::isnan(r.cpu[i]) && std::isnan(r.ref[i])) << "element " << i;
          } else {
            EXPECT_EQ(r.cpu[i], want[i % 3]) << "element " << i;
            EXPECT_EQ(r.cpu[i], r.ref[i]) << "element " << i;
          }
        }
      }
      const std::vector<uint8_t> a_both = {inf, zero, ninf}, b_both = {one, one, one};
      const EdgeResult r = edge_gemm(cpu.get(), ref.get(), e5, a_both, e5, b_both, 1, 1.0f, 1.0f, m);
      for (std::size_t i = 0; i < r.cpu.size(); ++i) {
        EXPECT_TRUE(std::isnan(r.cpu[i]) && std::isnan(r.ref[i])) << "element " << i;
      }
    }
  }
}

}  // namespace
}  // namespace cpu_test

namespace cpu_test {
namespace {

// C = A' B'^T of raw FP8 codes (scales 1) on one context, FP32 out.
std::vector<float> gemm_of_codes(octet_context* ctx, int32_t a_dtype, const std::vector<uint8_t>& a, int64_t m,
                                 int32_t b_dtype, const std::vector<uint8_t>& b, int64_t n, int64_t k) {
  Tensor ta = tensor(ctx, a_dtype, m, k, OCTET_USAGE_ROWWISE);
  Tensor tb = tensor(ctx, b_dtype, n, k, OCTET_USAGE_ROWWISE);
  Tensor td = tensor(ctx, OCTET_DTYPE_FP32, m, n);
  const float one = 1.0f;
  upload(ta.get(), OCTET_COMPONENT_DATA, a.data(), a.size());
  upload(tb.get(), OCTET_COMPONENT_DATA, b.data(), b.size());
  upload(ta.get(), OCTET_COMPONENT_SCALE_INV, &one, 4);
  upload(tb.get(), OCTET_COMPONENT_SCALE_INV, &one, 4);
  EXPECT_EQ(octet_gemm(ctx, ta.get(), tb.get(), td.get(), nullptr), OCTET_STATUS_SUCCESS) << octet_last_error_message();
  const std::vector<uint8_t> raw = download(td.get(), OCTET_COMPONENT_DATA);
  std::vector<float> out(static_cast<std::size_t>(m * n));
  std::memcpy(out.data(), raw.data(), out.size() * 4);
  return out;
}

// C[i][j] = sum over kk of A[i][kk] * B[j][kk] in double, from the ABI's
// scalar codec: exact when every output has at most one non-zero product
// (the tests below), NaN where an inf or NaN code meets a zero.
std::vector<double> expected_of_codes(int32_t dtype, const std::vector<uint8_t>& a, int64_t m,
                                      const std::vector<uint8_t>& b, int64_t n, int64_t k) {
  std::vector<double> c(static_cast<std::size_t>(m * n), 0.0);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0.0;
      for (int64_t kk = 0; kk < k; ++kk) {
        sum += double(octet_fp8_decode(a[std::size_t(i * k + kk)], dtype)) *
               double(octet_fp8_decode(b[std::size_t(j * k + kk)], dtype));
      }
      c[std::size_t(i * n + j)] = sum;
    }
  }
  return c;
}

void expect_codes_product(int32_t dtype, const std::vector<uint8_t>& a, int64_t m, const std::vector<uint8_t>& b,
                          int64_t n, int64_t k, const std::vector<float>& got) {
  const std::vector<double> want = expected_of_codes(dtype, a, m, b, n, k);
  for (std::size_t e = 0; e < want.size(); ++e) {
    if (std::isnan(want[e])) {
      EXPECT_TRUE(std::isnan(got[e])) << "row " << e / std::size_t(n) << " column " << e % std::size_t(n);
    } else {
      EXPECT_EQ(double(got[e]), want[e]) << "row " << e / std::size_t(n) << " column " << e % std::size_t(n);
    }
  }
}

// Every FP8 code at every K position of the decode kernel's chunks (both
// operands, fused and buffered variants, whole chunks and the 32-code
// tail). Finite codes fill one operand and the other holds one-hot rows of
// 1.0, so each output is one code's value; each inf and NaN code sits
// alone in its row (with zeros it gives NaN, with the 1.0 its own value).
TEST(CpuGemm, DecodeKernelReadsEveryCodeAtEveryPosition) {
  Context cpu = context("cpu");
  for (int32_t dtype : fp8_dtypes()) {  // FNUZ: 0x80 (NaN) is the one non-finite code
    const uint8_t one = octet_fp8_encode(1.0f, dtype, 1);
    std::vector<uint8_t> finite, non_finite;
    for (int c = 0; c < 256; ++c) {
      (std::isfinite(octet_fp8_decode(uint8_t(c), dtype)) ? finite : non_finite).push_back(uint8_t(c));
    }
    for (int64_t k : {int64_t(256), int64_t(160)}) {
      std::vector<uint8_t> hot(static_cast<std::size_t>(k * k), 0);
      for (int64_t j = 0; j < k; ++j) hot[std::size_t(j * k + j)] = one;
      for (int64_t m : {int64_t(1), int64_t(3), int64_t(9), int64_t(16), int64_t(32)}) {
        SCOPED_TRACE(std::string(octet_dtype_name(dtype)) + " k " + std::to_string(k) + " m " + std::to_string(m));
        // Finite codes in A (m x k) against the one-hot B (k x k).
        std::vector<uint8_t> codes(static_cast<std::size_t>(m * k));
        for (int64_t i = 0; i < m; ++i) {
          for (int64_t j = 0; j < k; ++j) {
            codes[std::size_t(i * k + j)] = finite[std::size_t(j + 37 * i) % finite.size()];
          }
        }
        expect_codes_product(dtype, codes, m, hot, k, k, gemm_of_codes(cpu.get(), dtype, codes, m, dtype, hot, k, k));
        // Each inf/NaN code alone in an A row, at positions across the chunks.
        std::vector<uint8_t> lone(static_cast<std::size_t>(m * k), 0);
        for (int64_t i = 0; i < m; ++i) {
          lone[std::size_t(i * k + (29 * i + 5) % k)] = non_finite[std::size_t(i) % non_finite.size()];
        }
        expect_codes_product(dtype, lone, m, hot, k, k, gemm_of_codes(cpu.get(), dtype, lone, m, dtype, hot, k, k));
        // One-hot A (rows at positions p0 + i) against codes in B (8 x k):
        // finite codes everywhere, then each non-finite code alone in a row.
        const int64_t n = 8;
        std::vector<uint8_t> bcodes(static_cast<std::size_t>(n * k)), blone(bcodes.size(), 0);
        for (int64_t j = 0; j < n; ++j) {
          for (int64_t kk = 0; kk < k; ++kk) {
            bcodes[std::size_t(j * k + kk)] = finite[std::size_t(3 * kk + 11 * j) % finite.size()];
          }
          blone[std::size_t(j * k + (41 * j + 7) % k)] = non_finite[std::size_t(j) % non_finite.size()];
        }
        for (int64_t p0 = 0; p0 < k; p0 += m) {
          const int64_t rows = std::min<int64_t>(m, k - p0);
          std::vector<uint8_t> ahot(static_cast<std::size_t>(rows * k), 0);
          for (int64_t i = 0; i < rows; ++i) ahot[std::size_t(i * k + p0 + i)] = one;
          expect_codes_product(dtype, ahot, rows, bcodes, n, k,
                               gemm_of_codes(cpu.get(), dtype, ahot, rows, dtype, bcodes, n, k));
          expect_codes_product(dtype, ahot, rows, blone, n, k,
                               gemm_of_codes(cpu.get(), dtype, ahot, rows, dtype, blone, n, k));
        }
      }
    }
  }
}

// The cpu backend's OpenMP team sizes: not built into other backends'
// suites (the kokkos tests define OCTET_TEST_SKIP_CPU_ONLY).
#ifndef OCTET_TEST_SKIP_CPU_ONLY
// The tiled sgemm path (gemm.cpp: high-precision operands, and FP8 ones
// outside the decode kernel on the FP32 engine) cuts D into 512 x 512
// tiles and K into slices of 256, widens each block in its stored
// orientation, and hands FP32 operands to oneDNN in place. Shapes over
// several tiles, slices and edge tiles give the same bits for every layout
// and for 1, 2 or 3 threads.
std::vector<uint8_t> transposed_raw(const std::vector<uint8_t>& raw, int64_t rows, int64_t cols, std::size_t size) {
  std::vector<uint8_t> t(raw.size());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      std::memcpy(&t[std::size_t(c * rows + r) * size], &raw[std::size_t(r * cols + c) * size], size);
    }
  }
  return t;
}

TEST(CpuGemm, TiledPathBitsDoNotDependOnTheLayoutOrTheThreadCount) {
  Context cpu = context("cpu");
  const Dims dims[] = {{600, 530, 700}, {40, 1030, 300}};
  const int32_t pairs[][2] = {
      {OCTET_DTYPE_FP32, OCTET_DTYPE_FP32}, {OCTET_DTYPE_BF16, OCTET_DTYPE_FP16}, {OCTET_DTYPE_E4M3, OCTET_DTYPE_E5M2}};
  std::mt19937 rng(2026);
  const int old_threads = omp_get_max_threads();
  for (Dims s : dims) {
    for (const auto& pair : pairs) {
      const Operand a = make_operand(pair[0], s.m, s.k, rng);
      const Operand b = make_operand(pair[1], s.n, s.k, rng);
      const std::size_t a_size = octet_dtype_size(pair[0]), b_size = octet_dtype_size(pair[1]);
      const std::vector<uint8_t> at = transposed_raw(a.raw, s.m, s.k, a_size);
      const std::vector<uint8_t> bt = transposed_raw(b.raw, s.n, s.k, b_size);
      const bool fp8 = is_fp8_dtype(pair[0]);
      std::vector<uint8_t> first;
      for (int threads : {2, 1, 3}) {
        omp_set_num_threads(threads);
        for (int layout = 0; layout < 4; ++layout) {
          const int32_t trans_a = layout & 1, trans_b = layout >> 1;
          SCOPED_TRACE(testing::Message()
                       << octet_dtype_name(pair[0]) << "x" << octet_dtype_name(pair[1]) << " " << s.m << "x" << s.n
                       << "x" << s.k << " trans " << trans_a << trans_b << " threads " << threads);
          const uint32_t usages = fp8 ? uint32_t(OCTET_USAGE_ROWWISE) : 0u;
          Tensor ta =
              trans_a ? tensor(cpu.get(), pair[0], s.k, s.m, usages) : tensor(cpu.get(), pair[0], s.m, s.k, usages);
          Tensor tb =
              trans_b ? tensor(cpu.get(), pair[1], s.k, s.n, usages) : tensor(cpu.get(), pair[1], s.n, s.k, usages);
          Tensor td = tensor(cpu.get(), OCTET_DTYPE_FP32, s.m, s.n);
          upload(ta.get(), OCTET_COMPONENT_DATA, trans_a ? at.data() : a.raw.data(), a.raw.size());
          upload(tb.get(), OCTET_COMPONENT_DATA, trans_b ? bt.data() : b.raw.data(), b.raw.size());
          if (fp8) {
            const float sa = 0.5f, sb = 2.0f;
            upload(ta.get(), OCTET_COMPONENT_SCALE_INV, &sa, 4);
            upload(tb.get(), OCTET_COMPONENT_SCALE_INV, &sb, 4);
          }
          octet_gemm_options o{};
          o.struct_size = sizeof o;
          o.trans_a = trans_a;
          o.trans_b = trans_b;
          ASSERT_EQ(octet_gemm(cpu.get(), ta.get(), tb.get(), td.get(), &o), OCTET_STATUS_SUCCESS)
              << octet_last_error_message();
          const std::vector<uint8_t> out = download(td.get(), OCTET_COMPONENT_DATA);
          if (first.empty()) {
            first = out;
          } else {
            EXPECT_EQ(first_difference(first, out, 4), -1);
          }
        }
      }
    }
  }
  omp_set_num_threads(old_threads);
}

// The decode kernels (gemm/decode_gemm_fp8.hpp at level avx512 and above,
// gemm/decode_gemm_fp8_avx2.cpp at level avx2) compute each output with the
// same sequence of multiply-adds whichever variant runs it: the weights
// decoded in registers for small m, or decoded once per K block into a
// buffer shared by the activation rows for larger m. So the first rows of
// A give the same bits for every m from 1 to 16, which crosses every
// variant's threshold (AVX2 FMAs: 2; AVX-512 FMAs: 4; VDPBF16PS: 12) and
// every micro-kernel's row count; n = 37 leaves ragged weight groups of
// every width and k = 1100 spans several K blocks and a partial chunk.
TEST(CpuGemm, DecodeKernelRowsDoNotDependOnTheVariantOrM) {
  Context cpu = context("cpu");
  octet_backend_info info{};
  info.struct_size = sizeof info;
  ASSERT_EQ(octet_context_get_info(cpu.get(), &info), OCTET_STATUS_SUCCESS) << octet_last_error_message();
  const std::string device = info.device != nullptr ? info.device : "";
  // The decode kernel serves decode shapes at level avx2 and above, whatever
  // the engine of the other shapes: "(FP8 decode shapes fma)" beside the
  // sgemm tiles, "(decode shapes fma)" beside oneDNN's BF16 matmul (AMX),
  // "(decode shapes fma/vdpbf16ps)", or VDPBF16PS for every shape. Under
  // the amx engine decode shapes of 9 rows and more go to the AMX tiles
  // (gemm/gemm_fp8_amx.hpp), so the rows differ across that threshold; the
  // forced engines' runs (cpu_bf16_dot.*, cpu_onednn_bf16.*) test the
  // decode kernels on AMX machines.
  if (device.find("decode shapes") == std::string::npos && device.find("GEMM vdpbf16ps") == std::string::npos) {
    GTEST_SKIP() << "decode shapes take the decode kernel at level avx2 and above, but for the amx engine's "
                    "9 rows and more; this run: "
                 << device;
  }
  std::mt19937 rng(2024);
  const int64_t max_m = 16, n = 37, k = 1100;
  for (int32_t bd : {OCTET_DTYPE_E4M3, OCTET_DTYPE_E5M2}) {
    const Operand a = make_operand(OCTET_DTYPE_E4M3, max_m, k, rng);
    const Operand b = make_operand(bd, n, k, rng);
    std::vector<uint8_t> rows[max_m + 1];
    for (int64_t m = 1; m <= max_m; ++m) {
      Tensor ta = tensor(cpu.get(), OCTET_DTYPE_E4M3, m, k, OCTET_USAGE_ROWWISE);
      Tensor tb = tensor(cpu.get(), bd, n, k, OCTET_USAGE_ROWWISE);
      Tensor td = tensor(cpu.get(), OCTET_DTYPE_FP32, m, n);
      const float sa = 0.5f, sb = 1.5f;
      upload(ta.get(), OCTET_COMPONENT_DATA, a.raw.data(), static_cast<std::size_t>(m * k));
      upload(tb.get(), OCTET_COMPONENT_DATA, b.raw.data(), b.raw.size());
      upload(ta.get(), OCTET_COMPONENT_SCALE_INV, &sa, 4);
      upload(tb.get(), OCTET_COMPONENT_SCALE_INV, &sb, 4);
      ASSERT_EQ(octet_gemm(cpu.get(), ta.get(), tb.get(), td.get(), nullptr), OCTET_STATUS_SUCCESS)
          << octet_last_error_message();
      rows[m] = download(td.get(), OCTET_COMPONENT_DATA);
    }
    for (int64_t m = 1; m < max_m; ++m) {
      const std::vector<uint8_t> head(rows[max_m].begin(), rows[max_m].begin() + m * n * 4);
      EXPECT_EQ(first_difference(rows[m], head, 4), -1) << octet_dtype_name(bd) << " m " << m;
    }
  }
}
#endif  // OCTET_TEST_SKIP_CPU_ONLY

// And the tiled path's sums, over edge tiles and several K slices, are
// within numerics.md's bound of the reference for high-precision operands.
TEST(CpuGemm, TiledPathWithinTheBoundAcrossTiles) {
  Context cpu = context("cpu"), ref = context("reference");
  uint32_t seed = 7000;
  for (int layout = 0; layout < 4; ++layout) {
    run_case(cpu.get(), ref.get(),
             Case{OCTET_DTYPE_FP32, OCTET_DTYPE_FP32, OCTET_DTYPE_FP32, layout & 1, layout >> 1, false},
             Dims{520, 37, 600}, seed++);
    run_case(cpu.get(), ref.get(),
             Case{OCTET_DTYPE_BF16, OCTET_DTYPE_FP16, OCTET_DTYPE_BF16, layout & 1, layout >> 1, true},
             Dims{37, 515, 290}, seed++);
  }
}

// Every FP8 code through the compute-bound paths (m > 32: the sgemm tiles
// with their widening, or the blocked BF16 kernel, per the engine), at K
// positions across a 256-k slice boundary and the widening's 32-code tail:
// finite codes against one-hot rows of 1.0 give each code's value, and a
// lone inf or NaN code gives its own value or NaN. Both operands.
TEST(CpuGemm, ComputeBoundPathsReadEveryCode) {
  Context cpu = context("cpu");
  const int64_t m = 40, k = 300;
  for (int32_t dtype : fp8_dtypes()) {
    SCOPED_TRACE(octet_dtype_name(dtype));
    const uint8_t one = octet_fp8_encode(1.0f, dtype, 1);
    std::vector<uint8_t> finite, non_finite;
    for (int c = 0; c < 256; ++c) {
      (std::isfinite(octet_fp8_decode(uint8_t(c), dtype)) ? finite : non_finite).push_back(uint8_t(c));
    }
    std::vector<uint8_t> hot(static_cast<std::size_t>(k * k), 0);
    for (int64_t j = 0; j < k; ++j) hot[std::size_t(j * k + j)] = one;
    std::vector<uint8_t> codes(static_cast<std::size_t>(m * k)), lone(codes.size(), 0);
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < k; ++j) codes[std::size_t(i * k + j)] = finite[std::size_t(j + 37 * i) % finite.size()];
      lone[std::size_t(i * k + (29 * i + 5) % k)] = non_finite[std::size_t(i) % non_finite.size()];
    }
    // Codes in A against the one-hot B, and the one-hot rows in A (m of
    // them, at offset p0) against the codes as B.
    expect_codes_product(dtype, codes, m, hot, k, k, gemm_of_codes(cpu.get(), dtype, codes, m, dtype, hot, k, k));
    expect_codes_product(dtype, lone, m, hot, k, k, gemm_of_codes(cpu.get(), dtype, lone, m, dtype, hot, k, k));
    for (int64_t p0 = 0; p0 + m <= k; p0 += m) {
      std::vector<uint8_t> ahot(static_cast<std::size_t>(m * k), 0);
      for (int64_t i = 0; i < m; ++i) ahot[std::size_t(i * k + p0 + i)] = one;
      expect_codes_product(dtype, ahot, m, codes, m, k, gemm_of_codes(cpu.get(), dtype, ahot, m, dtype, codes, m, k));
      expect_codes_product(dtype, ahot, m, lone, m, k, gemm_of_codes(cpu.get(), dtype, ahot, m, dtype, lone, m, k));
    }
    if (::testing::Test::HasFailure()) return;
  }
}

// The decode kernel gives the same bits whichever way A is stored (A
// transposed is gathered into rows, then decoded like a row).
TEST(CpuGemm, DecodeKernelBitsDoNotDependOnTheLayoutOfA) {
  Context cpu = context("cpu");
  std::mt19937 rng(99);
  for (int64_t m : {int64_t(3), int64_t(10), int64_t(24)}) {
    const int64_t n = 13, k = 1100;
    const Operand a = make_operand(OCTET_DTYPE_E4M3, m, k, rng);
    const Operand b = make_operand(OCTET_DTYPE_E5M2, n, k, rng);
    std::vector<uint8_t> at(a.raw.size());
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t kk = 0; kk < k; ++kk) at[std::size_t(kk * m + i)] = a.raw[std::size_t(i * k + kk)];
    }
    std::vector<uint8_t> out[2];
    for (int32_t trans_a = 0; trans_a < 2; ++trans_a) {
      Tensor ta = trans_a ? tensor(cpu.get(), OCTET_DTYPE_E4M3, k, m, OCTET_USAGE_ROWWISE)
                          : tensor(cpu.get(), OCTET_DTYPE_E4M3, m, k, OCTET_USAGE_ROWWISE);
      Tensor tb = tensor(cpu.get(), OCTET_DTYPE_E5M2, n, k, OCTET_USAGE_ROWWISE);
      Tensor td = tensor(cpu.get(), OCTET_DTYPE_FP32, m, n);
      const float sa = 0.25f, sb = 3.0f;
      upload(ta.get(), OCTET_COMPONENT_DATA, trans_a ? at.data() : a.raw.data(), at.size());
      upload(tb.get(), OCTET_COMPONENT_DATA, b.raw.data(), b.raw.size());
      upload(ta.get(), OCTET_COMPONENT_SCALE_INV, &sa, 4);
      upload(tb.get(), OCTET_COMPONENT_SCALE_INV, &sb, 4);
      octet_gemm_options o{};
      o.struct_size = sizeof o;
      o.trans_a = trans_a;
      ASSERT_EQ(octet_gemm(cpu.get(), ta.get(), tb.get(), td.get(), &o), OCTET_STATUS_SUCCESS)
          << octet_last_error_message();
      out[trans_a] = download(td.get(), OCTET_COMPONENT_DATA);
    }
    EXPECT_EQ(first_difference(out[0], out[1], 4), -1) << "m " << m;
  }
}

}  // namespace
}  // namespace cpu_test
