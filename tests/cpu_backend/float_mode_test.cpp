// The caller's floating-point mode changes no result (octet_float_mode.hpp):
// with MXCSR's flush-to-zero and denormals-are-zero bits on, on the calling
// thread and on every OpenMP worker (as in a program built with
// -ffast-math), the cpu backend and the reference give the bits they give
// in the default mode, for work that reads and writes FP32 subnormals on
// several threads; and each thread's mode is its own again after the call.
// x86-64 only (MXCSR).
#include <octet/octet.h>

#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

#include "abi_helpers.hpp"

namespace cpu_test {
namespace {

#if defined(__x86_64__)

constexpr uint32_t kFlushToZero = 0x8000u, kDenormalsAreZero = 0x0040u, kExceptionFlags = 0x3Fu;

// Sets MXCSR to `csr` on the calling thread and on each thread of a team of
// omp_get_max_threads() (the plugin's regions take at most that many).
void set_mode_everywhere(uint32_t csr) {
  _mm_setcsr(csr);
#pragma omp parallel
  { _mm_setcsr(csr); }
}

// Each thread's MXCSR control bits (exception flags masked out), calling
// thread first.
std::vector<uint32_t> modes_everywhere() {
  std::vector<uint32_t> modes(static_cast<std::size_t>(omp_get_max_threads()) + 1, 0);
  modes[0] = _mm_getcsr() & ~kExceptionFlags;
#pragma omp parallel
  { modes[static_cast<std::size_t>(omp_get_thread_num()) + 1] = _mm_getcsr() & ~kExceptionFlags; }
  return modes;
}

// Restores the test program's mode and team size whatever a test does.
class FloatMode : public ::testing::Test {
 protected:
  void SetUp() override {
    old_csr_ = _mm_getcsr();
    old_threads_ = omp_get_max_threads();
    omp_set_num_threads(3);  // workers even on a one-core machine
  }
  void TearDown() override {
    set_mode_everywhere(old_csr_);
    omp_set_num_threads(old_threads_);
  }
  uint32_t old_csr_ = 0;
  int old_threads_ = 1;
};

// One piece of work, run on `backend`: its output bytes.
using Work = std::vector<uint8_t> (*)(const char* backend);

// FP32 GEMM 1024 x 1024 x 256 (four 512 x 512 tiles: several threads) of
// operands around 2^-130 and 1 (every product an FP32 subnormal), alpha
// 2^100 bringing the sums back to normal numbers.
std::vector<uint8_t> subnormal_gemm(const char* backend) {
  const int64_t m = 1024, n = 1024, k = 256;
  // Made once, on the first (default-mode) call: under FTZ the test's own
  // arithmetic would flush them.
  static const std::vector<float> a = [] {
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> u(0.5f, 1.0f);
    std::vector<float> v(static_cast<std::size_t>(m * k));
    for (float& x : v) x = std::ldexp(u(rng), -130);
    return v;
  }();
  static const std::vector<float> b = [] {
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> u(0.5f, 1.0f);
    std::vector<float> v(static_cast<std::size_t>(n * k));
    for (float& x : v) x = u(rng);
    return v;
  }();
  Context ctx = context(backend);
  Tensor ta = tensor(ctx.get(), OCTET_DTYPE_FP32, m, k), tb = tensor(ctx.get(), OCTET_DTYPE_FP32, n, k);
  Tensor d = tensor(ctx.get(), OCTET_DTYPE_FP32, m, n);
  upload(ta.get(), OCTET_COMPONENT_DATA, a.data(), a.size() * 4);
  upload(tb.get(), OCTET_COMPONENT_DATA, b.data(), b.size() * 4);
  octet_gemm_options o;
  EXPECT_EQ(octet_gemm_options_init(&o), OCTET_STATUS_SUCCESS);
  o.alpha = std::ldexp(1.0f, 100);
  EXPECT_EQ(octet_gemm(ctx.get(), ta.get(), tb.get(), d.get(), &o), OCTET_STATUS_SUCCESS)
      << backend << ": " << octet_last_error_message();
  return download(d.get(), OCTET_COMPONENT_DATA);
}

// MXFP8 dequantize of 512 x 1024 E4M3 codes with scale 2^-126 (most values
// FP32 subnormals), on several threads.
std::vector<uint8_t> subnormal_dequantize(const char* backend) {
  const int64_t rows = 512, cols = 1024;
  std::mt19937 rng(4);
  std::vector<uint8_t> codes(static_cast<std::size_t>(rows * cols));
  for (uint8_t& c : codes) {
    do {
      c = static_cast<uint8_t>(rng());
    } while ((c & 0x7F) == 0x7F);  // E4M3's NaN codes
  }
  const std::vector<uint8_t> scales(static_cast<std::size_t>(rows * cols / 32), uint8_t{1});  // 2^-126
  Context ctx = context(backend);
  Tensor q = block_tensor(ctx.get(), OCTET_DTYPE_E4M3, rows, cols, OCTET_USAGE_ROWWISE, OCTET_SCALING_MXFP8_1X32);
  upload(q.get(), OCTET_COMPONENT_DATA, codes.data(), codes.size());
  upload(q.get(), OCTET_COMPONENT_ROWWISE_SCALE_INV, scales.data(), scales.size());
  Tensor out = tensor(ctx.get(), OCTET_DTYPE_FP32, rows, cols);
  EXPECT_EQ(octet_dequantize(ctx.get(), q.get(), out.get()), OCTET_STATUS_SUCCESS)
      << backend << ": " << octet_last_error_message();
  return download(out.get(), OCTET_COMPONENT_DATA);
}

// How many FP32 subnormals `bytes` holds.
int64_t subnormals_in(const std::vector<uint8_t>& bytes) {
  int64_t count = 0;
  for (std::size_t i = 0; i + 4 <= bytes.size(); i += 4) {
    float v;
    std::memcpy(&v, &bytes[i], 4);
    if (std::fpclassify(v) == FP_SUBNORMAL) ++count;
  }
  return count;
}

TEST_F(FloatMode, FlushToZeroAndDenormalsAreZeroOfTheCallerChangeNoResult) {
  struct Case {
    const char* name;
    Work work;
    bool subnormal_output;  // the output itself holds subnormals
  };
  const Case cases[] = {{"gemm", subnormal_gemm, false}, {"dequantize", subnormal_dequantize, true}};
  const uint32_t fast_math = (old_csr_ & ~kExceptionFlags) | kFlushToZero | kDenormalsAreZero;
  for (const Case& c : cases) {
    for (const char* backend : {OCTET_TEST_BACKEND, "reference"}) {
      const std::string where = std::string(c.name) + " on " + backend;
      set_mode_everywhere(old_csr_ & ~(kFlushToZero | kDenormalsAreZero));
      const std::vector<uint8_t> want = c.work(backend);
      ASSERT_FALSE(want.empty()) << where;
      // Work that flushing would change: subnormals in the output, or
      // nonzero sums of subnormal products.
      if (c.subnormal_output) {
        ASSERT_GT(subnormals_in(want), int64_t{1000}) << where;
      } else {
        ASSERT_EQ(first_difference(want, std::vector<uint8_t>(want.size(), 0), 4), 0) << where;
      }
      set_mode_everywhere(fast_math);
      const std::vector<uint8_t> got = c.work(backend);
      const std::vector<uint32_t> modes = modes_everywhere();
      EXPECT_EQ(first_difference(got, want, 4), -1) << where << ": first differing FP32 element";
      for (std::size_t t = 0; t < modes.size(); ++t) {
        EXPECT_EQ(modes[t], fast_math) << where << ": thread " << t << " (0: the caller) lost its own mode";
      }
    }
  }
}

#else

TEST(FloatMode, FlushToZeroAndDenormalsAreZeroOfTheCallerChangeNoResult) {
  GTEST_SKIP() << "MXCSR exists on x86-64 only; octet::DefaultFloatMode does nothing elsewhere";
}

#endif

}  // namespace
}  // namespace cpu_test
