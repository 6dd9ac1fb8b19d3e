// Layer kernels (plugin ABI 1.2): LayerNorm/RMSNorm forward (with the fused
// per-tensor quantize of y) and backward, GELU/SwiGLU forward and backward,
// bias gradient (with the fused cast+transpose of dy), accumulate.
//
// The reference's bits are the target, so its order of summation is kept:
// - Row sums (norm statistics, the backward means) run left to right. A warp
//   owns 32 rows; it loads 32x32 tiles with coalesced loads (lane = column)
//   into shared memory, then each lane adds its own row's 32 values in column
//   order; tiles go left to right. LayerNorm makes a second pass for the
//   squared deviations, as the reference does.
// - Column sums (dgamma, dbeta, bias gradient) run over rows in order, one
//   thread per column (adjacent threads read adjacent columns, coalesced).
// Every FP32 operation is one of layer_math.cuh's (round to nearest, the NaN result of
// octet_math.h's rule), and tanhf/expf are octet_math.h's (as in the reference), so each value
// is the reference's. Narrowing goes through codecs.cuh.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "codecs.cuh"
#include "layer_kernels.hpp"
#include "layer_math.cuh"

namespace octet_cuda {
namespace {

using namespace lmath;

constexpr int kWarp = 32;
constexpr int kRowWarps = 4;  // warps per block of the row kernels
constexpr int kRowThreads = kRowWarps * kWarp;
constexpr int kThreads = 256;  // flat and column kernels
constexpr int kStripRows = 8;  // blockDim.y of the fused bias-gradient kernel
constexpr int64_t kMaxBlocks = int64_t(1) << 30;

unsigned blocks_for(int64_t work, int64_t per_block) {
  const int64_t blocks = (work + per_block - 1) / per_block;
  return static_cast<unsigned>(std::min<int64_t>(std::max<int64_t>(blocks, 1), kMaxBlocks));
}

unsigned flat_blocks(int64_t n) {
  return static_cast<unsigned>(std::min<int64_t>(std::max<int64_t>((n + kThreads - 1) / kThreads, 1), 4096 * 32));
}

// The fused per-tensor quantize, as quantize() does it (numerics.md section 7).
struct FusedQuantize {
  bool enabled = false;
  bool e4m3 = true;
  bool saturate = true;
  const float* scale = nullptr;
  uint8_t* rowwise = nullptr;
  uint8_t* columnwise = nullptr;
  float* scale_inv_out = nullptr;
  unsigned* amax_bits = nullptr;  // zeroed before the launch
};

FusedQuantize fused_from(const octet_quantize_args* q) {
  FusedQuantize f;
  if (q == nullptr) return f;
  f.enabled = true;
  f.e4m3 = q->out_dtype == OCTET_DTYPE_E4M3;
  f.saturate = q->saturate != 0;
  f.scale = q->scale;
  f.rowwise = q->rowwise_out;
  f.columnwise = q->columnwise_out;
  f.scale_inv_out = q->scale_inv_out;
  f.amax_bits = reinterpret_cast<unsigned*>(q->amax_out);
  return f;
}

cudaError_t zero_amax(const FusedQuantize& f, cudaStream_t stream) {
  if (!f.enabled || f.amax_bits == nullptr) return cudaSuccess;
  return cudaMemsetAsync(f.amax_bits, 0, sizeof(float), stream);
}

// scale_inv = 1 / scale, once per launch.
__device__ float fused_scale(const FusedQuantize& f) {
  if (!f.enabled) return 1.0f;
  const float scale = *f.scale;
  if (f.scale_inv_out != nullptr && blockIdx.x == 0 && threadIdx.x == 0 && threadIdx.y == 0) {
    *f.scale_inv_out = host_div(1.0f, scale);
  }
  return scale;
}

// The warp's largest |x| into *amax_bits: atomicMax on the bits of a
// non-negative float orders like the float (+inf included). Whole warp.
__device__ void warp_amax_to(float local, unsigned* amax_bits) {
  for (int offset = 16; offset > 0; offset >>= 1) {
    const float other = __shfl_down_sync(0xFFFFFFFFu, local, offset);
    if (other > local) local = other;
  }
  if ((threadIdx.x & 31) == 0 && local > 0.0f) atomicMax(amax_bits, __float_as_uint(local));
}

__device__ __forceinline__ float load(const octet_matrix_view& v, int64_t r, int64_t c) {
  return load_as_float(v.data, v.dtype, r * v.ld + c);
}

// tile[j][lane] = v[r0 + j][c0 + lane] for j < height, lane < width (lane =
// column: coalesced).
__device__ __forceinline__ void load_tile(float (*tile)[kWarp + 1], const octet_matrix_view& v, int64_t r0,
                                          int height, int64_t c0, int width, int lane) {
  if (lane < width) {
    for (int j = 0; j < height; ++j) tile[j][lane] = load(v, r0 + j, c0 + lane);
  }
}

// ---- norm forward ----------------------------------------------------------

struct NormForward {
  octet_matrix_view x, gamma, beta, y;
  int32_t y_dtype;
  bool layernorm, has_beta, store_y;
  float epsilon;
  float* mean_out;
  float* rstd_out;
  FusedQuantize q;
};

__global__ void __launch_bounds__(kRowThreads) norm_forward_kernel(NormForward p) {
  __shared__ float tile[kRowWarps][kWarp][kWarp + 1];
  __shared__ float row_mean[kRowWarps][kWarp], row_rstd[kRowWarps][kWarp];
  __shared__ uint8_t codes[kRowWarps][kWarp][kWarp + 4];
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const int64_t rows = p.x.rows, cols = p.x.cols;
  const float scale = fused_scale(p.q);
  float local_amax = 0.0f;
  for (int64_t r0 = (int64_t(blockIdx.x) * kRowWarps + warp) * kWarp; r0 < rows;
       r0 += int64_t(gridDim.x) * kRowWarps * kWarp) {
    const int height = static_cast<int>(std::min<int64_t>(kWarp, rows - r0));
    const bool owns_row = lane < height;
    // Statistics: lane = row, columns left to right.
    float sum = 0.0f;
    for (int64_t c0 = 0; c0 < cols; c0 += kWarp) {
      const int width = static_cast<int>(std::min<int64_t>(kWarp, cols - c0));
      load_tile(tile[warp], p.x, r0, height, c0, width, lane);
      __syncwarp();
      if (owns_row) {
        for (int k = 0; k < width; ++k) {
          sum = p.layernorm ? sum_step(sum, tile[warp][lane][k]) : square_step(sum, tile[warp][lane][k]);
        }
      }
      __syncwarp();
    }
    float mean = 0.0f, rstd;
    if (p.layernorm) {
      mean = mean_of(sum, cols);
      float var = 0.0f;
      for (int64_t c0 = 0; c0 < cols; c0 += kWarp) {
        const int width = static_cast<int>(std::min<int64_t>(kWarp, cols - c0));
        load_tile(tile[warp], p.x, r0, height, c0, width, lane);
        __syncwarp();
        if (owns_row) {
          for (int k = 0; k < width; ++k) var = variance_step(var, tile[warp][lane][k], mean);
        }
        __syncwarp();
      }
      rstd = rstd_of(var, cols, p.epsilon);
    } else {
      rstd = rstd_of(sum, cols, p.epsilon);
    }
    if (owns_row) {
      if (p.mean_out != nullptr) p.mean_out[r0 + lane] = mean;
      if (p.rstd_out != nullptr) p.rstd_out[r0 + lane] = rstd;
    }
    row_mean[warp][lane] = mean;
    row_rstd[warp][lane] = rstd;
    __syncwarp();
    // Output: lane = column (coalesced stores), the rows of the warp in turn.
    for (int64_t c0 = 0; c0 < cols; c0 += kWarp) {
      const int width = static_cast<int>(std::min<int64_t>(kWarp, cols - c0));
      const int64_t c = c0 + lane;
      if (lane < width) {
        const float gamma = load(p.gamma, 0, c);
        const float beta = p.has_beta ? load(p.beta, 0, c) : 0.0f;
        for (int j = 0; j < height; ++j) {
          const int64_t r = r0 + j;
          const float y = norm_output(load(p.x, r, c), row_mean[warp][j], row_rstd[warp][j], gamma, p.layernorm,
                                      p.has_beta, beta);
          if (p.store_y) store_from_float(p.y.data, p.y_dtype, r * p.y.ld + c, y, true);
          if (p.q.enabled) {
            // quantize() reads y as stored in output.dtype.
            const float v = rounded_to(y, p.y_dtype);
            local_amax = fmaxf(local_amax, amax_candidate(v));
            const uint8_t code = quantize_code(v, scale, p.q.e4m3, p.q.saturate);
            if (p.q.rowwise != nullptr) p.q.rowwise[r * cols + c] = code;
            codes[warp][j][lane] = code;
          }
        }
      }
      if (p.q.columnwise != nullptr) {
        // Transposed codes [cols][rows]: lane = row, coalesced along rows.
        __syncwarp();
        if (owns_row) {
          for (int k = 0; k < width; ++k) p.q.columnwise[(c0 + k) * rows + r0 + lane] = codes[warp][lane][k];
        }
      }
      __syncwarp();
    }
  }
  if (p.q.amax_bits != nullptr) warp_amax_to(local_amax, p.q.amax_bits);
}

// ---- norm backward ---------------------------------------------------------

struct NormBackward {
  octet_matrix_view x, dy, gamma, dx;
  bool layernorm;
  const float* mean;
  const float* rstd;
  float* dgamma_out;
  float* dbeta_out;
};

// dgamma[c] = sum over rows of dy * x_hat, dbeta[c] = sum of dy; rows in order.
__global__ void norm_backward_columns_kernel(NormBackward p) {
  const int64_t rows = p.x.rows, cols = p.x.cols;
  for (int64_t c = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; c < cols; c += int64_t(gridDim.x) * blockDim.x) {
    float dgamma = 0.0f, dbeta = 0.0f;
    for (int64_t r = 0; r < rows; ++r) {
      const float dy = load(p.dy, r, c);
      const float mean = p.layernorm ? p.mean[r] : 0.0f;
      dgamma = dgamma_step(dgamma, load(p.x, r, c), dy, mean, p.rstd[r], p.layernorm);
      dbeta = sum_step(dbeta, dy);
    }
    p.dgamma_out[c] = dgamma;
    if (p.dbeta_out != nullptr) p.dbeta_out[c] = dbeta;
  }
}

// dx: the row means of g and g * x_hat (lane = row, left to right), then dx
// (lane = column).
__global__ void __launch_bounds__(kRowThreads) norm_backward_rows_kernel(NormBackward p) {
  __shared__ float x_tile[kRowWarps][kWarp][kWarp + 1];
  __shared__ float dy_tile[kRowWarps][kWarp][kWarp + 1];
  __shared__ float gamma_tile[kRowWarps][kWarp];
  __shared__ float row_mean[kRowWarps][kWarp], row_rstd[kRowWarps][kWarp];
  __shared__ float row_mean_g[kRowWarps][kWarp], row_mean_gx[kRowWarps][kWarp];
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const int64_t rows = p.x.rows, cols = p.x.cols;
  for (int64_t r0 = (int64_t(blockIdx.x) * kRowWarps + warp) * kWarp; r0 < rows;
       r0 += int64_t(gridDim.x) * kRowWarps * kWarp) {
    const int height = static_cast<int>(std::min<int64_t>(kWarp, rows - r0));
    const bool owns_row = lane < height;
    const float mean = owns_row && p.layernorm ? p.mean[r0 + lane] : 0.0f;
    const float rstd = owns_row ? p.rstd[r0 + lane] : 0.0f;
    BackwardSums sums{0.0f, 0.0f};
    for (int64_t c0 = 0; c0 < cols; c0 += kWarp) {
      const int width = static_cast<int>(std::min<int64_t>(kWarp, cols - c0));
      load_tile(x_tile[warp], p.x, r0, height, c0, width, lane);
      load_tile(dy_tile[warp], p.dy, r0, height, c0, width, lane);
      if (lane < width) gamma_tile[warp][lane] = load(p.gamma, 0, c0 + lane);
      __syncwarp();
      if (owns_row) {
        for (int k = 0; k < width; ++k) {
          backward_row_step(sums, x_tile[warp][lane][k], dy_tile[warp][lane][k], gamma_tile[warp][k], mean, rstd,
                            p.layernorm);
        }
      }
      __syncwarp();
    }
    row_mean[warp][lane] = mean;
    row_rstd[warp][lane] = rstd;
    row_mean_g[warp][lane] = mean_of(sums.sum_g, cols);
    row_mean_gx[warp][lane] = mean_of(sums.sum_gx, cols);
    __syncwarp();
    for (int64_t c0 = 0; c0 < cols; c0 += kWarp) {
      const int64_t c = c0 + lane;
      if (c < cols) {
        const float gamma = load(p.gamma, 0, c);
        for (int j = 0; j < height; ++j) {
          const int64_t r = r0 + j;
          const float dx = norm_input_grad(load(p.x, r, c), load(p.dy, r, c), gamma, row_mean[warp][j],
                                           row_rstd[warp][j], row_mean_g[warp][j], row_mean_gx[warp][j], p.layernorm);
          store_from_float(p.dx.data, p.dx.dtype, r * p.dx.ld + c, dx, true);
        }
      }
    }
    __syncwarp();
  }
}

// ---- activations -------------------------------------------------------------

__global__ void activation_forward_kernel(octet_matrix_view x, octet_matrix_view y, int64_t n, bool swiglu) {
  const int64_t total = x.rows * n;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / n, c = i - r * n;
    const float a = load(x, r, c);
    const float v = swiglu ? lmath::swiglu(a, load(x, r, c + n)) : gelu(a);
    store_from_float(y.data, y.dtype, r * y.ld + c, v, true);
  }
}

__global__ void activation_backward_kernel(octet_matrix_view x, octet_matrix_view dy, octet_matrix_view dx, int64_t n,
                                           bool swiglu) {
  const int64_t total = x.rows * n;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / n, c = i - r * n;
    const float g = load(dy, r, c), a = load(x, r, c);
    if (!swiglu) {
      store_from_float(dx.data, dx.dtype, r * dx.ld + c, gelu_backward(g, a), true);
      continue;
    }
    // Both inputs are read before either output is written: dx may be x.
    const SwigluGrad d = swiglu_backward(g, a, load(x, r, c + n));
    store_from_float(dx.data, dx.dtype, r * dx.ld + c, d.da, true);
    store_from_float(dx.data, dx.dtype, r * dx.ld + c + n, d.db, true);
  }
}

