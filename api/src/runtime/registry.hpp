// The process-wide list of backends: the embedded reference first, then
// plugins in discovery order. Entries are never removed, so every string and
// table handed out stays valid for the life of the process, and a plugin
// stays loaded while any handle of it can exist.
#pragma once

#include <octet/octet_backend.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "runtime/plugin_loader.hpp"

namespace octet::core {

// The largest alignment a backend may declare (bytes).
inline constexpr uint64_t kMaxBackendAlignment = uint64_t(1) << 16;

// How many bytes of an octet_backend_api / octet_backend_caps plugin ABI
// 1.<minor> defines (a minor newer than the host's: the host's sizes).
size_t table_size_for_minor(uint32_t minor);
size_t caps_size_for_minor(uint32_t minor);

struct Backend {
  std::string name;
  std::string version;
  std::string device;
  std::string path;
  // The host's copy of the plugin's table, holding only what the plugin's
  // abi_minor defines within its struct_size (the rest zero); api points here.
  octet_backend_api table{};
  const octet_backend_api* api = nullptr;
  std::shared_ptr<void> library;  // null for the embedded reference
  octet_backend_caps caps{};      // caps.device points into `device`
  bool available = false;
  std::string unavailable_reason;
  uint32_t features = 0;          // OCTET_FEATURE_*
  // Plugin ABI 1.3 scale_from_amax, delayed_scaling_update and amax_record
  // (with convert, the exact FP32 copy): quantizer scaling state may live in
  // this backend's memory (quantizer.cpp). Internal: not a users' feature.
  bool device_scaling = false;
};

struct BackendFailure {
  std::string path;
  std::string reason;
  PluginFailureKind kind = PluginFailureKind::kUnexpected;
};

class Registry {
 public:
  static Registry& instance();

  std::vector<std::shared_ptr<const Backend>> backends();
  std::vector<std::shared_ptr<const BackendFailure>> failures();
  // nullptr when no backend has that name.
  std::shared_ptr<const Backend> find(const std::string& name);
  // The backend "auto" means: see octet_context_options.
  std::shared_ptr<const Backend> best_available();
  // Loads an explicit path; throws Failure with the reason.
  void load_explicit(const std::string& path);

 private:
  Registry() = default;
  void discover_locked();
  void record_failure_locked(const std::string& path, const PluginFailure& failure);
  void register_reference_locked();
  void discover_directories_locked();
  // Loads and registers one file; records and returns the failure, if any.
  std::optional<PluginFailure> load_file_locked(const std::string& file);
  // Validates and initializes; returns the failure, std::nullopt on success.
  std::optional<PluginFailure> add_locked(const octet_backend_api* api, std::shared_ptr<void> library,
                                          const std::string& path);

  std::mutex mutex_;
  bool discovered_ = false;
  std::vector<std::shared_ptr<const Backend>> backends_;
  std::vector<std::shared_ptr<const BackendFailure>> failures_;
};

// The status octet_backend_load returns for a plugin that failed this way.
octet_status load_failure_status(const PluginFailure& failure);

// Calls one backend entry point and turns a non-zero status into a Failure
// carrying the message the backend reported through the host callback.
void check_backend_status(const Backend& backend, const char* entry, int32_t status);
// Clears the message slot the host callback fills; call before an entry point.
void clear_backend_message();

}  // namespace octet::core
