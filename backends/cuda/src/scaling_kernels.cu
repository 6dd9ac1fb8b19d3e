// Plugin ABI 1.3 scaling entries (octet_backend.h, "recipe-free scaling
// kernels"): scale_from_amax, delayed_scaling_update and amax_record on
// device floats, so the core keeps quantizer state on the GPU and never
// waits for a copy to the host per quantize or per step. The state is a
// handful of floats: one tiny launch each (a single block for the history
// max). Results equal the reference's bit for bit: every FP32 operation is
// an explicitly round-to-nearest intrinsic, and ilogbf/ldexpf are exact
// (CUDA Math API: 0 ulp), as the host's std::ilogb/std::ldexp are.
#include <octet/octet_backend.h>

#include <cuda_runtime_api.h>

#include <cfloat>
#include <cstddef>
#include <cstdint>

#include "context.hpp"
#include "entries.hpp"
#include "errors.hpp"

namespace octet_cuda {
namespace {

constexpr int kUpdateThreads = 256;

__global__ void scale_from_amax_kernel(const float* amax_in, float fp8_max, float epsilon, int power_of_two,
                                       float* scale_out, float* scale_inv_out) {
  const float amax = fmaxf(*amax_in, epsilon);
  float scale = 1.0f;
  if (!(isnan(amax) || isinf(amax) || amax == 0.0f)) {
    scale = __fdiv_rn(fp8_max, amax);
    if (isinf(scale)) scale = FLT_MAX;
    if (power_of_two) scale = __uint_as_float(__float_as_uint(scale) & 0xFF800000u);
  }
  *scale_out = scale;
  if (scale_inv_out != nullptr) *scale_inv_out = __fdiv_rn(1.0f, scale);
}

// One block: the threads fold strided history entries with fmaxf (NaN
// ignored; the max of finite values does not depend on the order), thread 0
// applies steps 2-5.
__global__ void delayed_update_kernel(float* state, uint32_t n, uint32_t current, int most_recent, int recompute,
                                      int margin, int power_of_two, float fp8_max) {
  __shared__ float partial[kUpdateThreads];
  float* history = state + 2;
  float m = 0.0f;
  if (!most_recent)
    for (uint32_t i = threadIdx.x; i < n; i += blockDim.x) m = fmaxf(m, history[i]);
  partial[threadIdx.x] = m;
  __syncthreads();
  for (int stride = kUpdateThreads / 2; stride > 0; stride /= 2) {
    if (int(threadIdx.x) < stride) partial[threadIdx.x] = fmaxf(partial[threadIdx.x], partial[threadIdx.x + stride]);
    __syncthreads();
  }
  if (threadIdx.x != 0) return;
  const float amax = most_recent ? history[current] : partial[0];
  float scale = state[0];
  if (recompute && isfinite(amax) && amax > 0.0f) {
    float candidate;
    if (power_of_two) {
      const float ratio = __fdiv_rn(fp8_max, amax);
      const int exponent = isinf(ratio) ? 127 : ilogbf(ratio);
      candidate = ldexpf(1.0f, exponent - margin);
    } else {
      candidate = __fdiv_rn(ldexpf(fp8_max, -margin), amax);
      if (isinf(candidate)) candidate = FLT_MAX;
    }
    if (candidate > 0.0f) scale = candidate;  // an underflow to 0 keeps the old scale
  }
  state[0] = scale;
  state[1] = __fdiv_rn(1.0f, scale);
  history[(current + 1) % n] = 0.0f;
}

__global__ void amax_record_kernel(const float* amax, float* slot) { *slot = fmaxf(*slot, *amax); }

void check_args_size(size_t given, size_t required, const char* type) {
  require(given >= required, "args->struct_size (", given, ") must be at least sizeof(", type, ") = ", required,
          " (plugin ABI 1.3)");
}

void check_fp8_max(float fp8_max) {
  require(std::isfinite(fp8_max) && fp8_max > 0.0f, "args->fp8_max (", fp8_max, ") must be finite and > 0");
}

void check_flag(const char* name, int32_t value) { require(value == 0 || value == 1, name, " (", value, ") must be 0 or 1"); }

int32_t cuda_scale_from_amax(octet_backend_context* context, const octet_scale_from_amax_args* args) {
  return guarded("scale_from_amax", [&] {
    require(context != nullptr, "context is NULL");
    require(args != nullptr, "args is NULL");
    check_args_size(args->struct_size, sizeof(octet_scale_from_amax_args), "octet_scale_from_amax_args");
    require(args->amax != nullptr, "args->amax is NULL");
    require(args->scale_out != nullptr, "args->scale_out is NULL");
    check_fp8_max(args->fp8_max);
    require(std::isfinite(args->epsilon) && args->epsilon >= 0.0f, "args->epsilon (", args->epsilon,
            ") must be finite and >= 0");
    check_flag("args->power_of_two", args->power_of_two);
    bind(context, "scale_from_amax");
    scale_from_amax_kernel<<<1, 1, 0, context->stream>>>(args->amax, args->fp8_max, args->epsilon,
                                                         args->power_of_two, args->scale_out, args->scale_inv_out);
    check_cuda(cudaGetLastError(), "scale_from_amax kernel launch");
  });
}

int32_t cuda_delayed_scaling_update(octet_backend_context* context, const octet_delayed_scaling_update_args* args) {
  return guarded("delayed_scaling_update", [&] {
    require(context != nullptr, "context is NULL");
    require(args != nullptr, "args is NULL");
    check_args_size(args->struct_size, sizeof(octet_delayed_scaling_update_args),
                    "octet_delayed_scaling_update_args");
    require(args->state != nullptr, "args->state is NULL");
    require(args->history_len >= 1, "args->history_len must be >= 1");
    require(args->current < args->history_len, "args->current (", args->current, ") must be below args->history_len (",
            args->history_len, ")");
    const bool most_recent = args->amax_compute_algo == OCTET_HISTORY_AMAX_MOST_RECENT;
    require(most_recent || args->amax_compute_algo == OCTET_HISTORY_AMAX_MAX, "args->amax_compute_algo (",
            args->amax_compute_algo,
            ") must be OCTET_HISTORY_AMAX_MOST_RECENT (0) or OCTET_HISTORY_AMAX_MAX (1); callbacks run on the host");
    check_flag("args->recompute", args->recompute);
    check_flag("args->power_of_two", args->power_of_two);
    require(args->margin >= 0 && args->margin <= 127, "args->margin (", args->margin, ") must be in 0..127");
    check_fp8_max(args->fp8_max);
    bind(context, "delayed_scaling_update");
    delayed_update_kernel<<<1, kUpdateThreads, 0, context->stream>>>(args->state, args->history_len, args->current,
                                                                     most_recent ? 1 : 0, args->recompute, args->margin,
                                                                     args->power_of_two, args->fp8_max);
    check_cuda(cudaGetLastError(), "delayed_scaling_update kernel launch");
  });
}

int32_t cuda_amax_record(octet_backend_context* context, const float* amax, float* slot) {
  return guarded("amax_record", [&] {
    require(context != nullptr, "context is NULL");
    require(amax != nullptr, "amax is NULL");
    require(slot != nullptr, "slot is NULL");
    bind(context, "amax_record");
    amax_record_kernel<<<1, 1, 0, context->stream>>>(amax, slot);
    check_cuda(cudaGetLastError(), "amax_record kernel launch");
  });
}

}  // namespace

void add_scaling_entries(octet_backend_api& api) {
  api.scale_from_amax = cuda_scale_from_amax;
  api.delayed_scaling_update = cuda_delayed_scaling_update;
  api.amax_record = cuda_amax_record;
}

}  // namespace octet_cuda
