// The reference GEMM through the backend table: bit-exact against a
// straightforward re-implementation of the order docs/numerics.md documents,
// and within the documented error bound of a double-precision computation.
#include <octet/octet_math.h>

#include <gtest/gtest.h>

#include <malloc.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "backend_table.hpp"
#include "test_matrix.hpp"

namespace octet::test {
namespace {

struct Shape {
  int64_t m, n, k;
};

struct GemmProblem {
  GemmProblem(int32_t a_dtype, int32_t b_dtype, int32_t d_dtype, Shape s, bool trans_a,
              bool trans_b)
      : shape(s), trans_a(trans_a), trans_b(trans_b),
        // Stored shapes, with a leading dimension wider than the row.
        a(a_dtype, trans_a ? s.k : s.m, trans_a ? s.m : s.k, (trans_a ? s.m : s.k) + 3),
        b(b_dtype, trans_b ? s.k : s.n, trans_b ? s.n : s.k, (trans_b ? s.n : s.k) + 1),
        d(d_dtype, s.m, s.n, s.n + 2), bias(OCTET_DTYPE_BF16, 1, s.n, s.n) {}

  // A'[i,kk] and B'[j,kk] as the GEMM contract defines them.
  float a_at(int64_t i, int64_t kk) const { return trans_a ? a.load(kk, i) : a.load(i, kk); }
  float b_at(int64_t j, int64_t kk) const { return trans_b ? b.load(kk, j) : b.load(j, kk); }

  octet_gemm_args args() {
    octet_gemm_args g{};
    g.struct_size = sizeof g;
    g.m = shape.m;
    g.n = shape.n;
    g.k = shape.k;
    g.a = a.view();
    g.b = b.view();
    g.trans_a = trans_a;
    g.trans_b = trans_b;
    g.a_scale_inv = has_scales ? &sa : nullptr;
    g.b_scale_inv = has_scales ? &sb : nullptr;
    g.alpha = alpha;
    g.beta = beta;
    g.d = d.view();
    if (has_bias) g.bias = bias.view();
    g.epilogue = epilogue;
    return g;
  }

