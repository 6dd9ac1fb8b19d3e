#include "validate/validation_run.hpp"

#include <cstdio>

namespace octet_cli {

void RowCheck::run_case(const std::string& name, const std::function<void()>& body) {
  current_case_ = name;
  try {
    body();
  } catch (const octet::Error& e) {
    if (e.status() == OCTET_STATUS_UNSUPPORTED) {
      if (unsupported_.empty()) unsupported_ = e.message();
    } else if (failure_.empty()) {
      failure_ = name + ": " + e.what();
    }
  } catch (const std::exception& e) {
    if (failure_.empty()) failure_ = name + ": " + e.what();
  }
}

void RowCheck::exact(const std::string& difference) {
  if (!difference.empty() && failure_.empty()) failure_ = current_case_ + ": " + difference;
}

void RowCheck::bounded(double error, double bound) {
  const bool first = !any_bounded_;
  any_bounded_ = true;
  const double ratio = bound > 0 ? error / bound : (error > 0 ? 1e300 : 0);
  if (first || !(ratio <= worst_ratio_)) {
    worst_ratio_ = ratio;
    worst_error_ = error;
    worst_bound_ = bound;
  }
  // NaN compares false: an error of NaN is a failure too.
  if (!(ratio <= 1.0) && failure_.empty()) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "error %.3g exceeds bound %.3g (ratio %.3g)", error, bound, ratio);
    failure_ = current_case_ + ": " + buf;
  }
}

Row RowCheck::finish(const std::string& operation, const std::string& target) const {
  Row row{operation, target, Verdict::Pass, ""};
  if (!failure_.empty()) {
    row.verdict = Verdict::Fail;
    row.result = failure_;
  } else if (!unsupported_.empty()) {
    row.verdict = Verdict::Unsupported;
    row.result = "unsupported: " + unsupported_;
  } else if (any_bounded_) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "max err %.3g / bound %.3g = %.3f", worst_error_, worst_bound_, worst_ratio_);
    row.result = buf;
  } else {
    row.result = "bit-exact";
  }
  return row;
}

void ValidationRun::row(const std::string& operation, const std::function<void(RowCheck&)>& body) const {
  RowCheck check;
  body(check);
  rows->push_back(check.finish(operation, target.label));
}

octet::Tensor upload_plain(octet::Context& context, const HostArray& a) {
  octet::Tensor t = octet::Tensor::create(context, a.dtype, a.shape);
  t.copy_from_host(OCTET_COMPONENT_DATA, a.bytes.data(), a.bytes.size());
  return t;
}

HostArray download(const octet::Tensor& t, octet_component component, octet_dtype dtype,
                   const std::vector<int64_t>& shape) {
  HostArray a = make_array(dtype, shape);
  t.copy_to_host(component, a.bytes.data(), a.bytes.size());
  return a;
}

}  // namespace octet_cli
