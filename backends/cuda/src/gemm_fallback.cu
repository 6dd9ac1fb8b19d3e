// The scalar GEMM in the reference's order (numerics.md 8): for each D[m,n],
// products accumulated in ascending k with separate FP32 roundings (no FMA),
// then (alpha * (sa * sb)) * acc and the epilogue. It serves what cuBLASLt
// cannot run (ragged leading dimensions, E5M2 x E5M2, misaligned data), and
// gives the reference's bits (GELU included: octet_math_tanhf). It is slow by design.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "codecs.cuh"
#include "epilogue.cuh"
#include "kernels.hpp"

namespace octet_cuda {

namespace {

__global__ void gemm_fallback_kernel(octet_gemm_args args) {
  const float sa = args.a_scale_inv != nullptr ? *args.a_scale_inv : 1.0f;
  const float sb = args.b_scale_inv != nullptr ? *args.b_scale_inv : 1.0f;
  const float factor = host_mul(args.alpha, host_mul(sa, sb));
  const int64_t total = args.m * args.n;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t m = i / args.n, n = i - m * args.n;
    float acc = 0.0f;
    for (int64_t k = 0; k < args.k; ++k) {
      const int64_t ai = args.trans_a ? k * args.a.ld + m : m * args.a.ld + k;
      const int64_t bi = args.trans_b ? k * args.b.ld + n : n * args.b.ld + k;
      const float p = host_mul(load_as_float(args.a.data, args.a.dtype, ai),
                               load_as_float(args.b.data, args.b.dtype, bi));
      acc = host_add(acc, p);
    }
    finish_element(host_mul(factor, acc), args, m, n);
  }
}

}  // namespace

cudaError_t launch_gemm_fallback(const octet_gemm_args& args, cudaStream_t stream) {
  const int64_t total = args.m * args.n;
  if (total == 0) return cudaSuccess;
  const int64_t blocks = std::min<int64_t>((total + 127) / 128, 1 << 20);
  gemm_fallback_kernel<<<static_cast<unsigned>(blocks), 128, 0, stream>>>(args);
  return cudaGetLastError();
}

}  // namespace octet_cuda
