// Host-side launchers of the layer kernels (layer_kernels.cu, plugin ABI
// 1.2). Arguments are already checked by layer_entries.cpp; each launcher
// returns the first failing CUDA call's error (cudaSuccess otherwise).
#pragma once

#include <octet/octet_backend.h>

#include <cuda_runtime_api.h>

namespace octet_cuda {

// y (stored when args.output.data != NULL), mean/rstd, and, when `quantize`
// is not NULL (a checked copy; its input is ignored), the FP8 codes of y
// rounded to args.output.dtype, scale_inv and amax in the same pass.
cudaError_t launch_norm_forward(const octet_norm_forward_args& args, const octet_quantize_args* quantize,
                                cudaStream_t stream);
// dgamma/dbeta (column sums, rows in order), then dx (row pass).
cudaError_t launch_norm_backward(const octet_norm_backward_args& args, cudaStream_t stream);
cudaError_t launch_activation(const octet_activation_args& args, bool backward, cudaStream_t stream);
// Column sums of dy; with `quantize` (a checked copy, input = dy) the codes
// (rowwise and/or transposed), scale_inv and amax in the same pass.
cudaError_t launch_bias_gradient(const octet_bias_gradient_args& args, const octet_quantize_args* quantize,
                                 cudaStream_t stream);
cudaError_t launch_accumulate(const octet_matrix_view& x, const octet_matrix_view& y, bool accumulate,
                              cudaStream_t stream);

}  // namespace octet_cuda
