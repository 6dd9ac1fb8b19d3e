// The FNUZ FP8 dtypes and FP4 E2M1 through the users' ABI: the codecs'
// contract (refusals, E2M1 packing), quantize / dequantize / GEMM on the
// reference against expectations computed here from decoded codes, and the
// capability rules: a backend is never handed a dtype it does not declare,
// and a recipe meets a backend only if the backend declares its dtypes.
//
// The "fnuz_only" and "ocp_only" test plugins (format_family_backend.cpp)
// declare one FP8 family each and count any other FP8 dtype they are
// handed.
#include <dlfcn.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <ostream>
#include <string>
#include <vector>

#include "test_helpers.hpp"

using namespace octet_test;
using testing::HasSubstr;

namespace {

std::string last_error() { return octet_last_error_message(); }

// ---- codecs through octet.h ----------------------------------------------------------

TEST(NarrowDtypeCodecs, NamesSizesAndDLPackCodes) {
  struct Row {
    int32_t dtype;
    const char* name;
    size_t size;
    uint8_t code, bits;
  };
  const Row rows[] = {{OCTET_DTYPE_E4M3FNUZ, "e4m3fnuz", 1, 11, 8},
                      {OCTET_DTYPE_E5M2FNUZ, "e5m2fnuz", 1, 13, 8},
                      {OCTET_DTYPE_E2M1, "e2m1", 0, 17, 4}};
  for (const Row& r : rows) {
    EXPECT_STREQ(octet_dtype_name(r.dtype), r.name);
    EXPECT_EQ(octet_dtype_size(r.dtype), r.size) << r.name;
    uint8_t code = 0, bits = 0;
    ASSERT_EQ(octet_dtype_to_dlpack(r.dtype, &code, &bits), OCTET_STATUS_SUCCESS) << last_error();
    EXPECT_EQ(code, r.code) << r.name;
    EXPECT_EQ(bits, r.bits) << r.name;
    int32_t back = 0;
    ASSERT_EQ(octet_dtype_from_dlpack(r.code, r.bits, &back), OCTET_STATUS_SUCCESS) << last_error();
    EXPECT_EQ(back, r.dtype);
  }
  int32_t dtype = 0;
  EXPECT_EQ(octet_dtype_from_dlpack(17, 8, &dtype), OCTET_STATUS_UNSUPPORTED);  // E2M1 is 4 bits
}

TEST(NarrowDtypeCodecs, ScalarCodecsFollowTheFormatRules) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(octet_fp8_encode(240.0f, OCTET_DTYPE_E4M3FNUZ, 0), 0x7F);
  EXPECT_EQ(octet_fp8_encode(-241.0f, OCTET_DTYPE_E4M3FNUZ, 1), 0xFF);
  EXPECT_EQ(octet_fp8_encode(300.0f, OCTET_DTYPE_E4M3FNUZ, 0), 0x80);
  EXPECT_EQ(octet_fp8_encode(-0.0f, OCTET_DTYPE_E5M2FNUZ, 0), 0x00);
  EXPECT_EQ(octet_fp8_encode(nan, OCTET_DTYPE_E5M2FNUZ, 1), 0x80);
  EXPECT_EQ(octet_fp8_encode(-inf, OCTET_DTYPE_E5M2FNUZ, 1), 0xFF);
  EXPECT_TRUE(std::isnan(octet_fp8_decode(0x80, OCTET_DTYPE_E4M3FNUZ)));
  EXPECT_EQ(octet_fp8_decode(0x7F, OCTET_DTYPE_E5M2FNUZ), 57344.0f);
  EXPECT_EQ(octet_fp8_decode(0x01, OCTET_DTYPE_E4M3FNUZ), std::ldexp(1.0f, -10));
  EXPECT_EQ(octet_fp8_encode(2.5f, OCTET_DTYPE_E2M1, 0), 0x4);  // tie: 2 (code 4, even) over 3
  EXPECT_EQ(octet_fp8_encode(-100.0f, OCTET_DTYPE_E2M1, 1), 0xF);
  EXPECT_EQ(octet_fp8_decode(0xF, OCTET_DTYPE_E2M1), -6.0f);
}

