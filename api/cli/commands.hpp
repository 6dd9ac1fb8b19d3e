// The subcommands of `octet`. Each takes the arguments after its own name and
// returns the process exit code: 0 success, 1 a failure it reports, 2 a usage
// error.
#pragma once

#include <string>
#include <vector>

namespace octet_cli {

constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

int run_info(const std::vector<std::string>& args);
int run_validate(const std::vector<std::string>& args);
int run_demo(const std::vector<std::string>& args);
int run_conformance(const std::vector<std::string>& args);
// Replaces the process with `python3 -m octet.audit ARGS` (returns only on failure).
int run_audit(const std::vector<std::string>& args);

// Prints "octet: <message>" and a hint to stderr; returns kExitUsage.
int usage_error(const std::string& message);
void print_help();

}  // namespace octet_cli
