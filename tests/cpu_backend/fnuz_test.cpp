// The FNUZ FP8 formats on the backend under test (numerics.md section 1,
// "FNUZ FP8"), with expectations written here from the format's fields,
// not taken from a backend: every code's value, the encoder's rules at
// their edges, and the NaN code 0x80 inside GEMMs of every kernel shape.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "abi_helpers.hpp"

namespace cpu_test {
namespace {

struct Format {
  int32_t dtype;
  int mantissa_bits, bias;
};
const Format kFnuz[] = {{OCTET_DTYPE_E4M3FNUZ, 3, 8}, {OCTET_DTYPE_E5M2FNUZ, 2, 16}};

// The value of an FNUZ code from its fields: NaN for 0x80, else
// (-1)^s * 2^(e - bias) * (1 + m / 2^M), subnormal 2^(1 - bias) * m / 2^M.
double field_value(const Format& f, uint8_t code) {
  if (code == 0x80) return std::numeric_limits<double>::quiet_NaN();
  const int exponent = (code & 0x7F) >> f.mantissa_bits;
  const int mantissa = code & ((1 << f.mantissa_bits) - 1);
  const double frac = double(mantissa) / double(1 << f.mantissa_bits);
  const double mag = exponent == 0 ? std::ldexp(frac, 1 - f.bias) : std::ldexp(1.0 + frac, exponent - f.bias);
  return (code & 0x80) ? -mag : mag;
}

// The nearest code (ties to the even code, overflow judged after rounding)
// by search over the 255 values, in double: the rules of section 1.
uint8_t field_encode(const Format& f, double x, bool saturate) {
  if (std::isnan(x)) return 0x80;
  const double max = field_value(f, 0x7F);
  if (std::isinf(x)) return saturate ? (x > 0 ? 0x7F : 0xFF) : 0x80;
  const double a = std::fabs(x);
  // The value past the largest, as if the exponent went on: 2^(emax+1).
  const double next = std::ldexp(1.0, ((0x7F >> f.mantissa_bits) - f.bias) + 1);
  if (a >= (max + next) / 2) {  // rounds past max (the tie goes to next: even)
    if (!saturate) return 0x80;
    return x > 0 ? 0x7F : 0xFF;
  }
  int best = 0;
  for (int c = 1; c <= 0x7F; ++c) {
    const double d = std::fabs(field_value(f, uint8_t(c)) - a), db = std::fabs(field_value(f, uint8_t(best)) - a);
    if (d < db || (d == db && (c & 1) == 0)) best = c;
  }
  if (best == 0) return 0x00;  // no negative zero
  return uint8_t(best | (x < 0 ? 0x80 : 0x00));
}

class Fnuz : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!tested_backend_declares_dtype(OCTET_DTYPE_E4M3FNUZ) || !tested_backend_declares_dtype(OCTET_DTYPE_E5M2FNUZ)) {
      GTEST_SKIP() << OCTET_TEST_BACKEND << " does not declare the FNUZ formats";
    }
    ctx = context(OCTET_TEST_BACKEND);
    ASSERT_TRUE(ctx);
  }
  Context ctx;
};

// Every code, dequantized with SCALE_INV 1 to FP32, and converted to FP32.
TEST_F(Fnuz, EveryCodeDecodesToItsFieldValue) {
  for (const Format& f : kFnuz) {
    std::vector<uint8_t> codes(256);
    for (int c = 0; c < 256; ++c) codes[std::size_t(c)] = uint8_t(c);
    Tensor q = tensor(ctx.get(), f.dtype, 4, 64, OCTET_USAGE_ROWWISE);
    const float one = 1.0f;
    upload(q.get(), OCTET_COMPONENT_DATA, codes.data(), codes.size());
    upload(q.get(), OCTET_COMPONENT_SCALE_INV, &one, 4);
    Tensor deq = tensor(ctx.get(), OCTET_DTYPE_FP32, 4, 64);
    ASSERT_EQ(octet_dequantize(ctx.get(), q.get(), deq.get()), OCTET_STATUS_SUCCESS) << octet_last_error_message();
    Tensor plain = tensor(ctx.get(), f.dtype, 4, 64);
    upload(plain.get(), OCTET_COMPONENT_DATA, codes.data(), codes.size());
    Tensor conv = tensor(ctx.get(), OCTET_DTYPE_FP32, 4, 64);
    ASSERT_EQ(octet_convert(ctx.get(), plain.get(), conv.get(), 1), OCTET_STATUS_SUCCESS) << octet_last_error_message();
    for (const Tensor* t : {&deq, &conv}) {
      const std::vector<uint8_t> raw = download(t->get(), OCTET_COMPONENT_DATA);
      for (int c = 0; c < 256; ++c) {
        float got = 0.0f;
        std::memcpy(&got, &raw[std::size_t(c) * 4], 4);
        const double want = field_value(f, uint8_t(c));
        if (std::isnan(want)) {
          EXPECT_EQ(bits(got), 0x7FC00000u) << octet_dtype_name(f.dtype) << " code " << c;
        } else {
          EXPECT_EQ(double(got), want) << octet_dtype_name(f.dtype) << " code " << c;
          EXPECT_EQ(bits(got), bits(float(want))) << octet_dtype_name(f.dtype) << " code " << c << " (sign of zero)";
        }
      }
    }
  }
}

