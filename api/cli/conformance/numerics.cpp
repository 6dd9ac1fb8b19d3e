// Section (c) of `octet conformance`: the rows of `octet validate` for the
// backend (validate/row_families.hpp), each row one check. A row that is
// unsupported is reported, not failed: section (b) fails what is declared.
#include <octet/octet.hpp>

#include "conformance/sections.hpp"
#include "validate/row_families.hpp"

namespace octet_cli {

Section check_numerics(const std::string& backend, uint64_t seed) {
  Section s;
  s.id = "numerics";
  s.title = "octet validate's rows (seed " + std::to_string(seed) + "), against the reference and exact expectations";
  std::vector<Row> rows;
  try {
    octet::Context reference("reference");
    octet::Context context(backend);
    check_every_family(
        ValidationRun{Target{backend, backend, OCTET_PROFILE_NATIVE}, &context, &reference, seed, &rows});
  } catch (const octet::Error& e) {
    s.add("context create", Outcome::Fail, e.what());
    return s;
  }
  for (const Row& r : rows)
    s.add(r.operation,
          r.verdict == Verdict::Pass   ? Outcome::Pass
          : r.verdict == Verdict::Fail ? Outcome::Fail
                                       : Outcome::Unsupported,
          r.result);
  return s;
}

}  // namespace octet_cli
