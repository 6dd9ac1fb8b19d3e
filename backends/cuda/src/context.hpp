// A backend context: one device, one stream (the caller's or our own), a
// caching pool, and a cuBLASLt handle created on first GEMM.
#pragma once

#include <octet/octet_backend.h>

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include "pool.hpp"

struct octet_backend_context {
  int device = 0;
  cudaStream_t stream = nullptr;
  bool owns_stream = false;
  octet_cuda::Pool pool;
  cublasLtHandle_t lt = nullptr;
};

namespace octet_cuda {

// The device chosen at initialize() and its compute capability.
struct DeviceInfo {
  int device = 0;
  int major = 0;
  int minor = 0;
};
const DeviceInfo& device_info();

// Makes the context's device current on this thread (throws on failure).
void bind(octet_backend_context* context, const char* entry);

// Device memory from the context's pool, released when the object dies.
class Scratch {
 public:
  Scratch(octet_backend_context* context, size_t bytes) : context_(context), ptr_(context->pool.allocate(bytes)) {}
  ~Scratch() { context_->pool.release(ptr_); }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  void* get() const { return ptr_; }

 private:
  octet_backend_context* context_;
  void* ptr_;
};

// cuBLASLt GEMM (gemm.cpp).
void run_gemm(octet_backend_context* context, const octet_gemm_args& args);

}  // namespace octet_cuda
