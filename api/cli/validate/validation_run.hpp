// The machinery of `octet validate`: what is validated (a Target), how the
// cases of one table row are gathered into a verdict (RowCheck), and the
// per-target run that the check families (row_families.hpp) add rows to.
#pragma once

#include <octet/octet.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "validate/host_data.hpp"

namespace octet_cli {

// One column of validation: a backend seen through a capability profile.
struct Target {
  std::string label;    // "reference", "reference[hopper-like]", "cuda"
  std::string backend;  // registered name
  int32_t profile = OCTET_PROFILE_NATIVE;
  // The reference as it declares itself: it is compared with expectations the
  // CLI computes itself (scalar codecs, double-precision GEMM) rather than
  // with another reference context.
  bool is_plain_reference() const { return backend == "reference" && profile == OCTET_PROFILE_NATIVE; }
};

enum class Verdict { Pass, Fail, Unsupported };
// "PASS", "FAIL", "-" (unsupported), as the table prints them.
const char* verdict_words(Verdict v);

struct Row {
  std::string operation;
  std::string target;
  Verdict verdict = Verdict::Pass;
  std::string result;
};

// Gathers the cases of one row. A case that throws octet::Error with
// UNSUPPORTED makes the row "unsupported" (not a failure) unless another
// case fails; any other error, any mismatch and any ratio above 1 fail it.
class RowCheck {
 public:
  // Runs one case; `name` identifies it in a failure message.
  void run_case(const std::string& name, const std::function<void()>& body);
  // Records a bit-exactness comparison ("" = equal).
  void exact(const std::string& difference);
  // Records a tolerance comparison: worst |error| and its bound.
  void bounded(double error, double bound);
  Row finish(const std::string& operation, const std::string& target) const;

 private:
  std::string current_case_;
  std::string failure_;
  std::string unsupported_;
  bool any_bounded_ = false;
  double worst_ratio_ = 0, worst_error_ = 0, worst_bound_ = 1;
};

// What a check family needs: the target's context, the reference context
// that provides expectations, and a seed for its random inputs.
struct ValidationRun {
  Target target;
  octet::Context* context = nullptr;
  octet::Context* reference = nullptr;
  uint64_t seed = 0;
  std::vector<Row>* rows = nullptr;

  // Adds one row built by `body`.
  void row(const std::string& operation, const std::function<void(RowCheck&)>& body) const;
};

// Transfers between HostArray and tensors (whole components).
octet::Tensor upload_plain(octet::Context& context, const HostArray& a);
HostArray download(const octet::Tensor& t, octet_component component, octet_dtype dtype,
                   const std::vector<int64_t>& shape);

}  // namespace octet_cli