// ---- bias gradient -----------------------------------------------------------

__global__ void column_sums_kernel(octet_matrix_view dy, float* sums_out) {
  const int64_t rows = dy.rows, cols = dy.cols;
  for (int64_t c = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; c < cols; c += int64_t(gridDim.x) * blockDim.x) {
    float sum = 0.0f;
    for (int64_t r = 0; r < rows; ++r) sum = sum_step(sum, load(dy, r, c));
    sums_out[c] = sum;
  }
}

// A block walks a 32-column strip down all the rows in 32x32 tiles: the
// block writes the rowwise codes (coalesced along columns) and the transposed
// codes (coalesced along rows), and warp 0 adds each tile's columns in row
// order into its running sums.
__global__ void __launch_bounds__(kWarp* kStripRows)
    bias_gradient_quantize_kernel(octet_matrix_view dy, float* sums_out, FusedQuantize q) {
  __shared__ float values[kWarp][kWarp + 1];
  __shared__ uint8_t codes[kWarp][kWarp + 4];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int64_t rows = dy.rows, cols = dy.cols;
  const float scale = fused_scale(q);
  float local_amax = 0.0f;
  for (int64_t c0 = int64_t(blockIdx.x) * kWarp; c0 < cols; c0 += int64_t(gridDim.x) * kWarp) {
    const int width = static_cast<int>(std::min<int64_t>(kWarp, cols - c0));
    const int64_t c = c0 + tx;
    float sum = 0.0f;  // warp 0's
    for (int64_t r0 = 0; r0 < rows; r0 += kWarp) {
      const int height = static_cast<int>(std::min<int64_t>(kWarp, rows - r0));
      if (tx < width) {
        for (int j = ty; j < height; j += kStripRows) {
          const float v = load(dy, r0 + j, c);
          values[j][tx] = v;
          local_amax = fmaxf(local_amax, amax_candidate(v));
          const uint8_t code = quantize_code(v, scale, q.e4m3, q.saturate);
          if (q.rowwise != nullptr) q.rowwise[(r0 + j) * cols + c] = code;
          codes[j][tx] = code;
        }
      }
      __syncthreads();
      if (q.columnwise != nullptr && tx < height) {
        for (int k = ty; k < width; k += kStripRows) q.columnwise[(c0 + k) * rows + r0 + tx] = codes[tx][k];
      }
      if (ty == 0 && tx < width) {
        for (int j = 0; j < height; ++j) sum = sum_step(sum, values[j][tx]);
      }
      __syncthreads();
    }
    if (ty == 0 && tx < width) sums_out[c] = sum;
  }
  if (q.amax_bits != nullptr) warp_amax_to(local_amax, q.amax_bits);
}

