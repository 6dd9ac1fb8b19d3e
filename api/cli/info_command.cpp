// `octet info`: every registered backend with all its capabilities, then
// every plugin that failed to register.
#include <octet/octet.hpp>

#include <cinttypes>
#include <cstdio>

#include "capability_words.hpp"
#include "commands.hpp"

namespace octet_cli {
namespace {

void print_backend(size_t index, const octet::BackendInfo& b) {
  std::printf("backend %zu: %s\n", index, b.name.c_str());
  std::printf("  version            %s\n", b.version.c_str());
  std::printf("  device             %s\n", b.device.c_str());
  std::printf("  path               %s\n", b.path.c_str());
  std::printf("  memory             %s\n", memory_kind_words(b.memory_kind).c_str());
  if (b.available)
    std::printf("  status             available\n");
  else
    std::printf("  status             unavailable: %s\n", b.unavailable_reason.c_str());
  std::printf("  plugin ABI         %u.%u\n", b.abi_major, b.abi_minor);
  std::printf("  dtypes             %s\n", dtype_list(b.dtypes).c_str());
  std::printf("  scaling modes      %s\n", scaling_mode_list(b.scaling_modes).c_str());
  std::printf("  native columnwise  %s\n",
              b.native_columnwise ? "yes (one FP8 copy serves both usages)"
                                  : "no (columnwise usage is a transposed copy)");
  std::printf("  FP8 GEMM layouts   %s\n", gemm_layout_list(b.fp8_gemm_layouts).c_str());
  std::printf("  features           %s\n", feature_list(b.features).c_str());
  std::printf("  alignment          %" PRIu64 " bytes\n", b.alignment);
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
  std::printf("octet %u.%u.%u, ABI %u.%u\n\n", lib.major, lib.minor, lib.patch, abi.major,
              abi.minor);

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
      std::printf("  %s\n    reason: %s\n", f.path.c_str(), f.reason.c_str());
  }
  return kExitOk;
}

}  // namespace octet_cli
