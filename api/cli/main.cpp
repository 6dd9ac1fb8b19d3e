// `octet`: entry point; dispatches to the subcommands in commands.hpp.
#include <octet/octet.hpp>

#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "commands.hpp"

namespace octet_cli {

void print_help() {
  std::printf(
      "usage: octet <command> [options]\n"
      "\n"
      "commands:\n"
      "  info                       list every backend, its capabilities, and\n"
      "                             every plugin that failed to load\n"
      "  validate [--backend NAME] [--seed N]\n"
      "                             run every operation on every available backend\n"
      "                             (or NAME) and compare it with the reference\n"
      "  demo [--backend NAME] [--steps N] [--batch N] [--hidden N] [--seed N]\n"
      "       [--plot FILE.svg] [--precisions LIST] [--losses FILE] [--distributed]\n"
      "                             train a small model of Octet layers (2 residual\n"
      "                             LayerNormMLP blocks + Linear head, synthetic\n"
      "                             regression) in fp32, bf16 and fp8 with each recipe\n"
      "                             (LIST: comma-separated of fp32,bf16,fp8-delayed,\n"
      "                             fp8-current,fp8-static,fp8-mxfp8,fp8-block,\n"
      "                             fp8-rowwise,nvfp4; default all), print final\n"
      "                             loss, gap to fp32, ms/step and peak memory, and\n"
      "                             plot the losses to FILE.svg\n"
      "                             (default octet-demo-loss.svg). Defaults: backend\n"
      "                             reference, 150 steps, batch 64, hidden 64, seed 1.\n"
      "                             Fails (exit 1) if fp8-delayed or fp8-current ends\n"
      "                             more than 5%% above fp32's final loss, or any\n"
      "                             precision diverges. --losses FILE writes every\n"
      "                             step's loss. With --distributed [--timeout S]\n"
      "                             [--sharding rows|none],\n"
      "                             under mpirun -np N: data-parallel and sharded\n"
      "                             (FSDP) training on N ranks (batch per rank; fp32,\n"
      "                             bf16, fp8-delayed, fp8-current), losses checked\n"
      "                             equal on every rank, bytes sent per step printed;\n"
      "                             needs liboctet_mpi. See docs/distributed.md\n"
      "  conformance PLUGIN|BACKEND [--json] [--verbose] [--seed N] [--fuzz-inputs N]\n"
      "                             check one backend plugin (a file, or a registered\n"
      "                             backend's name): (a) the plugin ABI's rules, (b)\n"
      "                             every capability it declares, (c) the numerics of\n"
      "                             validate, (d) N random programs of the backend-vs-\n"
      "                             reference fuzzer (default 1000), (e) every backend\n"
      "                             call and allocation failed in turn. Prints a report\n"
      "                             (JSON with --json; every check with --verbose);\n"
      "                             fails (exit 1) on any failed check. UNSUPPORTED\n"
      "                             from an undeclared capability is reported only.\n"
      "                             See docs/conformance.md\n"
      "  audit TARGET... [--quick|--full] [--json FILE] [--device cpu|cuda]\n"
      "                             check another implementation's FP8 numerics (torch,\n"
      "                             torchao, onnxruntime, transformer_engine) against\n"
      "                             the reference: runs python3 -m octet.audit (needs\n"
      "                             Python 3, numpy and the target's package; OCTET_PYTHON\n"
      "                             names another interpreter); fails (exit 1) when an\n"
      "                             operation is wrong. See docs/audit.md\n"
      "  help                       this text\n"
      "\n"
      "options:\n"
      "  --version                  library, ABI and header versions\n"
      "\n"
      "Plugins are searched in the directories of OCTET_BACKEND_PATH (':'-separated)\n"
      "and in the octet/backends folder beside liboctet.\n"
      "exit status: 0 success, 1 failure, 2 usage error\n");
}

int usage_error(const std::string& message) {
  std::fprintf(stderr, "octet: %s\nrun 'octet help' for usage\n", message.c_str());
  return kExitUsage;
}

namespace {

int print_version() {
  const octet_version lib = octet_library_version();
  const octet_version abi = octet_abi_version();
  std::printf("octet %u.%u.%u (users' ABI %u.%u; built against headers %d.%d.%d, users' ABI %d.%d)\n", lib.major,
              lib.minor, lib.patch, abi.major, abi.minor, OCTET_VERSION_MAJOR, OCTET_VERSION_MINOR, OCTET_VERSION_PATCH,
              OCTET_ABI_MAJOR, OCTET_ABI_MINOR);
  return kExitOk;
}

int dispatch(const std::vector<std::string>& argv) {
  if (argv.empty()) {
    print_help();
    return kExitUsage;
  }
  const std::string& command = argv[0];
  const std::vector<std::string> rest(argv.begin() + 1, argv.end());
  if (command == "--version" || command == "version") return print_version();
  if (command == "help" || command == "--help" || command == "-h") {
    print_help();
    return kExitOk;
  }
  if (command == "info") return run_info(rest);
  if (command == "validate") return run_validate(rest);
  if (command == "demo") return run_demo(rest);
  if (command == "conformance") return run_conformance(rest);
  if (command == "audit") return run_audit(rest);
  if (!command.empty() && command[0] == '-') return usage_error("unknown option '" + command + "'");
  return usage_error("unknown command '" + command + "'");
}

}  // namespace
}  // namespace octet_cli

int main(int argc, char** argv) {
  try {
    return octet_cli::dispatch(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const octet::Error& e) {
    std::fprintf(stderr, "octet: %s\n", e.what());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "octet: internal error: %s\n", e.what());
  }
  return octet_cli::kExitFailure;
}
