// The scaling kernels of plugin ABI 1.3 (numerics.md 14.2 and 14.1): current
// scaling from an amax, the delayed-scaling update of one quantizer's state
// and the amax record of a step. Their state lives in backend memory, so
// each runs as a one-iteration Kokkos kernel in the default execution space
// (the arguments are checked on the host first).
#include <cfloat>
#include <cmath>
#include <string>

#include "views.hpp"

namespace octet_kokkos {
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

int32_t scale_from_amax_kernel(const octet_scale_from_amax_args* args) {
  const char* kernel = "scale_from_amax";
  if (int32_t s = check_not_null(kernel, "args", args)) return s;
  if (int32_t s = octet::plugin::check_struct_size(host(), kernel, "args", args->struct_size,
                                                   sizeof(octet_scale_from_amax_args),
                                                   "sizeof(octet_scale_from_amax_args), plugin ABI 1.3"))
    return s;
  if (int32_t s = check_not_null(kernel, "args->amax", args->amax)) return s;
  if (int32_t s = check_not_null(kernel, "args->scale_out", args->scale_out)) return s;
  if (int32_t s = check_fp8_max(kernel, args->fp8_max)) return s;
  if (!(std::isfinite(args->epsilon) && args->epsilon >= 0.0f)) {
    return report(OCTET_STATUS_INVALID_ARGUMENT, std::string(kernel) + ": args->epsilon (" +
                                                     std::to_string(args->epsilon) + ") must be finite and >= 0");
  }
  if (int32_t s = check_flag(kernel, "args->power_of_two", args->power_of_two)) return s;
  const DeviceView<float> amax_in(const_cast<float*>(args->amax), 1), scale_out(args->scale_out, 1);
  const bool has_inv = args->scale_inv_out != nullptr;
  const DeviceView<float> scale_inv_out(args->scale_inv_out, has_inv ? 1 : 0);
  const float epsilon = args->epsilon, fp8_max = args->fp8_max;
  const bool power_of_two = args->power_of_two != 0;
  Kokkos::parallel_for(
      "octet_kokkos::scale_from_amax", Range(0, 1), KOKKOS_LAMBDA(int64_t) {
        const float amax = fmax_of(amax_in(0), epsilon);
        float scale = 1.0f;
        if (!(is_nan(amax) || is_inf(amax) || amax == 0.0f)) {
          scale = div(fp8_max, amax);
          if (is_inf(scale)) scale = FLT_MAX;
          if (power_of_two) scale = float_of(bits_of(scale) & 0xFF800000u);
        }
        // Read before written: scale_out may be the amax itself.
        scale_out(0) = scale;
        if (has_inv) scale_inv_out(0) = div(1.0f, scale);
      });
  Kokkos::fence();
  return OCTET_STATUS_SUCCESS;
}

int32_t delayed_scaling_update_kernel(const octet_delayed_scaling_update_args* args) {
  const char* kernel = "delayed_scaling_update";
  if (int32_t s = check_not_null(kernel, "args", args)) return s;
  if (int32_t s = octet::plugin::check_struct_size(host(), kernel, "args", args->struct_size,
                                                   sizeof(octet_delayed_scaling_update_args),
                                                   "sizeof(octet_delayed_scaling_update_args), plugin ABI 1.3"))
    return s;
  if (int32_t s = check_not_null(kernel, "args->state", args->state)) return s;
  if (args->history_len < 1)
    return report(OCTET_STATUS_INVALID_ARGUMENT, std::string(kernel) + ": args->history_len must be >= 1");
  if (args->current >= args->history_len)
    return report(OCTET_STATUS_INVALID_ARGUMENT, std::string(kernel) + ": args->current (" +
                                                     std::to_string(args->current) +
                                                     ") must be below args->history_len (" +
                                                     std::to_string(args->history_len) + ")");
  if (args->amax_compute_algo != OCTET_HISTORY_AMAX_MOST_RECENT && args->amax_compute_algo != OCTET_HISTORY_AMAX_MAX)
    return report(OCTET_STATUS_INVALID_ARGUMENT,
                  std::string(kernel) + ": args->amax_compute_algo (" + std::to_string(args->amax_compute_algo) +
                      ") must be OCTET_HISTORY_AMAX_MOST_RECENT (0) or OCTET_HISTORY_AMAX_MAX (1); "
                      "callbacks run on the host");
  if (int32_t s = check_flag(kernel, "args->recompute", args->recompute)) return s;
  if (int32_t s = check_flag(kernel, "args->power_of_two", args->power_of_two)) return s;
  if (args->margin < 0 || args->margin > 127)
    return report(OCTET_STATUS_INVALID_ARGUMENT,
                  std::string(kernel) + ": args->margin (" + std::to_string(args->margin) + ") must be in 0..127");
  if (int32_t s = check_fp8_max(kernel, args->fp8_max)) return s;

  const uint32_t n = args->history_len, current = args->current;
  const DeviceView<float> state(args->state, static_cast<size_t>(n) + 2);
  const bool most_recent = args->amax_compute_algo == OCTET_HISTORY_AMAX_MOST_RECENT;
  const bool recompute = args->recompute != 0, power_of_two = args->power_of_two != 0;
  const int margin = args->margin;
  const float fp8_max = args->fp8_max;
  Kokkos::parallel_for(
      "octet_kokkos::delayed_scaling_update", Range(0, 1), KOKKOS_LAMBDA(int64_t) {
        float amax = 0.0f;
        if (most_recent) {
          amax = state(2 + current);
        } else {
          for (uint32_t i = 0; i < n; ++i) amax = fmax_of(amax, state(2 + i));
        }
        float scale = state(0);
        if (recompute && is_finite(amax) && amax > 0.0f) {
          float candidate;
          if (power_of_two) {
            const float ratio = div(fp8_max, amax);
            // ilogb(0) is no exponent: 2^that is 0, an underflow that keeps the scale.
            candidate = ratio == 0.0f ? 0.0f : ldexp_of(1.0f, (is_inf(ratio) ? 127 : ilogb_of(ratio)) - margin);
          } else {
            candidate = div(ldexp_of(fp8_max, -margin), amax);
            if (is_inf(candidate)) candidate = FLT_MAX;
          }
          if (candidate > 0.0f) scale = candidate;
        }
        state(0) = scale;
        state(1) = div(1.0f, scale);
        state(2 + (current + 1) % n) = 0.0f;
      });
  Kokkos::fence();
  return OCTET_STATUS_SUCCESS;
}

int32_t amax_record_kernel(const float* amax, float* slot) {
  const char* kernel = "amax_record";
  if (int32_t s = check_not_null(kernel, "amax", amax)) return s;
  if (int32_t s = check_not_null(kernel, "slot", slot)) return s;
  const DeviceView<float> amax_in(const_cast<float*>(amax), 1), slot_view(slot, 1);
  Kokkos::parallel_for(
      "octet_kokkos::amax_record", Range(0, 1),
      KOKKOS_LAMBDA(int64_t) { slot_view(0) = fmax_of(slot_view(0), amax_in(0)); });
  Kokkos::fence();
  return OCTET_STATUS_SUCCESS;
}

}  // namespace octet_kokkos
