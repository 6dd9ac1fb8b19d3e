// The FP8 GEMM's decode kernel with AVX512_VBMI decoding (level
// avx512_bf16_vbmi, dispatch/isa.hpp): codecs/decode_fp8_avx512_vbmi.hpp's VbmiDecoder, 64
// codes in five instructions, where the VPERMI2W decoder of
// gemm/gemm_fp8_avx512_bf16.cpp takes about eight for 32.
#include "gemm/decode_gemm_fp8_avx512_bf16_vbmi.hpp"

#include "codecs/decode_fp8_tables.hpp"

#if defined(__GNUC__) && defined(__x86_64__)
#define OCTET_CPU_HAVE_VBMI_PATH 1
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,avx512vbmi,avx2,fma,f16c")
// GCC 12 warns about the undefined vectors inside its own AVX-512 headers.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "codecs/decode_fp8_avx512_vbmi.hpp"
#include "gemm/decode_gemm_fp8.hpp"

namespace octet_cpu {

void fp8_decode_gemm_vbmi(const Fp8Operand& a, const Fp8Operand& b, int64_t m, int64_t n, int64_t k, float* acc,
                          int64_t ldc, bool fp32) {
  if (fp32) {
    decode_gemm_fp32_with<VbmiDecoder>(a, b, m, n, k, acc, ldc);
  } else {
    decode_gemm_with<VbmiDecoder>(a, b, m, n, k, acc, ldc);
  }
}

}  // namespace octet_cpu

#pragma GCC pop_options
#endif

namespace octet_cpu {

bool fp8_decode_vbmi_built() {
#if defined(OCTET_CPU_HAVE_VBMI_PATH)
  return true;
#else
  return false;
#endif
}

#if !defined(OCTET_CPU_HAVE_VBMI_PATH)
void fp8_decode_gemm_vbmi(const Fp8Operand&, const Fp8Operand&, int64_t, int64_t, int64_t, float*, int64_t, bool) {}
#endif

}  // namespace octet_cpu