TEST(NarrowDtypeCodecs, E2M1ValuesWithoutACodeAreRefusedNotWritten) {
  EXPECT_EQ(octet_fp8_encode(std::numeric_limits<float>::quiet_NaN(), OCTET_DTYPE_E2M1, 1), 0xFF);
  EXPECT_THAT(last_error(), HasSubstr("NaN"));
  EXPECT_EQ(octet_fp8_encode(7.0f, OCTET_DTYPE_E2M1, 0), 0xFF);
  EXPECT_THAT(last_error(), HasSubstr("beyond E2M1's largest value 6"));
  EXPECT_TRUE(std::isnan(octet_fp8_decode(0x10, OCTET_DTYPE_E2M1)));
  EXPECT_THAT(last_error(), HasSubstr("high 4 bits must be 0"));

  const float in[3] = {1.0f, 7.5f, 0.5f};  // 7.5 rounds past 6
  uint8_t out[2] = {0xAA, 0xAA};
  EXPECT_EQ(octet_fp8_encode_array(in, out, 3, OCTET_DTYPE_E2M1, 0), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(last_error(), HasSubstr("in[1]"));
  EXPECT_EQ(out[0], 0xAA);  // untouched
  EXPECT_EQ(out[1], 0xAA);
}

TEST(NarrowDtypeCodecs, E2M1ArraysArePackedLowNibbleFirst) {
  // 1.0 is code 2, -0.5 code 9, 6 code 7, 3 code 5, -4 code 14.
  const float in[5] = {1.0f, -0.5f, 6.0f, 3.0f, -4.0f};
  uint8_t out[3] = {0xAA, 0xAA, 0xAA};
  ASSERT_EQ(octet_fp8_encode_array(in, out, 5, OCTET_DTYPE_E2M1, 0), OCTET_STATUS_SUCCESS) << last_error();
  EXPECT_EQ(out[0], 0x92);
  EXPECT_EQ(out[1], 0x57);
  EXPECT_EQ(out[2], 0x0E);  // odd count: the high nibble pads with 0
  float back[5] = {};
  ASSERT_EQ(octet_fp8_decode_array(out, back, 5, OCTET_DTYPE_E2M1), OCTET_STATUS_SUCCESS) << last_error();
  for (int i = 0; i < 5; ++i) EXPECT_EQ(back[i], in[i]) << i;
  const uint8_t bad_pad[3] = {0x92, 0x57, 0x3E};
  EXPECT_EQ(octet_fp8_decode_array(bad_pad, back, 5, OCTET_DTYPE_E2M1), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(last_error(), HasSubstr("high nibble must be 0"));
  // The packed output is 3 bytes: an input 4 bytes past it does not overlap.
  std::vector<uint8_t> buffer(64);
  float* floats = reinterpret_cast<float*>(buffer.data() + 4);
  floats[0] = 1.0f;
  EXPECT_EQ(octet_fp8_encode_array(floats, buffer.data(), 1, OCTET_DTYPE_E2M1, 0), OCTET_STATUS_SUCCESS)
      << last_error();
}

TEST(NarrowDtypeCodecs, ArrayCodecsAgreeWithTheScalarOnesForEveryCode) {
  for (int32_t dtype : {OCTET_DTYPE_E4M3FNUZ, OCTET_DTYPE_E5M2FNUZ}) {
    std::vector<uint8_t> codes(256);
    for (int c = 0; c < 256; ++c) codes[size_t(c)] = uint8_t(c);
    std::vector<float> values(256);
    ASSERT_EQ(octet_fp8_decode_array(codes.data(), values.data(), 256, dtype), OCTET_STATUS_SUCCESS);
    for (int c = 0; c < 256; ++c) {
      const float scalar = octet_fp8_decode(uint8_t(c), dtype);
      if (std::isnan(scalar))
        EXPECT_TRUE(std::isnan(values[size_t(c)]));
      else
        EXPECT_EQ(values[size_t(c)], scalar) << c;
    }
  }
}

// E2M1 through the packed array codecs, against the format's 16 values
// written out here (numerics.md section 1: sign bit 0x8, exponent bias 1,
// one mantissa bit) rather than the scalar codec: every byte, i.e. every
// pair of codes, element 2i in the low nibble and 2i + 1 in the high one
// (abi.md, "Sub-byte dtypes").
TEST(NarrowDtypeCodecs, E2M1ArrayDecodeAgreesWithTheSpecTableForEveryPairOfCodes) {
  const float kE2M1[16] = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,  4.0f,  6.0f,
                           -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};
  auto same = [](float got, float want) { return got == want && std::signbit(got) == std::signbit(want); };
  std::vector<uint8_t> bytes(256);
  for (int b = 0; b < 256; ++b) bytes[size_t(b)] = uint8_t(b);
  std::vector<float> values(512, std::numeric_limits<float>::quiet_NaN());
  ASSERT_EQ(octet_fp8_decode_array(bytes.data(), values.data(), 512, OCTET_DTYPE_E2M1), OCTET_STATUS_SUCCESS)
      << last_error();
  for (int b = 0; b < 256; ++b) {
    EXPECT_TRUE(same(values[size_t(2 * b)], kE2M1[b & 0xF]))
        << "byte " << b << " low nibble: " << values[size_t(2 * b)];
    EXPECT_TRUE(same(values[size_t(2 * b + 1)], kE2M1[b >> 4]))
        << "byte " << b << " high nibble: " << values[size_t(2 * b + 1)];
  }
  // An odd count: the last byte's high nibble is padding (0) and is not written.
  const uint8_t odd[2] = {0x7F, 0x09};  // -6, 6, then -0.5
  float three[4] = {1.0f, 1.0f, 1.0f, 42.0f};
  ASSERT_EQ(octet_fp8_decode_array(odd, three, 3, OCTET_DTYPE_E2M1), OCTET_STATUS_SUCCESS) << last_error();
  EXPECT_TRUE(same(three[0], -6.0f));
  EXPECT_TRUE(same(three[1], 6.0f));
  EXPECT_TRUE(same(three[2], -0.5f));
  EXPECT_EQ(three[3], 42.0f);
  // Encoding the table's values gives their codes back, packed the same way.
  std::vector<float> table(kE2M1, kE2M1 + 16);
  std::vector<uint8_t> packed(8, 0xAA);
  ASSERT_EQ(octet_fp8_encode_array(table.data(), packed.data(), 16, OCTET_DTYPE_E2M1, 0), OCTET_STATUS_SUCCESS)
      << last_error();
  for (int i = 0; i < 8; ++i) EXPECT_EQ(packed[size_t(i)], uint8_t((2 * i) | ((2 * i + 1) << 4))) << i;
}

// ---- the reference quantizes, dequantizes and multiplies FNUZ tensors ----------------

TEST(NarrowDtypeReference, QuantizeDequantizeAndGemmOfFnuzTensors) {
  ContextPtr ctx = make_context("reference", OCTET_PROFILE_NATIVE);
  const int64_t m = 5, n = 3, k = 7;
  std::vector<float> a_values = random_values(size_t(m * k), 40.0f, 3);
  a_values[0] = 1e6f;  // saturates
  std::vector<float> b_values = random_values(size_t(n * k), 2.0f, 4);
  const float sa = 2.0f, sb = 16.0f;
  for (int32_t dtype : {OCTET_DTYPE_E4M3FNUZ, OCTET_DTYPE_E5M2FNUZ}) {
    TensorPtr a = quantized(ctx.get(), m, k, a_values, dtype, sa, OCTET_USAGE_ROWWISE);
    TensorPtr b = quantized(ctx.get(), n, k, b_values, dtype, sb, OCTET_USAGE_ROWWISE);
    const auto a_codes = read<uint8_t>(a.get(), OCTET_COMPONENT_DATA, size_t(m * k));
    const auto b_codes = read<uint8_t>(b.get(), OCTET_COMPONENT_DATA, size_t(n * k));
    // Codes: the codec's saturating encode of x * scale (the product is exact
    // for a power-of-two scale).
    for (size_t i = 0; i < a_codes.size(); ++i)
      EXPECT_EQ(a_codes[i], octet_fp8_encode(a_values[i] * sa, dtype, 1)) << i;
    EXPECT_EQ(a_codes[0], 0x7F);
    for (size_t i = 0; i < b_codes.size(); ++i)
      EXPECT_EQ(b_codes[i], octet_fp8_encode(b_values[i] * sb, dtype, 1)) << i;

    TensorPtr back = make_tensor(ctx.get(), OCTET_DTYPE_FP32, {m, k});
    ASSERT_EQ(octet_dequantize(ctx.get(), a.get(), back.get()), OCTET_STATUS_SUCCESS) << last_error();
    const auto deq = read<float>(back.get(), OCTET_COMPONENT_DATA, size_t(m * k));
    for (size_t i = 0; i < deq.size(); ++i) EXPECT_EQ(deq[i], octet_fp8_decode(a_codes[i], dtype) * (1.0f / sa)) << i;

    TensorPtr d = make_tensor(ctx.get(), OCTET_DTYPE_FP32, {m, n});
    octet_gemm_options options{};
    options.struct_size = sizeof(options);
    options.alpha = 1.0f;
    ASSERT_EQ(octet_gemm(ctx.get(), a.get(), b.get(), d.get(), &options), OCTET_STATUS_SUCCESS) << last_error();
    const auto got = read<float>(d.get(), OCTET_COMPONENT_DATA, size_t(m * n));
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0;  // exact: few products of short significands
        for (int64_t p = 0; p < k; ++p)
          sum += double(octet_fp8_decode(a_codes[size_t(i * k + p)], dtype)) *
                 double(octet_fp8_decode(b_codes[size_t(j * k + p)], dtype));
        EXPECT_EQ(got[size_t(i * n + j)], float(sum / (double(sa) * double(sb)))) << i << "," << j;
      }
  }
}

