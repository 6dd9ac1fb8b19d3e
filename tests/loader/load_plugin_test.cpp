// load_plugin on a valid plugin (the template) and on one plugin per defect:
// each failure must name the file and the rule it broke, and nothing crashes.
#include "plugin_loader.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <dlfcn.h>

#include <filesystem>
#include <string>

#include "test_dirs.hpp"

namespace {

using octet::core::load_plugin;
using octet::core::plugin_failure_kind_name;
using octet::core::PluginFailure;
using Kind = octet::core::PluginFailureKind;
using ::testing::HasSubstr;

std::string broken(const std::string& kind) {
  return std::string(OCTET_TEST_BROKEN_DIR) + "/liboctet_backend_" + kind + ".so";
}

// Loads a path expected to fail with `kind`; returns the reason.
std::string failure_reason(const std::string& path, Kind kind) {
  PluginFailure failure;
  const auto plugin = load_plugin(path, &failure);
  EXPECT_FALSE(plugin.has_value()) << path;
  EXPECT_STREQ(plugin_failure_kind_name(failure.kind), plugin_failure_kind_name(kind)) << path;
  EXPECT_THAT(failure.reason, HasSubstr(path)) << "the reason must name the file";
  EXPECT_EQ(failure.plugin_status, OCTET_STATUS_SUCCESS) << "only initialize() sets it";
  return failure.reason;
}

std::string host_abi() {
  return std::to_string(OCTET_PLUGIN_ABI_MAJOR) + "." + std::to_string(OCTET_PLUGIN_ABI_MINOR);
}

bool is_loaded_in_process(const std::string& path) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (handle == nullptr) return false;
  dlclose(handle);
  return true;
}

TEST(LoadPlugin, TemplateLoadsWithItsTable) {
  PluginFailure failure{Kind::kUnexpected, "untouched"};
  const auto plugin = load_plugin(OCTET_TEST_TEMPLATE_PLUGIN, &failure);
  ASSERT_TRUE(plugin.has_value()) << failure.reason;
  EXPECT_EQ(failure.reason, "untouched") << "success leaves the failure alone";
  EXPECT_EQ(plugin->path, OCTET_TEST_TEMPLATE_PLUGIN);
  ASSERT_NE(plugin->api, nullptr);
  EXPECT_STREQ(plugin->api->name, "template");
  EXPECT_EQ(plugin->api->abi_major, static_cast<uint32_t>(OCTET_PLUGIN_ABI_MAJOR));
  EXPECT_GE(plugin->api->struct_size, sizeof(octet_backend_api));
  EXPECT_NE(plugin->api->initialize, nullptr);
  EXPECT_NE(plugin->api->quantize, nullptr);
  EXPECT_EQ(plugin->api->gemm, nullptr);
  EXPECT_EQ(plugin->api->transpose, nullptr);
}

TEST(LoadPlugin, LibraryStaysLoadedExactlyWhileAHandleLives) {
  const std::string path = OCTET_TEST_TEMPLATE_PLUGIN;
  ASSERT_FALSE(is_loaded_in_process(path)) << "another test leaked the template";
  auto plugin = load_plugin(path, nullptr);
  ASSERT_TRUE(plugin.has_value());
  auto copy = plugin->library;
  plugin.reset();
  EXPECT_TRUE(is_loaded_in_process(path)) << "a copy of the handle must keep it loaded";
  copy.reset();
  EXPECT_FALSE(is_loaded_in_process(path));
}

TEST(LoadPlugin, RelativePathIsMadeAbsolute) {
  const std::filesystem::path file(OCTET_TEST_TEMPLATE_PLUGIN);
  octet::test::ScopedCwd cwd(file.parent_path());
  PluginFailure failure;
  const auto plugin = load_plugin(file.filename().string(), &failure);
  ASSERT_TRUE(plugin.has_value()) << failure.reason;
  EXPECT_EQ(plugin->path, file.string());
}

TEST(LoadPlugin, TextFileIsNotALibrary) {
  EXPECT_THAT(failure_reason(broken("notalib"), Kind::kNotALibrary),
              HasSubstr("not a loadable shared library"));
}

TEST(LoadPlugin, MissingEntrySymbol) {
  EXPECT_THAT(failure_reason(broken("nosymbol"), Kind::kNoEntrySymbol),
              HasSubstr("symbol octet_backend_entry missing"));
}

TEST(LoadPlugin, PluginRefusingTheHostAbi) {
  EXPECT_THAT(failure_reason(broken("refuses"), Kind::kAbiRefused),
              HasSubstr("refused host plugin ABI " + host_abi() + " (OCTET_STATUS_ABI_MISMATCH)"));
}

