// The cpu backend's kernels: argument checks, then the work. Each returns a
// status and has reported any failure through the host.
#pragma once

#include <octet/octet_backend.h>

#include <cstddef>
#include <memory>

namespace octet_cpu {

// A growable, 64-byte aligned FP32 workspace kept by a context between calls.
class Workspace {
 public:
  float* get(std::size_t count);

 private:
  struct Free {
    void operator()(float* p) const;
  };
  std::unique_ptr<float, Free> data_;
  std::size_t capacity_ = 0;
};

struct GemmWorkspace {
  Workspace a, b, acc;
};

int32_t convert_kernel(const octet_matrix_view* input, const octet_matrix_view* output,
                       int32_t saturate);
int32_t amax_kernel(const octet_matrix_view* input, float* amax_out);
int32_t quantize_kernel(const octet_quantize_args* args);
int32_t transpose_kernel(const octet_matrix_view* input, const octet_matrix_view* output);
int32_t dequantize_kernel(const octet_dequantize_args* args);
int32_t gemm_kernel(const octet_gemm_args* args, GemmWorkspace& workspace);

// Plugin ABI 1.1 (block_kernels.cpp).
int32_t quantize_with_statistics_kernel(const octet_quantize_args* args,
                                        octet_quantize_statistics* stats_out);
int32_t block_quantize_kernel(const octet_block_quantize_args* args);
int32_t block_dequantize_kernel(const octet_block_dequantize_args* args);
int32_t block_gemm_kernel(const octet_block_gemm_args* args, GemmWorkspace& workspace);

}  // namespace octet_cpu
