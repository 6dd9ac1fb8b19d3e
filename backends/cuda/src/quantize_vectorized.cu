// Vectorised forms of the two memory-bound kernels that sit on every FP8
// training step: the fused cast+transpose (quantize) and amax. Same results
// as the one-element-per-thread kernels of elementwise.cu (codes are per
// element, amax is a max), with wide memory operations:
// - quantize: a 256-thread block owns a 32-row x 128-column tile; a thread
//   reads 4 consecutive inputs in each of 4 rows with one 8-byte (BF16/FP16)
//   or 16-byte (FP32) load per row, all four loads issued before any is used
//   (so each thread keeps four requests in flight: the kernel is bound by
//   memory latency otherwise), and writes each row's 4 rowwise codes with one
//   4-byte store; the transposed codes go through shared memory (as 4-byte
//   words) and leave as 4-byte words (4 consecutive rows of one column).
//   Codes come from fp8_encode2 (codecs.cuh: the hardware conversion where it
//   gives the definition's bits).
// - amax: contiguous input read as 16-byte chunks (4 FP32 or 8 BF16/FP16),
//   two per thread in flight per iteration.
// Used only where the shapes and addresses allow it (quantize_vectorizable,
// amax_vectorizable); OCTET_CUDA_SIMPLE_KERNELS=1 turns them off.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>

#include "codecs.cuh"
#include "host_float_ops.cuh"
#include "kernels.hpp"

