// The kokkos backend's FNUZ FP8 (E4M3FNUZ, E5M2FNUZ) and per-row /
// per-column scaling (numerics.md sections 1 and 16) against the reference,
// both driven through octet.h: quantize (every copy, scale grid, amax and
// statistics), dequantize and convert bit for bit; per-row and per-column
// GEMMs the reference's bits and within numerics.md section 16's bound,
// computed here from the codes and scales the kokkos tensors hold; FNUZ
// GEMMs with an FNUZ output bit for bit.
#include <octet/octet.h>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "abi_helpers.hpp"

namespace {

using cpu_test::bits;
using cpu_test::Context;
using cpu_test::context;
using cpu_test::from_bits;
using cpu_test::Shape;
using cpu_test::Tensor;

constexpr const char* kKokkos = "kokkos";
constexpr const char* kReference = "reference";
const std::vector<int32_t> kFnuz = {OCTET_DTYPE_E4M3FNUZ, OCTET_DTYPE_E5M2FNUZ};
const std::vector<int32_t> kFp8 = {OCTET_DTYPE_E4M3, OCTET_DTYPE_E5M2, OCTET_DTYPE_E4M3FNUZ, OCTET_DTYPE_E5M2FNUZ};

std::string name_of(int32_t dtype) { return octet_dtype_name(dtype); }

octet_tensor_info info_of(const octet_tensor* t) {
  octet_tensor_info info{};
  info.struct_size = sizeof info;
  EXPECT_EQ(octet_tensor_get_info(t, &info), OCTET_STATUS_SUCCESS) << octet_last_error_message();
  return info;
}

std::vector<uint8_t> read(const octet_tensor* t, int32_t component, std::size_t bytes) {
  std::vector<uint8_t> out(bytes);
  if (bytes == 0) return out;
  EXPECT_EQ(octet_tensor_copy_to_host(t, component, out.data(), bytes), OCTET_STATUS_SUCCESS)
      << octet_last_error_message();
  return out;
}

Tensor make(octet_context* ctx, int32_t dtype, int64_t rows, int64_t cols, uint32_t usages = 0, int32_t mode = 0) {
  return octet::Tensor::create(ctx, dtype, {rows, cols}, usages, mode);
}

// Every stored component of a quantized tensor, as bytes.
struct Image {
  std::vector<uint8_t> rowwise, columnwise, rowwise_scales, columnwise_scales, scale_inv, amax;
};
Image image_of(const octet_tensor* t) {
  const octet_tensor_info info = info_of(t);
  const bool blocked = info.scaling_mode != OCTET_SCALING_PER_TENSOR;
  Image im;
  if (info.has_rowwise_data) {
    im.rowwise = read(t, OCTET_COMPONENT_DATA, info.rowwise_bytes);
    if (blocked) im.rowwise_scales = read(t, OCTET_COMPONENT_ROWWISE_SCALE_INV, info.rowwise_scale_inv_bytes);
  }
  if (info.has_columnwise_data) {
    im.columnwise = read(t, OCTET_COMPONENT_COLUMNWISE_DATA, info.columnwise_bytes);
    if (blocked) {
      im.columnwise_scales = read(t, OCTET_COMPONENT_COLUMNWISE_SCALE_INV, info.columnwise_scale_inv_bytes);
    }
  }
  if (!blocked) im.scale_inv = read(t, OCTET_COMPONENT_SCALE_INV, 4);
  im.amax = read(t, OCTET_COMPONENT_AMAX, 4);
  return im;
}

void expect_same(const Image& got, const Image& want, const std::string& where) {
  EXPECT_EQ(got.rowwise, want.rowwise) << where << ": rowwise codes";
  EXPECT_EQ(got.columnwise, want.columnwise) << where << ": columnwise codes";
  EXPECT_EQ(got.rowwise_scales, want.rowwise_scales) << where << ": rowwise scales";
  EXPECT_EQ(got.columnwise_scales, want.columnwise_scales) << where << ": columnwise scales";
  EXPECT_EQ(got.scale_inv, want.scale_inv) << where << ": scale_inv";
  EXPECT_EQ(got.amax, want.amax) << where << ": amax";
}

void expect_same(const octet_quantize_stats& got, const octet_quantize_stats& want, const std::string& where) {
  EXPECT_EQ(got.nan_count, want.nan_count) << where;
  EXPECT_EQ(got.saturated_count, want.saturated_count) << where;
  EXPECT_EQ(got.flushed_count, want.flushed_count) << where;
  EXPECT_EQ(got.total_count, want.total_count) << where;
  EXPECT_EQ(bits(got.amax), bits(want.amax)) << where;
}

// One quantize of FP32 `values` (rows x cols) on `backend`.
struct Quantized {
  Context ctx;
  Tensor input, output;
  octet_quantize_stats stats{};
};
Quantized quantize_on(const char* backend, const std::vector<float>& values, int64_t rows, int64_t cols, int32_t dtype,
                      uint32_t usages, int32_t mode, float scale, int32_t saturate) {
  Quantized q;
  q.ctx = context(backend);
  q.input = make(q.ctx.get(), OCTET_DTYPE_FP32, rows, cols);
  if (!values.empty()) {
    EXPECT_EQ(octet_tensor_copy_from_host(q.input.get(), OCTET_COMPONENT_DATA, values.data(), values.size() * 4),
              OCTET_STATUS_SUCCESS);
  }
  q.output = make(q.ctx.get(), dtype, rows, cols, usages, mode);
  if (mode == OCTET_SCALING_PER_TENSOR) {
    EXPECT_EQ(octet_tensor_copy_from_host(q.output.get(), OCTET_COMPONENT_SCALE, &scale, 4), OCTET_STATUS_SUCCESS);
  }
  octet_quantize_options o;
  EXPECT_EQ(octet_quantize_options_init(&o), OCTET_STATUS_SUCCESS);
  o.saturate = saturate;
  q.stats.struct_size = sizeof q.stats;
  EXPECT_EQ(octet_quantize_with_stats(q.ctx.get(), q.input.get(), q.output.get(), &o, &q.stats), OCTET_STATUS_SUCCESS)
      << backend << ": " << octet_last_error_message();
  return q;
}

// Every finite value of both FNUZ formats, the midpoints between neighbours
// and one FP32 ulp either side, both signs, the shared special values
// (infinities, NaNs, zeros, subnormals, OCP thresholds) and the FNUZ
// overflow thresholds (248 and 61440, numerics.md section 1).
std::vector<float> fnuz_values() {
  std::vector<float> v = cpu_test::special_values();
  for (int32_t dtype : kFnuz) {
    for (int code = 0; code < 0x7F; ++code) {
      const float a = octet_fp8_decode(static_cast<uint8_t>(code), dtype);
      const float b = octet_fp8_decode(static_cast<uint8_t>(code + 1), dtype);
      const float mid = 0.5f * (a + b);
      for (float x : {a, mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e30f)}) {
        v.push_back(x);
        v.push_back(-x);
      }
    }
  }
  for (float x : {240.0f, 248.0f, std::nextafter(248.0f, 0.0f), 256.0f, 57344.0f, 61440.0f,
                  std::nextafter(61440.0f, 0.0f), 65536.0f}) {
    v.push_back(x);
    v.push_back(-x);
  }
  return v;
}