// ---- accumulate ----------------------------------------------------------------

__global__ void accumulate_kernel(octet_matrix_view x, octet_matrix_view y, bool accumulate) {
  const int64_t total = x.rows * x.cols;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / x.cols, c = i - r * x.cols;
    const int64_t src = r * x.ld + c, dst = r * y.ld + c;
    if (accumulate) {
      store_from_float(y.data, y.dtype, dst, host_add(load_as_float(x.data, x.dtype, src), load_as_float(y.data, y.dtype, dst)),
                       true);
    } else if (x.dtype == OCTET_DTYPE_FP32 && y.dtype == OCTET_DTYPE_FP32) {
      static_cast<uint32_t*>(y.data)[dst] = static_cast<const uint32_t*>(x.data)[src];  // bits as they are
    } else {
      store_from_float(y.data, y.dtype, dst, load_as_float(x.data, x.dtype, src), true);
    }
  }
}

}  // namespace

cudaError_t launch_norm_forward(const octet_norm_forward_args& args, const octet_quantize_args* quantize,
                                cudaStream_t stream) {
  NormForward p;
  p.x = args.input;
  p.gamma = args.gamma;
  p.layernorm = args.kind == OCTET_NORM_LAYERNORM;
  p.has_beta = p.layernorm && args.beta.data != nullptr;
  p.beta = p.has_beta ? args.beta : octet_matrix_view{};
  p.y = args.output;
  p.y_dtype = args.output.dtype;
  p.store_y = args.output.data != nullptr;
  p.epsilon = args.epsilon;
  p.mean_out = args.mean_out;
  p.rstd_out = args.rstd_out;
  p.q = fused_from(quantize);
  if (cudaError_t error = zero_amax(p.q, stream)) return error;
  // Nothing to do without rows unless the fused quantize still owes scale_inv.
  if (p.x.rows == 0 && !p.q.enabled) return cudaSuccess;
  norm_forward_kernel<<<blocks_for(p.x.rows, kRowThreads), kRowThreads, 0, stream>>>(p);
  return cudaGetLastError();
}