// The encoder at the values that decide each rule: every value, every
// midpoint and one FP32 step either side, the overflow thresholds (248 and
// 61440), infinities, NaNs of both signs, -0 and tiny values of both signs.
// Through quantize (scale 1, the fused cast + transpose too) and convert,
// both overflow modes; rows wider than a vector, so the SIMD paths run.
TEST_F(Fnuz, EncoderFollowsTheFieldRules) {
  for (const Format& f : kFnuz) {
    std::vector<float> x;
    for (int c = 0; c <= 0x7F; ++c) {
      const double a = field_value(f, uint8_t(c));
      const double b =
          c < 0x7F ? field_value(f, uint8_t(c + 1)) : std::ldexp(1.0, ((0x7F >> f.mantissa_bits) - f.bias) + 1);
      const float mid = float((a + b) / 2);
      for (float v : {float(a), mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e30f)}) {
        x.push_back(v);
        x.push_back(-v);
      }
    }
    for (float v : {INFINITY, -INFINITY, NAN, -NAN, -0.0f, 0.0f, 1e-30f, -1e-30f, 3.0e38f, -3.0e38f}) x.push_back(v);
    while (x.size() % 64 != 0) x.push_back(-1e-30f);
    const int64_t cols = 64, rows = int64_t(x.size()) / cols;
    Tensor in = tensor(ctx.get(), OCTET_DTYPE_FP32, rows, cols);
    upload(in.get(), OCTET_COMPONENT_DATA, x.data(), x.size() * 4);
    for (int32_t saturate : {1, 0}) {
      std::vector<uint8_t> want(x.size());
      for (std::size_t i = 0; i < x.size(); ++i) want[i] = field_encode(f, double(x[i]), saturate != 0);
      const std::string where = std::string(octet_dtype_name(f.dtype)) + " saturate " + std::to_string(saturate);
      // convert
      Tensor out = tensor(ctx.get(), f.dtype, rows, cols);
      ASSERT_EQ(octet_convert(ctx.get(), in.get(), out.get(), saturate), OCTET_STATUS_SUCCESS)
          << octet_last_error_message();
      const std::vector<uint8_t> got = download(out.get(), OCTET_COMPONENT_DATA);
      for (std::size_t i = 0; i < x.size(); ++i)
        ASSERT_EQ(int(got[i]), int(want[i]))
            << where << " convert of " << x[i] << " (bits 0x" << std::hex << bits(x[i]) << ")";
      // quantize, both copies
      Tensor q = tensor(ctx.get(), f.dtype, rows, cols, OCTET_USAGE_BOTH);
      const float one = 1.0f;
      upload(q.get(), OCTET_COMPONENT_SCALE, &one, 4);
      octet_quantize_options o{};
      o.struct_size = sizeof o;
      o.saturate = saturate;
      ASSERT_EQ(octet_quantize(ctx.get(), in.get(), q.get(), &o), OCTET_STATUS_SUCCESS) << octet_last_error_message();
      const std::vector<uint8_t> rowwise = download(q.get(), OCTET_COMPONENT_DATA);
      for (std::size_t i = 0; i < x.size(); ++i)
        ASSERT_EQ(int(rowwise[i]), int(want[i])) << where << " quantize of " << x[i];
      octet_tensor_info info{};
      info.struct_size = sizeof info;
      ASSERT_EQ(octet_tensor_get_info(q.get(), &info), OCTET_STATUS_SUCCESS);
      if (info.has_columnwise_data) {
        const std::vector<uint8_t> columnwise = download(q.get(), OCTET_COMPONENT_COLUMNWISE_DATA);
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t c = 0; c < cols; ++c)
            ASSERT_EQ(int(columnwise[std::size_t(c * rows + r)]), int(want[std::size_t(r * cols + c)]))
                << where << " columnwise quantize of " << x[std::size_t(r * cols + c)];
      }
    }
  }
}