// Finite data whose magnitude varies by row and column band (so per-row and
// per-column scales differ), an all-zero row, and NaN / +-inf sprinkled in.
std::vector<float> graded(int64_t rows, int64_t cols, uint32_t seed, bool non_finite) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> out(static_cast<std::size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      const int band = static_cast<int>((r % 7) * 3 + (c / 11) % 5);
      float x = r == 2 ? 0.0f : std::ldexp(normal(rng), band * 2 - 12);
      if (non_finite && (r * cols + c) % 97 == 5) x = from_bits(0x7FC00000u);
      if (non_finite && (r * cols + c) % 131 == 7) x = (c % 2) ? INFINITY : -INFINITY;
      out[static_cast<std::size_t>(r * cols + c)] = x;
    }
  }
  return out;
}

class KokkosVsReference : public ::testing::Test {
 protected:
  void SetUp() override {
    Context ctx = context(kKokkos);
    ASSERT_NE(ctx, nullptr);
    octet_backend_info info{};
    info.struct_size = sizeof info;
    ASSERT_EQ(octet_context_get_info(ctx.get(), &info), OCTET_STATUS_SUCCESS);
    // What this file tests is what the plugin declares (docs/backends/kokkos.md).
    for (int32_t dtype : kFp8) ASSERT_NE(info.dtypes & OCTET_DTYPE_BIT(dtype), 0u) << name_of(dtype);
    ASSERT_NE(info.scaling_modes & OCTET_SCALING_PER_ROW, 0u);
    ASSERT_NE(info.scaling_modes & OCTET_SCALING_PER_COLUMN, 0u);
  }
};

