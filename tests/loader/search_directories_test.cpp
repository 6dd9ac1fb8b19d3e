// plugin_search_directories: OCTET_BACKEND_PATH first, in its order, then the
// backends folder beside the binary holding the loader; never the cwd.
#include "plugin_loader.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "test_dirs.hpp"

namespace {

using octet::core::plugin_search_directories;
namespace fs = std::filesystem;

// The loader is compiled into this executable, so "beside liboctet" means
// beside the executable here; the build creates that folder for the test.
std::string default_dir() {
  return (fs::canonical("/proc/self/exe").parent_path() / OCTET_BACKENDS_SUBDIR).string();
}

std::vector<std::string> with_default(std::vector<std::string> dirs) {
  dirs.push_back(default_dir());
  return dirs;
}

TEST(SearchDirectories, WithoutVariableOnlyTheDefaultFolder) {
  ASSERT_TRUE(fs::is_directory(default_dir())) << "the build should create " << default_dir();
  octet::test::ScopedEnv env("OCTET_BACKEND_PATH", std::nullopt);
  EXPECT_EQ(plugin_search_directories(), with_default({}));
}

TEST(SearchDirectories, VariableEntriesComeFirstInTheirOrder) {
  octet::test::TempDir tmp;
  const std::string a = tmp.make_dir("a").string();
  const std::string b = tmp.make_dir("b").string();
  const std::string c = tmp.make_dir("c").string();
  octet::test::ScopedEnv env("OCTET_BACKEND_PATH", c + ":" + a + ":" + b);
  EXPECT_EQ(plugin_search_directories(), with_default({c, a, b}));
}

TEST(SearchDirectories, EmptyEntriesAndMissingFoldersAreSkipped) {
  octet::test::TempDir tmp;
  const std::string a = tmp.make_dir("a").string();
  const std::string b = tmp.make_dir("b").string();
  const std::string file = tmp.write_file("not_a_dir").string();
  octet::test::ScopedEnv env("OCTET_BACKEND_PATH",
                             "::" + a + ":" + (tmp.path() / "missing").string() + "::" + file +
                                 ":" + b + ":");
  EXPECT_EQ(plugin_search_directories(), with_default({a, b}));
}

TEST(SearchDirectories, NeverTheCurrentDirectoryImplicitly) {
  octet::test::TempDir tmp;
  tmp.write_file("liboctet_backend_trap.so");
  octet::test::ScopedCwd cwd(tmp.path());
  const std::string here = tmp.path().string();
  for (const char* value : {"", ":", "::", ":::"}) {
    octet::test::ScopedEnv env("OCTET_BACKEND_PATH", std::string(value));
    const auto dirs = plugin_search_directories();
    EXPECT_EQ(std::count(dirs.begin(), dirs.end(), here), 0) << "OCTET_BACKEND_PATH='" << value << "'";
    EXPECT_EQ(dirs, with_default({})) << "OCTET_BACKEND_PATH='" << value << "'";
  }
}

TEST(SearchDirectories, RelativeEntriesBecomeAbsolute) {
  octet::test::TempDir tmp;
  const std::string sub = tmp.make_dir("plugins").string();
  octet::test::ScopedCwd cwd(tmp.path());
  // "." is the current directory only because it is written out explicitly.
  octet::test::ScopedEnv env("OCTET_BACKEND_PATH", "plugins:./plugins/../plugins/:.");
  EXPECT_EQ(plugin_search_directories(), with_default({sub, tmp.path().string()}));
}

TEST(SearchDirectories, AFolderListedTwiceIsSearchedOnce) {
  octet::test::TempDir tmp;
  const std::string a = tmp.make_dir("a").string();
  const std::string b = tmp.make_dir("b").string();
  octet::test::ScopedEnv env("OCTET_BACKEND_PATH",
                             a + ":" + b + ":" + a + "/:" + default_dir());
  EXPECT_EQ(plugin_search_directories(), with_default({a, b}));
}

TEST(SearchDirectories, DefaultFolderListedInTheVariableKeepsItsEarlierPlace) {
  octet::test::TempDir tmp;
  const std::string a = tmp.make_dir("a").string();
  octet::test::ScopedEnv env("OCTET_BACKEND_PATH", default_dir() + ":" + a);
  EXPECT_EQ(plugin_search_directories(), (std::vector<std::string>{default_dir(), a}));
}

}  // namespace
