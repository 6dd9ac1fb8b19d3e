// plugin_files_in: which files of a folder are plugin candidates, in which order.
#include "plugin_loader.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <filesystem>
#include <string>
#include <vector>

#include "test_dirs.hpp"

namespace {

using octet::core::plugin_files_in;
namespace fs = std::filesystem;

TEST(PluginFilesIn, KeepsOnlyPluginNamedRegularFilesSortedByName) {
  octet::test::TempDir dir;
  // Created out of order, so that sorting is observable.
  dir.write_file("liboctet_backend_zeta.so");
  dir.write_file("liboctet_backend_alpha.so");
  dir.write_file("liboctet_backend_Beta.so");  // 'B' < 'a' in byte order
  dir.write_file("liboctet_backend_.so");       // no name
  dir.write_file("liboctet_backend_gamma.so.1");
  dir.write_file("liboctet_backend_delta.so.txt");
  dir.write_file("libother.so");
  dir.write_file("octet_backend_eta.so");
  dir.write_file("README");
  dir.make_dir("liboctet_backend_dir.so");  // a folder with a plugin's name
  fs::create_symlink(dir.path() / "liboctet_backend_alpha.so",
                     dir.path() / "liboctet_backend_linked.so");
  fs::create_symlink(dir.path() / "missing", dir.path() / "liboctet_backend_dangling.so");

  const std::string d = dir.path().string();
  const std::vector<std::string> expected = {
      d + "/liboctet_backend_Beta.so",
      d + "/liboctet_backend_alpha.so",
      d + "/liboctet_backend_linked.so",
      d + "/liboctet_backend_zeta.so",
  };
  EXPECT_EQ(plugin_files_in(d), expected);
}

TEST(PluginFilesIn, BrokenPluginsFolderListsEveryBrokenPlugin) {
  const std::string d = OCTET_TEST_BROKEN_DIR;
  std::vector<std::string> expected;
  for (const char* kind : {"alignment", "badname", "calleralignment", "devicenomemory", "halfmemory", "hugealignment",
                           "hugetable", "initfails", "memorykind", "noentry", "nosymbol", "notalib", "nulltable",
                           "refuses", "smalltable", "wrongmajor"}) {
    expected.push_back(d + "/liboctet_backend_" + kind + ".so");
  }
  EXPECT_EQ(plugin_files_in(d), expected);
}

TEST(PluginFilesIn, MissingOrEmptyFolderGivesNothing) {
  octet::test::TempDir dir;
  EXPECT_TRUE(plugin_files_in(dir.path().string()).empty());
  EXPECT_TRUE(plugin_files_in((dir.path() / "nope").string()).empty());
  EXPECT_TRUE(plugin_files_in(dir.write_file("liboctet_backend_file.so").string()).empty());
}

}  // namespace

namespace {

using octet::core::SkippedFile;

// docs/abi.md, "Discovery of plugins": every entry named like a plugin that
// is not a regular file is reported with what it is.
TEST(PluginFilesIn, ReportsEverySkippedEntryWithItsReason) {
  octet::test::TempDir dir;
  dir.write_file("liboctet_backend_real.so");
  dir.make_dir("liboctet_backend_folder.so");
  ASSERT_EQ(mkfifo((dir.path() / "liboctet_backend_fifo.so").c_str(), 0600), 0);
  fs::create_symlink(dir.path() / "missing", dir.path() / "liboctet_backend_dangling.so");
  fs::create_symlink("/dev/zero", dir.path() / "liboctet_backend_zero.so");
  const std::string d = dir.path().string();
  std::vector<SkippedFile> skipped;
  EXPECT_EQ(octet::core::plugin_files_in(d, &skipped), std::vector<std::string>{d + "/liboctet_backend_real.so"});
  ASSERT_EQ(skipped.size(), 4u);
  const std::pair<const char*, const char*> expected[] = {
      {"dangling", "skipped: a dangling symbolic link (to " },
      {"fifo", "skipped: a FIFO (named pipe), not a regular file"},
      {"folder", "skipped: a directory, not a regular file"},
      {"zero", "skipped: a symbolic link to a character device, not a regular file"},
  };
  for (size_t i = 0; i < 4; ++i) {
    const std::string path = d + "/liboctet_backend_" + expected[i].first + ".so";
    EXPECT_EQ(skipped[i].path, path);
    EXPECT_NE(skipped[i].reason.find("plugin " + path + ": " + expected[i].second), std::string::npos)
        << skipped[i].reason;
  }
}

TEST(UnsafePermissions, NamesGroupOrWorldWritableFilesAndFolders) {
  octet::test::TempDir dir;
  const fs::path file = dir.write_file("liboctet_backend_open.so");
  EXPECT_EQ(octet::core::unsafe_permissions(file.string()), "");
  fs::permissions(file, fs::perms::owner_read | fs::perms::owner_write | fs::perms::others_write);
  EXPECT_EQ(octet::core::unsafe_permissions(file.string()),
            "the file " + file.string() + " is world-writable (mode 0602)");
  fs::permissions(file, fs::perms::owner_read | fs::perms::owner_write);
  fs::permissions(dir.path(), fs::perms::owner_all | fs::perms::group_write | fs::perms::group_exec);
  EXPECT_EQ(octet::core::unsafe_permissions(file.string()),
            "its folder " + dir.path().string() + " is group-writable (mode 0730)");
  fs::permissions(dir.path(), fs::perms::owner_all);
}

TEST(EscapeControl, ControlCharactersAndBackslashAreEscaped) {
  EXPECT_EQ(octet::core::escape_control("a\nb\tc\\d\x01\x7f" "e"), "a\\nb\\tc\\\\d\\x01\\x7f" "e");
}

}  // namespace
