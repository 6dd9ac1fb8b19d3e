// The plugin SDK's helper, <octet/octet_plugin.hpp>, against expectations
// written out by hand: byte images of structs for struct_size, the exact
// messages the host's callback receives, the status of each exception.
#include <octet/octet_backend.h>
#include <octet/octet_plugin.hpp>

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

namespace plugin = octet::plugin;

struct Reported {
  int32_t status;
  std::string message;
};

void record(void* data, int32_t status, const char* message) {
  static_cast<std::vector<Reported>*>(data)->push_back({status, message != nullptr ? message : "(null)"});
}

void throw_from_callback(void*, int32_t, const char*) { throw std::bad_alloc(); }

// A host with a recording callback.
class PluginSdk : public ::testing::Test {
 protected:
  void SetUp() override {
    services_.struct_size = sizeof services_;
    services_.abi_major = OCTET_PLUGIN_ABI_MAJOR;
    services_.abi_minor = OCTET_PLUGIN_ABI_MINOR;
    services_.report_error = record;
    services_.host_data = &reported_;
    host_.remember(&services_);
    labelled_.remember(&services_);
  }

  octet_host_services services_{};
  std::vector<Reported> reported_;
  plugin::Host host_;
  plugin::Host labelled_{"mine"};
};

octet_matrix_view view(void* data, int32_t dtype, int64_t rows, int64_t cols, int64_t ld) {
  return octet_matrix_view{data, dtype, 0, rows, cols, ld};
}

// ---- struct_size: reading a host struct -------------------------------------------

TEST(PluginSdkStructSize, ReadingAShorterHostStructZeroesTheFieldsItLacks) {
  // A host struct that ends before rowwise_out; the bytes after it are not
  // the host's (0xFF here) and must not be read.
  unsigned char image[sizeof(octet_quantize_args)];
  std::memset(image, 0xFF, sizeof image);
  const std::size_t given = offsetof(octet_quantize_args, rowwise_out);
  std::memcpy(image, &given, sizeof given);
  octet_quantize_args read = plugin::read_struct(reinterpret_cast<const octet_quantize_args*>(image));

  unsigned char expected[sizeof(octet_quantize_args)] = {};
  std::memcpy(expected, image, given);  // the host's bytes, then zeros
  EXPECT_EQ(std::memcmp(&read, expected, sizeof expected), 0);
  EXPECT_EQ(read.struct_size, given);
  EXPECT_EQ(read.rowwise_out, nullptr);
  EXPECT_EQ(read.columnwise_out, nullptr);
  EXPECT_EQ(read.scale_inv_out, nullptr);
  EXPECT_EQ(read.amax_out, nullptr);
}

TEST(PluginSdkStructSize, ReadingALongerHostStructTakesOnlyThePluginsFields) {
  // A newer host: 32 bytes of fields this plugin does not know.
  std::vector<unsigned char> image(sizeof(octet_dequantize_args) + 32);
  for (std::size_t i = 0; i < image.size(); ++i) image[i] = static_cast<unsigned char>(i * 7 + 1);
  const std::size_t given = image.size();
  std::memcpy(image.data(), &given, sizeof given);
  const octet_dequantize_args read = plugin::read_struct(reinterpret_cast<const octet_dequantize_args*>(image.data()));
  EXPECT_EQ(std::memcmp(&read, image.data(), sizeof read), 0);
  EXPECT_EQ(read.struct_size, given) << "the copy keeps the host's struct_size";
}

TEST(PluginSdkStructSize, ReadingNullGivesAZeroStruct) {
  const octet_host_services read = plugin::read_struct<octet_host_services>(nullptr);
  EXPECT_EQ(read.struct_size, 0u);
  EXPECT_EQ(read.report_error, nullptr);
}