TEST(LoadPlugin, TableWithAnotherAbiMajor) {
  const std::string reason = failure_reason(broken("wrongmajor"), Kind::kAbiMismatch);
  EXPECT_THAT(reason, HasSubstr("abi_major " + std::to_string(OCTET_PLUGIN_ABI_MAJOR + 1)));
  EXPECT_THAT(reason, HasSubstr("plugin ABI major " + std::to_string(OCTET_PLUGIN_ABI_MAJOR)));
}

TEST(LoadPlugin, TableTooSmall) {
  const std::string reason = failure_reason(broken("smalltable"), Kind::kBadTable);
  EXPECT_THAT(reason, HasSubstr("struct_size " + std::to_string(offsetof(octet_backend_api, context_create))));
  EXPECT_THAT(reason, HasSubstr("too small"));
}

TEST(LoadPlugin, NullTable) {
  EXPECT_THAT(failure_reason(broken("nulltable"), Kind::kBadTable), HasSubstr("NULL table"));
}

TEST(LoadPlugin, MissingRequiredEntry) {
  EXPECT_THAT(failure_reason(broken("noentry"), Kind::kBadTable),
              HasSubstr("missing the required entry context_destroy"));
}

TEST(LoadPlugin, InvalidBackendName) {
  const std::string reason = failure_reason(broken("badname"), Kind::kBadTable);
  EXPECT_THAT(reason, HasSubstr("\"Bad-Name\""));
  EXPECT_THAT(reason, HasSubstr("[a-z0-9_]+"));
}

TEST(LoadPlugin, NonexistentFile) {
  const std::string path = broken("does_not_exist");
  EXPECT_THAT(failure_reason(path, Kind::kNotFound), HasSubstr("no such file"));
}

TEST(LoadPlugin, DirectoryIsNotAFile) {
  EXPECT_THAT(failure_reason(OCTET_TEST_BROKEN_DIR, Kind::kNotAFile),
              HasSubstr("not a regular file"));
}

TEST(LoadPlugin, EmptyPathIsRefusedNotTreatedAsTheProgram) {
  PluginFailure failure;
  EXPECT_FALSE(load_plugin("", &failure).has_value());
  EXPECT_EQ(failure.kind, Kind::kInvalidPath);
  EXPECT_THAT(failure.reason, HasSubstr("empty"));
}

// The kind comes from where the failure was found, never from the wording:
// a folder named "ABI" holding a text file is still "not a library".
TEST(LoadPlugin, KindDoesNotDependOnThePath) {
  const octet::test::TempDir dir;
  const std::filesystem::path copy = dir.make_dir("ABI") / "liboctet_backend_notalib.so";
  std::filesystem::copy_file(broken("notalib"), copy);
  EXPECT_THAT(failure_reason(copy.string(), Kind::kNotALibrary), HasSubstr("ABI"));
}

TEST(LoadPlugin, NullFailureIsAllowed) {
  EXPECT_FALSE(load_plugin(broken("notalib"), nullptr).has_value());
  EXPECT_FALSE(load_plugin(broken("refuses"), nullptr).has_value());
}

}  // namespace

namespace {

// A plugin in a world-writable folder: loaded with a warning on stderr by
// default; refused with OCTET_PLUGIN_PERMISSIONS=strict (docs/abi.md).
TEST(LoadPlugin, WritableFolderWarnsOrIsRefusedByPolicy) {
  octet::test::TempDir dir;
  const std::filesystem::path copy = dir.path() / "liboctet_backend_template.so";
  std::filesystem::copy_file(OCTET_TEST_TEMPLATE_PLUGIN, copy);
  std::filesystem::permissions(dir.path(), std::filesystem::perms::all);
  {
    octet::test::ScopedEnv policy("OCTET_PLUGIN_PERMISSIONS", std::nullopt);
    octet::core::PluginFailure failure;
    testing::internal::CaptureStderr();
    const auto plugin = octet::core::load_plugin(copy.string(), &failure);
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_TRUE(plugin.has_value()) << failure.reason;
    EXPECT_NE(err.find("octet: warning: plugin " + copy.string() + ": its folder " + dir.path().string() +
                       " is world-writable (mode 0777)"),
              std::string::npos)
        << err;
  }
  {
    octet::test::ScopedEnv policy("OCTET_PLUGIN_PERMISSIONS", std::string("strict"));
    octet::core::PluginFailure failure;
    EXPECT_FALSE(octet::core::load_plugin(copy.string(), &failure).has_value());
    EXPECT_EQ(failure.kind, octet::core::PluginFailureKind::kUnsafePermissions);
    EXPECT_NE(failure.reason.find("is world-writable (mode 0777): refused"), std::string::npos) << failure.reason;
  }
  std::filesystem::permissions(dir.path(), std::filesystem::perms::owner_all);
}

}  // namespace
