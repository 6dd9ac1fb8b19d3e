// Element-wise kernels: convert, amax, fused quantize (cast + transpose +
// amax + scale_inv in one pass), transpose, dequantize, the GEMM epilogue.
// Every narrowing goes through codecs.cuh; every FP32 operation that the
// reference performs is one of host_float_ops.cuh's (round to nearest on its
// own, the reference host's NaN results), so neither contraction, fast math
// nor the GPU's canonical NaN can change a bit.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "codecs.cuh"
#include "host_float_ops.cuh"
#include "epilogue.cuh"
#include "kernels.hpp"

namespace octet_cuda {
namespace {

constexpr int kTile = 32;      // tile edge of the transposing kernels
constexpr int kTileRows = 8;   // threads per tile column (blockDim.y)
constexpr int kThreads = 256;  // threads of the flat kernels
constexpr unsigned kMaxGridY = 65535u;

unsigned flat_blocks(int64_t n) {
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(std::min<int64_t>(std::max<int64_t>(blocks, 1), 4096 * 32));
}

dim3 tile_grid(int64_t rows, int64_t cols) {
  const int64_t tx = (cols + kTile - 1) / kTile, ty = (rows + kTile - 1) / kTile;
  return dim3(static_cast<unsigned>(std::min<int64_t>(std::max<int64_t>(tx, 1), 1 << 30)),
              static_cast<unsigned>(std::min<int64_t>(std::max<int64_t>(ty, 1), kMaxGridY)));
}

// Largest non-NaN |x| of a block into *amax_bits (atomicMax on the bits of a
// non-negative float orders like the float, +inf included).
__device__ void block_amax_to(float local, unsigned* amax_bits) {
  for (int offset = 16; offset > 0; offset >>= 1) {
    const float other = __shfl_down_sync(0xFFFFFFFFu, local, offset);
    if (other > local) local = other;
  }
  __shared__ float warp_max[32];
  const int lane = (threadIdx.x + threadIdx.y * blockDim.x) & 31;
  const int warp = (threadIdx.x + threadIdx.y * blockDim.x) >> 5;
  const int warps = (blockDim.x * blockDim.y + 31) >> 5;
  if (lane == 0) warp_max[warp] = local;
  __syncthreads();
  if (warp == 0) {
    local = lane < warps ? warp_max[lane] : 0.0f;
    for (int offset = 16; offset > 0; offset >>= 1) {
      const float other = __shfl_down_sync(0xFFFFFFFFu, local, offset);
      if (other > local) local = other;
    }
    if (lane == 0 && local > 0.0f) atomicMax(amax_bits, __float_as_uint(local));
  }
}

__global__ void convert_kernel(octet_matrix_view in, octet_matrix_view out, bool saturate) {
  const int64_t n = in.rows * in.cols;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / in.cols, c = i - r * in.cols;
    const int64_t src = r * in.ld + c, dst = r * out.ld + c;
    if (in.dtype == OCTET_DTYPE_FP32 && out.dtype == OCTET_DTYPE_FP32) {
      static_cast<uint32_t*>(out.data)[dst] = static_cast<const uint32_t*>(in.data)[src];  // bits as they are
    } else {
      store_from_float(out.data, out.dtype, dst, load_as_float(in.data, in.dtype, src), saturate);
    }
  }
}

__global__ void amax_kernel(octet_matrix_view in, unsigned* amax_bits) {
  const int64_t n = in.rows * in.cols;
  float local = 0.0f;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / in.cols, c = i - r * in.cols;
    const float a = fabsf(load_as_float(in.data, in.dtype, r * in.ld + c));
    if (a > local) local = a;  // NaN never compares greater: ignored
  }
  block_amax_to(local, amax_bits);
}

