// Discovery through octet.h only, with OCTET_BACKEND_PATH naming the broken
// plugins' folder and the folder of the template (set by ctest): the
// template registers with its capabilities, every broken plugin is reported
// with its path and reason, and the reference stays available.
#include <octet/octet.h>
#include <octet/octet_backend.h>  // only for OCTET_PLUGIN_ABI_MAJOR

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <string>

namespace {

using ::testing::HasSubstr;

std::optional<octet_backend_info> find_backend(const std::string& name) {
  size_t count = 0;
  EXPECT_EQ(octet_backend_count(&count), OCTET_STATUS_SUCCESS) << octet_last_error_message();
  for (size_t i = 0; i < count; ++i) {
    octet_backend_info info{};
    info.struct_size = sizeof info;
    EXPECT_EQ(octet_backend_get_info(i, &info), OCTET_STATUS_SUCCESS);
    if (info.name != nullptr && name == info.name) return info;
  }
  return std::nullopt;
}

// path -> reason of every recorded failure.
std::map<std::string, std::string> failures() {
  size_t count = 0;
  EXPECT_EQ(octet_backend_failure_count(&count), OCTET_STATUS_SUCCESS);
  std::map<std::string, std::string> out;
  for (size_t i = 0; i < count; ++i) {
    octet_backend_failure failure{};
    failure.struct_size = sizeof failure;
    EXPECT_EQ(octet_backend_get_failure(i, &failure), OCTET_STATUS_SUCCESS);
    out[failure.path] = failure.reason;
  }
  return out;
}

TEST(PluginDiscovery, EnvironmentPointsAtTheTestFolders) {
  const char* value = std::getenv("OCTET_BACKEND_PATH");
  ASSERT_NE(value, nullptr) << "run through ctest, which sets OCTET_BACKEND_PATH";
  EXPECT_THAT(std::string(value), HasSubstr(OCTET_TEST_BROKEN_DIR));
}

TEST(PluginDiscovery, TemplateIsRegisteredWithItsCapabilities) {
  const auto info = find_backend("template");
  ASSERT_TRUE(info.has_value()) << "template not registered";
  EXPECT_STREQ(info->path, OCTET_TEST_TEMPLATE_PLUGIN);
  EXPECT_STREQ(info->device, "host CPU (template)");
  EXPECT_STREQ(info->version, "0.1.0");
  EXPECT_EQ(info->available, 1);
  EXPECT_EQ(info->memory_kind, OCTET_MEMORY_HOST);
  EXPECT_EQ(info->abi_major, static_cast<uint32_t>(OCTET_PLUGIN_ABI_MAJOR));
  EXPECT_EQ(info->dtypes, OCTET_DTYPE_BIT(OCTET_DTYPE_FP32) | OCTET_DTYPE_BIT(OCTET_DTYPE_BF16) |
                              OCTET_DTYPE_BIT(OCTET_DTYPE_FP16) | OCTET_DTYPE_BIT(OCTET_DTYPE_E4M3) |
                              OCTET_DTYPE_BIT(OCTET_DTYPE_E5M2));
  EXPECT_EQ(info->scaling_modes, static_cast<uint32_t>(OCTET_SCALING_PER_TENSOR));
  EXPECT_EQ(info->native_columnwise, 0);
  EXPECT_EQ(info->fp8_gemm_layouts, static_cast<uint32_t>(OCTET_GEMM_LAYOUT_TN));
  EXPECT_EQ(info->alignment, 64u);
  // Exactly the entries the template fills in.
  EXPECT_EQ(info->features, static_cast<uint32_t>(OCTET_FEATURE_CONVERT | OCTET_FEATURE_AMAX |
                                                  OCTET_FEATURE_QUANTIZE |
                                                  OCTET_FEATURE_DEQUANTIZE));
}

TEST(PluginDiscovery, EveryBrokenPluginIsReportedWithPathAndReason) {
  const auto recorded = failures();
  // kind -> a phrase of the rule it broke
  const std::map<std::string, std::string> expected = {
      {"notalib", "not a loadable shared library"},
      {"nosymbol", "octet_backend_entry missing"},
      {"refuses", "refused host plugin ABI"},
      {"wrongmajor", "abi_major"},
      {"smalltable", "too small"},
      {"nulltable", "NULL table"},
      {"noentry", "context_destroy"},
      {"badname", "[a-z0-9_]+"},
      {"halfmemory", "mem_alloc and mem_free"},
      {"initfails", "initialize failed with OCTET_STATUS_OUT_OF_MEMORY"},
  };
  for (const auto& [kind, phrase] : expected) {
    const std::string path = std::string(OCTET_TEST_BROKEN_DIR) + "/liboctet_backend_" + kind + ".so";
    const auto found = recorded.find(path);
    ASSERT_NE(found, recorded.end()) << "no failure recorded for " << path;
    EXPECT_THAT(found->second, HasSubstr(phrase)) << path;
    EXPECT_FALSE(find_backend(kind).has_value()) << kind << " must not be registered";
  }
}

TEST(PluginDiscovery, ReferenceStaysFirstAndAvailable) {
  octet_backend_info info{};
  info.struct_size = sizeof info;
  ASSERT_EQ(octet_backend_get_info(0, &info), OCTET_STATUS_SUCCESS);
  EXPECT_STREQ(info.name, "reference");
  EXPECT_EQ(info.available, 1);

  octet_context_options options{};
  options.struct_size = sizeof options;
  options.backend = "reference";
  octet_context* context = nullptr;
  ASSERT_EQ(octet_context_create(&options, &context), OCTET_STATUS_SUCCESS)
      << octet_last_error_message();
  octet_context_destroy(context);
}

TEST(PluginDiscovery, ExplicitLoadOfABrokenPluginFailsCleanly) {
  const std::string path = std::string(OCTET_TEST_BROKEN_DIR) + "/liboctet_backend_refuses.so";
  EXPECT_EQ(octet_backend_load(path.c_str()), OCTET_STATUS_ABI_MISMATCH);
  EXPECT_THAT(octet_last_error_message(), HasSubstr(path));
}

std::string broken_plugin(const std::string& kind) {
  return std::string(OCTET_TEST_BROKEN_DIR) + "/liboctet_backend_" + kind + ".so";
}

// octet_backend_load's status says what kind of failure it was, decided where
// the failure was found: one broken plugin of each kind.
TEST(PluginDiscovery, ExplicitLoadStatusFollowsTheKindOfFailure) {
  const std::map<std::string, octet_status> expected = {
      {"notalib", OCTET_STATUS_INVALID_ARGUMENT},   // not a shared library
      {"nosymbol", OCTET_STATUS_NOT_FOUND},         // no entry symbol
      {"refuses", OCTET_STATUS_ABI_MISMATCH},       // the entry refuses the host ABI
      {"wrongmajor", OCTET_STATUS_ABI_MISMATCH},    // the table has another major
      {"smalltable", OCTET_STATUS_INVALID_ARGUMENT},  // bad table
      {"nulltable", OCTET_STATUS_INVALID_ARGUMENT},
      {"noentry", OCTET_STATUS_INVALID_ARGUMENT},
      {"badname", OCTET_STATUS_INVALID_ARGUMENT},
      {"halfmemory", OCTET_STATUS_INVALID_ARGUMENT},  // fails the checks after initialize
      // initialize's own status, although its message says "ABI".
      {"initfails", OCTET_STATUS_OUT_OF_MEMORY},
  };
  for (const auto& [kind, status] : expected) {
    const std::string path = broken_plugin(kind);
    EXPECT_STREQ(octet_status_name(octet_backend_load(path.c_str())), octet_status_name(status)) << path;
    EXPECT_THAT(octet_last_error_message(), HasSubstr(path));
  }
  const std::string missing = std::string(OCTET_TEST_BROKEN_DIR) + "/ABI/liboctet_backend_none.so";
  EXPECT_EQ(octet_backend_load(missing.c_str()), OCTET_STATUS_NOT_FOUND);
}

// The status never comes from the wording: a text file in a folder named
// "ABI" is not a library, whatever its path says.
TEST(PluginDiscovery, ExplicitLoadStatusDoesNotDependOnThePath) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("octet-ABI-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const fs::path copy = dir / "liboctet_backend_notalib.so";
  fs::copy_file(broken_plugin("notalib"), copy, fs::copy_options::overwrite_existing);
  const octet_status status = octet_backend_load(copy.c_str());
  const std::string message = octet_last_error_message();
  std::error_code ec;
  fs::remove_all(dir, ec);
  EXPECT_EQ(status, OCTET_STATUS_INVALID_ARGUMENT) << message;
  EXPECT_THAT(message, HasSubstr("not a loadable shared library"));
}

}  // namespace
