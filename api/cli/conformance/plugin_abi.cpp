// Section (a) of `octet conformance`: the plugin ABI's rules (docs/abi.md,
// "Versions" and "Discovery of plugins"; octet_backend.h), checked by a host
// of this tool's own on the plugin file. Each host runs in a child process:
// a plugin's initialize() is called once per process, and a plugin that
// crashes takes only the child with it (the check it was in fails).
#include <dlfcn.h>
#include <octet/octet_backend.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstddef>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "conformance/child_process.hpp"
#include "conformance/sections.hpp"

namespace octet_cli {
namespace {

// ---- what each minor defines -------------------------------------------------

size_t table_size_for_minor(uint32_t minor) {
  switch (minor) {
    case 0:
      return offsetof(octet_backend_api, quantize_with_statistics);
    case 1:
      return offsetof(octet_backend_api, norm_forward);
    case 2:
      return offsetof(octet_backend_api, scale_from_amax);
    default:
      return sizeof(octet_backend_api);
  }
}

size_t caps_size_for_minor(uint32_t minor) {
  if (minor < 3) return offsetof(octet_backend_caps, reserved_padding);
  return minor < 5 ? offsetof(octet_backend_caps, caller_alignment) : sizeof(octet_backend_caps);
}

bool valid_name(const char* name) {
  if (name == nullptr || name[0] == '\0' || std::strlen(name) > 64) return false;
  for (const char* p = name; *p; ++p)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_')) return false;
  return true;
}

bool printable_string(const char* s) {
  if (s == nullptr || s[0] == '\0' || std::strlen(s) > 256) return false;
  for (const unsigned char* p = reinterpret_cast<const unsigned char*>(s); *p; ++p)
    if (*p < 0x20 || *p == 0x7f) return false;
  return true;
}

std::string hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

struct HostLog {
  std::vector<std::string> messages;
  std::vector<int32_t> statuses;
};

void record_report(void* host_data, int32_t status, const char* message) {
  auto* log = static_cast<HostLog*>(host_data);
  log->statuses.push_back(status);
  log->messages.emplace_back(message != nullptr ? message : "(NULL)");
}

// Opens the plugin and asks for its table as a host of plugin ABI
// major.minor. NULL after adding the failed check.
const octet_backend_api* open_table(Section& s, const std::string& path, uint32_t minor, void** handle) {
  *handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (*handle == nullptr) {
    const char* why = ::dlerror();
    s.add("loads as a shared library", Outcome::Fail, why ? why : "dlopen failed");
    return nullptr;
  }
  s.add("loads as a shared library", Outcome::Pass);
  void* symbol = ::dlsym(*handle, OCTET_BACKEND_ENTRY_SYMBOL);
  if (symbol == nullptr) {
    s.add("exports octet_backend_entry", Outcome::Fail, "no symbol named " OCTET_BACKEND_ENTRY_SYMBOL);
    return nullptr;
  }
  s.add("exports octet_backend_entry", Outcome::Pass);
  auto entry = reinterpret_cast<octet_backend_entry_fn>(symbol);
  const octet_backend_api* api = nullptr;
  const int32_t status = entry(OCTET_PLUGIN_ABI_MAJOR, minor, &api);
  const std::string host = std::to_string(OCTET_PLUGIN_ABI_MAJOR) + "." + std::to_string(minor);
  if (status != OCTET_STATUS_SUCCESS || api == nullptr) {
    s.add("answers a host of plugin ABI " + host, Outcome::Fail,
          status != OCTET_STATUS_SUCCESS ? "the entry returned status " + std::to_string(status)
                                         : "the entry returned SUCCESS and a NULL table");
    return nullptr;
  }
  s.add("answers a host of plugin ABI " + host, Outcome::Pass);
  return api;
}

// A kernel given arguments it must refuse answers a failure status and
// reports it, with a message, through the host callback: convert from a 2x3
// into a 3x2 matrix (the same number of elements, so a plugin that does not
// check reads and writes nothing out of bounds).
void check_refusal(Section& s, const octet_backend_api& t, octet_backend_context* context, HostLog& log, bool memory) {
  if (t.convert == nullptr) return;
  void* in = nullptr;
  void* out = nullptr;
  float host_in[6] = {1, 2, 3, 4, 5, 6}, host_out[6] = {0, 0, 0, 0, 0, 0};
  if (memory) {
    if (t.mem_alloc(context, sizeof host_in, &in) != OCTET_STATUS_SUCCESS || in == nullptr) return;
    if (t.mem_alloc(context, sizeof host_out, &out) != OCTET_STATUS_SUCCESS || out == nullptr) {
      t.mem_free(context, in);
      return;
    }
  } else {
    in = host_in;
    out = host_out;
  }
  const octet_matrix_view a{in, OCTET_DTYPE_FP32, 0, 2, 3, 3};
  const octet_matrix_view b{out, OCTET_DTYPE_FP32, 0, 3, 2, 2};
  const size_t before = log.messages.size();
  const int32_t status = t.convert(context, &a, &b, 1);
  const bool reported = log.messages.size() > before && log.statuses.back() == status && !log.messages.back().empty();
  s.add("a kernel refuses bad arguments through the host callback (convert 2x3 into 3x2)",
        status != OCTET_STATUS_SUCCESS && reported ? Outcome::Pass : Outcome::Fail,
        status == OCTET_STATUS_SUCCESS ? "convert answered SUCCESS"
        : reported                     ? "status " + std::to_string(status) + ": " + log.messages.back()
                   : "status " + std::to_string(status) + " without a message through report_error");
  if (memory) {
    t.mem_free(context, in);
    t.mem_free(context, out);
  }
}

// ---- the checks of one host speaking this header's plugin ABI -----------------

void check_table(Section& s, const std::string& path) {
  void* handle = nullptr;
  const octet_backend_api* api = open_table(s, path, OCTET_PLUGIN_ABI_MINOR, &handle);
  if (api == nullptr) return;
  auto entry = reinterpret_cast<octet_backend_entry_fn>(::dlsym(handle, OCTET_BACKEND_ENTRY_SYMBOL));

  // A host of another major: refused, or answered with a table of that major.
  {
    const octet_backend_api* other = nullptr;
    const int32_t status = entry(OCTET_PLUGIN_ABI_MAJOR + 1, 0, &other);
    const bool ok = status == OCTET_STATUS_ABI_MISMATCH || (status == OCTET_STATUS_SUCCESS && other != nullptr &&
                                                            other->abi_major == OCTET_PLUGIN_ABI_MAJOR + 1);
    s.add("refuses a host of another major (ABI_MISMATCH)", ok ? Outcome::Pass : Outcome::Fail,
          ok ? ""
             : "a host of plugin ABI " + std::to_string(OCTET_PLUGIN_ABI_MAJOR + 1) + ".0 got status " +
                   std::to_string(status) +
                   (other ? " and a table of major " + std::to_string(other->abi_major) : std::string()));
  }

  const size_t required = offsetof(octet_backend_api, context_destroy) + sizeof(api->context_destroy);
  if (api->struct_size < offsetof(octet_backend_api, abi_minor) + sizeof(api->abi_minor)) {
    s.add("table struct_size", Outcome::Fail,
          "struct_size " + std::to_string(api->struct_size) + " does not even cover the version fields");
    return;
  }
  s.add("table abi_major equals the host's", api->abi_major == OCTET_PLUGIN_ABI_MAJOR ? Outcome::Pass : Outcome::Fail,
        "abi_major " + std::to_string(api->abi_major) + ", host " + std::to_string(OCTET_PLUGIN_ABI_MAJOR));
  const uint32_t minor = api->abi_minor;
  if (minor > OCTET_PLUGIN_ABI_MINOR)
    s.add("table abi_minor", Outcome::Skipped,
          "minor " + std::to_string(minor) + " is newer than this tool's " + std::to_string(OCTET_PLUGIN_ABI_MINOR) +
              ": its later entries are not checked");
  // struct_size is sizeof(octet_backend_api) of the header of the plugin's minor.
  const size_t expected = table_size_for_minor(minor);
  const bool size_ok = minor > OCTET_PLUGIN_ABI_MINOR ? api->struct_size >= expected : api->struct_size == expected;
  s.add("table struct_size matches its minor", size_ok ? Outcome::Pass : Outcome::Fail,
        "struct_size " + std::to_string(api->struct_size) + ", minor " + std::to_string(minor) +
            " defines a table of " + std::to_string(expected) + " bytes");
  if (api->struct_size < required) {
    s.add("table holds the required entries", Outcome::Fail,
          "struct_size " + std::to_string(api->struct_size) + " ends before context_destroy (" +
              std::to_string(required) + " bytes needed)");
    return;
  }
  // From here on only what both the struct_size and the minor cover is read.
  octet_backend_api t{};
  std::memcpy(&t, api, std::min({api->struct_size, expected, sizeof t}));

  s.add("name is [a-z0-9_]+", valid_name(t.name) ? Outcome::Pass : Outcome::Fail,
        t.name ? std::string("name '") + t.name + "'" : "name is NULL");
  s.add("version is a printable string", printable_string(t.version) ? Outcome::Pass : Outcome::Fail,
        t.version ? std::string("version '") + t.version + "'" : "version is NULL");
  std::string missing;
  if (t.initialize == nullptr) missing += " initialize";
  if (t.context_create == nullptr) missing += " context_create";
  if (t.context_destroy == nullptr) missing += " context_destroy";
  s.add("required entries present", missing.empty() ? Outcome::Pass : Outcome::Fail,
        missing.empty() ? "" : "missing:" + missing);
  s.add("mem_alloc and mem_free given together",
        (t.mem_alloc == nullptr) == (t.mem_free == nullptr) ? Outcome::Pass : Outcome::Fail);
  const int scaling_kernels =
      (t.scale_from_amax != nullptr) + (t.delayed_scaling_update != nullptr) + (t.amax_record != nullptr);
  if (minor >= 3)
    s.add("scaling kernels all three or none",
          scaling_kernels == 0 || scaling_kernels == 3 ? Outcome::Pass : Outcome::Fail,
          std::to_string(scaling_kernels) +
              " of scale_from_amax, delayed_scaling_update, amax_record (the host uses "
              "them only when all three are present)");
  if (!missing.empty()) return;

  // initialize() with this tool's host services; caps followed by a guard.
  HostLog log;
  octet_host_services host{};
  host.struct_size = sizeof host;
  host.abi_major = OCTET_PLUGIN_ABI_MAJOR;
  host.abi_minor = OCTET_PLUGIN_ABI_MINOR;
  host.report_error = record_report;
  host.host_data = &log;
  struct {
    octet_backend_caps caps;
    unsigned char guard[64];
  } block;
  std::memset(&block, 0, sizeof block);
  std::memset(block.guard, 0xA5, sizeof block.guard);
  block.caps.struct_size = sizeof block.caps;
  const int32_t status = t.initialize(&host, &block.caps);
  bool guard_ok = true;
  for (unsigned char g : block.guard) guard_ok = guard_ok && g == 0xA5;
  s.add("initialize writes only inside caps.struct_size", guard_ok ? Outcome::Pass : Outcome::Fail);
  if (status == OCTET_STATUS_UNAVAILABLE) {
    s.add("initialize", Outcome::Skipped,
          "UNAVAILABLE (no usable device here): " +
              (log.messages.empty() ? std::string("(no message)") : log.messages.back()));
    s.add("an UNAVAILABLE initialize reports its reason", log.messages.empty() ? Outcome::Fail : Outcome::Pass);
    if (t.shutdown) t.shutdown();
    return;
  }
  if (status != OCTET_STATUS_SUCCESS) {
    s.add("initialize succeeds", Outcome::Fail,
          "status " + std::to_string(status) + ": " +
              (log.messages.empty() ? "(no message reported)" : log.messages.back()));
    return;
  }
  s.add("initialize succeeds", Outcome::Pass);
  const octet_backend_caps& caps = block.caps;
  s.add("caps.struct_size left as the host set it", caps.struct_size == sizeof caps ? Outcome::Pass : Outcome::Fail,
        "struct_size " + std::to_string(caps.struct_size));
  if (minor < 3)
    s.add("caps fields of later minors left unset", caps.fp8_gemm_output == 0 ? Outcome::Pass : Outcome::Fail,
          caps.fp8_gemm_output ? "a plugin of minor " + std::to_string(minor) + " set fp8_gemm_output (plugin ABI 1.3)"
                               : "");
  else if (minor < 5)
    s.add("caps fields of later minors left unset", caps.caller_alignment == 0 ? Outcome::Pass : Outcome::Fail,
          caps.caller_alignment
              ? "a plugin of minor " + std::to_string(minor) + " set caller_alignment (plugin ABI 1.5)"
              : "");
  s.add("device is a printable string", printable_string(caps.device) ? Outcome::Pass : Outcome::Fail,
        caps.device ? std::string("device '") + caps.device + "'" : "device is NULL");
  const bool kind_ok = caps.memory_kind == OCTET_MEMORY_HOST || caps.memory_kind == OCTET_MEMORY_DEVICE;
  s.add("memory_kind is host or device", kind_ok ? Outcome::Pass : Outcome::Fail,
        "memory_kind " + std::to_string(caps.memory_kind));
  const bool align_ok = caps.alignment != 0 && (caps.alignment & (caps.alignment - 1)) == 0 && caps.alignment <= 65536;
  s.add("alignment is a power of two from 1 to 65536", align_ok ? Outcome::Pass : Outcome::Fail,
        "alignment " + std::to_string(caps.alignment));
  if (minor >= 5) {
    const uint64_t c = caps.caller_alignment;
    const bool caller_ok = c == 0 || ((c & (c - 1)) == 0 && c <= caps.alignment);
    s.add("caller_alignment is 0 or a power of two no larger than alignment", caller_ok ? Outcome::Pass : Outcome::Fail,
          "caller_alignment " + std::to_string(c) + ", alignment " + std::to_string(caps.alignment));
  }
  const bool memory = t.mem_alloc && t.mem_free && t.copy_from_host && t.copy_to_host;
  if (caps.memory_kind == OCTET_MEMORY_DEVICE)
    s.add("a device backend has mem_alloc, mem_free and both copies", memory ? Outcome::Pass : Outcome::Fail);
  const uint32_t known_dtypes =
      OCTET_DTYPE_BIT(OCTET_DTYPE_FP32) | OCTET_DTYPE_BIT(OCTET_DTYPE_BF16) | OCTET_DTYPE_BIT(OCTET_DTYPE_FP16) |
      OCTET_DTYPE_BIT(OCTET_DTYPE_E4M3) | OCTET_DTYPE_BIT(OCTET_DTYPE_E5M2) | OCTET_DTYPE_BIT(OCTET_DTYPE_E8M0) |
      OCTET_DTYPE_BIT(OCTET_DTYPE_E4M3FNUZ) | OCTET_DTYPE_BIT(OCTET_DTYPE_E5M2FNUZ) | OCTET_DTYPE_BIT(OCTET_DTYPE_E2M1);
  s.add("dtypes are known dtype bits", (caps.dtypes & ~known_dtypes) == 0 ? Outcome::Pass : Outcome::Fail,
        "dtypes " + hex(caps.dtypes));
  s.add("dtypes include fp32", (caps.dtypes & OCTET_DTYPE_BIT(OCTET_DTYPE_FP32)) ? Outcome::Pass : Outcome::Fail,
        "dtypes " + hex(caps.dtypes));
  // Plugin ABI 1.4 added PER_ROW and PER_COLUMN (1 << 4, 1 << 5) and the
  // FP4 modes MXFP4_1X32, NVFP4_1X16, NVFP4_16X16 (1 << 6 .. 1 << 8).
  const uint32_t known_modes = minor >= 4 ? 0x1FFu : 0xFu;
  s.add("scaling_modes are known modes", (caps.scaling_modes & ~known_modes) == 0 ? Outcome::Pass : Outcome::Fail,
        "scaling_modes " + hex(caps.scaling_modes));
  s.add("fp8_gemm_layouts are known layouts",
        (caps.fp8_gemm_layouts & ~uint32_t(OCTET_GEMM_LAYOUT_ALL)) == 0 ? Outcome::Pass : Outcome::Fail,
        "fp8_gemm_layouts " + hex(caps.fp8_gemm_layouts));
  auto flag_ok = [](int32_t v) { return v == 0 || v == 1; };
  s.add("flags are 0 or 1",
        flag_ok(caps.native_columnwise) && flag_ok(caps.fused_cast_transpose) && flag_ok(caps.fp8_gemm_output)
            ? Outcome::Pass
            : Outcome::Fail,
        "native_columnwise " + std::to_string(caps.native_columnwise) + ", fused_cast_transpose " +
            std::to_string(caps.fused_cast_transpose) + ", fp8_gemm_output " + std::to_string(caps.fp8_gemm_output));
  // What is declared has the entries that implement it.
  const uint32_t block_modes = OCTET_SCALING_MXFP8_1X32 | OCTET_SCALING_BLOCK_1X128 | OCTET_SCALING_BLOCK_128X128 |
                               OCTET_SCALING_PER_ROW | OCTET_SCALING_PER_COLUMN;
  if (caps.scaling_modes & block_modes)
    s.add("declared block scaling modes have block_quantize and block_dequantize",
          t.block_quantize && t.block_dequantize ? Outcome::Pass : Outcome::Fail);
  const uint32_t fp4_modes = OCTET_SCALING_MXFP4_1X32 | OCTET_SCALING_NVFP4_1X16 | OCTET_SCALING_NVFP4_16X16;
  if (caps.scaling_modes & fp4_modes)
    s.add("declared FP4 scaling modes have fp4_quantize, fp4_dequantize and fp4_gemm",
          t.fp4_quantize && t.fp4_dequantize && t.fp4_gemm ? Outcome::Pass : Outcome::Fail);
  if (caps.fp8_gemm_layouts != 0 || caps.fp8_gemm_output)
    s.add("declared FP8 GEMM layouts or output have gemm", t.gemm ? Outcome::Pass : Outcome::Fail);
  if (caps.fused_cast_transpose)
    s.add("declared fused_cast_transpose has quantize", t.quantize ? Outcome::Pass : Outcome::Fail);

  // A context, created and destroyed.
  octet_backend_context* context = nullptr;
  const int32_t created = t.context_create(nullptr, &context);
  s.add("context_create succeeds with the backend's own stream",
        created == OCTET_STATUS_SUCCESS && context != nullptr ? Outcome::Pass : Outcome::Fail,
        created != OCTET_STATUS_SUCCESS ? "status " + std::to_string(created) + ": " +
                                              (log.messages.empty() ? "(no message reported)" : log.messages.back())
        : context == nullptr ? "SUCCESS with a NULL context"
                             : "");
  if (created == OCTET_STATUS_SUCCESS && context != nullptr) {
    if (t.synchronize)
      s.add("synchronize on a fresh context",
            t.synchronize(context) == OCTET_STATUS_SUCCESS ? Outcome::Pass : Outcome::Fail);
    if (memory) {
      void* p = nullptr;
      const int32_t a = t.mem_alloc(context, 4096, &p);
      const bool aligned = p != nullptr && align_ok && (reinterpret_cast<uintptr_t>(p) % caps.alignment) == 0;
      s.add("mem_alloc returns memory aligned to caps.alignment",
            a == OCTET_STATUS_SUCCESS && aligned ? Outcome::Pass : Outcome::Fail,
            a != OCTET_STATUS_SUCCESS ? "status " + std::to_string(a)
            : p == nullptr            ? "SUCCESS with NULL"
                                      : "");
      if (a == OCTET_STATUS_SUCCESS && p != nullptr) {
        std::vector<unsigned char> in(4096), out(4096, 0);
        for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<unsigned char>(i * 7 + 3);
        const bool copied = t.copy_from_host(context, p, in.data(), in.size()) == OCTET_STATUS_SUCCESS &&
                            t.copy_to_host(context, out.data(), p, out.size()) == OCTET_STATUS_SUCCESS &&
                            (!t.synchronize || t.synchronize(context) == OCTET_STATUS_SUCCESS);
        s.add("copy_from_host then copy_to_host gives the bytes back",
              copied && in == out ? Outcome::Pass : Outcome::Fail);
        t.mem_free(context, p);
      }
    }
    check_refusal(s, t, context, log, memory);
    t.context_destroy(context);
  }
  if (t.shutdown) t.shutdown();
  s.add("shutdown returns", Outcome::Pass);
}

// ---- a host of plugin ABI 1.0: the plugin must not write past 1.0's caps -----

void check_old_host(Section& s, const std::string& path) {
  void* handle = nullptr;
  Section quiet;  // the loading checks were reported by the first host
  const octet_backend_api* api = open_table(quiet, path, 0, &handle);
  if (api == nullptr) {
    for (const Check& c : quiet.checks)
      if (c.outcome == Outcome::Fail) s.add("a host of plugin ABI 1.0: " + c.name, c.outcome, c.detail);
    return;
  }
  const size_t required = offsetof(octet_backend_api, context_destroy) + sizeof(api->context_destroy);
  if (api->struct_size < required || api->initialize == nullptr) return;  // reported by the first host
  HostLog log;
  octet_host_services host{};
  host.struct_size = sizeof host;
  host.abi_major = OCTET_PLUGIN_ABI_MAJOR;
  host.abi_minor = 0;
  host.report_error = record_report;
  host.host_data = &log;
  alignas(octet_backend_caps) unsigned char buffer[sizeof(octet_backend_caps) + 64];
  std::memset(buffer, 0xA5, sizeof buffer);
  auto* caps = reinterpret_cast<octet_backend_caps*>(buffer);
  const size_t old_size = caps_size_for_minor(0);
  std::memset(buffer, 0, old_size);
  caps->struct_size = old_size;
  const int32_t status = api->initialize(&host, caps);
  bool guard_ok = true;
  for (size_t i = old_size; i < sizeof buffer; ++i) guard_ok = guard_ok && buffer[i] == 0xA5;
  s.add("a host of plugin ABI 1.0: initialize writes only its 1.0 caps", guard_ok ? Outcome::Pass : Outcome::Fail,
        guard_ok ? "" : "caps.struct_size was " + std::to_string(old_size) + " bytes; bytes past it changed");
  if ((status == OCTET_STATUS_SUCCESS || status == OCTET_STATUS_UNAVAILABLE) && api->shutdown) api->shutdown();
}

}  // namespace

Section check_plugin_abi(const std::string& path, std::string* name) {
  Section s;
  s.id = "plugin_abi";
  s.title = "the plugin ABI's rules, checked on the plugin file by a host of this tool's own";
  run_in_child(&s, "plugin ABI checks", [&](Section& child) { check_table(child, path); });
  run_in_child(&s, "plugin ABI checks (a host of 1.0)", [&](Section& child) { check_old_host(child, path); });
  name->clear();
  for (const Check& c : s.checks)
    if (c.name == "name is [a-z0-9_]+" && c.outcome == Outcome::Pass)
      *name = c.detail.substr(6, c.detail.size() - 7);  // "name 'x'"
  return s;
}

}  // namespace octet_cli
