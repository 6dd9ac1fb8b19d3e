// Plugin discovery and loading (docs/abi.md, "Discovery of plugins").
#include "runtime/plugin_loader.hpp"

#include <octet/octet.h>

#include <boost/dll/shared_library.hpp>

#include <dlfcn.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <new>
#include <sstream>
#include <system_error>
#include <type_traits>
#include <utility>

#ifndef OCTET_BACKENDS_SUBDIR
#error "OCTET_BACKENDS_SUBDIR must be defined (the build sets it to octet/backends)"
#endif

namespace octet::core {
namespace {

namespace fs = std::filesystem;

constexpr const char* kFilePrefix = "liboctet_backend_";
constexpr const char* kFileSuffix = ".so";
constexpr const char* kPathVariable = "OCTET_BACKEND_PATH";
constexpr const char* kPermissionsVariable = "OCTET_PLUGIN_PERMISSIONS";


// Every field the host reads before deciding anything must lie inside the
// plugin's table: up to and including context_destroy (the last required
// entry). Later fields are read only when struct_size covers them.
constexpr std::size_t kRequiredTableSize =
    offsetof(octet_backend_api, context_destroy) + sizeof(octet_backend_api::context_destroy);
constexpr std::size_t kVersionFieldsSize =
    offsetof(octet_backend_api, abi_minor) + sizeof(octet_backend_api::abi_minor);

bool has_affixes(const std::string& name, const std::string& prefix,
                 const std::string& suffix) {
  return name.size() > prefix.size() + suffix.size() &&
         name.compare(0, prefix.size(), prefix) == 0 &&
         name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Absolute, lexically normal, without a trailing separator, so that the
// paths reported for plugins are stable and comparable.
fs::path tidy_absolute(const fs::path& path) {
  std::error_code ec;
  fs::path result = fs::absolute(path, ec);
  if (ec) result = path;
  result = result.lexically_normal();
  if (!result.has_filename() && result.has_parent_path() && result != result.root_path()) {
    result = result.parent_path();
  }
  return result;
}

template <typename... Parts>
std::string sentence(const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  return out.str();
}

// Why a path named like a plugin is not a regular file (following symbolic
// links), or "" when it is one.
std::string not_a_regular_file(const fs::path& path) {
  std::error_code ec;
  const fs::file_status link = fs::symlink_status(path, ec);
  if (ec) return sentence("cannot be examined (", ec.message(), ")");
  const bool symlink = fs::is_symlink(link);
  const fs::file_status target = fs::status(path, ec);
  if (symlink && (ec || !fs::exists(target))) {
    std::error_code read_ec;
    const fs::path to = fs::read_symlink(path, read_ec);
    return sentence("a dangling symbolic link (to ", read_ec ? std::string("?") : to.string(), ")");
  }
  if (ec) return sentence("cannot be examined (", ec.message(), ")");
  const char* what = nullptr;
  switch (target.type()) {
    case fs::file_type::regular: return "";
    case fs::file_type::directory: what = "a directory"; break;
    case fs::file_type::fifo: what = "a FIFO (named pipe)"; break;
    case fs::file_type::character: what = "a character device"; break;
    case fs::file_type::block: what = "a block device"; break;
    case fs::file_type::socket: what = "a socket"; break;
    default: what = "not a regular file"; break;
  }
  return symlink ? sentence("a symbolic link to ", what) : std::string(what);
}

// "strict" (or any value but "warn"): refuse plugins in writable places;
// unset or "warn": load them with a warning on stderr.
bool refuse_unsafe_permissions() {
  const char* value = secure_getenv(kPermissionsVariable);
  return value != nullptr && *value != '\0' && std::string(value) != "warn";
}

std::string writable_by_others(const fs::path& path, bool directory) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return "";
  const bool group = (st.st_mode & S_IWGRP) != 0, world = (st.st_mode & S_IWOTH) != 0;
  if (!group && !world) return "";
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", unsigned(st.st_mode & 07777));
  return sentence(directory ? "its folder " : "the file ", path.string(), " is ",
                  world ? "world" : "group", "-writable (mode ", mode, ")");
}

// A failure detected here: its kind and the problem, without the path.
struct Problem {
  PluginFailureKind kind;
  std::string text;
};

// Validates the table a plugin answered with; std::nullopt means valid.
std::optional<Problem> table_problem(const octet_backend_api* api) {
  using Kind = PluginFailureKind;
  if (api == nullptr) {
    return Problem{Kind::kBadTable, "its entry octet_backend_entry returned success but a NULL table"};
  }
  // Too small to say which ABI it follows: a corrupt table, not a mismatch.
  if (api->struct_size < kVersionFieldsSize) {
    return Problem{Kind::kBadTable,
                   sentence("its table struct_size ", api->struct_size,
                            " is too small to hold the plugin ABI version (at least ", kVersionFieldsSize, " bytes)")};
  }
  if (api->abi_major != OCTET_PLUGIN_ABI_MAJOR) {
    return Problem{Kind::kAbiMismatch,
                   sentence("its table abi_major ", api->abi_major,
                            " differs from the host's plugin ABI major ", OCTET_PLUGIN_ABI_MAJOR)};
  }
  if (api->struct_size < kRequiredTableSize) {
    return Problem{Kind::kBadTable,
                   sentence("its table struct_size ", api->struct_size, " is too small: at least ",
                            kRequiredTableSize,
                            " bytes are required (up to and including context_destroy)")};
  }
  if (api->initialize == nullptr) {
    return Problem{Kind::kBadTable, "its table is missing the required entry initialize"};
  }
  if (api->context_create == nullptr) {
    return Problem{Kind::kBadTable, "its table is missing the required entry context_create"};
  }
  if (api->context_destroy == nullptr) {
    return Problem{Kind::kBadTable, "its table is missing the required entry context_destroy"};
  }
  if (!is_valid_backend_name(api->name)) {
    return Problem{Kind::kBadTable, sentence("its table has an invalid backend name \"",
                                             api->name == nullptr ? "(null)" : api->name,
                                             "\" (must match [a-z0-9_]+)")};
  }
  if (api->version == nullptr) return Problem{Kind::kBadTable, "its table has a NULL version string"};
  return std::nullopt;
}

std::optional<LoadedPlugin> load_or_explain(const std::string& requested, PluginFailure* failure) {
  using Kind = PluginFailureKind;
  auto fail = [&](const std::string& path, Kind kind, const std::string& problem) {
    if (failure != nullptr) *failure = PluginFailure{kind, sentence("plugin ", path, ": ", problem)};
    return std::nullopt;
  };
  if (requested.empty()) return fail("\"\"", Kind::kInvalidPath, "the path is empty");

  const fs::path path = tidy_absolute(requested);
  const std::string shown = path.string();
  std::error_code ec;
  if (!fs::exists(path, ec)) return fail(shown, Kind::kNotFound, "no such file");
  if (const std::string why = not_a_regular_file(path); !why.empty())
    return fail(shown, Kind::kNotAFile, sentence("not a regular file: ", why));
  if (const std::string unsafe = unsafe_permissions(shown); !unsafe.empty()) {
    if (refuse_unsafe_permissions())
      return fail(shown, Kind::kUnsafePermissions,
                  sentence(unsafe, ": refused (", kPermissionsVariable, " is set; others could replace the code)"));
    std::fprintf(stderr,
                 "octet: warning: plugin %s: %s; whoever can write there can run code in this process "
                 "(%s=strict refuses such plugins)\n",
                 escape_control(shown).c_str(), escape_control(unsafe).c_str(), kPermissionsVariable);
  }

  auto library = std::make_shared<boost::dll::shared_library>();
  boost::dll::fs::error_code load_error;
  // rtld_local: a plugin's symbols never satisfy another plugin's references.
  // rtld_now: unresolved symbols fail here, not in the middle of a kernel.
  library->load(path, boost::dll::load_mode::rtld_local | boost::dll::load_mode::rtld_now,
                load_error);
  if (load_error || !library->is_loaded()) {
    const char* dl_message = dlerror();
    return fail(shown, Kind::kNotALibrary,
                sentence("not a loadable shared library (",
                         dl_message != nullptr ? dl_message : load_error.message(), ")"));
  }
  if (!library->has(OCTET_BACKEND_ENTRY_SYMBOL)) {
    return fail(shown, Kind::kNoEntrySymbol, "symbol " OCTET_BACKEND_ENTRY_SYMBOL " missing");
  }
  auto& entry = library->get<std::remove_pointer_t<octet_backend_entry_fn>>(
      OCTET_BACKEND_ENTRY_SYMBOL);

  const octet_backend_api* api = nullptr;
  int32_t status = OCTET_STATUS_INTERNAL;
  try {
    status = entry(OCTET_PLUGIN_ABI_MAJOR, OCTET_PLUGIN_ABI_MINOR, &api);
  } catch (...) {
    return fail(shown, Kind::kEntryThrew, "its entry octet_backend_entry threw a C++ exception");
  }
  if (status != OCTET_STATUS_SUCCESS) {
    // The entry's only decision is whether it speaks the host's ABI, so any
    // refusal is one (octet_backend.h asks for OCTET_STATUS_ABI_MISMATCH).
    return fail(shown, Kind::kAbiRefused,
                sentence("refused host plugin ABI ", OCTET_PLUGIN_ABI_MAJOR, ".",
                         OCTET_PLUGIN_ABI_MINOR, " (", octet_status_name(status), ")"));
  }
  if (auto problem = table_problem(api)) return fail(shown, problem->kind, problem->text);

  return LoadedPlugin{std::shared_ptr<void>(std::move(library)), api, shown};
}

// The file mapped at `address`, from the kernel's table of this process's
// mappings: always an absolute path, unlike dladdr's, which repeats the path
// the loader was given (relative for a program started as ./prog, or for a
// library found through a relative LD_LIBRARY_PATH entry).
fs::path mapped_file_containing(const void* address) {
  std::ifstream maps("/proc/self/maps");
  const auto target = reinterpret_cast<std::uintptr_t>(address);
  std::string line;
  while (std::getline(maps, line)) {
    std::istringstream fields(line);
    std::string range, perms, offset, device, inode, file;
    if (!(fields >> range >> perms >> offset >> device >> inode)) continue;
    std::getline(fields >> std::ws, file);
    const std::size_t dash = range.find('-');
    if (dash == std::string::npos || file.empty() || file[0] != '/') continue;
    const std::uintptr_t begin = std::stoull(range.substr(0, dash), nullptr, 16);
    const std::uintptr_t end = std::stoull(range.substr(dash + 1), nullptr, 16);
    if (target >= begin && target < end) return file;
  }
  return {};
}

fs::path find_directory_of_core_library() {
  // Any function of this library gives its file: liboctet in production, the
  // test executable when the loader is compiled into a test.
  const void* self = reinterpret_cast<const void*>(&plugin_search_directories);
  fs::path file;
  Dl_info info{};
  if (dladdr(self, &info) != 0 && info.dli_fname != nullptr && info.dli_fname[0] == '/') {
    file = info.dli_fname;
  } else {
    file = mapped_file_containing(self);
  }
  if (file.empty()) return {};
  std::error_code ec;
  fs::path resolved = fs::canonical(file, ec);  // a symlinked liboctet: its real folder
  return (ec ? tidy_absolute(file) : resolved).parent_path();
}

// The library does not move while it is loaded: look it up once.
const fs::path& directory_of_core_library() {
  static const fs::path dir = [] {
    try {
      return find_directory_of_core_library();
    } catch (...) {
      return fs::path();
    }
  }();
  return dir;
}

void append_if_new_directory(std::vector<std::string>* out, const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return;
  for (const std::string& known : *out) {
    std::error_code same_ec;
    if (fs::equivalent(known, dir, same_ec)) return;
  }
  out->push_back(dir.string());
}

}  // namespace

bool is_valid_backend_name(const char* name) {
  if (name == nullptr || *name == '\0') return false;
  for (const char* c = name; *c != '\0'; ++c) {
    const bool ok = (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '_';
    if (!ok) return false;
  }
  return true;
}

const char* plugin_failure_kind_name(PluginFailureKind kind) {
  switch (kind) {
    case PluginFailureKind::kInvalidPath: return "invalid_path";
    case PluginFailureKind::kNotFound: return "not_found";
    case PluginFailureKind::kNotAFile: return "not_a_file";
    case PluginFailureKind::kNotALibrary: return "not_a_library";
    case PluginFailureKind::kNoEntrySymbol: return "no_entry_symbol";
    case PluginFailureKind::kEntryThrew: return "entry_threw";
    case PluginFailureKind::kAbiRefused: return "abi_refused";
    case PluginFailureKind::kAbiMismatch: return "abi_mismatch";
    case PluginFailureKind::kBadTable: return "bad_table";
    case PluginFailureKind::kDuplicateName: return "duplicate_name";
    case PluginFailureKind::kInitializeFailed: return "initialize_failed";
    case PluginFailureKind::kBadCapabilities: return "bad_capabilities";
    case PluginFailureKind::kUnsafePermissions: return "unsafe_permissions";
    case PluginFailureKind::kOutOfMemory: return "out_of_memory";
    case PluginFailureKind::kUnexpected: return "unexpected";
  }
  return "unknown";
}

std::optional<LoadedPlugin> load_plugin(const std::string& path, PluginFailure* failure) {
  // Filling *failure may itself run out of memory: then the kind alone stays.
  auto record = [&](PluginFailureKind kind, const char* what) {
    if (failure == nullptr) return;
    failure->kind = kind;
    try {
      failure->reason = sentence("plugin ", path, ": could not be loaded (", what, ")");
    } catch (...) {
    }
  };
  try {
    return load_or_explain(path, failure);
  } catch (const std::bad_alloc& e) {
    record(PluginFailureKind::kOutOfMemory, e.what());
  } catch (const std::exception& e) {
    record(PluginFailureKind::kUnexpected, e.what());
  } catch (...) {
    record(PluginFailureKind::kUnexpected, "unknown error");
  }
  return std::nullopt;
}

std::vector<std::string> plugin_search_directories() {
  std::vector<std::string> dirs;
  try {
    if (const char* value = secure_getenv(kPathVariable)) {
      std::string list(value);
      std::size_t start = 0;
      while (start <= list.size()) {
        std::size_t end = list.find(':', start);
        if (end == std::string::npos) end = list.size();
        const std::string entry = list.substr(start, end - start);
        // An empty entry means nothing here: unlike PATH it never means ".".
        if (!entry.empty()) append_if_new_directory(&dirs, tidy_absolute(entry));
        start = end + 1;
      }
    }
    const fs::path core_dir = directory_of_core_library();
    if (!core_dir.empty()) append_if_new_directory(&dirs, core_dir / OCTET_BACKENDS_SUBDIR);
  } catch (...) {
    // Discovery is best effort: whatever was found before the failure stays.
  }
  return dirs;
}

std::string escape_control(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c < 0x20 || c == 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", unsigned(c));
      out += hex;
    } else {
      out += char(c);
    }
  }
  return out;
}

