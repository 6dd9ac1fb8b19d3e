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

// What went wrong with a plugin, decided where the failure is detected so
// that callers (octet_backend_load's status, tests) never have to parse the
// reason sentence, which names user paths and dlerror() text.
enum class PluginFailureKind {
  kInvalidPath,          // empty path
  kNotFound,             // no such file
  kNotAFile,             // exists but is not a regular file (a directory, ...)
  kNotALibrary,          // dlopen refused it
  kNoEntrySymbol,        // a library without octet_backend_entry
  kEntryThrew,           // octet_backend_entry let a C++ exception escape
  kAbiRefused,           // octet_backend_entry refused the host's plugin ABI
  kAbiMismatch,          // the table answers with another abi_major
  kBadTable,             // NULL table, too small, missing entries, bad name...
  kDuplicateName,        // (registry) a backend of that name is registered
  kInitializeFailed,     // (registry) initialize() returned a failure
  kBadCapabilities,      // (registry) caps or memory entries break the rules
  kUnsafePermissions,    // group- or world-writable file or folder, refused by policy
  kOutOfMemory,          // the host ran out of memory while loading
  kUnexpected,           // anything else (an exception from the loader)
};

// Symbolic name ("not_found", ...) for messages and test output.
const char* plugin_failure_kind_name(PluginFailureKind kind);

struct PluginFailure {
  PluginFailureKind kind = PluginFailureKind::kUnexpected;
  std::string reason;  // a sentence naming the path and its problem
  // What the plugin itself returned, for kInitializeFailed (the status
  // octet_backend_load passes on); OCTET_STATUS_SUCCESS otherwise.
  int32_t plugin_status = OCTET_STATUS_SUCCESS;
};

// Loads one file and validates its table (ABI major, struct_size, required
// entries, name). On failure returns std::nullopt and sets *failure (when
// non-null) to the kind of failure and a sentence naming the path and its
// problem. Never throws. Does not call initialize().
std::optional<LoadedPlugin> load_plugin(const std::string& path, PluginFailure* failure);

// Directories to search, in order: each entry of OCTET_BACKEND_PATH
// (':'-separated, empty entries skipped, relative entries made absolute),
// then <dir of liboctet>/OCTET_BACKENDS_SUBDIR. Directories that do not
// exist are skipped; a directory listed twice is kept at its first place.
// Never throws.
std::vector<std::string> plugin_search_directories();

// A directory entry named like a plugin that is not a candidate.
struct SkippedFile {
  std::string path;
  std::string reason;  // "plugin <path>: skipped: a FIFO (named pipe), not a regular file"
};

// Every regular file (or symlink to one) named liboctet_backend_<name>.so
// in dir, as dir/file, sorted by file name. Entries with a plugin's name
// that are not regular files (a directory, FIFO, socket, device, dangling
// symbolic link) are appended to *skipped (when non-null) with the reason,
// in name order. Never throws; an unreadable directory gives an empty list.
std::vector<std::string> plugin_files_in(const std::string& dir, std::vector<SkippedFile>* skipped = nullptr);

// Escapes control characters (and backslash) as \n, \t, \xNN, so that a
// file name the library prints (its stderr warning) cannot forge lines.
std::string escape_control(const std::string& text);

// The group- or world-writable places of a plugin file: the file (followed
// through symlinks) and the folders holding it. Empty when there is none.
std::string unsafe_permissions(const std::string& path);

// A backend name: [a-z0-9_]+ (checked for plugins and the embedded reference).
bool is_valid_backend_name(const char* name);

}  // namespace octet::core
