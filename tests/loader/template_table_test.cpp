// The template's table called directly, as the host does: bad arguments come
// back as a status plus a message through the host callback (the core's own
// checks stop them before they reach a plugin, so only here are they seen),
// and initialize writes only the caps fields the host has room for.
#include "plugin_loader.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

namespace {

using ::testing::HasSubstr;

struct Reported {
  int32_t status = OCTET_STATUS_SUCCESS;
  std::string message;
};

void record(void* host_data, int32_t status, const char* message) {
  auto* reported = static_cast<Reported*>(host_data);
  reported->status = status;
  reported->message = message != nullptr ? message : "(null)";
}

class TemplateTable : public ::testing::Test {
 protected:
  void SetUp() override {
    octet::core::PluginFailure failure;
    auto loaded = octet::core::load_plugin(OCTET_TEST_TEMPLATE_PLUGIN, &failure);
    ASSERT_TRUE(loaded.has_value()) << failure.reason;
    plugin_ = *loaded;
    api_ = plugin_.api;
    host_.struct_size = sizeof host_;
    host_.abi_major = OCTET_PLUGIN_ABI_MAJOR;
    host_.abi_minor = OCTET_PLUGIN_ABI_MINOR;
    host_.report_error = record;
    host_.host_data = &reported_;
    octet_backend_caps caps{};
    caps.struct_size = sizeof caps;
    ASSERT_EQ(api_->initialize(&host_, &caps), OCTET_STATUS_SUCCESS);
    ASSERT_EQ(api_->context_create(nullptr, &context_), OCTET_STATUS_SUCCESS);
  }
  void TearDown() override {
    if (api_ != nullptr && context_ != nullptr) api_->context_destroy(context_);
  }

