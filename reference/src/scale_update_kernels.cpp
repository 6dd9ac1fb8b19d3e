// Plugin ABI 1.3 scaling kernels (numerics.md 14.2 and 14.1): the current
// scaling rule from an amax, the delayed-scaling update of one quantizer's
// state [scale, scale_inv, history...], and the amax record of one step.
// With these the core keeps quantizer state in backend memory; the
// reference's results are the oracle the device backends are compared with.
// FP32 arithmetic through octet_math.h (defined NaN results).
#include <octet/octet_math.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <string>

#include "argument_checks.hpp"
#include "host_errors.hpp"
#include "kernels.hpp"

namespace octet::ref {
namespace {

int32_t check_fp8_max(const char* kernel, float fp8_max) {
  if (std::isfinite(fp8_max) && fp8_max > 0.0f) return OCTET_STATUS_SUCCESS;
  return report(OCTET_STATUS_INVALID_ARGUMENT,
                std::string(kernel) + ": args->fp8_max (" + std::to_string(fp8_max) + ") must be finite and > 0");
}

int32_t check_flag(const char* kernel, const char* name, int32_t value) {
  if (value == 0 || value == 1) return OCTET_STATUS_SUCCESS;
  return report(OCTET_STATUS_INVALID_ARGUMENT,
                std::string(kernel) + ": " + name + " (" + std::to_string(value) + ") must be 0 or 1");
}

}  // namespace

int32_t scale_from_amax(const octet_scale_from_amax_args* args) {
  const char* kernel = "scale_from_amax";
  if (int32_t s = check_not_null(kernel, "args", args)) return s;
  if (int32_t s =
          plugin::check_struct_size(host(), kernel, "args", args->struct_size, sizeof(octet_scale_from_amax_args),
                                    "sizeof(octet_scale_from_amax_args), plugin ABI 1.3")) {
    return s;
  }
  if (int32_t s = check_not_null(kernel, "args->amax", args->amax)) return s;
  if (int32_t s = check_not_null(kernel, "args->scale_out", args->scale_out)) return s;
  if (int32_t s = check_fp8_max(kernel, args->fp8_max)) return s;
  if (!(std::isfinite(args->epsilon) && args->epsilon >= 0.0f)) {
    return report(OCTET_STATUS_INVALID_ARGUMENT, std::string(kernel) + ": args->epsilon (" +
                                                     std::to_string(args->epsilon) + ") must be finite and >= 0");
  }
  if (int32_t s = check_flag(kernel, "args->power_of_two", args->power_of_two)) return s;

  const float amax = std::fmax(*args->amax, args->epsilon);
  float scale = 1.0f;
  if (!(std::isnan(amax) || std::isinf(amax) || amax == 0.0f)) {
    scale = octet_math_div(args->fp8_max, amax);
    if (std::isinf(scale)) scale = FLT_MAX;
    if (args->power_of_two != 0) {
      uint32_t bits;
      std::memcpy(&bits, &scale, sizeof bits);
      bits &= 0xFF800000u;  // keep sign and exponent: rounds down to a power of two
      std::memcpy(&scale, &bits, sizeof bits);
    }
  }
  *args->scale_out = scale;
  if (args->scale_inv_out != nullptr) *args->scale_inv_out = octet_math_div(1.0f, scale);
  return OCTET_STATUS_SUCCESS;
}

int32_t delayed_scaling_update(const octet_delayed_scaling_update_args* args) {
  const char* kernel = "delayed_scaling_update";
  if (int32_t s = check_not_null(kernel, "args", args)) return s;
  if (int32_t s = plugin::check_struct_size(host(), kernel, "args", args->struct_size,
                                            sizeof(octet_delayed_scaling_update_args),
                                            "sizeof(octet_delayed_scaling_update_args), plugin ABI 1.3")) {
    return s;
  }
  if (int32_t s = check_not_null(kernel, "args->state", args->state)) return s;
  if (args->history_len < 1) {
    return report(OCTET_STATUS_INVALID_ARGUMENT, std::string(kernel) + ": args->history_len must be >= 1");
  }
  if (args->current >= args->history_len) {
    return report(OCTET_STATUS_INVALID_ARGUMENT, std::string(kernel) + ": args->current (" +
                                                     std::to_string(args->current) + ") must be below args->history_len (" +
                                                     std::to_string(args->history_len) + ")");
  }
  if (args->amax_compute_algo != OCTET_HISTORY_AMAX_MOST_RECENT && args->amax_compute_algo != OCTET_HISTORY_AMAX_MAX) {
    return report(OCTET_STATUS_INVALID_ARGUMENT,
                  std::string(kernel) + ": args->amax_compute_algo (" + std::to_string(args->amax_compute_algo) +
                      ") must be OCTET_HISTORY_AMAX_MOST_RECENT (0) or OCTET_HISTORY_AMAX_MAX (1); "
                      "callbacks run on the host");
  }
  if (int32_t s = check_flag(kernel, "args->recompute", args->recompute)) return s;
  if (int32_t s = check_flag(kernel, "args->power_of_two", args->power_of_two)) return s;
  if (args->margin < 0 || args->margin > 127) {
    return report(OCTET_STATUS_INVALID_ARGUMENT, std::string(kernel) + ": args->margin (" +
                                                     std::to_string(args->margin) + ") must be in 0..127");
  }
  if (int32_t s = check_fp8_max(kernel, args->fp8_max)) return s;

  float* state = args->state;
  float* history = state + 2;
  const uint32_t n = args->history_len;
  float amax = 0.0f;
  if (args->amax_compute_algo == OCTET_HISTORY_AMAX_MOST_RECENT) {
    amax = history[args->current];
  } else {
    for (uint32_t i = 0; i < n; ++i) amax = std::fmax(amax, history[i]);
  }
  float scale = state[0];
  if (args->recompute != 0 && std::isfinite(amax) && amax > 0.0f) {
    float candidate;
    if (args->power_of_two != 0) {
      const float ratio = octet_math_div(args->fp8_max, amax);
      const int exponent = std::isinf(ratio) ? 127 : std::ilogb(ratio);
      candidate = std::ldexp(1.0f, exponent - args->margin);
    } else {
      candidate = octet_math_div(std::ldexp(args->fp8_max, -args->margin), amax);
      if (std::isinf(candidate)) candidate = FLT_MAX;
    }
    if (candidate > 0.0f) scale = candidate;  // an underflow to 0 keeps the old scale
  }
  state[0] = scale;
  state[1] = octet_math_div(1.0f, scale);
  history[(args->current + 1) % n] = 0.0f;
  return OCTET_STATUS_SUCCESS;
}

int32_t amax_record(const float* amax, float* slot) {
  const char* kernel = "amax_record";
  if (int32_t s = check_not_null(kernel, "amax", amax)) return s;
  if (int32_t s = check_not_null(kernel, "slot", slot)) return s;
  *slot = std::fmax(*slot, *amax);
  return OCTET_STATUS_SUCCESS;
}

}  // namespace octet::ref
