// The template plugin through octet.h: what it lacks is answered with
// UNSUPPORTED naming the missing entry point, and what it has gives the same
// bits as the embedded reference (its codecs are an independent C99 write-up
// of numerics.md, so agreement checks both).
#include <octet/octet.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

namespace {

using ::testing::HasSubstr;

struct ContextDeleter {
  void operator()(octet_context* c) const { octet_context_destroy(c); }
};
using Context = std::unique_ptr<octet_context, ContextDeleter>;
using Tensor = octet::Tensor;

Context make_context(const char* backend) {
  octet_context_options options{};
  options.struct_size = sizeof options;
  options.backend = backend;
  octet_context* raw = nullptr;
  EXPECT_EQ(octet_context_create(&options, &raw), OCTET_STATUS_SUCCESS)
      << backend << ": " << octet_last_error_message();
  return Context(raw);
}

// A failure to create the tensor fails the test (octet::Error).
Tensor make_tensor(octet_context* ctx, int32_t dtype, int64_t rows, int64_t cols,
                   uint32_t usages = 0) {
  return octet::Tensor::create(ctx, dtype, {rows, cols}, usages);
}

std::vector<uint8_t> read(const octet_tensor* t, int32_t component, size_t bytes) {
  std::vector<uint8_t> out(bytes, 0xA5);
  EXPECT_EQ(octet_tensor_copy_to_host(t, component, out.data(), bytes), OCTET_STATUS_SUCCESS)
      << octet_last_error_message();
  return out;
}

void write(octet_tensor* t, int32_t component, const void* src, size_t bytes) {
  ASSERT_EQ(octet_tensor_copy_from_host(t, component, src, bytes), OCTET_STATUS_SUCCESS)
      << octet_last_error_message();
}

float from_bits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// FP32 inputs that exercise every rule: specials, both signs, subnormal and
// overflow ranges of both FP8 formats, ties, and a spread of ordinary values.
std::vector<float> interesting_values(size_t count) {
  std::vector<float> v = {0.0f, -0.0f, 1.0f, -1.0f, 448.0f, 464.0f, 465.0f, -480.0f,
                          57344.0f, 61440.0f, -61439.0f, 1e30f, -1e-30f,
                          std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::quiet_NaN(),
                          -std::numeric_limits<float>::quiet_NaN(),
                          7.5f * std::ldexp(1.0f, -9), std::ldexp(1.0f, -10), std::ldexp(1.0f, -17),
                          std::ldexp(3.0f, -18), 0.1f, -3.75f, 240.0f, 1.0625f, 1.1875f};
  uint32_t state = 12345u;
  while (v.size() < count) {
    state = state * 1664525u + 1013904223u;  // LCG: reproducible without <random>
    // Exponents around FP8's range, random mantissa and sign.
    const uint32_t exponent = 127u - 20u + (state >> 27);  // 2^-20 .. 2^11
    const uint32_t bits = ((state & 1u) << 31) | (exponent << 23) | ((state >> 4) & 0x7FFFFFu);
    v.push_back(from_bits(bits));
  }
  return v;
}

size_t element_bytes(int32_t dtype) { return octet_dtype_size(dtype); }

// Host bytes of `values` in `dtype`, produced by the library's scalar codecs.
std::vector<uint8_t> encode_host(const std::vector<float>& values, int32_t dtype) {
  std::vector<uint8_t> bytes(values.size() * element_bytes(dtype));
  switch (dtype) {
    case OCTET_DTYPE_FP32:
      std::memcpy(bytes.data(), values.data(), bytes.size());
      break;
    case OCTET_DTYPE_BF16:
      EXPECT_EQ(octet_bf16_encode_array(values.data(), reinterpret_cast<uint16_t*>(bytes.data()),
                                        values.size()),
                OCTET_STATUS_SUCCESS);
      break;
    case OCTET_DTYPE_FP16:
      EXPECT_EQ(octet_fp16_encode_array(values.data(), reinterpret_cast<uint16_t*>(bytes.data()),
                                        values.size()),
                OCTET_STATUS_SUCCESS);
      break;
    default:
      ADD_FAILURE() << "unexpected dtype " << dtype;
  }
  return bytes;
}

// Index of the first differing element, or -1.
long first_difference(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b, size_t width) {
  if (a.size() != b.size()) return 0;
  for (size_t i = 0; i < a.size(); i += width)
    if (std::memcmp(&a[i], &b[i], width) != 0) return static_cast<long>(i / width);
  return -1;
}

TEST(TemplateBackend, ContextReportsTheTemplate) {
  Context ctx = make_context("template");
  ASSERT_NE(ctx, nullptr);
  octet_backend_info info{};
  info.struct_size = sizeof info;
  ASSERT_EQ(octet_context_get_info(ctx.get(), &info), OCTET_STATUS_SUCCESS);
  EXPECT_STREQ(info.name, "template");
  EXPECT_EQ(info.memory_kind, OCTET_MEMORY_HOST);
}

TEST(TemplateBackend, GemmIsUnsupportedNamingTheEntryPoint) {
  Context ctx = make_context("template");
  ASSERT_NE(ctx, nullptr);
  Tensor a = make_tensor(ctx.get(), OCTET_DTYPE_FP32, 2, 3);
  Tensor b = make_tensor(ctx.get(), OCTET_DTYPE_FP32, 4, 3);
  Tensor d = make_tensor(ctx.get(), OCTET_DTYPE_FP32, 2, 4);
  const std::vector<float> zeros(12, 0.0f);
  write(a.get(), OCTET_COMPONENT_DATA, zeros.data(), 6 * sizeof(float));
  write(b.get(), OCTET_COMPONENT_DATA, zeros.data(), 12 * sizeof(float));
  EXPECT_EQ(octet_gemm(ctx.get(), a.get(), b.get(), d.get(), nullptr), OCTET_STATUS_UNSUPPORTED);
  EXPECT_THAT(octet_last_error_message(), HasSubstr("gemm"));
}

TEST(TemplateBackend, ColumnwiseQuantizeIsUnsupportedNamingTranspose) {
  Context ctx = make_context("template");
  ASSERT_NE(ctx, nullptr);
  const std::vector<float> x = interesting_values(8 * 16);
  Tensor in = make_tensor(ctx.get(), OCTET_DTYPE_FP32, 8, 16);
  write(in.get(), OCTET_COMPONENT_DATA, x.data(), x.size() * sizeof(float));
  for (uint32_t usages : {uint32_t(OCTET_USAGE_COLUMNWISE), uint32_t(OCTET_USAGE_BOTH)}) {
    Tensor out = make_tensor(ctx.get(), OCTET_DTYPE_E4M3, 8, 16, usages);
    EXPECT_EQ(octet_quantize(ctx.get(), in.get(), out.get(), nullptr), OCTET_STATUS_UNSUPPORTED)
        << "usages " << usages;
    EXPECT_THAT(octet_last_error_message(), HasSubstr("transpose"));
  }
}

TEST(TemplateBackend, AmaxIgnoresNanAndCountsInf) {
  Context ctx = make_context("template");
  ASSERT_NE(ctx, nullptr);
  std::vector<float> x = interesting_values(64);
  // Without the infinities first, then with them.
  for (int with_inf = 0; with_inf < 2; ++with_inf) {
    std::vector<float> data = x;
    if (!with_inf)
      for (float& v : data)
        if (std::isinf(v)) v = 2.0f;
    float expected = 0.0f;
    for (float v : data)
      if (!std::isnan(v)) expected = std::max(expected, std::fabs(v));
    Tensor in = make_tensor(ctx.get(), OCTET_DTYPE_FP32, 8, 8);
    write(in.get(), OCTET_COMPONENT_DATA, data.data(), data.size() * sizeof(float));
    float amax = -1.0f;
    ASSERT_EQ(octet_amax(ctx.get(), in.get(), &amax), OCTET_STATUS_SUCCESS) << octet_last_error_message();
    EXPECT_EQ(amax, expected);
  }
}

// Same source bytes converted on both backends, for every pair of dtypes the
// template stores: every 8- and 16-bit code, and a spread of FP32 values.
TEST(TemplateBackend, ConvertMatchesReferenceForEveryDtypePair) {
  Context tpl = make_context("template");
  Context ref = make_context("reference");
  ASSERT_NE(tpl, nullptr);
  ASSERT_NE(ref, nullptr);
  const int32_t dtypes[] = {OCTET_DTYPE_FP32, OCTET_DTYPE_BF16, OCTET_DTYPE_FP16, OCTET_DTYPE_E4M3,
                            OCTET_DTYPE_E5M2};
  const int64_t cols = 256, rows = 256;  // 65536 elements: every 16-bit code
  const size_t n = size_t(rows * cols);
  for (int32_t src : dtypes) {
    std::vector<uint8_t> source(n * element_bytes(src));
    if (src == OCTET_DTYPE_FP32) {
      const std::vector<float> v = interesting_values(n);
      std::memcpy(source.data(), v.data(), source.size());
    } else {
      for (size_t i = 0; i < n; ++i) {
        const uint16_t code = uint16_t(i);
        std::memcpy(&source[i * element_bytes(src)], &code, element_bytes(src));
      }
    }
    for (int32_t dst : dtypes) {
      for (int32_t saturate = 0; saturate < 2; ++saturate) {
        std::vector<uint8_t> results[2];
        octet_context* contexts[2] = {tpl.get(), ref.get()};
        for (int k = 0; k < 2; ++k) {
          Tensor in = make_tensor(contexts[k], src, rows, cols);
          Tensor out = make_tensor(contexts[k], dst, rows, cols);
          write(in.get(), OCTET_COMPONENT_DATA, source.data(), source.size());
          ASSERT_EQ(octet_convert(contexts[k], in.get(), out.get(), saturate), OCTET_STATUS_SUCCESS)
              << octet_last_error_message();
          results[k] = read(out.get(), OCTET_COMPONENT_DATA, n * element_bytes(dst));
        }
        const long at = first_difference(results[0], results[1], element_bytes(dst));
        EXPECT_EQ(at, -1) << octet_dtype_name(src) << " -> " << octet_dtype_name(dst)
                          << " saturate " << saturate << ", first difference at element " << at;
      }
    }
  }
}

struct QuantizeCase {
  int32_t input_dtype;
  int32_t fp8_dtype;
  int32_t saturate;
  int32_t output_dtype;
};

std::string describe(const QuantizeCase& c) {
  return std::string(octet_dtype_name(c.input_dtype)) + " -> " + octet_dtype_name(c.fp8_dtype) +
         (c.saturate ? " (saturating)" : " (non-saturating)") + " -> " +
         octet_dtype_name(c.output_dtype);
}

void check_quantize_round_trip(const QuantizeCase& c, float scale) {
  const int64_t rows = 24, cols = 40;
  const size_t n = size_t(rows * cols);
  const std::vector<uint8_t> source = encode_host(interesting_values(n), c.input_dtype);
  Context contexts[2] = {make_context("template"), make_context("reference")};
  std::vector<uint8_t> codes[2], scale_inv[2], amax[2], restored[2];
  for (int k = 0; k < 2; ++k) {
    octet_context* ctx = contexts[k].get();
    ASSERT_NE(ctx, nullptr);
    Tensor in = make_tensor(ctx, c.input_dtype, rows, cols);
    Tensor q = make_tensor(ctx, c.fp8_dtype, rows, cols, OCTET_USAGE_ROWWISE);
    Tensor out = make_tensor(ctx, c.output_dtype, rows, cols);
    write(in.get(), OCTET_COMPONENT_DATA, source.data(), source.size());
    write(q.get(), OCTET_COMPONENT_SCALE, &scale, sizeof scale);
    octet_quantize_options options{};
    options.struct_size = sizeof options;
    options.usages = OCTET_USAGE_ROWWISE;
    options.saturate = c.saturate;
    ASSERT_EQ(octet_quantize(ctx, in.get(), q.get(), &options), OCTET_STATUS_SUCCESS)
        << octet_last_error_message();
    ASSERT_EQ(octet_dequantize(ctx, q.get(), out.get()), OCTET_STATUS_SUCCESS)
        << octet_last_error_message();
    codes[k] = read(q.get(), OCTET_COMPONENT_DATA, n);
    scale_inv[k] = read(q.get(), OCTET_COMPONENT_SCALE_INV, sizeof(float));
    amax[k] = read(q.get(), OCTET_COMPONENT_AMAX, sizeof(float));
    restored[k] = read(out.get(), OCTET_COMPONENT_DATA, n * element_bytes(c.output_dtype));
  }
  EXPECT_EQ(first_difference(codes[0], codes[1], 1), -1);
  EXPECT_EQ(scale_inv[0], scale_inv[1]);
  EXPECT_EQ(amax[0], amax[1]);
  EXPECT_EQ(first_difference(restored[0], restored[1], element_bytes(c.output_dtype)), -1);

  // Independent of both backends: scale_inv = 1/scale in FP32 (numerics.md section 7).
  float got_scale_inv;
  std::memcpy(&got_scale_inv, scale_inv[0].data(), sizeof got_scale_inv);
  EXPECT_EQ(got_scale_inv, 1.0f / scale);
}

TEST(TemplateBackend, RowwiseQuantizeAndDequantizeMatchTheReferenceBitForBit) {
  for (int32_t input : {OCTET_DTYPE_FP32, OCTET_DTYPE_BF16, OCTET_DTYPE_FP16})
    for (int32_t fp8 : {OCTET_DTYPE_E4M3, OCTET_DTYPE_E5M2})
      for (int32_t saturate : {0, 1})
        for (int32_t output : {OCTET_DTYPE_FP32, OCTET_DTYPE_BF16, OCTET_DTYPE_FP16}) {
          const QuantizeCase c{input, fp8, saturate, output};
          // 1: the inputs' exact ties reach the FP8 rounding unchanged;
          // 3.3: not a power of two, so x * scale itself rounds.
          for (float scale : {1.0f, 3.3f}) {
            SCOPED_TRACE(describe(c) + ", scale " + std::to_string(scale));
            check_quantize_round_trip(c, scale);
          }
        }
}

}  // namespace