TEST_F(KokkosVsReference, FnuzPerTensorQuantizeAndStatistics) {
  const std::vector<float> values = fnuz_values();
  const int64_t cols = 37, rows = static_cast<int64_t>(values.size()) / cols;
  const std::vector<float> used(values.begin(), values.begin() + rows * cols);
  for (int32_t dtype : kFnuz) {
    for (float scale : {1.0f, 2.0f, 0.0078125f, 3.0e-3f}) {
      for (int32_t saturate : {1, 0}) {
        const std::string where =
            name_of(dtype) + " scale " + std::to_string(scale) + " saturate " + std::to_string(saturate);
        Quantized k =
            quantize_on(kKokkos, used, rows, cols, dtype, OCTET_USAGE_BOTH, OCTET_SCALING_PER_TENSOR, scale, saturate);
        Quantized r = quantize_on(kReference, used, rows, cols, dtype, OCTET_USAGE_BOTH, OCTET_SCALING_PER_TENSOR,
                                  scale, saturate);
        expect_same(image_of(k.output.get()), image_of(r.output.get()), where);
        expect_same(k.stats, r.stats, where);
        // The rule holds in the data itself: saturating, 0x80 (the NaN, never
        // a -0) is written exactly for the NaN inputs.
        if (saturate) {
          const std::vector<uint8_t> codes = image_of(k.output.get()).rowwise;
          for (std::size_t e = 0; e < codes.size(); ++e)
            ASSERT_EQ(codes[e] == 0x80u, std::isnan(used[e])) << where << " element " << e;
        }
      }
    }
  }
}

TEST_F(KokkosVsReference, FnuzDequantizeAndConvertEveryCode) {
  std::vector<uint8_t> codes(256);
  for (int i = 0; i < 256; ++i) codes[static_cast<std::size_t>(i)] = static_cast<uint8_t>(i);
  for (int32_t dtype : kFnuz) {
    for (int32_t out_dtype : {OCTET_DTYPE_FP32, OCTET_DTYPE_BF16, OCTET_DTYPE_FP16}) {
      std::vector<uint8_t> results[2];
      int i = 0;
      for (const char* backend : {kKokkos, kReference}) {
        Context ctx = context(backend);
        // Dequantize: decode(q) * scale_inv (SCALE 0.25: scale_inv 4).
        Tensor q = make(ctx.get(), dtype, 16, 16, OCTET_USAGE_ROWWISE, OCTET_SCALING_PER_TENSOR);
        const float scale = 0.25f;
        ASSERT_EQ(octet_tensor_copy_from_host(q.get(), OCTET_COMPONENT_DATA, codes.data(), 256), OCTET_STATUS_SUCCESS);
        ASSERT_EQ(octet_tensor_copy_from_host(q.get(), OCTET_COMPONENT_SCALE, &scale, 4), OCTET_STATUS_SUCCESS);
        Tensor out = make(ctx.get(), out_dtype, 16, 16);
        ASSERT_EQ(octet_dequantize(ctx.get(), q.get(), out.get()), OCTET_STATUS_SUCCESS) << octet_last_error_message();
        std::vector<uint8_t> bytes = read(out.get(), OCTET_COMPONENT_DATA, 256 * octet_dtype_size(out_dtype));
        // Convert: the codes' own values, no scale.
        Tensor plain = make(ctx.get(), dtype, 16, 16);
        ASSERT_EQ(octet_tensor_copy_from_host(plain.get(), OCTET_COMPONENT_DATA, codes.data(), 256),
                  OCTET_STATUS_SUCCESS);
        ASSERT_EQ(octet_convert(ctx.get(), plain.get(), out.get(), 1), OCTET_STATUS_SUCCESS)
            << octet_last_error_message();
        const std::vector<uint8_t> converted = read(out.get(), OCTET_COMPONENT_DATA, 256 * octet_dtype_size(out_dtype));
        bytes.insert(bytes.end(), converted.begin(), converted.end());
        results[i++] = bytes;
      }
      EXPECT_EQ(results[0], results[1]) << name_of(dtype) << " -> " << name_of(out_dtype);
    }
    // FP32 -> FNUZ codes, saturating and not.
    const std::vector<float> values = fnuz_values();
    const int64_t n = static_cast<int64_t>(values.size());
    for (int32_t saturate : {1, 0}) {
      std::vector<uint8_t> results[2];
      int i = 0;
      for (const char* backend : {kKokkos, kReference}) {
        Context ctx = context(backend);
        Tensor in = make(ctx.get(), OCTET_DTYPE_FP32, 1, n);
        ASSERT_EQ(octet_tensor_copy_from_host(in.get(), OCTET_COMPONENT_DATA, values.data(), values.size() * 4),
                  OCTET_STATUS_SUCCESS);
        Tensor out = make(ctx.get(), dtype, 1, n);
        ASSERT_EQ(octet_convert(ctx.get(), in.get(), out.get(), saturate), OCTET_STATUS_SUCCESS)
            << octet_last_error_message();
        results[i++] = read(out.get(), OCTET_COMPONENT_DATA, values.size());
      }
      EXPECT_EQ(results[0], results[1]) << "fp32 -> " << name_of(dtype) << " saturate " << saturate;
    }
  }
}

