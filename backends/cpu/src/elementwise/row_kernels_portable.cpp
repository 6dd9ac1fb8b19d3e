// Portable row kernels: plain loops over the exact scalar codecs. Also the
// code tables and the run-time choice between this path and AVX2.
#include <cmath>
#include <cstdlib>
#include <cstring>

#include <octet/octet_math.h>
#include <octet/octet_types.h>

#include "codecs/scalar_codecs.hpp"
#include "dispatch/implementation_list.hpp"
#include "dispatch/isa.hpp"
#include "elementwise/quantize_counts_loop.hpp"
#include "elementwise/row_kernels.hpp"

namespace octet_cpu {
namespace {

struct Tables {
  float e4m3[256];
  float e5m2[256];
  float e4m3fnuz[256];
  float e5m2fnuz[256];
  float e8m0[256];
  Tables() {
    for (int c = 0; c < 256; ++c) {
      e4m3[c] = decode_fp8_slow(static_cast<uint8_t>(c), OCTET_DTYPE_E4M3);
      e5m2[c] = decode_fp8_slow(static_cast<uint8_t>(c), OCTET_DTYPE_E5M2);
      e4m3fnuz[c] = decode_fp8_slow(static_cast<uint8_t>(c), OCTET_DTYPE_E4M3FNUZ);
      e5m2fnuz[c] = decode_fp8_slow(static_cast<uint8_t>(c), OCTET_DTYPE_E5M2FNUZ);
      e8m0[c] = decode_e8m0(static_cast<uint8_t>(c));
    }
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

void widen_portable(const void* src, int32_t dtype, int64_t n, float* out) {
  switch (dtype) {
    case OCTET_DTYPE_FP32:
      std::memcpy(out, src, static_cast<size_t>(n) * 4);
      return;
    case OCTET_DTYPE_BF16: {
      const auto* s = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) out[i] = decode_bf16(s[i]);
      return;
    }
    case OCTET_DTYPE_FP16: {
      const auto* s = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) out[i] = decode_fp16(s[i]);
      return;
    }
    default: {
      const float* table = dtype == OCTET_DTYPE_E8M0 ? e8m0_table() : fp8_table(dtype);
      const auto* s = static_cast<const uint8_t*>(src);
      for (int64_t i = 0; i < n; ++i) out[i] = table[s[i]];
      return;
    }
  }
}

void narrow_portable(const float* in, int64_t n, int32_t dtype, bool saturate, void* dst) {
  switch (dtype) {
    case OCTET_DTYPE_FP32:
      std::memcpy(dst, in, static_cast<size_t>(n) * 4);
      return;
    case OCTET_DTYPE_BF16: {
      auto* d = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) d[i] = encode_bf16(in[i]);
      return;
    }
    case OCTET_DTYPE_FP16: {
      auto* d = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) d[i] = encode_fp16(in[i]);
      return;
    }
    case OCTET_DTYPE_E8M0: {
      auto* d = static_cast<uint8_t*>(dst);
      for (int64_t i = 0; i < n; ++i) d[i] = encode_e8m0(in[i], true);
      return;
    }
    default: {
      const Fp8Params& p = fp8_params(dtype);
      auto* d = static_cast<uint8_t*>(dst);
      for (int64_t i = 0; i < n; ++i) d[i] = encode_fp8(in[i], p, saturate);
      return;
    }
  }
}

void amax_portable(const float* in, int64_t n, float* amax) {
  float m = *amax;
  for (int64_t i = 0; i < n; ++i) m = max_magnitude(m, in[i]);
  *amax = m;
}

void scale_encode_portable(const float* in, int64_t n, float scale, int32_t fp8_dtype,
                           bool saturate, uint8_t* out, float* amax) {
  const Fp8Params& p = fp8_params(fp8_dtype);
  float m = *amax;
  for (int64_t i = 0; i < n; ++i) {
    m = max_magnitude(m, in[i]);
    // octet_math_mul, not *: with both operands NaN, x's NaN is kept
    // (numerics.md section 13) whatever order the compiler gives them.
    out[i] = encode_fp8(octet_math_mul(in[i], scale), p, saturate);
  }
  *amax = m;
}

