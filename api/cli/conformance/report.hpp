// The report of `octet conformance`: sections of checks, each check with an
// outcome and a detail, printed as text or as JSON (docs/conformance.md
// gives the schema).
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace octet_cli {

enum class Outcome {
  Pass,
  Fail,
  Unsupported,  // UNSUPPORTED for something the plugin does not declare: reported, not failed
  Skipped       // not run, with the reason (never a failure by itself)
};

const char* outcome_word(Outcome o);  // "pass", "fail", "unsupported", "skipped"

struct Check {
  std::string name;
  Outcome outcome = Outcome::Pass;
  std::string detail;
};

struct Section {
  std::string id;     // "plugin_abi", "capabilities", "numerics", "fuzz", "fault_injection"
  std::string title;  // one line saying what the section checks
  std::vector<Check> checks;
  // Called with each check as it is added (a checker process streams them).
  std::function<void(const Check&)> on_add;
  void add(const std::string& name, Outcome outcome, const std::string& detail = "") {
    checks.push_back({name, outcome, detail});
    if (on_add) on_add(checks.back());
  }
  // "fail" when a check failed; else "pass" when one passed; else "skipped".
  std::string verdict() const;
};

struct Report {
  std::string subject;  // what was given: a path or a backend name
  std::string backend;  // the registered name ("" when the core refused it)
  std::string path;     // the plugin file ("(embedded)" for the reference)
  std::vector<Section> sections;
  bool passed() const;
};

void print_text(const Report& report, bool verbose);
void print_json(const Report& report);

}  // namespace octet_cli