cudaError_t launch_norm_backward(const octet_norm_backward_args& args, cudaStream_t stream) {
  NormBackward p;
  p.x = args.input;
  p.dy = args.grad_output;
  p.gamma = args.gamma;
  p.dx = args.grad_input;
  p.layernorm = args.kind == OCTET_NORM_LAYERNORM;
  p.mean = args.mean;
  p.rstd = args.rstd;
  p.dgamma_out = args.dgamma_out;
  p.dbeta_out = args.dbeta_out;
  const int64_t rows = p.x.rows, cols = p.x.cols;
  if (cols > 0) {
    // Before dx is written: x and dy are read first, as in the reference.
    norm_backward_columns_kernel<<<blocks_for(cols, kThreads), kThreads, 0, stream>>>(p);
    if (cudaError_t error = cudaGetLastError()) return error;
  }
  if (rows > 0 && cols > 0) {
    norm_backward_rows_kernel<<<blocks_for(rows, kRowThreads), kRowThreads, 0, stream>>>(p);
    return cudaGetLastError();
  }
  return cudaSuccess;
}

cudaError_t launch_activation(const octet_activation_args& args, bool backward, cudaStream_t stream) {
  const bool swiglu = args.kind == OCTET_ACTIVATION_SWIGLU;
  const int64_t n = swiglu ? args.input.cols / 2 : args.input.cols;
  const int64_t total = args.input.rows * n;
  if (total == 0) return cudaSuccess;
  if (backward) {
    activation_backward_kernel<<<flat_blocks(total), kThreads, 0, stream>>>(args.input, args.grad_output,
                                                                            args.grad_input, n, swiglu);
  } else {
    activation_forward_kernel<<<flat_blocks(total), kThreads, 0, stream>>>(args.input, args.output, n, swiglu);
  }
  return cudaGetLastError();
}