  octet::core::LoadedPlugin plugin_;
  const octet_backend_api* api_ = nullptr;
  octet_host_services host_{};
  Reported reported_;
  octet_backend_context* context_ = nullptr;
};

octet_matrix_view view(void* data, int32_t dtype, int64_t rows, int64_t cols) {
  return octet_matrix_view{data, dtype, 0, rows, cols, cols};
}

TEST_F(TemplateTable, InitializeFillsTheDeclaredCapabilities) {
  octet_backend_caps caps{};
  caps.struct_size = sizeof caps;
  ASSERT_EQ(api_->initialize(&host_, &caps), OCTET_STATUS_SUCCESS);
  EXPECT_STREQ(caps.device, "host CPU (template)");
  EXPECT_EQ(caps.memory_kind, OCTET_MEMORY_HOST);
  EXPECT_EQ(caps.scaling_modes, uint32_t(OCTET_SCALING_PER_TENSOR));
  EXPECT_EQ(caps.fp8_gemm_layouts, 0u);  // no gemm entry, no layout
  EXPECT_EQ(caps.alignment, 64u);
  EXPECT_EQ(caps.native_columnwise, 0);
  EXPECT_EQ(caps.fused_cast_transpose, 0);
}

TEST_F(TemplateTable, InitializeWritesNothingBeyondTheHostsStructSize) {
  // An older host whose caps end before `alignment`.
  octet_backend_caps caps;
  std::memset(&caps, 0xAB, sizeof caps);
  caps.struct_size = offsetof(octet_backend_caps, alignment);
  ASSERT_EQ(api_->initialize(&host_, &caps), OCTET_STATUS_SUCCESS);
  EXPECT_EQ(caps.fp8_gemm_layouts, 0u);  // no gemm entry, no layout
  uint64_t untouched;
  std::memset(&untouched, 0xAB, sizeof untouched);
  EXPECT_EQ(caps.alignment, untouched);
  EXPECT_EQ(caps.fused_cast_transpose, int32_t(0xABABABAB));
}

TEST_F(TemplateTable, ConvertRejectsAMismatchedShapeNamingBothArguments) {
  std::vector<float> in(6, 1.0f), out(8, 0.0f);
  const octet_matrix_view a = view(in.data(), OCTET_DTYPE_FP32, 2, 3);
  const octet_matrix_view b = view(out.data(), OCTET_DTYPE_FP32, 2, 4);
  EXPECT_EQ(api_->convert(context_, &a, &b, 1), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(reported_.status, OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(reported_.message, HasSubstr("input and output"));
  EXPECT_EQ(out, std::vector<float>(8, 0.0f)) << "outputs are untouched on failure";
}

TEST_F(TemplateTable, ConvertAnswersUnsupportedForE8m0AndInvalidForUnknownCodes) {
  std::vector<uint8_t> in(4, 0x7F), out(4, 0);
  const octet_matrix_view e8m0 = view(in.data(), OCTET_DTYPE_E8M0, 2, 2);
  const octet_matrix_view fp8 = view(out.data(), OCTET_DTYPE_E4M3, 2, 2);
  EXPECT_EQ(api_->convert(context_, &e8m0, &fp8, 1), OCTET_STATUS_UNSUPPORTED);
  EXPECT_THAT(reported_.message, HasSubstr("input.dtype"));

  const octet_matrix_view unknown = view(in.data(), 99, 2, 2);
  EXPECT_EQ(api_->convert(context_, &unknown, &fp8, 1), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(reported_.message, HasSubstr("input.dtype (99)"));
}

TEST_F(TemplateTable, ViewsWithBadLeadingDimensionOrNullDataAreRejected) {
  std::vector<float> in(6, 1.0f);
  float amax = -1.0f;
  octet_matrix_view bad_ld = view(in.data(), OCTET_DTYPE_FP32, 2, 3);
  bad_ld.ld = 2;
  EXPECT_EQ(api_->amax(context_, &bad_ld, &amax), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(reported_.message, HasSubstr("ld >= cols"));
  const octet_matrix_view no_data = view(nullptr, OCTET_DTYPE_FP32, 2, 3);
  EXPECT_EQ(api_->amax(context_, &no_data, &amax), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(reported_.message, HasSubstr("input.data is NULL"));
  const octet_matrix_view good = view(in.data(), OCTET_DTYPE_FP32, 2, 3);
  EXPECT_EQ(api_->amax(context_, &good, nullptr), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(reported_.message, HasSubstr("amax_out"));
  EXPECT_EQ(amax, -1.0f);
}

TEST_F(TemplateTable, QuantizeRefusesAColumnwiseOutputNamingTranspose) {
  std::vector<float> in(6, 1.0f);
  std::vector<uint8_t> rowwise(6, 0), columnwise(6, 0);
  const float scale = 1.0f;
  octet_quantize_args args{};
  args.struct_size = sizeof args;
  args.input = view(in.data(), OCTET_DTYPE_FP32, 2, 3);
  args.out_dtype = OCTET_DTYPE_E4M3;
  args.saturate = 1;
  args.scale = &scale;
  args.rowwise_out = rowwise.data();
  args.columnwise_out = columnwise.data();
  EXPECT_EQ(api_->quantize(context_, &args), OCTET_STATUS_UNSUPPORTED);
  EXPECT_THAT(reported_.message, HasSubstr("columnwise_out"));
  EXPECT_THAT(reported_.message, HasSubstr("transpose"));
  EXPECT_EQ(rowwise, std::vector<uint8_t>(6, 0));
}

TEST_F(TemplateTable, QuantizeReadsOnlyUpToTheCallersStructSize) {
  // A caller whose struct ends before rowwise_out: the pointers after it are
  // garbage here and must be treated as absent.
  std::vector<float> in(4, 2.0f);
  const float scale = 1.0f;
  octet_quantize_args args;
  std::memset(&args, 0xFF, sizeof args);
  args.struct_size = offsetof(octet_quantize_args, rowwise_out);
  args.input = view(in.data(), OCTET_DTYPE_FP32, 2, 2);
  args.out_dtype = OCTET_DTYPE_E4M3;
  args.saturate = 1;
  args.scale = &scale;
  // No output left at all: refused, and nothing is written through garbage.
  EXPECT_EQ(api_->quantize(context_, &args), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(reported_.message, HasSubstr("no output"));
}

TEST_F(TemplateTable, DequantizeRejectsAHighPrecisionInput) {
  std::vector<float> in(4, 1.0f), out(4, 0.0f);
  const float scale_inv = 1.0f;
  octet_dequantize_args args{};
  args.struct_size = sizeof args;
  args.input = view(in.data(), OCTET_DTYPE_FP32, 2, 2);
  args.scale_inv = &scale_inv;
  args.output = view(out.data(), OCTET_DTYPE_FP32, 2, 2);
  EXPECT_EQ(api_->dequantize(context_, &args), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(reported_.message, HasSubstr("args->input.dtype"));
  EXPECT_THAT(reported_.message, HasSubstr("e4m3 or e5m2"));
}

}  // namespace
