// The FP8 decode kernel for CPUs with AVX-512 F/BW/VL/DQ but no
// AVX512_BF16 (level avx512, dispatch/isa.hpp: Skylake-SP and Cascade Lake; Ice Lake, which has VBMI, runs level
// avx512_vbmi): decode_gemm_fp32_with (gemm/decode_gemm_fp8.hpp) on the VPERMI2W decoder, so that decode-shaped FP8
// GEMMs stream their weights once there too instead of widening them to FP32 block by block for oneDNN's sgemm. Nothing
// here needs AVX512_BF16: the decoded BF16 pairs are split into FP32 values by a shift and a mask.
#include "gemm/decode_gemm_fp8_avx512.hpp"

#include <octet/octet_types.h>

#include "codecs/decode_fp8_tables.hpp"

#if defined(__GNUC__) && defined(__x86_64__)
#define OCTET_CPU_HAVE_FMA_DECODE 1
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")
// GCC 12 warns about the undefined vectors inside its own AVX-512 headers.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "codecs/decode_fp8_avx512.hpp"
#include "gemm/decode_gemm_fp8.hpp"

namespace octet_cpu {

void fp8_decode_gemm_fma(const Fp8Operand& a, const Fp8Operand& b, int64_t m, int64_t n, int64_t k, float* acc,
                         int64_t ldc) {
  // Build the code tables before any thread needs them.
  (void)fp8_bf16_codes(OCTET_DTYPE_E4M3);
  decode_gemm_fp32_with<Perm16Decoder>(a, b, m, n, k, acc, ldc);
}

}  // namespace octet_cpu

#pragma GCC pop_options
#endif

namespace octet_cpu {

bool fp8_decode_fma_built() {
#if defined(OCTET_CPU_HAVE_FMA_DECODE)
  return true;
#else
  return false;
#endif
}

#if !defined(OCTET_CPU_HAVE_FMA_DECODE)
void fp8_decode_gemm_fma(const Fp8Operand&, const Fp8Operand&, int64_t, int64_t, int64_t, float*, int64_t) {}
#endif

}  // namespace octet_cpu
