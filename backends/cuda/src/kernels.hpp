// Host-side launchers of the CUDA kernels (elementwise.cu, gemm_fallback.cu).
// Arguments are already checked; each returns the launch's cudaError_t.
#pragma once

#include <octet/octet_backend.h>

#include <cuda_runtime_api.h>

namespace octet_cuda {

// cudaFuncGetAttributes on a kernel: fails when the build has no kernel image
// for the current device.
cudaError_t probe_kernel_image();

cudaError_t launch_convert(const octet_matrix_view& in, const octet_matrix_view& out, bool saturate,
                           cudaStream_t stream);
// Writes max |x| (NaN ignored) to amax_out; zeroes it first.
cudaError_t launch_amax(const octet_matrix_view& in, float* amax_out, cudaStream_t stream);
// Rowwise and/or transposed codes, scale_inv and amax in one pass.
cudaError_t launch_quantize(const octet_quantize_args& args, cudaStream_t stream);
cudaError_t launch_transpose(const octet_matrix_view& in, const octet_matrix_view& out, size_t element_bytes,
                             cudaStream_t stream);
cudaError_t launch_dequantize(const octet_dequantize_args& args, cudaStream_t stream);

// Vectorised quantize and amax (quantize_vectorized.cu), for what their
// *_vectorizable says they take (multiples of 4, aligned addresses; not with
// OCTET_CUDA_SIMPLE_KERNELS=1). launch_quantize and launch_amax pick them.
bool quantize_vectorizable(const octet_quantize_args& args);
cudaError_t launch_quantize_vectorized(const octet_quantize_args& args, cudaStream_t stream);
bool amax_vectorizable(const octet_matrix_view& in);
// Adds the amax into *amax_bits (already zeroed).
cudaError_t launch_amax_vectorized(const octet_matrix_view& in, unsigned* amax_bits, cudaStream_t stream);

// v = acc[m,n] (alpha*sa*sb already applied); v += beta*D; v += bias[n];
// GELU; D = round(v). acc is FP32, dense m x n.
cudaError_t launch_gemm_epilogue(const float* acc, const octet_gemm_args& args, cudaStream_t stream);
// Scalar GEMM in the reference's order (numerics.md 8) for whatever cuBLASLt
// rejects: ragged leading dimensions, E5M2 x E5M2, unaligned pointers.
cudaError_t launch_gemm_fallback(const octet_gemm_args& args, cudaStream_t stream);

}  // namespace octet_cuda