// The NaN code 0x80 in an operand of a GEMM makes exactly the outputs that
// read it NaN, on every kernel shape (decode m <= 32, blocked m > 32,
// transposed operands); the others are the double-precision sums of the
// codes' values (exact here: small integers times powers of two, k <= 300).
TEST_F(Fnuz, NanCodeInAGemmOperandGivesNanWhereItIsRead) {
  std::mt19937 rng(7);
  struct Dims {
    int64_t m, n, k;
  };
  for (const Format& f : kFnuz) {
    for (Dims s : {Dims{3, 40, 70}, Dims{20, 9, 300}, Dims{40, 50, 300}, Dims{200, 70, 64}}) {
      for (int layout = 0; layout < 4; ++layout) {
        const int trans_a = layout & 1, trans_b = layout >> 1;
        // Codes of small magnitude (|v| <= 2^3), so every sum is exact in FP32.
        auto random_code = [&]() {
          for (;;) {
            const uint8_t c = uint8_t(rng());
            if (c != 0x80 && std::fabs(field_value(f, c)) <= 8.0 && std::fabs(field_value(f, c)) >= 0.25) return c;
          }
        };
        std::vector<uint8_t> a(std::size_t(s.m * s.k)), b(std::size_t(s.n * s.k));  // [m,k], [n,k]
        for (uint8_t& c : a) c = random_code();
        for (uint8_t& c : b) c = random_code();
        const int64_t nan_row = s.m / 2, nan_col = s.n - 1;
        a[std::size_t(nan_row * s.k + s.k / 3)] = 0x80;
        b[std::size_t(nan_col * s.k + s.k - 1)] = 0x80;
        auto stored = [](const std::vector<uint8_t>& v, int64_t outer, int64_t k, bool trans) {
          if (!trans) return v;
          std::vector<uint8_t> t(v.size());
          for (int64_t o = 0; o < outer; ++o)
            for (int64_t kk = 0; kk < k; ++kk) t[std::size_t(kk * outer + o)] = v[std::size_t(o * k + kk)];
          return t;
        };
        const std::vector<uint8_t> sa = stored(a, s.m, s.k, trans_a), sb = stored(b, s.n, s.k, trans_b);
        Tensor ta = trans_a ? tensor(ctx.get(), f.dtype, s.k, s.m, OCTET_USAGE_ROWWISE)
                            : tensor(ctx.get(), f.dtype, s.m, s.k, OCTET_USAGE_ROWWISE);
        Tensor tb = trans_b ? tensor(ctx.get(), f.dtype, s.k, s.n, OCTET_USAGE_ROWWISE)
                            : tensor(ctx.get(), f.dtype, s.n, s.k, OCTET_USAGE_ROWWISE);
        const float one = 1.0f;
        upload(ta.get(), OCTET_COMPONENT_DATA, sa.data(), sa.size());
        upload(tb.get(), OCTET_COMPONENT_DATA, sb.data(), sb.size());
        upload(ta.get(), OCTET_COMPONENT_SCALE_INV, &one, 4);
        upload(tb.get(), OCTET_COMPONENT_SCALE_INV, &one, 4);
        Tensor td = tensor(ctx.get(), OCTET_DTYPE_FP32, s.m, s.n);
        octet_gemm_options o{};
        ASSERT_EQ(octet_gemm_options_init(&o), OCTET_STATUS_SUCCESS);
        o.trans_a = trans_a;
        o.trans_b = trans_b;
        ASSERT_EQ(octet_gemm(ctx.get(), ta.get(), tb.get(), td.get(), &o), OCTET_STATUS_SUCCESS)
            << octet_last_error_message();
        const std::vector<uint8_t> raw = download(td.get(), OCTET_COMPONENT_DATA);
        for (int64_t i = 0; i < s.m; ++i) {
          for (int64_t j = 0; j < s.n; ++j) {
            float got = 0.0f;
            std::memcpy(&got, &raw[std::size_t(i * s.n + j) * 4], 4);
            const std::string where = std::string(octet_dtype_name(f.dtype)) + " " + std::to_string(s.m) + "x" +
                                      std::to_string(s.n) + "x" + std::to_string(s.k) + " layout " +
                                      std::to_string(layout) + " at " + std::to_string(i) + "," + std::to_string(j);
            if (i == nan_row || j == nan_col) {
              ASSERT_TRUE(std::isnan(got)) << where << " is " << got;
              continue;
            }
            double want = 0.0;
            for (int64_t kk = 0; kk < s.k; ++kk)
              want += field_value(f, a[std::size_t(i * s.k + kk)]) * field_value(f, b[std::size_t(j * s.k + kk)]);
            ASSERT_EQ(double(got), want) << where;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace cpu_test
