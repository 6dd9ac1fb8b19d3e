// The sections of `octet conformance` (docs/conformance.md). Each returns
// its checks; none throws.
#pragma once

#include <cstdint>
#include <string>

#include "conformance/report.hpp"

namespace octet_cli {

// (a) The plugin ABI rules, checked on the plugin file itself by a host of
// this tool's own, in child processes (initialize() is called once per
// process; a crash fails the check that caused it). *name receives the
// name the plugin's table gives ("" when it gives none).
Section check_plugin_abi(const std::string& path, std::string* name);

// (b) Every capability `backend` declares, run through octet.h on a context
// of it and compared with the reference.
Section check_capabilities(const std::string& backend);

// (c) `octet validate`'s rows for `backend` (native profile).
Section check_numerics(const std::string& backend, uint64_t seed);

// (d) The backend-vs-reference fuzzer: `inputs` random programs drawn from `seed`.
Section check_fuzz(const std::string& backend, uint64_t seed, uint64_t inputs);

// (e) Fault injection, in a child process: must run before this process
// loads any plugin (the child loads `plugin` behind the fault shim).
Section check_fault_injection(const std::string& plugin);

}  // namespace octet_cli
