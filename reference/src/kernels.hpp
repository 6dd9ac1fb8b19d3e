// The reference kernels: plain loops over FP32 values, in the order
// docs/numerics.md states. Each validates its arguments first, reports a
// failure through the host and leaves its outputs untouched; exceptions
// (only std::bad_alloc can occur) are caught by the backend table.
#pragma once

#include <octet/octet_backend.h>

#include <cstdint>

namespace octet::ref {

int32_t convert_matrix(const octet_matrix_view* input, const octet_matrix_view* output,
                       int32_t saturate);
int32_t amax_of_matrix(const octet_matrix_view* input, float* amax_out);
int32_t transpose_matrix(const octet_matrix_view* input, const octet_matrix_view* output);
int32_t quantize_matrix(const octet_quantize_args* args);
int32_t dequantize_matrix(const octet_dequantize_args* args);
int32_t gemm(const octet_gemm_args* args);
// Plugin ABI 1.1 (block_scaling_kernels.cpp, block_gemm_kernel.cpp).
int32_t quantize_matrix_with_statistics(const octet_quantize_args* args,
                                        octet_quantize_statistics* stats_out);
int32_t block_quantize_matrix(const octet_block_quantize_args* args);
int32_t block_dequantize_matrix(const octet_block_dequantize_args* args);
int32_t block_gemm(const octet_block_gemm_args* args);
// Plugin ABI 1.2 (layer_kernels.cpp).
int32_t norm_forward(const octet_norm_forward_args* args);
int32_t norm_backward(const octet_norm_backward_args* args);
int32_t activation(const octet_activation_args* args, bool backward);
int32_t bias_gradient(const octet_bias_gradient_args* args);
int32_t accumulate_matrix(const octet_matrix_view* x, const octet_matrix_view* y, int32_t accumulate);
// Plugin ABI 1.3 (scale_update_kernels.cpp).
int32_t scale_from_amax(const octet_scale_from_amax_args* args);
int32_t delayed_scaling_update(const octet_delayed_scaling_update_args* args);
int32_t amax_record(const float* amax, float* slot);
// Plugin ABI 1.4 (fp4_kernels.cpp).
int32_t fp4_quantize_matrix(const octet_fp4_quantize_args* args);
int32_t fp4_dequantize_matrix(const octet_fp4_dequantize_args* args);
int32_t fp4_gemm(const octet_fp4_gemm_args* args);
// Plugin ABI 1.5 (grouped_gemm_kernel.cpp).
int32_t grouped_gemm(const octet_grouped_gemm_args* args);

}  // namespace octet::ref