TEST(PluginSdkStructSize, HoldsNeedsTheWholeField) {
  const std::size_t end_of_scale = offsetof(octet_quantize_args, scale) + sizeof(const float*);
  EXPECT_TRUE(OCTET_PLUGIN_HOLDS(end_of_scale, octet_quantize_args, scale));
  EXPECT_FALSE(OCTET_PLUGIN_HOLDS(end_of_scale - 1, octet_quantize_args, scale));
  EXPECT_FALSE(OCTET_PLUGIN_HOLDS(end_of_scale, octet_quantize_args, rowwise_out));
}

// ---- struct_size: writing a plugin struct into the host's ------------------------

octet_backend_caps sample_caps() {
  octet_backend_caps caps{};
  caps.struct_size = sizeof caps;
  caps.device = "sample";
  caps.memory_kind = OCTET_MEMORY_HOST;
  caps.dtypes = OCTET_DTYPE_BIT(OCTET_DTYPE_FP32);
  caps.scaling_modes = OCTET_SCALING_PER_TENSOR;
  caps.native_columnwise = 1;
  caps.fp8_gemm_layouts = OCTET_GEMM_LAYOUT_TN;
  caps.alignment = 128;
  caps.fused_cast_transpose = 1;
  caps.fp8_gemm_output = 1;
  return caps;
}

TEST(PluginSdkStructSize, WritingIntoAShorterHostStructStopsAtItsSize) {
  // An older host whose caps end before `alignment`.
  unsigned char image[sizeof(octet_backend_caps)];
  std::memset(image, 0xAB, sizeof image);
  const std::size_t offered = offsetof(octet_backend_caps, alignment);
  std::memcpy(image, &offered, sizeof offered);
  const octet_backend_caps filled = sample_caps();
  EXPECT_EQ(plugin::write_struct(reinterpret_cast<octet_backend_caps*>(image), filled), offered);

  unsigned char expected[sizeof(octet_backend_caps)];
  std::memset(expected, 0xAB, sizeof expected);
  std::memcpy(expected, &filled, offered);
  std::memcpy(expected, &offered, sizeof offered);  // struct_size: the bytes written
  EXPECT_EQ(std::memcmp(image, expected, sizeof image), 0);
}

TEST(PluginSdkStructSize, WritingIntoALongerHostStructLeavesItsExtraBytesAndSaysHowMuchWasWritten) {
  std::vector<unsigned char> image(sizeof(octet_backend_caps) + 24, 0xCD);
  const std::size_t offered = image.size();
  std::memcpy(image.data(), &offered, sizeof offered);
  const octet_backend_caps filled = sample_caps();
  EXPECT_EQ(plugin::write_struct(reinterpret_cast<octet_backend_caps*>(image.data()), filled),
            sizeof(octet_backend_caps));

  std::vector<unsigned char> expected(image.size(), 0xCD);
  std::memcpy(expected.data(), &filled, sizeof filled);  // struct_size == sizeof: what was written
  EXPECT_EQ(image, expected);
}

TEST(PluginSdkStructSize, WritingIntoAStructTooSmallForStructSizeWritesNothing) {
  octet_backend_caps caps;
  std::memset(&caps, 0x11, sizeof caps);
  caps.struct_size = sizeof(std::size_t) - 1;
  octet_backend_caps before;
  std::memcpy(&before, &caps, sizeof caps);
  EXPECT_EQ(plugin::write_struct(&caps, sample_caps()), 0u);
  EXPECT_EQ(std::memcmp(&caps, &before, sizeof caps), 0);
}

// ---- the host's services -----------------------------------------------------------

TEST(PluginSdkHost, AnOlderHostsServicesWithoutACallbackAreReadAsNone) {
  std::vector<Reported> reported;
  octet_host_services services{};
  services.report_error = record;
  services.host_data = &reported;
  services.struct_size = offsetof(octet_host_services, report_error);  // ends before the callback
  plugin::Host host;
  host.remember(&services);
  EXPECT_EQ(host.services().report_error, nullptr);
  EXPECT_EQ(host.report(OCTET_STATUS_BACKEND_ERROR, "nobody hears this"), OCTET_STATUS_BACKEND_ERROR);
  EXPECT_TRUE(reported.empty());
}