  Shape shape;
  bool trans_a, trans_b;
  TestMatrix a, b, d, bias;
  bool has_scales = false, has_bias = false;
  float sa = 1, sb = 1, alpha = 1, beta = 0;
  int32_t epilogue = OCTET_EPILOGUE_NONE;
};

// The documented order, written out plainly (the suite is compiled with
// -ffp-contract=off, so each * and + below is rounded to FP32 on its own).
// a_rows / b_rows hold A' and B' widened, row by row ([m,k] and [n,k]).
float documented_order(const GemmProblem& p, const std::vector<float>& a_rows,
                       const std::vector<float>& b_rows, int64_t i, int64_t j, float d_old) {
  const int64_t k = p.shape.k;
  float acc = 0.0f;
  for (int64_t kk = 0; kk < k; ++kk) acc += a_rows[i * k + kk] * b_rows[j * k + kk];
  const float sa = p.has_scales ? p.sa : 1.0f;
  const float sb = p.has_scales ? p.sb : 1.0f;
  float v = (p.alpha * (sa * sb)) * acc;
  if (p.beta != 0.0f) v = v + p.beta * d_old;
  if (p.has_bias) v = v + p.bias.load(0, j);
  if (p.epilogue == OCTET_EPILOGUE_GELU) {
    v = 0.5f * v * (1.0f + octet_math_tanhf(0.7978845608f * (v + 0.044715f * v * v * v)));
  }
  return v;
}

// Half an ulp of the output format at `value` (relative), plus half its
// smallest subnormal.
double output_rounding(int32_t dtype, double value) {
  switch (dtype) {
    case OCTET_DTYPE_BF16: return std::fabs(value) * 0x1p-8 + 0x1p-134;
    case OCTET_DTYPE_FP16: return std::fabs(value) * 0x1p-11 + 0x1p-25;
    default: return std::fabs(value) * 0x1p-24 + 0x1p-150;
  }
}

// Runs the GEMM and checks every element: bit-exact against the documented
// order, and within |D - D_ref| <= (k + 4) 2^-23 sum|terms| + output rounding
// of the double-precision D_ref.
void run_and_check(const octet_backend_api* api,
                   octet_backend_context* context, GemmProblem& p) {
  const TestMatrix d_before = p.d;
  octet_gemm_args args = p.args();
  EXPECT_EQ(api->gemm(context, &args), OCTET_STATUS_SUCCESS);
  const double sa = p.has_scales ? p.sa : 1.0, sb = p.has_scales ? p.sb : 1.0;
  const int64_t k = p.shape.k;
  std::vector<float> a_rows(p.shape.m * k), b_rows(p.shape.n * k);
  for (int64_t kk = 0; kk < k; ++kk) {
    for (int64_t i = 0; i < p.shape.m; ++i) a_rows[i * k + kk] = p.a_at(i, kk);
    for (int64_t j = 0; j < p.shape.n; ++j) b_rows[j * k + kk] = p.b_at(j, kk);
  }
  for (int64_t i = 0; i < p.shape.m; ++i) {
    for (int64_t j = 0; j < p.shape.n; ++j) {
      const float d_old = d_before.load(i, j);
      const uint32_t expected =
          oracle_store_bits(p.d.dtype, documented_order(p, a_rows, b_rows, i, j, d_old), true);
      ASSERT_TRUE(same_element(p.d.dtype, p.d.bits(i, j), expected))
          << "D[" << i << "," << j << "] = " << p.d.load(i, j) << ", documented order gives "
          << oracle_load(&expected, p.d.dtype, 0);
      if (p.epilogue != OCTET_EPILOGUE_NONE) continue;
      double sum = 0, magnitude = 0;
      for (int64_t kk = 0; kk < k; ++kk) {
        const double product = static_cast<double>(a_rows[i * k + kk]) * b_rows[j * k + kk];
        sum += product;
        magnitude += std::fabs(product);
      }
      const double scale = static_cast<double>(p.alpha) * sa * sb;
      double reference = scale * sum;
      double terms = std::fabs(scale) * magnitude;
      if (p.beta != 0.0f) {
        reference += static_cast<double>(p.beta) * d_old;
        terms += std::fabs(static_cast<double>(p.beta) * d_old);
      }
      if (p.has_bias) {
        reference += p.bias.load(0, j);
        terms += std::fabs(p.bias.load(0, j));
      }
      const double bound = static_cast<double>(p.shape.k + 4) * 0x1p-23 * terms +
                           output_rounding(p.d.dtype, reference);
      const double actual = p.d.load(i, j);
      if (std::isfinite(actual)) {
        ASSERT_LE(std::fabs(actual - reference), bound) << "D[" << i << "," << j << "]";
      }
    }
  }
  EXPECT_TRUE(p.d.padding_untouched());
}

const Shape kShapes[] = {{1, 1, 1}, {7, 13, 5}, {67, 131, 29}, {129, 65, 257}};

struct OperandPair {
  int32_t a, b;
};
const OperandPair kFp8Pairs[] = {{OCTET_DTYPE_E4M3, OCTET_DTYPE_E4M3},
                                 {OCTET_DTYPE_E4M3, OCTET_DTYPE_E5M2},
                                 {OCTET_DTYPE_E5M2, OCTET_DTYPE_E4M3},
                                 {OCTET_DTYPE_E5M2, OCTET_DTYPE_E5M2}};
const OperandPair kHighPrecisionPairs[] = {{OCTET_DTYPE_FP32, OCTET_DTYPE_FP32},
                                           {OCTET_DTYPE_BF16, OCTET_DTYPE_FP16},
                                           {OCTET_DTYPE_FP16, OCTET_DTYPE_BF16},
                                           {OCTET_DTYPE_BF16, OCTET_DTYPE_FP32}};
const int32_t kOutputs[] = {OCTET_DTYPE_FP32, OCTET_DTYPE_BF16, OCTET_DTYPE_FP16};

class GemmKernels : public BackendTableTest {
 protected:
  void SetUp() override {
    BackendTableTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    OCTET_REQUIRE_ENTRY(gemm);
  }
};

// Every layout, operand pair, output dtype and shape; alpha, beta, bias and
// scales vary from case to case.
void run_grid(const octet_backend_api* api, octet_backend_context* context,
              const OperandPair* pairs, std::size_t pair_count, bool fp8) {
  std::mt19937 rng(fp8 ? 17 : 19);
  int case_index = 0;
  for (int layout = 0; layout < 4; ++layout) {
    for (std::size_t pi = 0; pi < pair_count; ++pi) {
      for (int32_t out : kOutputs) {
        for (const Shape& shape : kShapes) {
          ++case_index;
          GemmProblem p(pairs[pi].a, pairs[pi].b, out, shape, layout & 1, (layout >> 1) & 1);
          SCOPED_TRACE(::testing::Message()
                       << "m,n,k=" << shape.m << "," << shape.n << "," << shape.k << " trans_a="
                       << p.trans_a << " trans_b=" << p.trans_b << " a=" << pairs[pi].a
                       << " b=" << pairs[pi].b << " d=" << out);
          fill_finite(p.a, rng, 4.0f);
          fill_finite(p.b, rng, 4.0f);
          fill_finite(p.d, rng, 8.0f);
          fill_finite(p.bias, rng, 2.0f);
          p.has_scales = fp8 && case_index % 3 != 0;
          p.sa = 0.0625f * (1 + case_index % 5);
          p.sb = 1.7f;
          p.alpha = case_index % 2 ? 1.0f : -0.75f;
          p.beta = case_index % 4 < 2 ? 0.0f : 0.5f;
          p.has_bias = case_index % 3 == 1;
          run_and_check(api, context, p);
          if (::testing::Test::HasFatalFailure()) return;
        }
      }
    }
  }
}

TEST_P(GemmKernels, Fp8OperandsEveryLayoutAndShape) {
  run_grid(api_, context_, kFp8Pairs, std::size(kFp8Pairs), true);
  expect_success(OCTET_STATUS_SUCCESS);
}

TEST_P(GemmKernels, HighPrecisionOperandsEveryLayoutAndShape) {
  run_grid(api_, context_, kHighPrecisionPairs, std::size(kHighPrecisionPairs), false);
  expect_success(OCTET_STATUS_SUCCESS);
}

TEST_P(GemmKernels, FullRangeFp8CodesAreExactProducts) {
  // Every finite code may appear: products of FP8 values are exact in FP32,
  // so the accumulation is the only rounding.
  std::mt19937 rng(23);
  GemmProblem p(OCTET_DTYPE_E5M2, OCTET_DTYPE_E4M3, OCTET_DTYPE_FP32, {33, 21, 47}, true, false);
  fill_finite(p.a, rng, 57344.0f);
  fill_finite(p.b, rng, 448.0f);
  run_and_check(api_, context_, p);
  expect_success(OCTET_STATUS_SUCCESS);
}

TEST_P(GemmKernels, GeluEpilogueFollowsTheTanhForm) {
  std::mt19937 rng(29);
  for (int32_t out : kOutputs) {
    GemmProblem p(OCTET_DTYPE_E4M3, OCTET_DTYPE_E4M3, out, {19, 23, 31}, false, false);
    fill_finite(p.a, rng, 2.0f);
    fill_finite(p.b, rng, 2.0f);
    fill_finite(p.bias, rng, 2.0f);
    p.has_bias = true;
    p.has_scales = true;
    p.sa = 0.25f;
    p.sb = 0.5f;
    p.epilogue = OCTET_EPILOGUE_GELU;
    run_and_check(api_, context_, p);
  }
  expect_success(OCTET_STATUS_SUCCESS);
}

TEST_P(GemmKernels, BetaZeroNeverReadsD) {
  // NaN in D's old contents must not leak into the result when beta == 0.
  std::mt19937 rng(31);
  GemmProblem p(OCTET_DTYPE_FP32, OCTET_DTYPE_FP32, OCTET_DTYPE_FP32, {4, 5, 6}, false, true);
  fill_finite(p.a, rng);
  fill_finite(p.b, rng);
  for (int64_t i = 0; i < 4; ++i) {
    for (int64_t j = 0; j < 5; ++j) p.d.set_bits(i, j, 0x7FC00000u);
  }
  octet_gemm_args args = p.args();
  expect_success(api_->gemm(context_, &args));
  for (int64_t i = 0; i < 4; ++i) {
    for (int64_t j = 0; j < 5; ++j) EXPECT_FALSE(std::isnan(p.d.load(i, j)));
  }
}

TEST_P(GemmKernels, EmptyReductionGivesBiasOnly) {
  GemmProblem p(OCTET_DTYPE_E4M3, OCTET_DTYPE_E4M3, OCTET_DTYPE_FP32, {3, 2, 0}, false, false);
  std::mt19937 rng(37);
  fill_finite(p.bias, rng);
  p.has_bias = true;
  octet_gemm_args args = p.args();
  expect_success(api_->gemm(context_, &args));
  for (int64_t i = 0; i < 3; ++i) {
    for (int64_t j = 0; j < 2; ++j) EXPECT_EQ(p.d.load(i, j), 0.0f + p.bias.load(0, j));
  }
}

// An allocation that fails inside the GEMM is OUT_OF_MEMORY with the bytes
// asked: the address space is capped just above what the process uses, so
// the 64 MiB FP32 copy of a 4096 x 4096 E4M3 operand cannot be had. The
// heap's free top goes back to the system first, and 64 MiB is above what
// glibc keeps untrimmed or serves from its heap, so memory the process
// already holds (a whole test binary in one process) cannot serve it.
TEST_P(GemmKernels, AllocationFailureIsOutOfMemoryWithTheBytesAsked) {
#if defined(__SANITIZE_ADDRESS__)
  // ASan's allocator aborts when RLIMIT_AS refuses its reservations.
  GTEST_SKIP() << "RLIMIT_AS cannot model an allocation failure under AddressSanitizer";
#endif
  GemmProblem p(OCTET_DTYPE_E4M3, OCTET_DTYPE_E4M3, OCTET_DTYPE_FP32, {4096, 1, 4096}, false, false);
  octet_gemm_args args = p.args();
  malloc_trim(0);
  long pages = 0;
  {
    FILE* f = std::fopen("/proc/self/statm", "r");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(std::fscanf(f, "%ld", &pages), 1);
    std::fclose(f);
  }
  struct rlimit old_limit;
  ASSERT_EQ(getrlimit(RLIMIT_AS, &old_limit), 0);
  struct rlimit limit = old_limit;
  limit.rlim_cur = static_cast<rlim_t>(pages) * static_cast<rlim_t>(sysconf(_SC_PAGESIZE)) + (4u << 20);
  ASSERT_EQ(setrlimit(RLIMIT_AS, &limit), 0);
  const int32_t status = api_->gemm(context_, &args);
  ASSERT_EQ(setrlimit(RLIMIT_AS, &old_limit), 0);
  expect_failure(status, OCTET_STATUS_OUT_OF_MEMORY, {"gemm", "67108864 bytes asked"});
  expect_success(api_->gemm(context_, &args));  // the limit lifted
}

OCTET_BACKEND_SUITE(GemmKernels);

}  // namespace
}  // namespace octet::test