// Per-row, per-column and the FP32 block modes, every FP8 dtype, ragged
// shapes, each usage: every component and the statistics bit for bit.
TEST_F(KokkosVsReference, AxiswiseAndBlockQuantizeAndDequantize) {
  const std::vector<Shape> shapes = {{1, 1}, {7, 13}, {67, 131}, {130, 259}};
  for (int32_t mode :
       {OCTET_SCALING_PER_ROW, OCTET_SCALING_PER_COLUMN, OCTET_SCALING_BLOCK_1X128, OCTET_SCALING_BLOCK_128X128}) {
    for (int32_t dtype : kFp8) {
      for (const Shape& s : shapes) {
        const std::vector<float> values = graded(s.rows, s.cols, static_cast<uint32_t>(s.rows * 7 + mode), true);
        for (uint32_t usages : {OCTET_USAGE_BOTH, OCTET_USAGE_ROWWISE, OCTET_USAGE_COLUMNWISE}) {
          const std::string where = "mode " + std::to_string(mode) + " " + name_of(dtype) + " " +
                                    cpu_test::shape_name(s) + " usages " + std::to_string(usages);
          Quantized k = quantize_on(kKokkos, values, s.rows, s.cols, dtype, usages, mode, 1.0f, 1);
          Quantized r = quantize_on(kReference, values, s.rows, s.cols, dtype, usages, mode, 1.0f, 1);
          expect_same(image_of(k.output.get()), image_of(r.output.get()), where);
          expect_same(k.stats, r.stats, where);
          Tensor kd = make(k.ctx.get(), OCTET_DTYPE_FP32, s.rows, s.cols);
          Tensor rd = make(r.ctx.get(), OCTET_DTYPE_FP32, s.rows, s.cols);
          ASSERT_EQ(octet_dequantize(k.ctx.get(), k.output.get(), kd.get()), OCTET_STATUS_SUCCESS)
              << where << ": " << octet_last_error_message();
          ASSERT_EQ(octet_dequantize(r.ctx.get(), r.output.get(), rd.get()), OCTET_STATUS_SUCCESS) << where;
          const std::size_t bytes = static_cast<std::size_t>(s.rows * s.cols) * 4;
          EXPECT_EQ(read(kd.get(), OCTET_COMPONENT_DATA, bytes), read(rd.get(), OCTET_COMPONENT_DATA, bytes))
              << where << ": dequantized";
        }
      }
    }
  }
}

// Per-row and per-column GEMM operands (numerics.md section 16): D[m,n] =
// alpha * (sum_k a[m,k] b[n,k]) * sa[m] * sb[n] + bias[n].
struct AxiswiseGemm {
  int32_t mode_a, mode_b;
  int32_t trans_a, trans_b;
  int32_t dtype_a, dtype_b;
};

