// Printing the conformance report: text (a verdict per section, the failed
// checks and the undeclared capabilities, every check with --verbose) and
// JSON (every check).
#include "conformance/report.hpp"

#include <cstdio>

namespace octet_cli {

const char* outcome_word(Outcome o) {
  switch (o) {
    case Outcome::Pass:
      return "pass";
    case Outcome::Fail:
      return "fail";
    case Outcome::Unsupported:
      return "unsupported";
    default:
      return "skipped";
  }
}

std::string Section::verdict() const {
  bool any_pass = false;
  for (const Check& c : checks) {
    if (c.outcome == Outcome::Fail) return "fail";
    if (c.outcome == Outcome::Pass) any_pass = true;
  }
  return any_pass ? "pass" : "skipped";
}

bool Report::passed() const {
  for (const Section& s : sections)
    if (s.verdict() == "fail") return false;
  return true;
}

namespace {

// Control characters escaped, so a plugin's strings cannot forge lines.
std::string printable(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += char(c);
    }
  }
  return out;
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += char(c);
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += char(c);
    }
  }
  return out + "\"";
}

}  // namespace

void print_text(const Report& report, bool verbose) {
  std::printf("octet conformance: %s\n", printable(report.subject).c_str());
  std::printf("backend: %s\n", report.backend.empty() ? "(not registered)" : printable(report.backend).c_str());
  std::printf("plugin file: %s\n", printable(report.path).c_str());
  for (const Section& s : report.sections) {
    size_t counts[4] = {0, 0, 0, 0};
    for (const Check& c : s.checks) ++counts[int(c.outcome)];
    std::printf("\n[%s] %s: %s\n",
                s.verdict() == "fail"   ? "FAIL"
                : s.verdict() == "pass" ? "PASS"
                                        : "SKIP",
                s.id.c_str(), s.title.c_str());
    std::printf("  %zu checks: %zu passed, %zu failed, %zu unsupported (not declared), %zu skipped\n", s.checks.size(),
                counts[0], counts[1], counts[2], counts[3]);
    for (const Check& c : s.checks) {
      // Without --verbose: failures, and what the capabilities section found
      // unsupported (the numerics section's unsupported rows are counted only).
      if (!verbose && c.outcome != Outcome::Fail &&
          !(c.outcome == Outcome::Unsupported && (s.id == "capabilities" || s.id == "fault_injection")))
        continue;
      std::printf("  %-11s %s%s%s\n", outcome_word(c.outcome), printable(c.name).c_str(), c.detail.empty() ? "" : ": ",
                  printable(c.detail).c_str());
    }
  }
  std::printf("\nverdict: %s\n", report.passed() ? "PASS" : "FAIL");
}

void print_json(const Report& report) {
  std::printf("{\n  \"schema\": \"octet-conformance/1\",\n  \"subject\": %s,\n  \"backend\": %s,\n  \"path\": %s,\n",
              json_string(report.subject).c_str(), json_string(report.backend).c_str(),
              json_string(report.path).c_str());
  std::printf("  \"verdict\": \"%s\",\n  \"sections\": [", report.passed() ? "pass" : "fail");
  for (size_t i = 0; i < report.sections.size(); ++i) {
    const Section& s = report.sections[i];
    std::printf("%s\n    {\"id\": %s, \"title\": %s, \"verdict\": \"%s\", \"checks\": [", i ? "," : "",
                json_string(s.id).c_str(), json_string(s.title).c_str(), s.verdict().c_str());
    for (size_t j = 0; j < s.checks.size(); ++j) {
      const Check& c = s.checks[j];
      std::printf("%s\n      {\"name\": %s, \"outcome\": \"%s\", \"detail\": %s}", j ? "," : "",
                  json_string(c.name).c_str(), outcome_word(c.outcome), json_string(c.detail).c_str());
    }
    std::printf("\n    ]}");
  }
  std::printf("\n  ]\n}\n");
}

}  // namespace octet_cli