TEST(NarrowDtypeReference, BlockScaledFnuzTensorsUseTheFormatsOwnMaximum) {
  ContextPtr ctx = make_context("reference", OCTET_PROFILE_NATIVE);
  const int64_t rows = 2, cols = 256;  // 1x128 blocks: a 2x2 grid
  std::vector<float> x = random_values(size_t(rows * cols), 5.0f, 21);
  TensorPtr src = make_fp32(ctx.get(), rows, cols, x);
  for (int32_t dtype : {OCTET_DTYPE_E4M3FNUZ, OCTET_DTYPE_E5M2FNUZ}) {
    const float top = dtype == OCTET_DTYPE_E4M3FNUZ ? 240.0f : 57344.0f;
    TensorPtr q = make_tensor(ctx.get(), dtype, {rows, cols}, OCTET_USAGE_ROWWISE, OCTET_SCALING_BLOCK_1X128);
    ASSERT_EQ(octet_quantize(ctx.get(), src.get(), q.get(), nullptr), OCTET_STATUS_SUCCESS) << last_error();
    const auto codes = read<uint8_t>(q.get(), OCTET_COMPONENT_DATA, size_t(rows * cols));
    const auto grid = read<float>(q.get(), OCTET_COMPONENT_ROWWISE_SCALE_INV, 4);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t b = 0; b < 2; ++b) {
        float amax = 0, largest = 0;
        for (int64_t c = b * 128; c < (b + 1) * 128; ++c) {
          amax = std::fmax(amax, std::fabs(x[size_t(r * cols + c)]));
          largest = std::fmax(largest, std::fabs(octet_fp8_decode(codes[size_t(r * cols + c)], dtype)));
        }
        // numerics.md 14.1 with the FNUZ maximum: scale = max / amax, so the
        // block's largest value lands on (or rounds to) the format's max.
        const float scale = top / amax;
        EXPECT_EQ(grid[size_t(r * 2 + b)], 1.0f / scale) << r << "," << b;
        EXPECT_EQ(largest, top) << r << "," << b;
        for (int64_t c = b * 128; c < (b + 1) * 128; ++c)
          EXPECT_EQ(codes[size_t(r * cols + c)], octet_fp8_encode(x[size_t(r * cols + c)] * scale, dtype, 1));
      }
  }
  octet_tensor_desc mx{};
  mx.struct_size = sizeof(mx);
  mx.dtype = OCTET_DTYPE_E4M3FNUZ;
  mx.ndim = 2;
  mx.shape[0] = 2;
  mx.shape[1] = 64;
  mx.usages = OCTET_USAGE_ROWWISE;
  mx.scaling_mode = OCTET_SCALING_MXFP8_1X32;
  octet_tensor* t = nullptr;
  EXPECT_EQ(octet_tensor_create(ctx.get(), &mx, &t), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(last_error(), HasSubstr("MXFP8_1X32 takes OCP FP8"));
}

