// `octet conformance PLUGIN|BACKEND [--json] [--verbose] [--seed N]
// [--fuzz-inputs N]`: checks one backend plugin against the plugin ABI, its
// own declared capabilities, the numerics of `octet validate`, the
// backend-vs-reference fuzzer and fault injection, and prints a report
// (docs/conformance.md).
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <octet/octet.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "commands.hpp"
#include "conformance/sections.hpp"

namespace octet_cli {
namespace {

struct ConformanceOptions {
  std::string subject;
  bool json = false;
  bool verbose = false;
  uint64_t seed = 20240601;
  uint64_t fuzz_inputs = 1000;
};

bool parse_number(const std::string& value, uint64_t* out) {
  const bool digits = !value.empty() && value.find_first_not_of("0123456789") == std::string::npos;
  if (!digits) return false;
  errno = 0;
  const unsigned long long v = std::strtoull(value.c_str(), nullptr, 10);
  if (errno == ERANGE) return false;
  *out = v;
  return true;
}

// kExitOk, -1 after printing the help, or the exit code of a usage error.
int parse(const std::vector<std::string>& args, ConformanceOptions* o) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      print_help();
      return -1;
    }
    if (a == "--json") {
      o->json = true;
    } else if (a == "--verbose") {
      o->verbose = true;
    } else if (a == "--seed" || a == "--fuzz-inputs") {
      if (i + 1 >= args.size()) return usage_error(a + " needs a value");
      const std::string& value = args[++i];
      if (!parse_number(value, a == "--seed" ? &o->seed : &o->fuzz_inputs))
        return usage_error(a + " needs a non-negative integer below 2^64 (got '" + value + "')");
    } else if (!a.empty() && a[0] == '-') {
      return usage_error("conformance: unknown option '" + a + "'");
    } else if (o->subject.empty()) {
      o->subject = a;
    } else {
      return usage_error("conformance: one plugin file or backend name, not also '" + a + "'");
    }
  }
  if (o->subject.empty()) return usage_error("conformance needs a plugin file or a backend name");
  return kExitOk;
}

bool looks_like_path(const std::string& s) {
  return s.find('/') != std::string::npos || (s.size() > 3 && s.compare(s.size() - 3, 3, ".so") == 0);
}

// The file a registered backend was loaded from, found by a child process
// (discovery initializes every plugin; this process must not, before
// section (a) has run its own host). "" when none is registered by that
// name; *known lists the registered names.
std::string path_of_backend(const std::string& name, std::string* known) {
  int fds[2];
  if (::pipe(fds) != 0) return "";
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return "";
  }
  if (pid == 0) {
    ::close(fds[0]);
    std::string out;
    try {
      for (const auto& b : octet::backends()) {
        out += b.name + '\x1f' + b.path + '\n';
      }
    } catch (...) {
    }
    size_t done = 0;
    while (done < out.size()) {
      const ssize_t n = ::write(fds[1], out.data() + done, out.size() - done);
      if (n <= 0) break;
      done += size_t(n);
    }
    ::close(fds[1]);
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string data;
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) data.append(buf, size_t(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  std::string path;
  size_t start = 0;
  for (size_t end; (end = data.find('\n', start)) != std::string::npos; start = end + 1) {
    const std::string line = data.substr(start, end - start);
    const size_t sep = line.find('\x1f');
    if (sep == std::string::npos) continue;
    const std::string n = line.substr(0, sep);
    *known += (known->empty() ? "" : ", ") + n;
    if (n == name) path = line.substr(sep + 1);
  }
  return path;
}

// Sections (b) to (d) cannot run: each says why, as a failure.
void not_run(Report* report, const std::string& why) {
  for (const char* id : {"capabilities", "numerics", "fuzz"}) {
    Section s;
    s.id = id;
    s.title = "not run";
    s.add("backend usable", Outcome::Fail, why);
    report->sections.push_back(s);
  }
}

}  // namespace

int run_conformance(const std::vector<std::string>& args) {
  ConformanceOptions options;
  if (const int rc = parse(args, &options); rc != kExitOk) return rc < 0 ? kExitOk : rc;

  Report report;
  report.subject = options.subject;
  std::string table_name;
  if (looks_like_path(options.subject)) {
    struct stat st {};
    if (::stat(options.subject.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
      return usage_error("conformance: '" + options.subject + "' is not a plugin file (no such regular file)");
    std::error_code ec;
    report.path = std::filesystem::absolute(options.subject, ec).lexically_normal().string();
  } else {
    std::string known;
    report.path = path_of_backend(options.subject, &known);
    if (report.path.empty())
      return usage_error("conformance: no backend named '" + options.subject + "' (registered: " + known +
                         "); give a plugin file's path to check one that does not load");
    report.backend = options.subject;
  }

  // (a) before this process loads any plugin.
  if (report.path == "(embedded)") {
    Section s;
    s.id = "plugin_abi";
    s.title = "the plugin ABI's rules";
    s.add("plugin file", Outcome::Skipped,
          "the reference is embedded in liboctet; its table is checked by the library's own tests");
    report.sections.push_back(s);
  } else {
    report.sections.push_back(check_plugin_abi(report.path, &table_name));
  }

  // (e) also before this process loads any plugin: its child loads the
  // plugin behind the fault shim. Reported last.
  Section faults;
  if (report.path == "(embedded)") {
    faults.id = "fault_injection";
    faults.title = "every backend call and allocation failed in turn";
    faults.add("plugin file", Outcome::Skipped, "the embedded reference has no file to wrap in the fault shim");
  } else {
    if (!options.json) std::fprintf(stderr, "octet conformance: %s: fault injection...\n", report.path.c_str());
    faults = check_fault_injection(report.path);
  }

  // Register the file (explicit paths come first in discovery), find it.
  if (report.backend.empty()) {
    const octet_status loaded = octet_backend_load(report.path.c_str());
    const std::string message = loaded == OCTET_STATUS_SUCCESS ? "" : octet_last_error_message();
    for (const auto& b : octet::backends())
      if (b.path == report.path) report.backend = b.name;
    if (report.backend.empty()) {
      not_run(&report,
              "the core refused the plugin: " +
                  (message.empty() ? "a backend named '" + table_name + "' is registered from another file" : message));
    }
  }
  if (!report.backend.empty()) {
    bool available = false;
    std::string reason;
    for (const auto& b : octet::backends())
      if (b.name == report.backend) {
        available = b.available;
        reason = b.unavailable_reason;
      }
    if (!available) {
      not_run(&report, "backend '" + report.backend + "' is unavailable here: " + reason);
    } else {
      if (!options.json) std::fprintf(stderr, "octet conformance: %s: capabilities...\n", report.backend.c_str());
      report.sections.push_back(check_capabilities(report.backend));
      if (!options.json) std::fprintf(stderr, "octet conformance: %s: numerics...\n", report.backend.c_str());
      report.sections.push_back(check_numerics(report.backend, options.seed));
      if (!options.json) std::fprintf(stderr, "octet conformance: %s: fuzz...\n", report.backend.c_str());
      report.sections.push_back(check_fuzz(report.backend, options.seed, options.fuzz_inputs));
    }
  }
  report.sections.push_back(faults);
  if (options.json)
    print_json(report);
  else
    print_text(report, options.verbose);
  return report.passed() ? kExitOk : kExitFailure;
}

}  // namespace octet_cli