// The K-contiguous copy an operand is read as, and its per-row scales.
struct Operand {
  std::vector<uint8_t> codes;  // [outer, k]
  std::vector<float> scales;   // [outer]
};
Operand operand_of(const octet_tensor* t, bool transposed, int64_t outer, int64_t k) {
  Operand o;
  const int32_t data = transposed ? OCTET_COMPONENT_COLUMNWISE_DATA : OCTET_COMPONENT_DATA;
  const int32_t grid = transposed ? OCTET_COMPONENT_COLUMNWISE_SCALE_INV : OCTET_COMPONENT_ROWWISE_SCALE_INV;
  o.codes = read(t, data, static_cast<std::size_t>(outer * k));
  const std::vector<uint8_t> raw = read(t, grid, static_cast<std::size_t>(outer) * 4);
  o.scales.resize(static_cast<std::size_t>(outer));
  std::memcpy(o.scales.data(), raw.data(), raw.size());
  return o;
}

TEST_F(KokkosVsReference, AxiswiseGemmsAreTheReferencesBitsWithinTheBound) {
  const int64_t m = 37, n = 29, k = 83;
  const float alpha = 0.75f;
  const std::vector<AxiswiseGemm> cases = {
      {OCTET_SCALING_PER_ROW, OCTET_SCALING_PER_ROW, 0, 0, OCTET_DTYPE_E4M3, OCTET_DTYPE_E4M3},
      {OCTET_SCALING_PER_ROW, OCTET_SCALING_PER_ROW, 1, 1, OCTET_DTYPE_E4M3, OCTET_DTYPE_E5M2},
      {OCTET_SCALING_PER_COLUMN, OCTET_SCALING_PER_COLUMN, 1, 1, OCTET_DTYPE_E5M2, OCTET_DTYPE_E4M3},
      {OCTET_SCALING_PER_ROW, OCTET_SCALING_PER_COLUMN, 0, 1, OCTET_DTYPE_E4M3FNUZ, OCTET_DTYPE_E4M3FNUZ},
      {OCTET_SCALING_PER_COLUMN, OCTET_SCALING_PER_ROW, 1, 0, OCTET_DTYPE_E5M2FNUZ, OCTET_DTYPE_E4M3FNUZ},
      {OCTET_SCALING_PER_ROW, OCTET_SCALING_PER_ROW, 0, 0, OCTET_DTYPE_E5M2FNUZ, OCTET_DTYPE_E5M2FNUZ},
  };
  std::vector<float> bias(static_cast<std::size_t>(n));
  for (int64_t j = 0; j < n; ++j) bias[static_cast<std::size_t>(j)] = 0.125f * static_cast<float>(j % 9) - 0.5f;
  for (const AxiswiseGemm& g : cases) {
    const std::string where = "a mode " + std::to_string(g.mode_a) + (g.trans_a ? " T " : " N ") + name_of(g.dtype_a) +
                              ", b mode " + std::to_string(g.mode_b) + (g.trans_b ? " T " : " N ") + name_of(g.dtype_b);
    const int64_t a_rows = g.trans_a ? k : m, a_cols = g.trans_a ? m : k;
    const int64_t b_rows = g.trans_b ? k : n, b_cols = g.trans_b ? n : k;
    const std::vector<float> a_values = graded(a_rows, a_cols, 11, false);
    const std::vector<float> b_values = graded(b_rows, b_cols, 12, false);
    std::vector<uint8_t> d_bytes[2];
    Operand a_read, b_read;
    int i = 0;
    for (const char* backend : {kKokkos, kReference}) {
      Quantized a = quantize_on(backend, a_values, a_rows, a_cols, g.dtype_a, OCTET_USAGE_BOTH, g.mode_a, 1.0f, 1);
      Tensor bias_t = make(a.ctx.get(), OCTET_DTYPE_FP32, 1, n);
      ASSERT_EQ(octet_tensor_copy_from_host(bias_t.get(), OCTET_COMPONENT_DATA, bias.data(), bias.size() * 4),
                OCTET_STATUS_SUCCESS);
      // b quantized in a's context (the GEMM's).
      Tensor bb = make(a.ctx.get(), g.dtype_b, b_rows, b_cols, OCTET_USAGE_BOTH, g.mode_b);
      {
        Tensor in = make(a.ctx.get(), OCTET_DTYPE_FP32, b_rows, b_cols);
        ASSERT_EQ(octet_tensor_copy_from_host(in.get(), OCTET_COMPONENT_DATA, b_values.data(), b_values.size() * 4),
                  OCTET_STATUS_SUCCESS);
        ASSERT_EQ(octet_quantize(a.ctx.get(), in.get(), bb.get(), nullptr), OCTET_STATUS_SUCCESS)
            << octet_last_error_message();
      }
      Tensor d = make(a.ctx.get(), OCTET_DTYPE_FP32, m, n);
      octet_gemm_options o;
      ASSERT_EQ(octet_gemm_options_init(&o), OCTET_STATUS_SUCCESS);
      o.trans_a = g.trans_a;
      o.trans_b = g.trans_b;
      o.alpha = alpha;
      o.bias = bias_t.get();
      ASSERT_EQ(octet_gemm(a.ctx.get(), a.output.get(), bb.get(), d.get(), &o), OCTET_STATUS_SUCCESS)
          << backend << " " << where << ": " << octet_last_error_message();
      d_bytes[i] = read(d.get(), OCTET_COMPONENT_DATA, static_cast<std::size_t>(m * n) * 4);
      if (i == 0) {
        a_read = operand_of(a.output.get(), g.trans_a != 0, m, k);
        b_read = operand_of(bb.get(), g.trans_b != 0, n, k);
      }
      ++i;
    }
    EXPECT_EQ(d_bytes[0], d_bytes[1]) << where << ": the reference's bits";
    // Section 16's bound, from the codes and scales the kokkos tensors hold.
    double worst = 0.0;
    for (int64_t r = 0; r < m; ++r) {
      for (int64_t c = 0; c < n; ++c) {
        double sum = 0.0, magnitude = 0.0;
        for (int64_t kk = 0; kk < k; ++kk) {
          const double p =
              static_cast<double>(octet_fp8_decode(a_read.codes[static_cast<std::size_t>(r * k + kk)], g.dtype_a)) *
              octet_fp8_decode(b_read.codes[static_cast<std::size_t>(c * k + kk)], g.dtype_b);
          sum += p;
          magnitude += std::fabs(p);
        }
        const double s = static_cast<double>(alpha) * a_read.scales[static_cast<std::size_t>(r)] *
                         b_read.scales[static_cast<std::size_t>(c)];
        const double want = sum * s + bias[static_cast<std::size_t>(c)];
        const double bound = static_cast<double>(k) * std::ldexp(1.0, -23) * magnitude * std::fabs(s) +
                             std::ldexp(1.0, -22) * (std::fabs(want) + std::fabs(bias[static_cast<std::size_t>(c)]));
        float got;
        std::memcpy(&got, &d_bytes[0][static_cast<std::size_t>(r * n + c) * 4], 4);
        const double err = std::fabs(static_cast<double>(got) - want);
        ASSERT_LE(err, bound) << where << " at (" << r << ", " << c << ")";
        if (bound > 0) worst = std::max(worst, err / bound);
      }
    }
    EXPECT_LT(worst, 1.0) << where;
  }
}

