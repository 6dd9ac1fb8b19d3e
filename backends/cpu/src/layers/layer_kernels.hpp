// The cpu backend's plugin ABI 1.2 kernels for layers (layers/layer_kernels.cpp):
// LayerNorm/RMSNorm forward and backward, GELU/SwiGLU forward and backward,
// bias gradient, accumulate. Each checks its arguments, reports any failure
// through the host and returns a status.
#pragma once

#include <octet/octet_backend.h>

namespace octet_cpu {

int32_t norm_forward_kernel(const octet_norm_forward_args* args);
int32_t norm_backward_kernel(const octet_norm_backward_args* args);
int32_t activation_kernel(const octet_activation_args* args, bool backward);
int32_t bias_gradient_kernel(const octet_bias_gradient_args* args);
int32_t accumulate_kernel(const octet_matrix_view* x, const octet_matrix_view* y,
                          int32_t accumulate);

}  // namespace octet_cpu