namespace octet_cuda {
namespace {

constexpr int kRowsPerTile = 32;
constexpr int kColsPerTile = 128;  // 32 threads x 4 columns
constexpr int kBlockX = 32, kBlockY = 8;
constexpr unsigned kMaxGridY = 65535u;

bool aligned(const void* p, size_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

bool simple_kernels_forced() {
  const char* v = std::getenv("OCTET_CUDA_SIMPLE_KERNELS");
  return v != nullptr && v[0] == '1';
}

size_t bytes_of(int32_t dtype) { return dtype == OCTET_DTYPE_FP32 ? 4 : 2; }

// Four consecutive inputs widened to FP32 (BF16/FP16: one 8-byte load; FP32:
// one 16-byte load).
__device__ __forceinline__ void load4(const void* base, int32_t dtype, int64_t index, float (&x)[4]) {
  if (dtype == OCTET_DTYPE_FP32) {
    const float4 v = *reinterpret_cast<const float4*>(static_cast<const float*>(base) + index);
    x[0] = v.x;
    x[1] = v.y;
    x[2] = v.z;
    x[3] = v.w;
    return;
  }
  const uint2 v = *reinterpret_cast<const uint2*>(static_cast<const uint16_t*>(base) + index);
  const uint16_t h[4] = {uint16_t(v.x & 0xFFFFu), uint16_t(v.x >> 16), uint16_t(v.y & 0xFFFFu), uint16_t(v.y >> 16)};
  for (int j = 0; j < 4; ++j) x[j] = dtype == OCTET_DTYPE_BF16 ? bf16_decode(h[j]) : fp16_decode(h[j]);
}

// Largest non-NaN |x| of the block into *amax_bits, as elementwise.cu does.
__device__ void reduce_amax_to(float local, unsigned* amax_bits) {
  for (int offset = 16; offset > 0; offset >>= 1) {
    const float other = __shfl_down_sync(0xFFFFFFFFu, local, offset);
    if (other > local) local = other;
  }
  __shared__ float warp_max[32];
  const int thread = threadIdx.x + threadIdx.y * blockDim.x;
  const int lane = thread & 31, warp = thread >> 5, warps = (blockDim.x * blockDim.y + 31) >> 5;
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

constexpr int kRowsPerThread = kRowsPerTile / kBlockY;
constexpr int kTileWordsPerRow = kColsPerTile / 4 + 1;  // +1 word: the transpose reads hit 8 banks

// InDtype: the input's dtype as a template argument, so that each unrolled
// row loads and widens one way only. Launch bounds: at most 64 registers (80
// without), so that 4 blocks (1024 threads, 4 loads each in flight) fit on an
// SM: the bytes in flight per SM must cover HBM latency times bandwidth.
template <int32_t InDtype>
__global__ void __launch_bounds__(kBlockX* kBlockY, 4)
    quantize_vec4_kernel(octet_matrix_view in, bool e4m3, bool saturate, const float* scale_ptr, uint8_t* rowwise,
                         uint8_t* columnwise, float* scale_inv_out, unsigned* amax_bits) {
  __shared__ uint32_t tile_words[kRowsPerTile][kTileWordsPerRow];
  const uint8_t* tile = reinterpret_cast<const uint8_t*>(&tile_words[0][0]);
  constexpr int kTileRowBytes = 4 * kTileWordsPerRow;
  const float scale = *scale_ptr;
  const int thread = threadIdx.x + threadIdx.y * kBlockX;
  if (scale_inv_out != nullptr && blockIdx.x == 0 && blockIdx.y == 0 && thread == 0)
    *scale_inv_out = host_div(1.0f, scale);
  const int64_t rows = in.rows, cols = in.cols;
  const int64_t col_tiles = (cols + kColsPerTile - 1) / kColsPerTile;
  const int64_t row_tiles = (rows + kRowsPerTile - 1) / kRowsPerTile;
  float local = 0.0f;
  for (int64_t ty = blockIdx.y; ty < row_tiles; ty += gridDim.y) {
    for (int64_t tx = blockIdx.x; tx < col_tiles; tx += gridDim.x) {
      const int64_t r0 = ty * kRowsPerTile, c0 = tx * kColsPerTile;
      const int64_t c = c0 + 4 * threadIdx.x;  // cols % 4 == 0: a group is all in or all out
      float x[kRowsPerThread][4];
#pragma unroll
      for (int i = 0; i < kRowsPerThread; ++i) {
        const int64_t r = r0 + threadIdx.y + i * kBlockY;
        if (r < rows && c < cols) load4(in.data, InDtype, r * in.ld + c, x[i]);
      }
#pragma unroll
      for (int i = 0; i < kRowsPerThread; ++i) {
        const int rr = threadIdx.y + i * kBlockY;
        const int64_t r = r0 + rr;
        if (r >= rows || c >= cols) continue;
        float scaled[4];
        for (int j = 0; j < 4; ++j) {
          const float a = abs_value(x[i][j]);
          if (a > local) local = a;  // NaN never compares greater: ignored
          scaled[j] = host_mul(x[i][j], scale);
        }
        const uint32_t word = uint32_t(fp8_encode2(scaled[0], scaled[1], e4m3, saturate)) |
                              (uint32_t(fp8_encode2(scaled[2], scaled[3], e4m3, saturate)) << 16);
        tile_words[rr][threadIdx.x] = word;
        if (rowwise != nullptr) *reinterpret_cast<uint32_t*>(rowwise + r * cols + c) = word;
      }
      if (columnwise != nullptr) {
        __syncthreads();
        // 128 output rows (columns c0..) x 8 words of 4 rows each.
        for (int w = thread; w < kColsPerTile * (kRowsPerTile / 4); w += kBlockX * kBlockY) {
          const int oc = w / (kRowsPerTile / 4), g = w % (kRowsPerTile / 4);
          const int64_t col = c0 + oc, row = r0 + 4 * g;  // rows % 4 == 0: whole words
          if (col >= cols || row >= rows) continue;
          const uint8_t* src = tile + (4 * g) * kTileRowBytes + oc;
          const uint32_t word = uint32_t(src[0]) | (uint32_t(src[kTileRowBytes]) << 8) |
                                (uint32_t(src[2 * kTileRowBytes]) << 16) | (uint32_t(src[3 * kTileRowBytes]) << 24);
          *reinterpret_cast<uint32_t*>(columnwise + col * rows + row) = word;
        }
        __syncthreads();
      }
    }
  }
  if (amax_bits != nullptr) reduce_amax_to(local, amax_bits);
}

// Largest |x| of the 16 bytes in `v` into `local` (NaN never compares
// greater: ignored). BF16 widens by a shift (exact; a NaN stays NaN).
template <int32_t Dtype>
__device__ __forceinline__ void max_abs_of_16_bytes(const uint4& v, float& local) {
  const uint32_t words[4] = {v.x, v.y, v.z, v.w};
  for (int i = 0; i < 4; ++i) {
    float a[2];
    int n = 2;
    if (Dtype == OCTET_DTYPE_FP32) {
      a[0] = abs_value(__uint_as_float(words[i]));
      n = 1;
    } else if (Dtype == OCTET_DTYPE_BF16) {
      a[0] = __uint_as_float((words[i] << 16) & 0x7FFFFFFFu);
      a[1] = __uint_as_float(words[i] & 0x7FFF0000u);
    } else {
      a[0] = abs_value(fp16_decode(uint16_t(words[i] & 0xFFFFu)));
      a[1] = abs_value(fp16_decode(uint16_t(words[i] >> 16)));
    }
    for (int j = 0; j < n; ++j)
      if (a[j] > local) local = a[j];
  }
}

// Contiguous input read as 16-byte chunks, two per thread in flight per
// iteration; the last count % (elements per chunk) elements one per thread.
template <int32_t Dtype>
__global__ void amax_vec16_kernel(const void* data, int64_t count, unsigned* amax_bits) {
  constexpr int64_t kPerChunk = Dtype == OCTET_DTYPE_FP32 ? 4 : 8;
  const uint4* chunk = static_cast<const uint4*>(data);
  const int64_t chunks = count / kPerChunk;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  const int64_t first = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  float local = 0.0f;
  int64_t g = first;
  for (; g + stride < chunks; g += 2 * stride) {
    const uint4 a = chunk[g], b = chunk[g + stride];
    max_abs_of_16_bytes<Dtype>(a, local);
    max_abs_of_16_bytes<Dtype>(b, local);
  }
  if (g < chunks) max_abs_of_16_bytes<Dtype>(chunk[g], local);
  const int64_t tail = chunks * kPerChunk + first;
  if (tail < count) {
    const float a = abs_value(load_as_float(data, Dtype, tail));
    if (a > local) local = a;
  }
  reduce_amax_to(local, amax_bits);
}

}  // namespace

bool quantize_vectorizable(const octet_quantize_args& args) {
  const octet_matrix_view& in = args.input;
  if (simple_kernels_forced()) return false;
  const size_t width = 4 * bytes_of(in.dtype);
  return in.rows % 4 == 0 && in.cols % 4 == 0 && in.ld % 4 == 0 && aligned(in.data, width) &&
         aligned(args.rowwise_out, 4) && aligned(args.columnwise_out, 4);
}

cudaError_t launch_quantize_vectorized(const octet_quantize_args& args, cudaStream_t stream) {
  const int64_t tx = (args.input.cols + kColsPerTile - 1) / kColsPerTile;
  const int64_t ty = (args.input.rows + kRowsPerTile - 1) / kRowsPerTile;
  const dim3 grid(static_cast<unsigned>(std::min<int64_t>(std::max<int64_t>(tx, 1), 1 << 30)),
                  static_cast<unsigned>(std::min<int64_t>(std::max<int64_t>(ty, 1), kMaxGridY)));
  const bool e4m3 = args.out_dtype == OCTET_DTYPE_E4M3, saturate = args.saturate != 0;
  unsigned* amax_bits = reinterpret_cast<unsigned*>(args.amax_out);
  const dim3 block(kBlockX, kBlockY);
  switch (args.input.dtype) {
    case OCTET_DTYPE_FP32:
      quantize_vec4_kernel<OCTET_DTYPE_FP32><<<grid, block, 0, stream>>>(
          args.input, e4m3, saturate, args.scale, args.rowwise_out, args.columnwise_out, args.scale_inv_out, amax_bits);
      break;
    case OCTET_DTYPE_BF16:
      quantize_vec4_kernel<OCTET_DTYPE_BF16><<<grid, block, 0, stream>>>(
          args.input, e4m3, saturate, args.scale, args.rowwise_out, args.columnwise_out, args.scale_inv_out, amax_bits);
      break;
    default:  // FP16: quantize_vectorizable admits the three high-precision dtypes only
      quantize_vec4_kernel<OCTET_DTYPE_FP16><<<grid, block, 0, stream>>>(
          args.input, e4m3, saturate, args.scale, args.rowwise_out, args.columnwise_out, args.scale_inv_out, amax_bits);
      break;
  }
  return cudaGetLastError();
}

bool amax_vectorizable(const octet_matrix_view& in) {
  if (simple_kernels_forced()) return false;
  return (in.ld == in.cols || in.rows == 1) && aligned(in.data, 16);
}

cudaError_t launch_amax_vectorized(const octet_matrix_view& in, unsigned* amax_bits, cudaStream_t stream) {
  const int64_t count = in.rows * in.cols;
  const int64_t chunks = std::max<int64_t>(count / (16 / int64_t(bytes_of(in.dtype))), 1);
  // Enough blocks to fill the device a few times over; each loops.
  const unsigned blocks = static_cast<unsigned>(std::min<int64_t>((chunks + 255) / 256, 2048));
  switch (in.dtype) {
    case OCTET_DTYPE_FP32:
      amax_vec16_kernel<OCTET_DTYPE_FP32><<<blocks, 256, 0, stream>>>(in.data, count, amax_bits);
      break;
    case OCTET_DTYPE_BF16:
      amax_vec16_kernel<OCTET_DTYPE_BF16><<<blocks, 256, 0, stream>>>(in.data, count, amax_bits);
      break;
    default:
      amax_vec16_kernel<OCTET_DTYPE_FP16><<<blocks, 256, 0, stream>>>(in.data, count, amax_bits);
      break;
  }
  return cudaGetLastError();
}

}  // namespace octet_cuda
