// The GEMM epilogue of numerics.md 8, shared by the epilogue kernel and the
// fallback GEMM: every FP32 operation rounded on its own, in the written order,
// with the reference host's NaN results (host_float_ops.cuh).
#pragma once

#include <octet/octet_backend.h>
#include <octet/octet_math.h>

#include "codecs.cuh"
#include "host_float_ops.cuh"

namespace octet_cuda {

// 0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v))),
// left to right, with octet_math_tanhf (the reference's tanhf).
__device__ __forceinline__ float gelu_exact_order(float v) {
  const float cube = host_mul(host_mul(host_mul(0.044715f, v), v), v);
  const float inner = host_mul(0.7978845608f, host_add(v, cube));
  return host_mul(host_mul(0.5f, v), host_add(1.0f, octet_math_tanhf(inner)));
}

// v + beta * D_old (beta != 0 only) + bias[n], GELU, rounded to D's dtype.
__device__ __forceinline__ void finish_element(float v, const octet_gemm_args& args, int64_t m, int64_t n) {
  const int64_t d_index = m * args.d.ld + n;
  if (args.beta != 0.0f) v = host_add(v, host_mul(args.beta, load_as_float(args.d.data, args.d.dtype, d_index)));
  if (args.bias.data != nullptr) v = host_add(v, load_as_float(args.bias.data, args.bias.dtype, n));
  if (args.epilogue == OCTET_EPILOGUE_GELU) v = gelu_exact_order(v);
  store_from_float(args.d.data, args.d.dtype, d_index, v, false);
}

}  // namespace octet_cuda