// One 32x32 tile per block iteration: q = fp8(x * scale) written rowwise
// (coalesced along columns) and transposed (coalesced along rows, through
// shared memory), the amax of the same loads reduced at the end.
__global__ void quantize_kernel(octet_matrix_view in, bool e4m3, bool saturate, const float* scale_ptr,
                                uint8_t* rowwise, uint8_t* columnwise, float* scale_inv_out, unsigned* amax_bits) {
  __shared__ uint8_t tile[kTile][kTile + 4];
  const float scale = *scale_ptr;
  if (scale_inv_out != nullptr && blockIdx.x == 0 && blockIdx.y == 0 && threadIdx.x == 0 && threadIdx.y == 0) {
    *scale_inv_out = host_div(1.0f, scale);
  }
  const int64_t rows = in.rows, cols = in.cols;
  const int64_t col_tiles = (cols + kTile - 1) / kTile, row_tiles = (rows + kTile - 1) / kTile;
  float local = 0.0f;
  for (int64_t ty = blockIdx.y; ty < row_tiles; ty += gridDim.y) {
    for (int64_t tx = blockIdx.x; tx < col_tiles; tx += gridDim.x) {
      const int64_t r0 = ty * kTile, c0 = tx * kTile;
      for (int j = threadIdx.y; j < kTile; j += kTileRows) {
        const int64_t r = r0 + j, c = c0 + threadIdx.x;
        if (r < rows && c < cols) {
          const float x = load_as_float(in.data, in.dtype, r * in.ld + c);
          const float a = fabsf(x);
          if (a > local) local = a;
          const uint8_t q = fp8_encode(host_mul(x, scale), e4m3, saturate);
          if (rowwise != nullptr) rowwise[r * cols + c] = q;
          tile[j][threadIdx.x] = q;
        }
      }
      if (columnwise != nullptr) {
        __syncthreads();
        for (int j = threadIdx.y; j < kTile; j += kTileRows) {
          const int64_t c = c0 + j, r = r0 + threadIdx.x;  // output row c, column r
          if (r < rows && c < cols) columnwise[c * rows + r] = tile[threadIdx.x][j];
        }
        __syncthreads();
      }
    }
  }
  if (amax_bits != nullptr) block_amax_to(local, amax_bits);
}

__global__ void scale_inv_kernel(const float* scale, float* scale_inv_out) {
  *scale_inv_out = host_div(1.0f, *scale);
}

template <typename T>
__global__ void transpose_kernel(const T* in, int64_t rows, int64_t cols, int64_t ld_in, T* out, int64_t ld_out) {
  __shared__ T tile[kTile][kTile + 1];
  const int64_t col_tiles = (cols + kTile - 1) / kTile, row_tiles = (rows + kTile - 1) / kTile;
  for (int64_t ty = blockIdx.y; ty < row_tiles; ty += gridDim.y) {
    for (int64_t tx = blockIdx.x; tx < col_tiles; tx += gridDim.x) {
      const int64_t r0 = ty * kTile, c0 = tx * kTile;
      for (int j = threadIdx.y; j < kTile; j += kTileRows) {
        const int64_t r = r0 + j, c = c0 + threadIdx.x;
        if (r < rows && c < cols) tile[j][threadIdx.x] = in[r * ld_in + c];
      }
      __syncthreads();
      for (int j = threadIdx.y; j < kTile; j += kTileRows) {
        const int64_t c = c0 + j, r = r0 + threadIdx.x;
        if (r < rows && c < cols) out[c * ld_out + r] = tile[threadIdx.x][j];
      }
      __syncthreads();
    }
  }
}

__global__ void dequantize_kernel(octet_matrix_view in, const float* scale_inv_ptr, octet_matrix_view out) {
  const float scale_inv = *scale_inv_ptr;
  const bool e4m3 = in.dtype == OCTET_DTYPE_E4M3;
  const int64_t n = in.rows * in.cols;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / in.cols, c = i - r * in.cols;
    const float q = fp8_decode(static_cast<const uint8_t*>(in.data)[r * in.ld + c], e4m3);
    // decode(q) * scale_inv, operands in the reference's order (NaN bits).
    store_from_float(out.data, out.dtype, r * out.ld + c, host_mul(q, scale_inv), true);
  }
}

}  // namespace

namespace {

__global__ void gemm_epilogue_kernel(const float* acc, octet_gemm_args args) {
  const int64_t total = args.m * args.n;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t m = i / args.n, n = i - m * args.n;
    finish_element(acc[i], args, m, n);
  }
}

}  // namespace