// A per-column operand used as stored has its scales along k, which no
// epilogue can apply: refused on kokkos as on the reference.
TEST_F(KokkosVsReference, PerColumnOperandUsedAsStoredIsRefused) {
  Context ctx = context(kKokkos);
  const std::vector<float> values = graded(8, 16, 3, false);
  Tensor in = make(ctx.get(), OCTET_DTYPE_FP32, 8, 16);
  ASSERT_EQ(octet_tensor_copy_from_host(in.get(), OCTET_COMPONENT_DATA, values.data(), values.size() * 4),
            OCTET_STATUS_SUCCESS);
  Tensor a = make(ctx.get(), OCTET_DTYPE_E4M3FNUZ, 8, 16, OCTET_USAGE_BOTH, OCTET_SCALING_PER_COLUMN);
  Tensor b = make(ctx.get(), OCTET_DTYPE_E4M3FNUZ, 8, 16, OCTET_USAGE_BOTH, OCTET_SCALING_PER_ROW);
  ASSERT_EQ(octet_quantize(ctx.get(), in.get(), a.get(), nullptr), OCTET_STATUS_SUCCESS);
  ASSERT_EQ(octet_quantize(ctx.get(), in.get(), b.get(), nullptr), OCTET_STATUS_SUCCESS);
  Tensor d = make(ctx.get(), OCTET_DTYPE_FP32, 8, 8);
  octet_gemm_options o;
  ASSERT_EQ(octet_gemm_options_init(&o), OCTET_STATUS_SUCCESS);
  EXPECT_EQ(octet_gemm(ctx.get(), a.get(), b.get(), d.get(), &o), OCTET_STATUS_INVALID_ARGUMENT);
  const std::string message = octet_last_error_message();
  EXPECT_NE(message.find("tensor 'a'"), std::string::npos) << message;
  EXPECT_NE(message.find("per-column"), std::string::npos) << message;
}

