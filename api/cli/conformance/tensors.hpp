// Owned 2-D tensors for the conformance sections' probes.
#pragma once

#include <octet/octet.hpp>

#include <cstdint>
#include <memory>

namespace octet_cli {

struct TensorDeleter {
  void operator()(octet_tensor* t) const { octet_tensor_destroy(t); }
};
using TensorPtr = std::unique_ptr<octet_tensor, TensorDeleter>;

// A rows x cols tensor of `dtype` (usages and scaling mode as octet.h's
// defaults when 0); throws octet::Error when octet_tensor_create fails.
inline TensorPtr create_tensor_2d(octet::Context& ctx, int32_t dtype, int64_t rows, int64_t cols, uint32_t usages = 0,
                                  int32_t mode = 0) {
  octet_tensor_desc desc{};
  desc.struct_size = sizeof desc;
  desc.dtype = dtype;
  desc.ndim = 2;
  desc.shape[0] = rows;
  desc.shape[1] = cols;
  desc.usages = usages;
  desc.scaling_mode = mode;
  octet_tensor* t = nullptr;
  octet::check(octet_tensor_create(ctx.get(), &desc, &t));
  return TensorPtr(t);
}

}  // namespace octet_cli
