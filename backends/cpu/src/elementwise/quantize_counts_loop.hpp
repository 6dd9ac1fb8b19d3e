// The loop of RowKernels::count_quantize (elementwise/row_kernels.hpp),
// written once and compiled in each row-kernels file under that file's
// target (included inside its target region, so that the compiler
// vectorises it for AVX2 or AVX-512 there; internal linkage, so that the
// three compilations never meet at link time). Its includes are already
// in every includer before its target region (a no-op there). No header
// guard: each file includes it once.
#include <cmath>
#include <cstdint>

#include "elementwise/row_kernels.hpp"

namespace {

// Counts, over n FP32 inputs x[i] quantized as fp8(x[i] * scale):
// NaN inputs; saturated ones, |x * scale| >= saturate_from (a NaN product,
// from a NaN scale, counts nowhere); and flushed ones, x finite and
// non-zero with |x * scale| <= flush_to (rounded to nearest even, the
// product's code is then +-0). Exactly what encoding each element and
// looking at its code would count (numerics.md section 10).
void count_quantize_loop(const float* x, int64_t n, float scale, float saturate_from, float flush_to,
                         octet_cpu::QuantizeCounts* counts) {
  uint32_t nan = 0, saturated = 0, flushed = 0;  // n <= 2^32 per call: the callers pass runs of a row
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    const float a = std::fabs(v);
    const float y = std::fabs(v * scale);
    nan += v != v;
    saturated += y >= saturate_from;
    flushed += (a != 0.0f) & (a <= 3.40282347e+38f) & (y <= flush_to);
  }
  counts->nan += nan;
  counts->saturated += saturated;
  counts->flushed += flushed;
}

}  // namespace
