// `octet info`: every registered backend with all its capabilities, then
// every plugin that failed to register.
#include <octet/octet.hpp>

#include <cinttypes>
#include <cstdio>
#include <string>

#include "capability_words.hpp"
#include "commands.hpp"

namespace octet_cli {
namespace {

// What the library reports (plugin file names, reasons, a plugin's own
// strings) with control characters and backslash escaped (\n, \t, \xNN), so
// that no name can forge lines of this output.
std::string escaped(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else if (c == '\t')
      out += "\\t";
    else if (c == '\r')
      out += "\\r";
    else if (c < 0x20 || c == 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", unsigned(c));
      out += hex;
    } else {
      out += char(c);
    }
  }
  return out;
}

void print_backend(size_t index, const octet::BackendInfo& b) {
  std::printf("backend %zu: %s\n", index, escaped(b.name).c_str());
  std::printf("  version            %s\n", escaped(b.version).c_str());
  std::printf("  device             %s\n", escaped(b.device).c_str());
  std::printf("  path               %s\n", escaped(b.path).c_str());
  std::printf("  memory             %s\n", memory_kind_words(b.memory_kind).c_str());
  if (b.available)
    std::printf("  status             available\n");
  else
    std::printf("  status             unavailable: %s\n", escaped(b.unavailable_reason).c_str());
  std::printf("  plugin ABI         %u.%u\n", b.abi_major, b.abi_minor);
  std::printf("  dtypes             %s\n", dtype_list(b.dtypes).c_str());
  std::printf("  scaling modes      %s\n", scaling_mode_list(b.scaling_modes).c_str());
  std::printf("  native columnwise  %s\n", b.native_columnwise ? "yes (one FP8 copy serves both usages)"
                                                               : "no (columnwise usage is a transposed copy)");
  std::printf("  FP8 GEMM layouts   %s\n", gemm_layout_list(b.fp8_gemm_layouts).c_str());
  std::printf("  features           %s\n", feature_list(b.features).c_str());
  std::printf("  alignment          %" PRIu64 " bytes (the buffers Octet allocates)\n", b.alignment);
  std::printf("  caller alignment   %" PRIu64 " bytes and the element size (wrapped and DLPack memory)\n",
              b.caller_alignment);
}

}  // namespace

int run_info(const std::vector<std::string>& args) {
  if (args.size() == 1 && (args[0] == "--help" || args[0] == "-h")) {
    print_help();
    return kExitOk;
  }
  if (!args.empty()) return usage_error("info takes no arguments (got '" + args[0] + "')");
  const octet_version lib = octet_library_version();
  const octet_version abi = octet_abi_version();
  std::printf("octet %u.%u.%u, users' ABI %u.%u\n\n", lib.major, lib.minor, lib.patch, abi.major, abi.minor);

  const auto backends = octet::backends();
  for (size_t i = 0; i < backends.size(); ++i) {
    print_backend(i, backends[i]);
    std::printf("\n");
  }
  const auto failures = octet::backend_failures();
  if (failures.empty()) {
    std::printf("plugins that failed to load: none\n");
  } else {
    std::printf("plugins that failed to load: %zu\n", failures.size());
    for (const auto& f : failures)
      std::printf("  %s\n    reason: %s\n", escaped(f.path).c_str(), escaped(f.reason).c_str());
  }
  return kExitOk;
}

}  // namespace octet_cli
