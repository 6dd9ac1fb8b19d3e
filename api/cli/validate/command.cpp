// `octet validate [--backend NAME] [--seed N]`: runs every check family on
// every target and prints one table row per (operation, target).
#include <octet/octet.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "capability_words.hpp"
#include "commands.hpp"
#include "validate/row_families.hpp"

namespace octet_cli {
namespace {

struct ValidateOptions {
  std::string backend;  // "" = every available backend
  uint64_t seed = 20240601;
};

// Returns kExitOk, -1 after printing the help, or the exit code of a usage
// error it already printed.
int parse(const std::vector<std::string>& args, ValidateOptions* options) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      print_help();
      return -1;
    }
    if (a == "--backend" || a == "--seed") {
      if (i + 1 >= args.size()) return usage_error(a + " needs a value");
      const std::string& value = args[++i];
      if (a == "--backend") {
        // An empty name would silently mean "every backend".
        if (value.empty()) return usage_error("--backend needs a backend name (got '')");
        options->backend = value;
      } else {
        // Digits only (strtoull alone takes " 5", "+5", and clamps overflow to 2^64 - 1).
        const bool digits = !value.empty() && value.find_first_not_of("0123456789") == std::string::npos;
        char* end = nullptr;
        errno = 0;
        const unsigned long long seed = digits ? std::strtoull(value.c_str(), &end, 10) : 0;
        if (!digits || errno == ERANGE)
          return usage_error("--seed needs a non-negative integer below 2^64 (got '" + value + "')");
        options->seed = seed;
      }
    } else {
      return usage_error("validate: unknown argument '" + a + "'");
    }
  }
  return kExitOk;
}

// Every available backend as it declares itself; the reference also under
// both capability profiles, which drive the core's transpose logic.
std::vector<Target> targets_for(const std::vector<octet::BackendInfo>& backends, const std::string& only) {
  std::vector<Target> targets;
  for (const auto& b : backends) {
    if (!b.available || (!only.empty() && b.name != only)) continue;
    targets.push_back({b.name, b.name, OCTET_PROFILE_NATIVE});
    if (b.name == "reference")
      for (int32_t profile : {OCTET_PROFILE_HOPPER_LIKE, OCTET_PROFILE_BLACKWELL_LIKE})
        targets.push_back({b.name + "[" + profile_name(profile) + "]", b.name, profile});
  }
  return targets;
}

std::string pad(const std::string& s, size_t width) {
  return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
}

void print_table(const std::vector<Row>& rows) {
  size_t op_width = 9, target_width = 7, result_width = 6;
  for (const Row& r : rows) {
    op_width = std::max(op_width, r.operation.size());
    target_width = std::max(target_width, r.target.size());
    result_width = std::max(result_width, std::min<size_t>(r.result.size(), 48));
  }
  std::printf("%s  %s  %s  %s\n", pad("operation", op_width).c_str(), pad("backend", target_width).c_str(),
              pad("result", result_width).c_str(), "verdict");
  for (const Row& r : rows)
    std::printf("%s  %s  %s  %s\n", pad(r.operation, op_width).c_str(), pad(r.target, target_width).c_str(),
                pad(r.result, result_width).c_str(), verdict_words(r.verdict));
}

// Says which backends the table covers and which it does not, so that a run
// on the reference alone (the reference compared with itself) is never
// mistaken for a validation of a device.
void print_coverage(const std::vector<octet::BackendInfo>& backends, const std::string& only) {
  std::string validated;
  size_t others = 0;
  for (const auto& b : backends) {
    if (!b.available || (!only.empty() && b.name != only)) continue;
    validated += (validated.empty() ? "" : ", ") + b.name;
    if (b.name != "reference") ++others;
  }
  std::printf("validated against the reference: %s\n", validated.c_str());
  for (const auto& b : backends)
    if (!b.available && (only.empty() || b.name == only))
      std::printf("not validated: %s (unavailable: %s)\n", b.name.c_str(), b.unavailable_reason.c_str());
  if (others == 0)
    std::printf(
        "note: only the reference was validated (against itself, natively and under the\n"
        "      hopper-like and blackwell-like profiles); no other backend was checked.\n"
        "      The cpu backend is built when oneDNN is found (Debian: libdnnl-dev\n"
        "      ocl-icd-opencl-dev); other plugins load from OCTET_BACKEND_PATH.\n");
}

}  // namespace

void check_every_family(const ValidationRun& run) {
  check_convert(run);
  check_amax(run);
  check_quantize(run);
  check_dequantize(run);
  check_gemm_fp8(run);
  check_gemm_high_precision(run);
  check_gemm_fp8_output(run);
  check_grouped_gemm(run);
  check_recipes(run);
  check_fp4(run);
  check_layers(run);
}

const char* verdict_words(Verdict v) {
  switch (v) {
    case Verdict::Pass:
      return "PASS";
    case Verdict::Fail:
      return "FAIL";
    default:
      return "-";
  }
}

int run_validate(const std::vector<std::string>& args) {
  ValidateOptions options;
  if (const int rc = parse(args, &options); rc != kExitOk) return rc < 0 ? kExitOk : rc;

  const auto backends = octet::backends();
  if (!options.backend.empty()) {
    const auto it =
        std::find_if(backends.begin(), backends.end(), [&](const auto& b) { return b.name == options.backend; });
    if (it == backends.end()) {
      std::string known;
      for (const auto& b : backends) known += (known.empty() ? "" : ", ") + b.name;
      return usage_error("validate: no backend named '" + options.backend + "' (registered: " + known + ")");
    }
    if (!it->available) {
      std::fprintf(stderr, "octet: backend '%s' is unavailable: %s\n", it->name.c_str(),
                   it->unavailable_reason.c_str());
      return kExitFailure;
    }
  }

  std::printf("octet validate: seed %llu\n\n", static_cast<unsigned long long>(options.seed));
  octet::Context reference("reference");
  std::vector<Row> rows;
  for (const Target& target : targets_for(backends, options.backend)) {
    octet::Context context;
    try {
      context = octet::Context(target.backend, target.profile);
    } catch (const octet::Error& e) {
      const bool unsupported = e.status() == OCTET_STATUS_UNSUPPORTED;
      rows.push_back({"context create", target.label, unsupported ? Verdict::Unsupported : Verdict::Fail,
                      (unsupported ? "unsupported: " : "") + std::string(e.what())});
      continue;
    }
    check_every_family(ValidationRun{target, &context, &reference, options.seed, &rows});
  }
  print_table(rows);

  size_t passed = 0, failed = 0, unsupported = 0;
  for (const Row& r : rows) {
    if (r.verdict == Verdict::Pass) ++passed;
    if (r.verdict == Verdict::Fail) ++failed;
    if (r.verdict == Verdict::Unsupported) ++unsupported;
  }
  std::printf("\n%zu rows: %zu passed, %zu failed, %zu unsupported\n", rows.size(), passed, failed, unsupported);
  print_coverage(backends, options.backend);
  return failed ? kExitFailure : kExitOk;
}

}  // namespace octet_cli