// FNUZ operands with an FNUZ output (fp8_gemm_output): codes, scale_inv and
// amax of D the reference's, a NaN operand code giving D's one NaN 0x80.
TEST_F(KokkosVsReference, FnuzGemmWithFnuzOutput) {
  const int64_t m = 19, n = 23, k = 45;
  for (int32_t d_dtype : kFnuz) {
    for (int32_t saturate : {1, 0}) {
      std::vector<uint8_t> results[2];
      int i = 0;
      for (const char* backend : {kKokkos, kReference}) {
        Context ctx = context(backend);
        auto quantized = [&](int64_t rows, int64_t cols, uint32_t seed, int32_t dtype) {
          const std::vector<float> values = graded(rows, cols, seed, false);
          Tensor in = make(ctx.get(), OCTET_DTYPE_FP32, rows, cols);
          EXPECT_EQ(octet_tensor_copy_from_host(in.get(), OCTET_COMPONENT_DATA, values.data(), values.size() * 4),
                    OCTET_STATUS_SUCCESS);
          Tensor q = make(ctx.get(), dtype, rows, cols, OCTET_USAGE_BOTH, OCTET_SCALING_PER_TENSOR);
          const float scale = 0.5f;
          EXPECT_EQ(octet_tensor_copy_from_host(q.get(), OCTET_COMPONENT_SCALE, &scale, 4), OCTET_STATUS_SUCCESS);
          EXPECT_EQ(octet_quantize(ctx.get(), in.get(), q.get(), nullptr), OCTET_STATUS_SUCCESS)
              << octet_last_error_message();
          return q;
        };
        Tensor a = quantized(m, k, 21, OCTET_DTYPE_E4M3FNUZ);
        Tensor b = quantized(n, k, 22, OCTET_DTYPE_E5M2FNUZ);
        // One NaN code in a's row 4: row 4 of D is NaN.
        std::vector<uint8_t> a_codes = read(a.get(), OCTET_COMPONENT_DATA, static_cast<std::size_t>(m * k));
        a_codes[static_cast<std::size_t>(4 * k + 3)] = 0x80;
        ASSERT_EQ(octet_tensor_copy_from_host(a.get(), OCTET_COMPONENT_DATA, a_codes.data(), a_codes.size()),
                  OCTET_STATUS_SUCCESS);
        Tensor d = make(ctx.get(), d_dtype, m, n, OCTET_USAGE_ROWWISE, OCTET_SCALING_PER_TENSOR);
        const float d_scale = 64.0f;  // large enough that some outputs overflow
        ASSERT_EQ(octet_tensor_copy_from_host(d.get(), OCTET_COMPONENT_SCALE, &d_scale, 4), OCTET_STATUS_SUCCESS);
        octet_gemm_options o;
        ASSERT_EQ(octet_gemm_options_init(&o), OCTET_STATUS_SUCCESS);
        o.saturate_output = saturate;
        ASSERT_EQ(octet_gemm(ctx.get(), a.get(), b.get(), d.get(), &o), OCTET_STATUS_SUCCESS)
            << backend << ": " << octet_last_error_message();
        const Image im = image_of(d.get());
        for (int64_t c = 0; c < n; ++c) EXPECT_EQ(im.rowwise[static_cast<std::size_t>(4 * n + c)], 0x80u);
        results[i] = im.rowwise;
        results[i].insert(results[i].end(), im.scale_inv.begin(), im.scale_inv.end());
        results[i].insert(results[i].end(), im.amax.begin(), im.amax.end());
        ++i;
      }
      EXPECT_EQ(results[0], results[1]) << "d " << name_of(d_dtype) << " saturate " << saturate;
    }
  }
}

}  // namespace