cudaError_t probe_kernel_image() {
  cudaFuncAttributes attributes;
  return cudaFuncGetAttributes(&attributes, reinterpret_cast<const void*>(&convert_kernel));
}

cudaError_t launch_convert(const octet_matrix_view& in, const octet_matrix_view& out, bool saturate,
                           cudaStream_t stream) {
  const int64_t n = in.rows * in.cols;
  if (n == 0) return cudaSuccess;
  convert_kernel<<<flat_blocks(n), kThreads, 0, stream>>>(in, out, saturate);
  return cudaGetLastError();
}

cudaError_t launch_amax(const octet_matrix_view& in, float* amax_out, cudaStream_t stream) {
  cudaError_t error = cudaMemsetAsync(amax_out, 0, sizeof(float), stream);
  const int64_t n = in.rows * in.cols;
  if (error != cudaSuccess || n == 0) return error;
  if (amax_vectorizable(in)) return launch_amax_vectorized(in, reinterpret_cast<unsigned*>(amax_out), stream);
  amax_kernel<<<std::min(flat_blocks(n), 1024u), kThreads, 0, stream>>>(in, reinterpret_cast<unsigned*>(amax_out));
  return cudaGetLastError();
}

cudaError_t launch_quantize(const octet_quantize_args& args, cudaStream_t stream) {
  if (args.amax_out != nullptr) {
    const cudaError_t error = cudaMemsetAsync(args.amax_out, 0, sizeof(float), stream);
    if (error != cudaSuccess) return error;
  }
  const int64_t n = args.input.rows * args.input.cols;
  if (n == 0) {
    if (args.scale_inv_out != nullptr) scale_inv_kernel<<<1, 1, 0, stream>>>(args.scale, args.scale_inv_out);
    return cudaGetLastError();
  }
  if (quantize_vectorizable(args)) return launch_quantize_vectorized(args, stream);
  quantize_kernel<<<tile_grid(args.input.rows, args.input.cols), dim3(kTile, kTileRows), 0, stream>>>(
      args.input, args.out_dtype == OCTET_DTYPE_E4M3, args.saturate != 0, args.scale, args.rowwise_out,
      args.columnwise_out, args.scale_inv_out, reinterpret_cast<unsigned*>(args.amax_out));
  return cudaGetLastError();
}

cudaError_t launch_transpose(const octet_matrix_view& in, const octet_matrix_view& out, size_t element_bytes,
                             cudaStream_t stream) {
  if (in.rows * in.cols == 0) return cudaSuccess;
  const dim3 grid = tile_grid(in.rows, in.cols), block(kTile, kTileRows);
  switch (element_bytes) {
    case 1:
      transpose_kernel<uint8_t><<<grid, block, 0, stream>>>(static_cast<const uint8_t*>(in.data), in.rows, in.cols,
                                                            in.ld, static_cast<uint8_t*>(out.data), out.ld);
      break;
    case 2:
      transpose_kernel<uint16_t><<<grid, block, 0, stream>>>(static_cast<const uint16_t*>(in.data), in.rows,
                                                             in.cols, in.ld, static_cast<uint16_t*>(out.data), out.ld);
      break;
    default:
      transpose_kernel<uint32_t><<<grid, block, 0, stream>>>(static_cast<const uint32_t*>(in.data), in.rows,
                                                             in.cols, in.ld, static_cast<uint32_t*>(out.data), out.ld);
      break;
  }
  return cudaGetLastError();
}

cudaError_t launch_dequantize(const octet_dequantize_args& args, cudaStream_t stream) {
  const int64_t n = args.input.rows * args.input.cols;
  if (n == 0) return cudaSuccess;
  dequantize_kernel<<<flat_blocks(n), kThreads, 0, stream>>>(args.input, args.scale_inv, args.output);
  return cudaGetLastError();
}

cudaError_t launch_gemm_epilogue(const float* acc, const octet_gemm_args& args, cudaStream_t stream) {
  const int64_t n = args.m * args.n;
  if (n == 0) return cudaSuccess;
  gemm_epilogue_kernel<<<flat_blocks(n), kThreads, 0, stream>>>(acc, args);
  return cudaGetLastError();
}

}  // namespace octet_cuda