TEST(NarrowDtypeReference, OcpAndFnuzOperandsDoNotMix) {
  ContextPtr ctx = make_context("reference", OCTET_PROFILE_NATIVE);
  std::vector<float> v = random_values(16, 1.0f, 5);
  TensorPtr a = quantized(ctx.get(), 4, 4, v, OCTET_DTYPE_E4M3, 1.0f, OCTET_USAGE_ROWWISE);
  TensorPtr b = quantized(ctx.get(), 4, 4, v, OCTET_DTYPE_E4M3FNUZ, 1.0f, OCTET_USAGE_ROWWISE);
  TensorPtr d = make_tensor(ctx.get(), OCTET_DTYPE_FP32, {4, 4});
  EXPECT_EQ(octet_gemm(ctx.get(), a.get(), b.get(), d.get(), nullptr), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(last_error(), HasSubstr("mix an OCP FP8 format with an FNUZ one"));
}

TEST(NarrowDtypeReference, E2M1TensorsAreQuantizedFp4TensorsOnly) {
  ContextPtr ctx = make_context("reference", OCTET_PROFILE_NATIVE);
  octet_tensor_desc desc{};
  desc.struct_size = sizeof(desc);
  desc.dtype = OCTET_DTYPE_E2M1;
  desc.ndim = 1;
  desc.shape[0] = 4;
  octet_tensor* t = nullptr;
  EXPECT_EQ(octet_tensor_create(ctx.get(), &desc, &t), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(last_error(), HasSubstr("e2m1"));
  EXPECT_EQ(t, nullptr);
  desc.usages = OCTET_USAGE_ROWWISE;
  desc.scaling_mode = OCTET_SCALING_NVFP4_1X16;
  ASSERT_EQ(octet_tensor_create(ctx.get(), &desc, &t), OCTET_STATUS_SUCCESS) << last_error();
  octet_tensor_destroy(t);
}

TEST(NarrowDtypeReference, RecipesTakeFnuzFormats) {
  octet_current_scaling_options current{};
  ASSERT_EQ(octet_current_scaling_options_init(&current), OCTET_STATUS_SUCCESS);
  current.format = OCTET_FORMAT_HYBRID_FNUZ;
  octet_recipe* recipe = nullptr;
  ASSERT_EQ(octet_recipe_create_current(&current, &recipe), OCTET_STATUS_SUCCESS) << last_error();
  int32_t dtype = 0, mode = 0;
  ASSERT_EQ(octet_recipe_tensor_format(recipe, OCTET_ROLE_INPUT, &dtype, &mode), OCTET_STATUS_SUCCESS);
  EXPECT_EQ(dtype, OCTET_DTYPE_E4M3FNUZ);
  ASSERT_EQ(octet_recipe_tensor_format(recipe, OCTET_ROLE_GRADIENT, &dtype, &mode), OCTET_STATUS_SUCCESS);
  EXPECT_EQ(dtype, OCTET_DTYPE_E5M2FNUZ);
  ContextPtr ctx = make_context("reference", OCTET_PROFILE_NATIVE);
  EXPECT_EQ(octet_autocast_begin(ctx.get(), recipe), OCTET_STATUS_SUCCESS) << last_error();
  EXPECT_EQ(octet_autocast_end(ctx.get()), OCTET_STATUS_SUCCESS);
  octet_recipe_destroy(recipe);

  octet_mxfp8_options mx{};
  ASSERT_EQ(octet_mxfp8_options_init(&mx), OCTET_STATUS_SUCCESS);
  mx.format = OCTET_FORMAT_E4M3FNUZ;
  EXPECT_EQ(octet_recipe_create_mxfp8(&mx, &recipe), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(last_error(), HasSubstr("MXFP8"));
  octet_delayed_scaling_options delayed{};
  ASSERT_EQ(octet_delayed_scaling_options_init(&delayed), OCTET_STATUS_SUCCESS);
  delayed.format = OCTET_FORMAT_E5M2FNUZ;
  EXPECT_EQ(octet_recipe_create_delayed(&delayed, &recipe), OCTET_STATUS_INVALID_ARGUMENT);
  delayed.format = 6;
  EXPECT_EQ(octet_recipe_create_delayed(&delayed, &recipe), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(last_error(), HasSubstr("options->format (6)"));
}

// ---- capabilities: one FP8 family per backend -----------------------------------------

struct Family {
  const char* backend;
  const char* path;
  int32_t own, foreign;  // an FP8 dtype of the family, one outside it
  int32_t own_format, foreign_format;
  const char* foreign_name;
};

const Family kFamilies[] = {
    {"fnuz_only", OCTET_TEST_FNUZ_PLUGIN, OCTET_DTYPE_E4M3FNUZ, OCTET_DTYPE_E4M3, OCTET_FORMAT_HYBRID_FNUZ,
     OCTET_FORMAT_HYBRID, "e4m3"},
    {"ocp_only", OCTET_TEST_OCP_PLUGIN, OCTET_DTYPE_E4M3, OCTET_DTYPE_E4M3FNUZ, OCTET_FORMAT_HYBRID,
     OCTET_FORMAT_HYBRID_FNUZ, "e4m3fnuz"},
};

void PrintTo(const Family& f, std::ostream* os) { *os << f.backend; }

class FormatFamilies : public testing::TestWithParam<Family> {
 protected:
  void SetUp() override {
    const octet_status s = octet_backend_load(GetParam().path);
    ASSERT_TRUE(s == OCTET_STATUS_SUCCESS || std::string(last_error()).find("already") != std::string::npos)
        << last_error();
  }
  uint64_t foreign_calls() const {
    void* handle = dlopen(GetParam().path, RTLD_NOW | RTLD_NOLOAD);
    EXPECT_NE(handle, nullptr);
    auto fn = reinterpret_cast<uint64_t (*)()>(dlsym(handle, "octet_test_foreign_dtype_calls"));
    EXPECT_NE(fn, nullptr);
    const uint64_t count = fn != nullptr ? fn() : ~uint64_t{0};
    if (handle != nullptr) dlclose(handle);
    return count;
  }
};
INSTANTIATE_TEST_SUITE_P(Plugins, FormatFamilies, testing::ValuesIn(kFamilies),
                         [](const testing::TestParamInfo<Family>& info) { return std::string(info.param.backend); });

TEST_P(FormatFamilies, TheBackendDeclaresItsFamilyOnly) {
  octet_backend_info info{};
  size_t count = 0;
  ASSERT_EQ(octet_backend_count(&count), OCTET_STATUS_SUCCESS);
  bool found = false;
  for (size_t i = 0; i < count && !found; ++i) {
    info = octet_backend_info{};
    info.struct_size = sizeof(info);
    ASSERT_EQ(octet_backend_get_info(i, &info), OCTET_STATUS_SUCCESS) << last_error();
    found = std::string(info.name) == GetParam().backend;
  }
  ASSERT_TRUE(found) << GetParam().backend;
  EXPECT_NE(info.dtypes & OCTET_DTYPE_BIT(GetParam().own), 0u);
  EXPECT_EQ(info.dtypes & OCTET_DTYPE_BIT(GetParam().foreign), 0u);
  EXPECT_NE(info.features & OCTET_FEATURE_GEMM_FP8, 0u);
}

TEST_P(FormatFamilies, AForeignDtypeIsRefusedNamingItAndTheBackend) {
  const Family& f = GetParam();
  ContextPtr ctx = make_context(f.backend, OCTET_PROFILE_NATIVE);
  octet_tensor_desc desc{};
  desc.struct_size = sizeof(desc);
  desc.dtype = f.foreign;
  desc.ndim = 2;
  desc.shape[0] = 4;
  desc.shape[1] = 4;
  desc.usages = OCTET_USAGE_ROWWISE;
  octet_tensor* t = nullptr;
  EXPECT_EQ(octet_tensor_create(ctx.get(), &desc, &t), OCTET_STATUS_UNSUPPORTED);
  EXPECT_THAT(last_error(), HasSubstr(std::string("backend '") + f.backend + "'"));
  EXPECT_THAT(last_error(), HasSubstr(std::string("dtype ") + f.foreign_name));
  EXPECT_EQ(t, nullptr);

  // Its own family works end to end, and the foreign one never reached it.
  std::vector<float> v = random_values(16, 1.0f, 9);
  TensorPtr a = quantized(ctx.get(), 4, 4, v, f.own, 4.0f, OCTET_USAGE_ROWWISE);
  TensorPtr d = make_tensor(ctx.get(), OCTET_DTYPE_FP32, {4, 4});
  EXPECT_EQ(octet_gemm(ctx.get(), a.get(), a.get(), d.get(), nullptr), OCTET_STATUS_SUCCESS) << last_error();
  EXPECT_EQ(foreign_calls(), 0u);
}

TEST_P(FormatFamilies, ARecipeOfTheOtherFamilyIsRefusedWhereItMeetsTheBackend) {
  const Family& f = GetParam();
  ContextPtr ctx = make_context(f.backend, OCTET_PROFILE_NATIVE);
  for (int32_t format : {f.foreign_format, f.own_format}) {
    octet_current_scaling_options o{};
    ASSERT_EQ(octet_current_scaling_options_init(&o), OCTET_STATUS_SUCCESS);
    o.format = format;
    octet_recipe* recipe = nullptr;
    ASSERT_EQ(octet_recipe_create_current(&o, &recipe), OCTET_STATUS_SUCCESS) << last_error();
    const bool own = format == f.own_format;

    const octet_status begin = octet_autocast_begin(ctx.get(), recipe);
    if (own) {
      EXPECT_EQ(begin, OCTET_STATUS_SUCCESS) << last_error();
      EXPECT_EQ(octet_autocast_end(ctx.get()), OCTET_STATUS_SUCCESS);
    } else {
      EXPECT_EQ(begin, OCTET_STATUS_UNSUPPORTED);
      EXPECT_THAT(last_error(), HasSubstr(std::string("backend '") + f.backend + "' does not declare"));
      EXPECT_THAT(last_error(), HasSubstr(std::string("input role as ") + f.foreign_name));
    }

    octet_linear_options lo{};
    ASSERT_EQ(octet_linear_options_init(&lo), OCTET_STATUS_SUCCESS);
    lo.in_features = 8;
    lo.out_features = 4;
    lo.recipe = recipe;
    octet_layer* layer = nullptr;
    const octet_status created = octet_layer_create_linear(ctx.get(), &lo, &layer);
    if (own) {
      EXPECT_EQ(created, OCTET_STATUS_SUCCESS) << last_error();
    } else {
      EXPECT_EQ(created, OCTET_STATUS_UNSUPPORTED);
      EXPECT_THAT(last_error(), HasSubstr(f.foreign_name));
      EXPECT_THAT(last_error(), HasSubstr(f.backend));
      EXPECT_EQ(layer, nullptr);
    }
    octet_layer_destroy(layer);
    octet_recipe_destroy(recipe);
  }
  EXPECT_EQ(foreign_calls(), 0u);
}

}  // namespace
