// Running checks in a child process: a plugin's initialize() runs once per
// process, so each host of `octet conformance` that initializes a plugin
// itself runs in a child of its own, forked before this process loads any
// plugin. A crash in the child fails the checker without ending the tool.
#pragma once

#include <functional>
#include <string>

#include "conformance/report.hpp"

namespace octet_cli {

// Runs body in a child; its checks are streamed back as they are made, so
// a crash keeps what came before and adds a failed check named `what`.
void run_in_child(Section* section, const std::string& what, const std::function<void(Section&)>& body);

}  // namespace octet_cli
