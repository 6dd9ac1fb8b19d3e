// plugin_files_in: which files of a folder are plugin candidates, in which order.
#include "plugin_loader.hpp"

#include <gtest/gtest.h>

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
  for (const char* kind : {"alignment", "badname", "devicenomemory", "halfmemory", "hugealignment",
                           "hugetable", "initfails",
                           "memorykind", "noentry", "nosymbol", "notalib", "nulltable", "refuses",
                           "smalltable", "wrongmajor"}) {
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
