// The FP8 decode kernel at level avx512_vbmi (AVX-512 F/BW/VL/DQ and
// AVX512_VBMI, no AVX512_BF16: Ice Lake and Tiger Lake): decode_gemm_fp32_with
// (gemm/decode_gemm_fp8.hpp) on the VPERMI2B decoder (codecs/decode_fp8_avx512_vbmi.hpp).
// On Ice Lake a 512-bit VPERMT2W is several micro-ops on one port, and
// decoding the weights with it took five times the samples of the FMAs
// that use them; VPERMI2B decodes twice the codes in fewer instructions.
// Compiled for exactly these extensions, so nothing here needs AVX512_BF16.
#include "gemm/decode_gemm_fp8_avx512.hpp"

#include <octet/octet_types.h>

#include "codecs/decode_fp8_tables.hpp"

#if defined(__GNUC__) && defined(__x86_64__)
#define OCTET_CPU_HAVE_FMA_VBMI_DECODE 1
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx512vbmi,avx2,fma,f16c")
// GCC 12 warns about the undefined vectors inside its own AVX-512 headers.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "codecs/decode_fp8_avx512_vbmi.hpp"
#include "gemm/decode_gemm_fp8.hpp"

namespace octet_cpu {

void fp8_decode_gemm_fma_vbmi(const Fp8Operand& a, const Fp8Operand& b, int64_t m, int64_t n, int64_t k, float* acc,
                              int64_t ldc) {
  // Build the code tables before any thread needs them.
  (void)fp8_bf16_codes(OCTET_DTYPE_E4M3);
  decode_gemm_fp32_with<VbmiDecoder>(a, b, m, n, k, acc, ldc);
}

}  // namespace octet_cpu

#pragma GCC pop_options
#endif

namespace octet_cpu {

bool fp8_decode_fma_vbmi_built() {
#if defined(OCTET_CPU_HAVE_FMA_VBMI_DECODE)
  return true;
#else
  return false;
#endif
}

#if !defined(OCTET_CPU_HAVE_FMA_VBMI_DECODE)
void fp8_decode_gemm_fma_vbmi(const Fp8Operand&, const Fp8Operand&, int64_t, int64_t, int64_t, float*, int64_t) {}
#endif

}  // namespace octet_cpu