std::string unsafe_permissions(const std::string& path) {
  try {
    std::vector<std::string> found;
    std::error_code ec;
    const fs::path entry = tidy_absolute(path);
    const fs::path real = fs::canonical(entry, ec);
    const fs::path file = ec ? entry : real;
    if (std::string w = writable_by_others(file, false); !w.empty()) found.push_back(w);
    // The folder holding the name, and the one holding the real file.
    for (const fs::path& dir : {entry.parent_path(), file.parent_path()}) {
      std::string w = writable_by_others(dir, true);
      if (!w.empty() && std::find(found.begin(), found.end(), w) == found.end()) found.push_back(w);
    }
    std::string out;
    for (const std::string& w : found) out += (out.empty() ? "" : "; ") + w;
    return out;
  } catch (...) {
    return "";
  }
}

std::vector<std::string> plugin_files_in(const std::string& dir, std::vector<SkippedFile>* skipped) {
  std::vector<std::pair<std::string, std::string>> found;  // (file name, full path)
  std::vector<std::pair<std::string, SkippedFile>> odd;    // (file name, why it is skipped)
  try {
    std::error_code ec;
    fs::directory_iterator it(dir, ec);
    const fs::directory_iterator end;
    for (; !ec && it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      if (!has_affixes(name, kFilePrefix, kFileSuffix)) continue;
      const std::string full = (fs::path(dir) / name).string();
      const std::string why = not_a_regular_file(full);  // follows symlinks
      if (why.empty()) {
        found.emplace_back(name, full);
      } else if (skipped != nullptr) {
        odd.emplace_back(name, SkippedFile{full, sentence("plugin ", full, ": skipped: ", why,
                                                          ", not a regular file")});
      }
    }
    std::sort(found.begin(), found.end());
    std::sort(odd.begin(), odd.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    if (skipped != nullptr)
      for (auto& entry : odd) skipped->push_back(std::move(entry.second));
  } catch (...) {
    found.clear();
  }
  std::vector<std::string> paths;
  paths.reserve(found.size());
  for (auto& entry : found) paths.push_back(std::move(entry.second));
  return paths;
}

}  // namespace octet::core
