// The cpu backend's kernels: argument checks, then the work. Each returns a
// status and has reported any failure through the host.
#pragma once

#include <octet/octet_backend.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <new>

#include "elementwise/row_kernels.hpp"  // QuantizeCounts
#include "plugin/checks.hpp"            // dtype_size
#include "plugin/errors.hpp"            // OutOfMemory, Buffer

namespace octet_cpu {

// Address of element (r, c) of a matrix view: row r starts r * ld elements
// in. The one definition every kernel file uses; the _mut form is for output
// views (a const view over data the kernel writes).
inline const unsigned char* element_ptr(const octet_matrix_view& v, int64_t r, int64_t c) {
  return static_cast<const unsigned char*>(v.data) +
         static_cast<std::size_t>(r * v.ld + c) * dtype_size(v.dtype);
}
inline unsigned char* element_ptr_mut(const octet_matrix_view& v, int64_t r, int64_t c) {
  return static_cast<unsigned char*>(v.data) +
         static_cast<std::size_t>(r * v.ld + c) * dtype_size(v.dtype);
}

// a * b elements (a, b >= 0) as a size_t; std::bad_alloc (reported as
// OCTET_STATUS_OUT_OF_MEMORY) when the product does not fit.
inline std::size_t element_count(int64_t a, int64_t b) {
  const auto ua = static_cast<std::size_t>(a), ub = static_cast<std::size_t>(b);
  if (ua != 0 && ub > std::numeric_limits<std::size_t>::max() / ua) {
    throw OutOfMemory(std::numeric_limits<std::size_t>::max());
  }
  return ua * ub;
}

// A growable, 64-byte aligned FP32 workspace (OutOfMemory with the bytes
// asked when it cannot grow); block_gemm keeps one for the call only.
class Workspace {
 public:
  // At least `count` floats; std::bad_alloc when they cannot be allocated
  // (or their size in bytes does not fit in a size_t).
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
// quantize_kernel that also counts, as it encodes, what a quantize with
// statistics reports (counts_out, and the input's amax, NaN ignored, in
// *amax_of_input); counts_out NULL: quantize_kernel.
int32_t quantize_counting(const octet_quantize_args* args, QuantizeCounts* counts_out, float* amax_of_input);
int32_t transpose_kernel(const octet_matrix_view* input, const octet_matrix_view* output);
int32_t dequantize_kernel(const octet_dequantize_args* args);
// Every workspace is allocated for the call and freed before it returns.
int32_t gemm_kernel(const octet_gemm_args* args);
// gemm_kernel's argument checks alone (reported like gemm_kernel's).
int32_t check_gemm_kernel_args(const octet_gemm_args* args);
// acc[i * ldc + j] = sum over k of A'[i, k] B'[j, k] (A' = A or A^T as
// trans_a says, B' likewise; FP8, or high-precision operands of one dtype),
// unscaled, on the path gemm_kernel takes for the shape, level and engine
// (gemm/gemm_kernel.cpp): the decode kernels, the BF16 dot-product kernel or the sgemm
// tiles. A failure is reported under `kernel`'s name.
int32_t gemm_sums(const char* kernel, const octet_matrix_view& a, bool trans_a, const octet_matrix_view& b,
                  bool trans_b, int64_t m, int64_t n, int64_t k, float* acc, int64_t ldc);

// Plugin ABI 1.1 (block/block_kernels.cpp).
int32_t quantize_with_statistics_kernel(const octet_quantize_args* args,
                                        octet_quantize_statistics* stats_out);
int32_t block_quantize_kernel(const octet_block_quantize_args* args);
int32_t block_dequantize_kernel(const octet_block_dequantize_args* args);
int32_t block_gemm_kernel(const octet_block_gemm_args* args, GemmWorkspace& workspace);
int32_t check_block_gemm_kernel_args(const octet_block_gemm_args* args);

// Plugin ABI 1.5 (gemm/grouped_gemm_kernel.cpp).
int32_t grouped_gemm_kernel(const octet_grouped_gemm_args* args);

}  // namespace octet_cpu