cudaError_t launch_bias_gradient(const octet_bias_gradient_args& args, const octet_quantize_args* quantize,
                                 cudaStream_t stream) {
  const octet_matrix_view& dy = args.grad_output;
  if (quantize == nullptr) {
    if (dy.cols == 0) return cudaSuccess;
    column_sums_kernel<<<blocks_for(dy.cols, kThreads), kThreads, 0, stream>>>(dy, args.sums_out);
    return cudaGetLastError();
  }
  const FusedQuantize q = fused_from(quantize);
  if (cudaError_t error = zero_amax(q, stream)) return error;
  // At least one block: scale_inv is written even for an empty dy.
  bias_gradient_quantize_kernel<<<blocks_for(dy.cols, kWarp), dim3(kWarp, kStripRows), 0, stream>>>(
      dy, args.sums_out, q);
  return cudaGetLastError();
}

cudaError_t launch_accumulate(const octet_matrix_view& x, const octet_matrix_view& y, bool accumulate,
                              cudaStream_t stream) {
  const int64_t total = x.rows * x.cols;
  if (total == 0) return cudaSuccess;
  accumulate_kernel<<<flat_blocks(total), kThreads, 0, stream>>>(x, y, accumulate);
  return cudaGetLastError();
}

}  // namespace octet_cuda
