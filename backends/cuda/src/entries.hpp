// The kernel groups appended to the plugin table after plugin ABI 1.0, each filled
// in by the file that implements it; an entry a group does not set stays
// NULL, and the core then answers UNSUPPORTED naming it.
#pragma once

#include <octet/octet_backend.h>

namespace octet_cuda {

// plugin ABI 1.1: quantize_with_statistics, block_quantize, block_dequantize,
// block_gemm (block_entries.cpp).
void add_block_entries(octet_backend_api& api);
// plugin ABI 1.2: norm_forward/backward, activation_forward/backward,
// bias_gradient, accumulate (layer_entries.cpp).
void add_layer_entries(octet_backend_api& api);
// plugin ABI 1.3: scale_from_amax, delayed_scaling_update, amax_record
// (scaling_kernels.cu).
void add_scaling_entries(octet_backend_api& api);

}  // namespace octet_cuda
