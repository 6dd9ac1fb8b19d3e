// Run-time loading of backend plugins: finds liboctet_backend_<name>.so
// files and validates the table a plugin answers with. Knows nothing of the
// registry: it loads and checks, the registry decides what to keep and calls
// initialize(). Boost stays out of this header on purpose (the registry and
// the tests include it).
#pragma once

#include <octet/octet_backend.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace octet::core {

struct LoadedPlugin {
  std::shared_ptr<void> library;  // keeps the .so loaded while a copy lives
  const octet_backend_api* api;   // valid while `library` is alive
  std::string path;               // absolute path the file was loaded from
};

struct PluginFailure {
  std::string path;
  std::string reason;
};

// Loads one file and validates its table (ABI major, struct_size, required
// entries, name). On failure returns std::nullopt and sets *reason (when
// non-null) to a sentence naming the path and its problem. Never throws.
// Does not call initialize().
std::optional<LoadedPlugin> load_plugin(const std::string& path, std::string* reason);

// Directories to search, in order: each entry of OCTET_BACKEND_PATH
// (':'-separated, empty entries skipped, relative entries made absolute),
// then <dir of liboctet>/OCTET_BACKENDS_SUBDIR. Directories that do not
// exist are skipped; a directory listed twice is kept at its first place.
// Never throws.
std::vector<std::string> plugin_search_directories();

// Every regular file (or symlink to one) named liboctet_backend_<name>.so
// in dir, as dir/file, sorted by file name. Never throws; an unreadable
// directory gives an empty list.
std::vector<std::string> plugin_files_in(const std::string& dir);

}  // namespace octet::core
