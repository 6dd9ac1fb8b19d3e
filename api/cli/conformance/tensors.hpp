// Owned 2-D tensors for the conformance sections' probes.
#pragma once

#include <octet/octet.hpp>

#include <cstdint>

namespace octet_cli {

// A rows x cols tensor of `dtype` (usages and scaling mode as octet.h's
// defaults when 0); throws octet::Error when octet_tensor_create fails.
inline octet::Tensor create_tensor_2d(octet::Context& ctx, int32_t dtype, int64_t rows, int64_t cols,
                                      uint32_t usages = 0, int32_t mode = 0) {
  return octet::Tensor::create(ctx, dtype, {rows, cols}, usages, mode);
}

}  // namespace octet_cli
