// Which of gemm.cpp's paths may serve a checked GEMM: host-only and free of
// CUDA headers, so tests/cuda_backend checks it on any machine
// (arch_host_test.cpp).
#pragma once

#include <octet/octet_backend.h>

namespace octet_cuda {

// Whether cuBLASLt (paths 1 and 2) may run `args`; otherwise the scalar
// kernel does (path 3). fp8: both operands E4M3/E5M2 (else both are
// fp32/bf16/fp16). cuBLASLt has no E5M2 x E5M2, no mixed high-precision
// operands, nothing for K = 0, and takes A/B scale pointers for FP8 operands
// only: a high-precision GEMM with a_scale_inv or b_scale_inv (the ABI and
// the reference apply them to every dtype: D = alpha * sa * sb * A B^T) must
// not lose them.
inline bool cublaslt_eligible(const octet_gemm_args& args, bool fp8) {
  if (args.k <= 0) return false;
  if (fp8) return !(args.a.dtype == OCTET_DTYPE_E5M2 && args.b.dtype == OCTET_DTYPE_E5M2);
  return args.a.dtype == args.b.dtype && args.a_scale_inv == nullptr && args.b_scale_inv == nullptr;
}

}  // namespace octet_cuda
