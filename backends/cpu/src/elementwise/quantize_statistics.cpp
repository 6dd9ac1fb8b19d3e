// Quantize with statistics (numerics.md section 10): the per-tensor
// quantize, counting the NaN, saturated and flushed inputs and taking the
// input's amax in the same pass (quantize_counting: each run counted right
// after it is encoded, by thresholds on |x * scale| rather than a second
// encode), one accumulator per thread, merged in thread order.
#include "plugin/checks.hpp"
#include "plugin/kernels.hpp"

namespace octet_cpu {
int32_t quantize_with_statistics_kernel(const octet_quantize_args* args, octet_quantize_statistics* stats_out) {
  if (int32_t s = require_pointer("quantize_with_statistics", "stats_out", stats_out)) return s;
  QuantizeCounts counts;
  float amax = 0.0f;
  if (int32_t s = quantize_counting(args, &counts, &amax)) return s;
  octet_quantize_statistics out{};
  out.nan_count = counts.nan;
  out.saturated_count = counts.saturated;
  out.flushed_count = counts.flushed;
  out.amax = amax;
  *stats_out = out;
  return OCTET_STATUS_SUCCESS;
}
}  // namespace octet_cpu