void scale_portable(float* in, int64_t n, float s) {
  for (int64_t i = 0; i < n; ++i) in[i] = octet_math_mul(in[i], s);
}

void transpose_bytes_portable(const uint8_t* src, int64_t src_ld, int64_t h, int64_t w,
                              uint8_t* dst, int64_t dst_ld) {
  for (int64_t j = 0; j < w; ++j) {
    for (int64_t i = 0; i < h; ++i) dst[j * dst_ld + i] = src[i * src_ld + j];
  }
}

void encode_portable(const float* in, int64_t n, float scale, int32_t fp8_dtype, bool saturate,
                     uint8_t* out) {
  const Fp8Params& p = fp8_params(fp8_dtype);
  for (int64_t i = 0; i < n; ++i) out[i] = encode_fp8(octet_math_mul(in[i], scale), p, saturate);
}

uint32_t abs_bits_max_portable(const float* in, int64_t n) {
  uint32_t m = 0;
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t a = bits_of(in[i]) & 0x7FFFFFFFu;
    m = a > m ? a : m;
  }
  return m;
}

void count_quantize_portable(const float* in, int64_t n, float scale, QuantizeThresholds t, QuantizeCounts* counts) {
  count_quantize_loop(in, n, scale, t.saturate_from, t.flush_to, counts);
}

const RowKernels kPortable{
    "portable",     widen_portable,           narrow_portable, scale_encode_portable, amax_portable,
    scale_portable, transpose_bytes_portable, encode_portable, abs_bits_max_portable, count_quantize_portable};

// The row kernels' implementation list (dispatch/implementation_list.hpp),
// chosen once at the level in use (dispatch/isa.hpp: cpuid + xgetbv,
// lowered by OCTET_CPU_ISA or OCTET_CPU_DISABLE_SIMD).
using RowKernelsCandidate = Candidate<AnyProblem, const RowKernels* (*)()>;
constexpr RowKernelsCandidate kRowKernelsList[] = {
    {"avx512", Isa::Avx512, [] { return avx512_row_kernels() != nullptr; }, nullptr, avx512_row_kernels},
    {"avx2", Isa::Avx2, [] { return avx2_row_kernels() != nullptr; }, nullptr, avx2_row_kernels},
    {"portable", Isa::Portable, nullptr, nullptr, [] { return &kPortable; }},
};
static_assert(ends_with_fallback(kRowKernelsList), "the last candidate takes every problem");

const RowKernels& choose() { return *choose(kRowKernelsList, cpu_isa(), AnyProblem{})->impl(); }

}  // namespace

const RowKernels& portable_row_kernels() { return kPortable; }

QuantizeThresholds quantize_thresholds(int32_t fp8_dtype) {
  // saturate_from: the smallest |y| whose non-saturating encode overflows
  // (E4M3: past 464, the tie between 448 and 480, which rounds to even
  // 448; E5M2 and E5M2FNUZ: 61440, the tie between 57344 and 65536, which
  // rounds to even 2^16; E4M3FNUZ: 248, between 240 and 256). flush_to:
  // half the smallest subnormal (the tie with zero rounds to even zero).
  switch (fp8_dtype) {
    case OCTET_DTYPE_E4M3:
      return {std::nextafter(464.0f, INFINITY), 0x1p-10f};
    case OCTET_DTYPE_E5M2:
      return {61440.0f, 0x1p-17f};
    case OCTET_DTYPE_E4M3FNUZ:
      return {248.0f, 0x1p-11f};
    default:  // OCTET_DTYPE_E5M2FNUZ
      return {61440.0f, 0x1p-18f};
  }
}

const RowKernels& row_kernels() {
  static const RowKernels& chosen = choose();
  return chosen;
}

const float* fp8_table(int32_t dtype) {
  switch (dtype) {
    case OCTET_DTYPE_E4M3:
      return tables().e4m3;
    case OCTET_DTYPE_E4M3FNUZ:
      return tables().e4m3fnuz;
    case OCTET_DTYPE_E5M2FNUZ:
      return tables().e5m2fnuz;
    default:
      return tables().e5m2;
  }
}
const float* e8m0_table() { return tables().e8m0; }

}  // namespace octet_cpu