TEST_F(PluginSdk, ReportPassesStatusAndMessageToTheCallback) {
  EXPECT_EQ(host_.report(OCTET_STATUS_UNAVAILABLE, "no device"), OCTET_STATUS_UNAVAILABLE);
  ASSERT_EQ(reported_.size(), 1u);
  EXPECT_EQ(reported_[0].status, OCTET_STATUS_UNAVAILABLE);
  EXPECT_EQ(reported_[0].message, "no device");
}

TEST_F(PluginSdk, ForgettingTheServicesSilencesReports) {
  host_.remember(nullptr);
  host_.report(OCTET_STATUS_INTERNAL, "after shutdown");
  EXPECT_TRUE(reported_.empty());
}

// ---- argument checks ---------------------------------------------------------------

TEST_F(PluginSdk, NotNullNamesTheArgumentAndTheRule) {
  const float x = 1.0f;
  EXPECT_EQ(plugin::check_not_null(host_, "quantize", "args->scale", &x), OCTET_STATUS_SUCCESS);
  EXPECT_TRUE(reported_.empty()) << "a passing check reports nothing";
  EXPECT_EQ(plugin::check_not_null(host_, "quantize", "args->scale", nullptr), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(plugin::check_not_null(labelled_, "quantize", "args->scale", nullptr), OCTET_STATUS_INVALID_ARGUMENT);
  ASSERT_EQ(reported_.size(), 2u);
  EXPECT_EQ(reported_[0].status, OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(reported_[0].message, "quantize: args->scale must not be NULL");
  EXPECT_EQ(reported_[1].message, "mine quantize: args->scale must not be NULL");
}

TEST_F(PluginSdk, StructSizeNamesGivenAndRequiredSizes) {
  EXPECT_EQ(plugin::check_struct_size(host_, "gemm", "args", 64, 64), OCTET_STATUS_SUCCESS);
  EXPECT_EQ(plugin::check_struct_size(host_, "gemm", "args", 63, 64), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(plugin::check_struct_size(host_, "gemm", "args", 8, 48, "sizeof(x_args), plugin ABI 1.3"),
            OCTET_STATUS_INVALID_ARGUMENT);
  ASSERT_EQ(reported_.size(), 2u);
  EXPECT_EQ(reported_[0].message, "gemm: args->struct_size (63) must be at least 64");
  EXPECT_EQ(reported_[1].message, "gemm: args->struct_size (8) must be at least 48 (sizeof(x_args), plugin ABI 1.3)");
}

TEST_F(PluginSdk, MatrixChecksEachRuleInTurn) {
  float data[6] = {};
  const uint32_t fp8 = OCTET_DTYPE_BIT(OCTET_DTYPE_E4M3) | OCTET_DTYPE_BIT(OCTET_DTYPE_E5M2);
  const uint32_t fp32 = OCTET_DTYPE_BIT(OCTET_DTYPE_FP32);
  struct Case {
    octet_matrix_view v;
    uint32_t accepted;
    int32_t outside;
    int32_t status;
    const char* message;
  };
  const Case cases[] = {
      {view(data, OCTET_DTYPE_FP32, 2, 3, 3), fp32, OCTET_STATUS_INVALID_ARGUMENT, OCTET_STATUS_SUCCESS, ""},
      {view(nullptr, OCTET_DTYPE_FP32, 0, 3, 3), fp32, OCTET_STATUS_INVALID_ARGUMENT, OCTET_STATUS_SUCCESS, ""},
      {view(data, 99, 2, 3, 3), fp32, OCTET_STATUS_INVALID_ARGUMENT, OCTET_STATUS_INVALID_ARGUMENT,
       "convert: input.dtype (99) is not an octet_dtype"},
      {view(data, OCTET_DTYPE_FP32, 2, 3, 3), fp8, OCTET_STATUS_INVALID_ARGUMENT, OCTET_STATUS_INVALID_ARGUMENT,
       "convert: input.dtype is fp32 (1) but must be e4m3 or e5m2"},
      {view(data, OCTET_DTYPE_E8M0, 2, 3, 3), fp8, OCTET_STATUS_UNSUPPORTED, OCTET_STATUS_UNSUPPORTED,
       "convert: input.dtype is e8m0 (14) but must be e4m3 or e5m2"},
      {view(data, OCTET_DTYPE_FP32, -1, 3, 3), fp32, OCTET_STATUS_INVALID_ARGUMENT, OCTET_STATUS_INVALID_ARGUMENT,
       "convert: input must have rows >= 0 and cols >= 0 (it has rows -1, cols 3)"},
      {view(data, OCTET_DTYPE_FP32, 2, 3, 2), fp32, OCTET_STATUS_INVALID_ARGUMENT, OCTET_STATUS_INVALID_ARGUMENT,
       "convert: input.ld (2) must be >= input.cols (3): ld >= cols"},
      {view(nullptr, OCTET_DTYPE_FP32, 2, 3, 3), fp32, OCTET_STATUS_INVALID_ARGUMENT, OCTET_STATUS_INVALID_ARGUMENT,
       "convert: input.data is NULL but the matrix is not empty"},
  };
  for (const Case& c : cases) {
    reported_.clear();
    EXPECT_EQ(plugin::check_matrix(host_, "convert", "input", c.v, c.accepted, c.outside), c.status) << c.message;
    if (c.status == OCTET_STATUS_SUCCESS) {
      EXPECT_TRUE(reported_.empty());
    } else {
      ASSERT_EQ(reported_.size(), 1u) << c.message;
      EXPECT_EQ(reported_[0].status, c.status);
      EXPECT_EQ(reported_[0].message, c.message);
    }
  }
}

TEST_F(PluginSdk, ShapeChecksNameBothShapesAndTheRule) {
  float data[12] = {};
  const octet_matrix_view a = view(data, OCTET_DTYPE_FP32, 2, 3, 3), b = view(data, OCTET_DTYPE_FP32, 3, 2, 2);
  EXPECT_EQ(plugin::check_shape(host_, "transpose", "output", b, 3, 2, "the transpose of input"), OCTET_STATUS_SUCCESS);
  EXPECT_EQ(plugin::check_shape(host_, "transpose", "output", a, 3, 2, "the transpose of input"),
            OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(plugin::check_same_shape(host_, "convert", "input and output", a, b), OCTET_STATUS_INVALID_ARGUMENT);
  ASSERT_EQ(reported_.size(), 2u);
  EXPECT_EQ(reported_[0].message, "transpose: output is 2x3 but must be 3x2 (the transpose of input)");
  EXPECT_EQ(reported_[1].message, "convert: input and output must have the same rows and cols (2x3 and 3x2)");
}

TEST(PluginSdkDtypes, ListsAndSizesFollowTheTable) {
  EXPECT_EQ(plugin::dtype_list(0), "(none)");
  EXPECT_EQ(plugin::dtype_list(OCTET_DTYPE_BIT(OCTET_DTYPE_FP16)), "fp16");
  EXPECT_EQ(plugin::dtype_list(OCTET_DTYPE_BIT(OCTET_DTYPE_E5M2) | OCTET_DTYPE_BIT(OCTET_DTYPE_FP32)), "fp32 or e5m2");
  EXPECT_EQ(plugin::dtype_list(plugin::kHighPrecisionDtypes), "fp32, bf16 or fp16");
  EXPECT_EQ(plugin::dtype_list(plugin::kOcpFp8Dtypes | plugin::kFnuzFp8Dtypes), "e4m3, e5m2, e4m3fnuz or e5m2fnuz");
  // Sizes: octet_types.h's element widths; E2M1 packs two per byte.
  const std::pair<int32_t, std::size_t> sizes[] = {{OCTET_DTYPE_FP32, 4},
                                                   {OCTET_DTYPE_BF16, 2},
                                                   {OCTET_DTYPE_FP16, 2},
                                                   {OCTET_DTYPE_E4M3, 1},
                                                   {OCTET_DTYPE_E4M3FNUZ, 1},
                                                   {OCTET_DTYPE_E5M2, 1},
                                                   {OCTET_DTYPE_E5M2FNUZ, 1},
                                                   {OCTET_DTYPE_E8M0, 1},
                                                   {OCTET_DTYPE_E2M1, 0},
                                                   {0, 0},
                                                   {99, 0}};
  for (const auto& s : sizes) EXPECT_EQ(plugin::dtype_size(s.first), s.second) << s.first;
  EXPECT_TRUE(plugin::is_dtype(OCTET_DTYPE_E2M1));
  EXPECT_FALSE(plugin::is_dtype(99));
  EXPECT_FALSE(plugin::dtype_in(-1, ~0u));
  EXPECT_FALSE(plugin::dtype_in(40, ~0u));
}

// ---- exceptions become statuses ----------------------------------------------------------

TEST_F(PluginSdk, GuardTurnsEachExceptionIntoItsStatusAndMessage) {
  struct Case {
    void (*body)();
    int32_t status;
    const char* message;
  };
  const Case cases[] = {
      {[] { throw plugin::Failure(OCTET_STATUS_UNSUPPORTED, "args->epilogue 7 is not offered"); },
       OCTET_STATUS_UNSUPPORTED, "mine gemm: args->epilogue 7 is not offered"},
      {[] { throw plugin::OutOfMemory(1024, "host memory"); }, OCTET_STATUS_OUT_OF_MEMORY,
       "mine gemm: out of host memory (1024 bytes asked)"},
      {[] { throw std::bad_alloc(); }, OCTET_STATUS_OUT_OF_MEMORY, "mine gemm: out of memory"},
      {[] { throw std::runtime_error("device lost"); }, OCTET_STATUS_BACKEND_ERROR, "mine gemm: device lost"},
      {[] { throw 42; }, OCTET_STATUS_INTERNAL, "mine gemm: unexpected exception"},
  };
  for (const Case& c : cases) {
    reported_.clear();
    EXPECT_EQ(plugin::guard(labelled_, "gemm", c.body), c.status) << c.message;
    ASSERT_EQ(reported_.size(), 1u) << c.message;
    EXPECT_EQ(reported_[0].status, c.status);
    EXPECT_EQ(reported_[0].message, c.message);
  }
}

TEST_F(PluginSdk, GuardPassesAStatusThroughAndAVoidBodyIsSuccess) {
  EXPECT_EQ(plugin::guard(host_, "amax", [] {}), OCTET_STATUS_SUCCESS);
  EXPECT_EQ(plugin::guard(host_, "amax", [] { return int32_t(OCTET_STATUS_NOT_FOUND); }), OCTET_STATUS_NOT_FOUND);
  EXPECT_TRUE(reported_.empty()) << "a status the body returns was reported by the body, if at all";
}

TEST_F(PluginSdk, ChecksInsideGuardReportOnce) {
  const int32_t status = plugin::guard(host_, "amax", [&]() -> int32_t {
    if (int32_t s = plugin::check_not_null(host_, "amax", "amax_out", nullptr)) return s;
    ADD_FAILURE() << "the check passed";
    return OCTET_STATUS_SUCCESS;
  });
  EXPECT_EQ(status, OCTET_STATUS_INVALID_ARGUMENT);
  ASSERT_EQ(reported_.size(), 1u);
  EXPECT_EQ(reported_[0].message, "amax: amax_out must not be NULL");
}

TEST_F(PluginSdk, ThrowingFormOfAProblemReportsTheSameMessage) {
  float data[4] = {};
  const octet_matrix_view v = view(data, OCTET_DTYPE_FP32, 2, 2, 1);
  const int32_t status =
      plugin::guard(labelled_, "dequantize", [&] { plugin::raise(plugin::matrix_problem("args->output", v, ~0u)); });
  EXPECT_EQ(status, OCTET_STATUS_INVALID_ARGUMENT);
  ASSERT_EQ(reported_.size(), 1u);
  EXPECT_EQ(reported_[0].message, "mine dequantize: args->output.ld (1) must be >= args->output.cols (2): ld >= cols");
  // A problem that did not fail raises nothing.
  EXPECT_NO_THROW(plugin::raise(plugin::not_null_problem("p", data)));
}

TEST(PluginSdkGuard, AThrowingCallbackNeverEscapesTheGuard) {
  // A C++ host whose callback throws (a C callback cannot): the status still
  // comes back, through a bad argument and through an exception alike.
  octet_host_services services{};
  services.struct_size = sizeof services;
  services.report_error = throw_from_callback;
  plugin::Host host;
  host.remember(&services);
  EXPECT_EQ(plugin::guard(host, "gemm", [] { throw plugin::OutOfMemory(8); }), OCTET_STATUS_OUT_OF_MEMORY);
  EXPECT_EQ(plugin::guard(host, "gemm", [] { throw std::runtime_error("x"); }), OCTET_STATUS_BACKEND_ERROR);
  // The check's report throws std::bad_alloc: memory is short, so the
  // guard answers OUT_OF_MEMORY.
  EXPECT_EQ(plugin::guard(host, "amax", [&] { return plugin::check_not_null(host, "amax", "input", nullptr); }),
            OCTET_STATUS_OUT_OF_MEMORY);
  EXPECT_EQ(host.report_at(OCTET_STATUS_INTERNAL, "amax", "x"), OCTET_STATUS_INTERNAL);
}

// ---- capability tables -----------------------------------------------------------------

TEST_F(PluginSdk, CapabilitiesAnswerTheQueryWithinTheHostsSize) {
  const plugin::Capabilities table(sample_caps());
  EXPECT_TRUE(table.declares_dtype(OCTET_DTYPE_FP32));
  EXPECT_FALSE(table.declares_dtype(OCTET_DTYPE_E4M3));
  EXPECT_FALSE(table.declares_dtype(99));
  EXPECT_TRUE(table.declares_scaling(OCTET_SCALING_PER_TENSOR));
  EXPECT_FALSE(table.declares_scaling(OCTET_SCALING_PER_TENSOR | OCTET_SCALING_MXFP8_1X32));
  EXPECT_FALSE(table.declares_scaling(0));
  EXPECT_TRUE(table.declares_layout(OCTET_GEMM_LAYOUT_TN));
  EXPECT_FALSE(table.declares_layout(OCTET_GEMM_LAYOUT_NN));
  EXPECT_EQ(table.dtypes_in(plugin::kHighPrecisionDtypes), uint32_t(OCTET_DTYPE_BIT(OCTET_DTYPE_FP32)));

  octet_backend_caps full{};
  full.struct_size = sizeof full;
  EXPECT_EQ(table.answer(host_, &full), OCTET_STATUS_SUCCESS);
  EXPECT_STREQ(full.device, "sample");
  EXPECT_EQ(full.alignment, 128u);
  EXPECT_EQ(full.fp8_gemm_output, 1);
  EXPECT_EQ(full.struct_size, sizeof full);

  // A plugin ABI 1.2 host: its caps end before reserved_padding.
  octet_backend_caps older;
  std::memset(&older, 0x5A, sizeof older);
  older.struct_size = offsetof(octet_backend_caps, reserved_padding);
  EXPECT_EQ(table.answer(host_, &older), OCTET_STATUS_SUCCESS);
  EXPECT_EQ(older.fused_cast_transpose, 1);
  int32_t untouched;
  std::memset(&untouched, 0x5A, sizeof untouched);
  EXPECT_EQ(older.fp8_gemm_output, untouched);
  EXPECT_TRUE(reported_.empty());

  EXPECT_EQ(table.answer(host_, nullptr), OCTET_STATUS_INVALID_ARGUMENT);
  ASSERT_EQ(reported_.size(), 1u);
  EXPECT_EQ(reported_[0].message, "initialize: caps must not be NULL");
}

}  // namespace
