#include "runtime/registry.hpp"

#include <octet_reference/reference_backend.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <utility>

#include "runtime/error.hpp"
#include "runtime/plugin_loader.hpp"

namespace octet::core {
namespace {

// The message a backend reported for the call in progress on this thread.
thread_local std::string backend_message;

void host_report_error(void* host_data, int32_t status, const char* message) {
  (void)host_data;
  (void)status;
  try {
    backend_message = message != nullptr ? message : "";
  } catch (...) {
  }
}

const octet_host_services& host_services() {
  static const octet_host_services services = {sizeof(octet_host_services), OCTET_PLUGIN_ABI_MAJOR,
                                               OCTET_PLUGIN_ABI_MINOR, host_report_error, nullptr};
  return services;
}

}  // namespace

size_t table_size_for_minor(uint32_t minor) {
  switch (minor) {
    case 0: return offsetof(octet_backend_api, quantize_with_statistics);
    case 1: return offsetof(octet_backend_api, norm_forward);
    case 2: return offsetof(octet_backend_api, scale_from_amax);
    case 3:
      return offsetof(octet_backend_api, fp4_quantize);
    case 4:
      return offsetof(octet_backend_api, grouped_gemm);
    default: return sizeof(octet_backend_api);
  }
}

size_t caps_size_for_minor(uint32_t minor) {
  if (minor < 3) return offsetof(octet_backend_caps, reserved_padding);
  return minor < 5 ? offsetof(octet_backend_caps, caller_alignment) : sizeof(octet_backend_caps);
}

namespace {

bool is_power_of_two(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

// Optional entries count only when they lie inside the plugin's table.
template <typename Field>
bool has_entry(const octet_backend_api* api, Field octet_backend_api::*field, size_t offset) {
  return api->struct_size >= offset + sizeof(Field) && api->*field != nullptr;
}

uint32_t features_of(const octet_backend_api* api, const octet_backend_caps& caps) {
  uint32_t f = 0;
#define OCTET_HAS(entry) has_entry(api, &octet_backend_api::entry, offsetof(octet_backend_api, entry))
  if (OCTET_HAS(convert)) f |= OCTET_FEATURE_CONVERT;
  if (OCTET_HAS(amax)) f |= OCTET_FEATURE_AMAX;
  if (OCTET_HAS(quantize)) f |= OCTET_FEATURE_QUANTIZE;
  if (OCTET_HAS(quantize) && caps.fused_cast_transpose) f |= OCTET_FEATURE_FUSED_CAST_TRANSPOSE;
  if (OCTET_HAS(transpose)) f |= OCTET_FEATURE_TRANSPOSE;
  if (OCTET_HAS(dequantize)) f |= OCTET_FEATURE_DEQUANTIZE;
  if (OCTET_HAS(gemm)) {
    f |= OCTET_FEATURE_GEMM_HIGH_PRECISION;
    if (caps.dtypes & (OCTET_DTYPE_BIT(OCTET_DTYPE_E4M3) | OCTET_DTYPE_BIT(OCTET_DTYPE_E5M2) |
                       OCTET_DTYPE_BIT(OCTET_DTYPE_E4M3FNUZ) | OCTET_DTYPE_BIT(OCTET_DTYPE_E5M2FNUZ)))
      f |= OCTET_FEATURE_GEMM_FP8;
  }
  // Plugin ABI 1.1 entries: has_entry reads them only inside the plugin's
  // table, so a 1.0 plugin simply lacks these features.
  if (OCTET_HAS(quantize_with_statistics)) f |= OCTET_FEATURE_QUANTIZE_STATISTICS;
  if (OCTET_HAS(block_quantize) && OCTET_HAS(block_dequantize)) f |= OCTET_FEATURE_BLOCK_QUANTIZE;
  if (OCTET_HAS(block_gemm)) f |= OCTET_FEATURE_BLOCK_GEMM;
  // Plugin ABI 1.2 entries (layers), read the same way.
  if (OCTET_HAS(norm_forward) && OCTET_HAS(norm_backward)) f |= OCTET_FEATURE_NORM;
  if (OCTET_HAS(activation_forward) && OCTET_HAS(activation_backward)) f |= OCTET_FEATURE_ACTIVATION;
  if (OCTET_HAS(bias_gradient)) f |= OCTET_FEATURE_BIAS_GRADIENT;
  if (OCTET_HAS(accumulate)) f |= OCTET_FEATURE_ACCUMULATE;
  // Plugin ABI 1.3: a caps field (zero in a shorter caps struct).
  if (OCTET_HAS(gemm) && caps.fp8_gemm_output) f |= OCTET_FEATURE_GEMM_FP8_OUTPUT;
  // Plugin ABI 1.4 (FP4): fp4_quantize honours stochastic rounding and the
  // Hadamard transform by contract.
  if (OCTET_HAS(fp4_quantize) && OCTET_HAS(fp4_dequantize))
    f |= OCTET_FEATURE_FP4_QUANTIZE | OCTET_FEATURE_STOCHASTIC_ROUNDING | OCTET_FEATURE_HADAMARD_TRANSFORM;
  if (OCTET_HAS(fp4_gemm)) f |= OCTET_FEATURE_FP4_GEMM;
  // Plugin ABI 1.5.
  if (OCTET_HAS(grouped_gemm)) f |= OCTET_FEATURE_GROUPED_GEMM;
#undef OCTET_HAS
  return f;
}

// All three plugin ABI 1.3 scaling entries, and convert (the state's scale
// pair is copied into a tensor with an FP32 -> FP32 convert, exact by
// contract): without every one of them the state stays on the host.
bool has_device_scaling(const octet_backend_api* api) {
#define OCTET_HAS(entry) has_entry(api, &octet_backend_api::entry, offsetof(octet_backend_api, entry))
  return OCTET_HAS(scale_from_amax) && OCTET_HAS(delayed_scaling_update) && OCTET_HAS(amax_record) &&
         OCTET_HAS(convert);
#undef OCTET_HAS
}

// Calls the plugin's shutdown() when it goes out of scope, unless the backend
// was kept: a plugin whose initialize() completed may hold resources (a
// driver, threads) that must be released before its library is unloaded, on
// every path that drops it (a refused capability, an exception).
class ShutdownUnlessKept {
 public:
  explicit ShutdownUnlessKept(const octet_backend_api* api) : api_(api) {}
  ~ShutdownUnlessKept() {
    if (api_ == nullptr || api_->shutdown == nullptr) return;
    try {
      api_->shutdown();
    } catch (...) {
      // A C entry should not throw; if a C++ plugin does, dropping it goes on.
    }
  }
  ShutdownUnlessKept(const ShutdownUnlessKept&) = delete;
  ShutdownUnlessKept& operator=(const ShutdownUnlessKept&) = delete;

  void keep() { api_ = nullptr; }

 private:
  const octet_backend_api* api_;
};

}  // namespace

octet_status load_failure_status(const PluginFailure& failure) {
  switch (failure.kind) {
    case PluginFailureKind::kNotFound:
    case PluginFailureKind::kNoEntrySymbol:  // "no such ... entry"
      return OCTET_STATUS_NOT_FOUND;
    case PluginFailureKind::kAbiRefused:
    case PluginFailureKind::kAbiMismatch:
      return OCTET_STATUS_ABI_MISMATCH;
    // The file the caller named breaks a documented rule of the plugin ABI.
    case PluginFailureKind::kInvalidPath:
    case PluginFailureKind::kNotAFile:
    case PluginFailureKind::kNotALibrary:
    case PluginFailureKind::kBadTable:
    case PluginFailureKind::kDuplicateName:
    case PluginFailureKind::kBadCapabilities:
    case PluginFailureKind::kUnsafePermissions:
      return OCTET_STATUS_INVALID_ARGUMENT;
    case PluginFailureKind::kEntryThrew:
      return OCTET_STATUS_BACKEND_ERROR;
    case PluginFailureKind::kInitializeFailed:
      // The plugin's own word, as for every other entry (check_backend_status):
      // an initialize that ran out of memory says so.
      return failure.plugin_status > OCTET_STATUS_SUCCESS && failure.plugin_status <= OCTET_STATUS_INTERNAL
                 ? failure.plugin_status
                 : OCTET_STATUS_BACKEND_ERROR;
    case PluginFailureKind::kOutOfMemory:
      return OCTET_STATUS_OUT_OF_MEMORY;
    case PluginFailureKind::kUnexpected:
      return OCTET_STATUS_INTERNAL;
  }
  return OCTET_STATUS_INTERNAL;
}

void clear_backend_message() { backend_message.clear(); }

void check_backend_status(const Backend& backend, const char* entry, int32_t status) {
  if (status == OCTET_STATUS_SUCCESS) return;
  std::string message = backend_message.empty()
                            ? concat("failed with ", octet_status_name(status), " and no message")
                            : backend_message;
  octet_status reported = (status > 0 && status <= OCTET_STATUS_INTERNAL) ? status
                                                                          : OCTET_STATUS_BACKEND_ERROR;
  fail(reported, "backend '", backend.name, "' ", entry, ": ", message);
}

Registry& Registry::instance() {
  // Never destroyed: tensors released during static destruction must still
  // find their backend loaded.
  static Registry* registry = new Registry();
  return *registry;
}

std::optional<PluginFailure> Registry::add_locked(const octet_backend_api* api, std::shared_ptr<void> library,
                                                  const std::string& path) {
  using Kind = PluginFailureKind;
  auto failure = [](Kind kind, std::string reason) {
    return std::optional<PluginFailure>(PluginFailure{kind, std::move(reason)});
  };
  if (api->initialize == nullptr) return failure(Kind::kBadTable, "table has no initialize entry");
  if (!is_valid_backend_name(api->name)) return failure(Kind::kBadTable, "backend name must match [a-z0-9_]+");
  for (const auto& existing : backends_)
    if (existing->name == api->name)
      return failure(Kind::kDuplicateName, concat("a backend named '", api->name,
                                                  "' is already registered from ", existing->path));

  auto backend = std::make_shared<Backend>();
  // From here on the host reads its own copy: never past what the plugin's
  // minor defines, whatever its struct_size says.
  const size_t table_bytes = std::min({api->struct_size, table_size_for_minor(api->abi_minor),
                                       sizeof(octet_backend_api)});
  std::memcpy(&backend->table, api, table_bytes);
  backend->table.struct_size = table_bytes;
  api = &backend->table;
  backend->name = api->name;
  backend->version = api->version != nullptr ? api->version : "";
  backend->path = path;
  backend->api = api;
  backend->library = std::move(library);

  octet_backend_caps caps{};
  caps.struct_size = sizeof(caps);
  clear_backend_message();
  int32_t status = api->initialize(&host_services(), &caps);
  // Fields the plugin's minor does not define are not its to set.
  const size_t caps_bytes = caps_size_for_minor(api->abi_minor);
  std::memset(reinterpret_cast<char*>(&caps) + caps_bytes, 0, sizeof(caps) - caps_bytes);
  caps.struct_size = sizeof(caps);
  // Declared after `backend`, which holds the library: destroyed first, so
  // shutdown() runs while the plugin is still loaded. A failed initialize()
  // has cleaned up after itself; an unavailable backend stays registered.
  std::optional<ShutdownUnlessKept> initialized;
  if (status == OCTET_STATUS_SUCCESS || status == OCTET_STATUS_UNAVAILABLE) initialized.emplace(api);
  backend->device = caps.device != nullptr ? caps.device : "";
  caps.device = nullptr;
  backend->caps = caps;
  if (status == OCTET_STATUS_UNAVAILABLE) {
    backend->available = false;
    backend->unavailable_reason = backend_message.empty() ? "no usable device" : backend_message;
  } else if (status != OCTET_STATUS_SUCCESS) {
    auto failed = failure(Kind::kInitializeFailed,
                          concat("initialize failed with ", octet_status_name(status), ": ",
                                 backend_message.empty() ? "(no message)" : backend_message));
    failed->plugin_status = status;
    return failed;
  } else {
    backend->available = true;
    if (caps.memory_kind != OCTET_MEMORY_HOST && caps.memory_kind != OCTET_MEMORY_DEVICE)
      return failure(Kind::kBadCapabilities,
                     concat("capabilities declare an unknown memory kind ", caps.memory_kind));
    if (!is_power_of_two(caps.alignment) || caps.alignment > kMaxBackendAlignment)
      return failure(Kind::kBadCapabilities, concat("capabilities declare alignment ", caps.alignment,
                                                    ", which is not a power of two from 1 to ",
                                                    kMaxBackendAlignment, " bytes"));
    if (caps.caller_alignment != 0 &&
        (!is_power_of_two(caps.caller_alignment) || caps.caller_alignment > caps.alignment))
      return failure(Kind::kBadCapabilities,
                     concat("capabilities declare caller_alignment ", caps.caller_alignment,
                            ", which is not 0 or a power of two no larger than alignment (", caps.alignment, ")"));
    // Memory from a plugin's mem_alloc must go back through its mem_free,
    // and host memory the core allocated must not reach the plugin's.
    if ((api->mem_alloc == nullptr) != (api->mem_free == nullptr))
      return failure(Kind::kBadCapabilities,
                     "mem_alloc and mem_free must be provided together (or both left NULL)");
    bool has_memory = api->mem_alloc && api->mem_free && api->copy_from_host && api->copy_to_host;
    if (caps.memory_kind == OCTET_MEMORY_DEVICE && !has_memory)
      return failure(Kind::kBadCapabilities,
                     "a device-memory backend must provide mem_alloc, mem_free, copy_from_host and "
                     "copy_to_host");
  }
  backend->caps.device = backend->device.c_str();
  backend->features = features_of(api, backend->caps);
  backend->device_scaling = has_device_scaling(api);
  backends_.push_back(std::move(backend));
  if (initialized) initialized->keep();
  return std::nullopt;
}

void Registry::register_reference_locked() {
  const octet_backend_api* reference = nullptr;
  int32_t status = octet_reference_backend_entry(OCTET_PLUGIN_ABI_MAJOR, OCTET_PLUGIN_ABI_MINOR, &reference);
  std::optional<PluginFailure> failure =
      status == OCTET_STATUS_SUCCESS && reference != nullptr
          ? add_locked(reference, nullptr, "(embedded)")
          : std::optional<PluginFailure>(
                PluginFailure{PluginFailureKind::kAbiRefused, "the embedded reference refused the host's plugin ABI"});
  if (failure) record_failure_locked("(embedded)", *failure);
}

std::optional<PluginFailure> Registry::load_file_locked(const std::string& file) {
  std::optional<PluginFailure> failure = PluginFailure{};
  auto plugin = load_plugin(file, &*failure);
  if (plugin) failure = add_locked(plugin->api, plugin->library, plugin->path);
  if (failure) record_failure_locked(file, *failure);
  return failure;
}

void Registry::discover_directories_locked() {
  for (const std::string& dir : plugin_search_directories()) {
    std::vector<SkippedFile> skipped;
    for (const std::string& file : plugin_files_in(dir, &skipped)) load_file_locked(file);
    for (const SkippedFile& s : skipped) record_failure_locked(s.path, PluginFailure{PluginFailureKind::kNotAFile, s.reason});
  }
}

void Registry::discover_locked() {
  if (discovered_) return;
  discovered_ = true;
  register_reference_locked();
  discover_directories_locked();
}

std::vector<std::shared_ptr<const Backend>> Registry::backends() {
  std::lock_guard<std::mutex> lock(mutex_);
  discover_locked();
  return backends_;
}

void Registry::record_failure_locked(const std::string& path, const PluginFailure& failure) {
  failures_.push_back(std::make_shared<const BackendFailure>(BackendFailure{path, failure.reason, failure.kind}));
}

std::vector<std::shared_ptr<const BackendFailure>> Registry::failures() {
  std::lock_guard<std::mutex> lock(mutex_);
  discover_locked();
  return failures_;
}

std::shared_ptr<const Backend> Registry::find(const std::string& name) {
  std::lock_guard<std::mutex> lock(mutex_);
  discover_locked();
  for (const auto& b : backends_)
    if (b->name == name) return b;
  return nullptr;
}

std::shared_ptr<const Backend> Registry::best_available() {
  std::lock_guard<std::mutex> lock(mutex_);
  discover_locked();
  const uint32_t complete = OCTET_FEATURE_CONVERT | OCTET_FEATURE_AMAX | OCTET_FEATURE_QUANTIZE |
                            OCTET_FEATURE_DEQUANTIZE | OCTET_FEATURE_GEMM_FP8 |
                            OCTET_FEATURE_GEMM_HIGH_PRECISION;
  auto complete_plugin = [&](const Backend& b, int32_t kind) {
    return b.available && b.library != nullptr && b.caps.memory_kind == kind &&
           (b.features & complete) == complete;
  };
  for (const auto& b : backends_)
    if (complete_plugin(*b, OCTET_MEMORY_DEVICE)) return b;
  for (const auto& b : backends_)
    if (complete_plugin(*b, OCTET_MEMORY_HOST)) return b;
  return backends_.empty() ? nullptr : backends_.front();
}

void Registry::load_explicit(const std::string& path) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::error_code ec;
  std::string absolute = std::filesystem::absolute(path, ec).string();
  if (ec) absolute = path;
  for (const auto& b : backends_)
    if (b->path == absolute) return;  // already registered from this very file
  bool first_use = !discovered_;
  if (first_use) {
    // Explicit paths come first in discovery order.
    discovered_ = true;
    register_reference_locked();
  }
  std::optional<PluginFailure> failure = load_file_locked(absolute);
  if (first_use) discover_directories_locked();
  if (failure) fail(load_failure_status(*failure), "cannot load backend plugin ", absolute, ": ", failure->reason);
}

}  // namespace octet::core
