// Discovery through octet.h only, with OCTET_BACKEND_PATH naming the broken
// plugins' folder and the folder of the template (set by ctest): the
// template registers with its capabilities, every broken plugin is reported
// with its path and reason, and the reference stays available.
#include <octet/octet_backend.h>  // only for OCTET_PLUGIN_ABI_MAJOR
#include <octet/octet.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

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
  EXPECT_EQ(info->fp8_gemm_layouts, 0u);  // no gemm entry, no layout
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
      {"memorykind", "unknown memory kind 99"},
      {"alignment", "alignment 48"},
      {"hugealignment", "alignment 9223372036854775808, which is not a power of two from 1 to 65536"},
      {"calleralignment", "caller_alignment 128, which is not 0 or a power of two no larger than alignment (64)"},
      {"devicenomemory", "a device-memory backend must provide mem_alloc"},
  };
  for (const auto& [kind, phrase] : expected) {
    const std::string path = std::string(OCTET_TEST_BROKEN_DIR) + "/liboctet_backend_" + kind + ".so";
    const auto found = recorded.find(path);
    ASSERT_NE(found, recorded.end()) << "no failure recorded for " << path;
    EXPECT_THAT(found->second, HasSubstr(phrase)) << path;
    EXPECT_FALSE(find_backend(kind).has_value()) << kind << " must not be registered";
  }
}

// docs/abi.md: the host reads a plugin's table and capabilities only as far
// as its abi_minor defines them, whatever struct_size claims. "hugetable"
// says struct_size SIZE_MAX with minor 0, fills every later entry with a
// trap that aborts, and sets the 1.3 capability fp8_gemm_output and the 1.5
// one caller_alignment (1, where a 1.0 plugin's wrapped memory needs its
// alignment).
TEST(PluginDiscovery, TableLargerThanItsMinorIsReadOnlyUpToIt) {
  const auto info = find_backend("hugetable");
  ASSERT_TRUE(info.has_value()) << "hugetable must load as the 1.0 plugin it declares";
  EXPECT_EQ(info->features, 0u) << "no 1.0 kernel is provided, and later entries are not the plugin's";
  EXPECT_EQ(info->caller_alignment, info->alignment) << "caller_alignment is not a 1.0 plugin's field";
  octet_context_options options{};
  options.struct_size = sizeof options;
  options.backend = "hugetable";
  octet_context* context = nullptr;
  ASSERT_EQ(octet_context_create(&options, &context), OCTET_STATUS_SUCCESS) << octet_last_error_message();
  octet::Tensor a = octet::Tensor::create(context, OCTET_DTYPE_FP32, {4, 4});
  octet::Tensor d = octet::Tensor::create(context, OCTET_DTYPE_FP32, {4, 4});
  // No gemm in its table: UNSUPPORTED, and nothing past minor 0 is called.
  EXPECT_EQ(octet_gemm(context, a.get(), a.get(), d.get(), nullptr), OCTET_STATUS_UNSUPPORTED);
  a = octet::Tensor();  // both destroyed before the context
  d = octet::Tensor();
  octet_context_destroy(context);
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
      {"notalib", OCTET_STATUS_INVALID_ARGUMENT},     // not a shared library
      {"nosymbol", OCTET_STATUS_NOT_FOUND},           // no entry symbol
      {"refuses", OCTET_STATUS_ABI_MISMATCH},         // the entry refuses the host ABI
      {"wrongmajor", OCTET_STATUS_ABI_MISMATCH},      // the table has another major
      {"smalltable", OCTET_STATUS_INVALID_ARGUMENT},  // bad table
      {"nulltable", OCTET_STATUS_INVALID_ARGUMENT},
      {"noentry", OCTET_STATUS_INVALID_ARGUMENT},
      {"badname", OCTET_STATUS_INVALID_ARGUMENT},
      {"halfmemory", OCTET_STATUS_INVALID_ARGUMENT},  // fails the checks after initialize
      {"memorykind", OCTET_STATUS_INVALID_ARGUMENT},
      {"alignment", OCTET_STATUS_INVALID_ARGUMENT},
      {"hugealignment", OCTET_STATUS_INVALID_ARGUMENT},
      {"calleralignment", OCTET_STATUS_INVALID_ARGUMENT},
      {"devicenomemory", OCTET_STATUS_INVALID_ARGUMENT},
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

// Sets OCTET_TEST_PLUGIN_LOG (read by the broken plugins) to a fresh file for
// the scope; lines() gives what the plugins wrote there.
class PluginLog {
 public:
  PluginLog()
      : path_(std::filesystem::temp_directory_path() /
              ("octet-plugin-log-" + std::to_string(getpid()) + ".txt")) {
    std::error_code ec;
    std::filesystem::remove(path_, ec);
    setenv("OCTET_TEST_PLUGIN_LOG", path_.c_str(), 1);
  }
  ~PluginLog() {
    unsetenv("OCTET_TEST_PLUGIN_LOG");
    std::error_code ec;
    std::filesystem::remove(path_, ec);
  }
  PluginLog(const PluginLog&) = delete;
  PluginLog& operator=(const PluginLog&) = delete;

  std::vector<std::string> lines() const {
    std::vector<std::string> out;
    std::ifstream in(path_);
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
  }

 private:
  std::filesystem::path path_;
};

// A plugin whose initialize() succeeded and which the host then refuses is
// shut down before it is unloaded; one whose initialize() failed, or which
// never reached it, is not.
TEST(PluginDiscovery, RefusedAfterInitializeIsShutDownBeforeUnloading) {
  size_t count = 0;
  ASSERT_EQ(octet_backend_count(&count), OCTET_STATUS_SUCCESS);  // discovery is done before the log opens
  using Events = std::vector<std::string>;
  const std::map<std::string, Events> expected = {
      {"halfmemory", {"initialize", "shutdown", "unload"}},
      {"memorykind", {"initialize", "shutdown", "unload"}},
      {"alignment", {"initialize", "shutdown", "unload"}},
      {"hugealignment", {"initialize", "shutdown", "unload"}},
      {"calleralignment", {"initialize", "shutdown", "unload"}},
      {"devicenomemory", {"initialize", "shutdown", "unload"}},
      {"initfails", {"initialize", "unload"}},  // a failed initialize cleans up itself
      {"noentry", {"unload"}},                  // refused before initialize
      {"smalltable", {"unload"}},
  };
  for (const auto& [kind, events] : expected) {
    const PluginLog log;
    const std::string path = broken_plugin(kind);
    EXPECT_NE(octet_backend_load(path.c_str()), OCTET_STATUS_SUCCESS) << path;
    Events want;
    for (const std::string& event : events) want.push_back(kind + " " + event);
    EXPECT_EQ(log.lines(), want) << path;
  }
}

}  // namespace
