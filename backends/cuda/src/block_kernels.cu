// The plugin ABI 1.1 kernels: statistics of per-tensor quantize, block quantize
// (E8M0 / FP32 scales, optionally of the transpose), block dequantize and
// the block-scaled GEMM. The math of one block or one element lives in
// block_math.cuh (checked on the host against the reference); this file
// only distributes it over the device.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "block_kernels.hpp"
#include "block_math.cuh"
#include "codecs.cuh"

namespace octet_cuda {
namespace {

constexpr int kThreads = 256;  // every kernel here runs 1-D blocks of this size
constexpr int kWarps = kThreads / 32;
constexpr unsigned kFullMask = 0xFFFFFFFFu;

unsigned flat_blocks(int64_t work_items, int64_t per_block) {
  const int64_t blocks = (work_items + per_block - 1) / per_block;
  return static_cast<unsigned>(std::min<int64_t>(std::max<int64_t>(blocks, 1), int64_t(1) << 20));
}

// Per-thread statistics; amax is the largest non-NaN |x|.
struct Counts {
  unsigned long long nan = 0, saturated = 0, flushed = 0;
  float amax = 0.0f;

  __device__ void add(unsigned flags) {
    nan += (flags & kCountNan) != 0u;
    saturated += (flags & kCountSaturated) != 0u;
    flushed += (flags & kCountFlushed) != 0u;
  }
  __device__ void see(float x) {
    const float a = abs_value(x);
    if (!is_nan(x) && a > amax) amax = a;
  }
};

// Sums the CTA's counts into the accumulator with one atomic per field
// (64-bit counts; amax by atomicMax on the bits of a non-negative float,
// which order like the floats, +inf included). Every thread must call it.
__device__ void reduce_counts(Counts c, StatisticsAccumulator* accumulator) {
  for (int offset = 16; offset > 0; offset >>= 1) {
    c.nan += __shfl_down_sync(kFullMask, c.nan, offset);
    c.saturated += __shfl_down_sync(kFullMask, c.saturated, offset);
    c.flushed += __shfl_down_sync(kFullMask, c.flushed, offset);
    const float other = __shfl_down_sync(kFullMask, c.amax, offset);
    if (other > c.amax) c.amax = other;
  }
  __shared__ unsigned long long warp_counts[3][kWarps];
  __shared__ float warp_amax[kWarps];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) {
    warp_counts[0][warp] = c.nan;
    warp_counts[1][warp] = c.saturated;
    warp_counts[2][warp] = c.flushed;
    warp_amax[warp] = c.amax;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    Counts total;
    for (int w = 0; w < kWarps; ++w) {
      total.nan += warp_counts[0][w];
      total.saturated += warp_counts[1][w];
      total.flushed += warp_counts[2][w];
      if (warp_amax[w] > total.amax) total.amax = warp_amax[w];
    }
    if (total.nan != 0) atomicAdd(&accumulator->nan_count, total.nan);
    if (total.saturated != 0) atomicAdd(&accumulator->saturated_count, total.saturated);
    if (total.flushed != 0) atomicAdd(&accumulator->flushed_count, total.flushed);
    if (total.amax > 0.0f) atomicMax(&accumulator->amax_bits, __float_as_uint(total.amax));
  }
}

__global__ void finish_statistics_kernel(const StatisticsAccumulator* accumulator, float* amax_out,
                                         octet_quantize_statistics* stats_out) {
  const float amax = __uint_as_float(accumulator->amax_bits);
  if (amax_out != nullptr) *amax_out = amax;
  if (stats_out != nullptr) {
    octet_quantize_statistics s{};
    s.nan_count = accumulator->nan_count;
    s.saturated_count = accumulator->saturated_count;
    s.flushed_count = accumulator->flushed_count;
    s.amax = amax;
    *stats_out = s;
  }
}

// ---- quantize statistics ----

__global__ void __launch_bounds__(kThreads)
    quantize_statistics_kernel(octet_matrix_view in, const float* scale_ptr, bool e4m3, bool saturate,
                               StatisticsAccumulator* accumulator) {
  const float scale = *scale_ptr;
  const int64_t n = in.rows * in.cols;
  Counts counts;
  for (int64_t i = blockIdx.x * int64_t(kThreads) + threadIdx.x; i < n; i += int64_t(gridDim.x) * kThreads) {
    const int64_t r = i / in.cols, c = i - r * in.cols;
    const float x = load_as_float(in.data, in.dtype, r * in.ld + c);
    const float scaled = host_mul(x, scale);
    counts.see(x);
    counts.add(classify_element(x, scaled, fp8_encode(scaled, e4m3, saturate), e4m3));
  }
  reduce_counts(counts, accumulator);
}

// ---- block quantize ----

struct QuantizeJob {
  octet_matrix_view in;
  uint8_t* out;
  void* scale_out;
  StatisticsAccumulator* accumulator;  // NULL: neither amax nor statistics wanted
  int64_t rows, cols;                  // of the output (the transpose of in when transposed)
  int64_t block_rows, block_cols;
  int64_t grid_rows, grid_cols;
  float epsilon;
  bool transposed, e4m3, mx, floor_rounding, power_of_two, want_stats;
};

// Max and infinity flag over a group of kGroup threads (a warp, or the whole
// CTA for large blocks); every thread of the group gets the result.
template <int kGroup>
__device__ void group_reduce(float& amax, bool& has_inf) {
  for (int offset = 16; offset > 0; offset >>= 1) {
    const float other = __shfl_xor_sync(kFullMask, amax, offset);
    if (other > amax) amax = other;
  }
  has_inf = __any_sync(kFullMask, has_inf);
  if (kGroup > 32) {
    __shared__ float group_amax[kWarps];
    __shared__ int group_inf[kWarps];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) {
      group_amax[warp] = amax;
      group_inf[warp] = has_inf ? 1 : 0;
    }
    __syncthreads();
    for (int w = 0; w < kWarps; ++w) {
      if (group_amax[w] > amax) amax = group_amax[w];
      has_inf = has_inf || group_inf[w] != 0;
    }
    __syncthreads();  // the next block's writes wait for these reads
  }
}

// A group of kGroup threads quantizes one block at a time: pass 1 finds the
// block's amax, pass 2 encodes (reading the input again, mostly from cache).
// Elements are visited along the input's rows so that loads coalesce; the
// blocks of a transposed job are taken down the grid's columns so that
// neighbouring groups read neighbouring input columns.
template <int kGroup>
__global__ void __launch_bounds__(kThreads) block_quantize_kernel(QuantizeJob job) {
  constexpr int kGroups = kThreads / kGroup;
  const int rank = threadIdx.x % kGroup, group = threadIdx.x / kGroup;
  const int64_t blocks = job.grid_rows * job.grid_cols;
  Counts counts;
  for (int64_t first = blockIdx.x * int64_t(kGroups); first < blocks; first += int64_t(gridDim.x) * kGroups) {
    const int64_t b = first + group;
    if (b >= blocks) break;  // only for warp groups: a CTA group never gets here past the end
    const int64_t gr = job.transposed ? b % job.grid_rows : b / job.grid_cols;
    const int64_t gc = job.transposed ? b / job.grid_rows : b % job.grid_cols;
    const int64_t r0 = gr * job.block_rows, c0 = gc * job.block_cols;
    const int64_t bh = std::min(job.block_rows, job.rows - r0), bw = std::min(job.block_cols, job.cols - c0);
    const int64_t n = bh * bw;
    auto at = [&](int64_t e, int64_t& out_index) {
      int64_t i, j;
      if (job.transposed) {
        j = e / bh;
        i = e - j * bh;
      } else {
        i = e / bw;
        j = e - i * bw;
      }
      out_index = (r0 + i) * job.cols + (c0 + j);
      const int64_t in_index = job.transposed ? (c0 + j) * job.in.ld + (r0 + i) : (r0 + i) * job.in.ld + (c0 + j);
      return load_as_float(job.in.data, job.in.dtype, in_index);
    };

    // The block's amax is the largest |x| of its finite elements; the
    // tensor amax (amax_out) ignores only NaN, so it counts infinities.
    float block_amax = 0.0f;
    bool has_inf = false;
    for (int64_t e = rank; e < n; e += kGroup) {
      int64_t unused;
      const float x = at(e, unused);
      if (!is_finite(x)) {
        has_inf = has_inf || !is_nan(x);
      } else if (abs_value(x) > block_amax) {
        block_amax = abs_value(x);
      }
    }
    group_reduce<kGroup>(block_amax, has_inf);
    const float tensor_amax = has_inf ? float_of(0x7F800000u) : block_amax;
    if (tensor_amax > counts.amax) counts.amax = tensor_amax;

    const int64_t scale_index = gr * job.grid_cols + gc;
    float multiplier;
    if (job.mx) {
      const uint8_t code = mx_scale_code(block_amax, job.e4m3, job.floor_rounding);
      if (rank == 0) static_cast<uint8_t*>(job.scale_out)[scale_index] = code;
      multiplier = mx_multiplier(code);
    } else {
      multiplier = fp32_block_scale(block_amax, job.e4m3, job.epsilon, job.power_of_two);
      if (rank == 0) static_cast<float*>(job.scale_out)[scale_index] = __fdiv_rn(1.0f, multiplier);
    }

    for (int64_t e = rank; e < n; e += kGroup) {
      int64_t out_index;
      const float x = at(e, out_index);
      float scaled;
      const uint8_t code = block_encode(x, multiplier, job.e4m3, &scaled);
      job.out[out_index] = code;
      if (job.want_stats) counts.add(classify_element(x, scaled, code, job.e4m3));
    }
  }
  if (job.accumulator != nullptr) reduce_counts(counts, job.accumulator);
}

// ---- block dequantize ----

__global__ void __launch_bounds__(kThreads)
    block_dequantize_kernel(octet_matrix_view in, const void* scales, bool e8m0, int64_t block_rows,
                            int64_t block_cols, int64_t grid_cols, octet_matrix_view out) {
  const bool e4m3 = in.dtype == OCTET_DTYPE_E4M3;
  const int64_t n = in.rows * in.cols;
  for (int64_t i = blockIdx.x * int64_t(kThreads) + threadIdx.x; i < n; i += int64_t(gridDim.x) * kThreads) {
    const int64_t r = i / in.cols, c = i - r * in.cols;
    const float scale_inv = block_scale_inv(scales, e8m0, (r / block_rows) * grid_cols + c / block_cols);
    const uint8_t code = static_cast<const uint8_t*>(in.data)[r * in.ld + c];
    store_from_float(out.data, out.dtype, r * out.ld + c, block_dequantize_value(code, e4m3, scale_inv), true);
  }
}

// ---- block GEMM ----

constexpr int kTileM = 64, kTileN = 64, kTileK = 32;
constexpr int kPerThread = 4;  // 16 x 16 threads, 4 x 4 outputs each

// One 64x64 tile of D per CTA iteration. Each thread owns 4x4 outputs and
// runs the reference's order for each: per k-block, products added in
// ascending k into `partial`, then acc += partial * (sa * sb). A product
// of two FP8 values is exact in FP32, so fmaf(a, b, partial) rounds once,
// like partial + (a * b) does: the same bits. NaN results take the scalar
// path of block_math.cuh, which gives the reference host's NaN bits.
__global__ void __launch_bounds__(kThreads) block_gemm_kernel(octet_block_gemm_args args) {
  __shared__ float a_tile[kTileK][kTileM + 1];
  __shared__ float b_tile[kTileK][kTileN + 1];
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const int64_t m = args.m, n = args.n, k = args.k, bk = args.a_block_cols;
  const int64_t k_blocks = (k + bk - 1) / bk;
  const bool e8m0 = args.scale_dtype == OCTET_DTYPE_E8M0;
  const int64_t tiles_n = (n + kTileN - 1) / kTileN;
  const int64_t tiles = ((m + kTileM - 1) / kTileM) * tiles_n;
  for (int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const int64_t m0 = (tile / tiles_n) * kTileM, n0 = (tile % tiles_n) * kTileN;
    float acc[kPerThread][kPerThread], partial[kPerThread][kPerThread];
    for (int i = 0; i < kPerThread; ++i) {
      for (int j = 0; j < kPerThread; ++j) acc[i][j] = partial[i][j] = 0.0f;
    }
    int64_t kb = 0;
    int64_t fold_at = std::min(bk, k);  // one past the current k-block's last k
    for (int64_t k0 = 0; k0 < k; k0 += kTileK) {
      for (int e = threadIdx.x; e < kTileM * kTileK; e += kThreads) {
        const int row = e / kTileK, kk = e % kTileK;
        const int64_t gk = k0 + kk, gm = m0 + row, gn = n0 + row;
        a_tile[kk][row] = gm < m && gk < k ? load_as_float(args.a.data, args.a.dtype, gm * args.a.ld + gk) : 0.0f;
        b_tile[kk][row] = gn < n && gk < k ? load_as_float(args.b.data, args.b.dtype, gn * args.b.ld + gk) : 0.0f;
      }
      __syncthreads();
      const int k_count = static_cast<int>(std::min<int64_t>(kTileK, k - k0));
      for (int kk = 0; kk < k_count; ++kk) {
        float a[kPerThread], b[kPerThread];
        for (int i = 0; i < kPerThread; ++i) a[i] = a_tile[kk][ty + 16 * i];
        for (int j = 0; j < kPerThread; ++j) b[j] = b_tile[kk][tx + 16 * j];
        for (int i = 0; i < kPerThread; ++i) {
          for (int j = 0; j < kPerThread; ++j) partial[i][j] = __fmaf_rn(a[i], b[j], partial[i][j]);
        }
        if (k0 + kk + 1 == fold_at) {  // the same k for every thread: no divergence
          float sa[kPerThread], sb[kPerThread];
          for (int i = 0; i < kPerThread; ++i) {
            const int64_t gm = m0 + ty + 16 * i;
            sa[i] = gm < m ? block_scale_inv(args.a_scale_inv, e8m0, (gm / args.a_block_rows) * k_blocks + kb) : 0.0f;
          }
          for (int j = 0; j < kPerThread; ++j) {
            const int64_t gn = n0 + tx + 16 * j;
            sb[j] = gn < n ? block_scale_inv(args.b_scale_inv, e8m0, (gn / args.b_block_rows) * k_blocks + kb) : 0.0f;
          }
          for (int i = 0; i < kPerThread; ++i) {
            for (int j = 0; j < kPerThread; ++j) {
              acc[i][j] = __fadd_rn(acc[i][j], __fmul_rn(partial[i][j], __fmul_rn(sa[i], sb[j])));
              partial[i][j] = 0.0f;
            }
          }
          ++kb;
          fold_at = std::min(fold_at + bk, k);
        }
      }
      __syncthreads();  // the next tile's loads wait for these reads
    }
    for (int i = 0; i < kPerThread; ++i) {
      const int64_t gm = m0 + ty + 16 * i;
      if (gm >= m) continue;
      for (int j = 0; j < kPerThread; ++j) {
        const int64_t gn = n0 + tx + 16 * j;
        if (gn >= n) continue;
        const float sum = is_nan(acc[i][j]) ? block_gemm_accumulate(args, gm, gn) : acc[i][j];
        store_from_float(args.d.data, args.d.dtype, gm * args.d.ld + gn, block_gemm_epilogue(sum, args, gm, gn),
                         true);
      }
    }
  }
}

}  // namespace

cudaError_t launch_quantize_statistics(const octet_quantize_args& args, StatisticsAccumulator* accumulator,
                                       octet_quantize_statistics* stats_out, cudaStream_t stream) {
  cudaError_t error = cudaMemsetAsync(accumulator, 0, sizeof *accumulator, stream);
  if (error != cudaSuccess) return error;
  const int64_t n = args.input.rows * args.input.cols;
  if (n > 0) {
    quantize_statistics_kernel<<<std::min(flat_blocks(n, kThreads), 4096u), kThreads, 0, stream>>>(
        args.input, args.scale, args.out_dtype == OCTET_DTYPE_E4M3, args.saturate != 0, accumulator);
    error = cudaGetLastError();
    if (error != cudaSuccess) return error;
  }
  finish_statistics_kernel<<<1, 1, 0, stream>>>(accumulator, nullptr, stats_out);
  return cudaGetLastError();
}

cudaError_t launch_block_quantize(const octet_block_quantize_args& args, StatisticsAccumulator* accumulator,
                                  cudaStream_t stream) {
  QuantizeJob job{};
  job.in = args.input;
  job.out = args.out;
  job.scale_out = args.scale_inv_out;
  job.accumulator = accumulator;
  job.transposed = args.transposed != 0;
  job.rows = job.transposed ? args.input.cols : args.input.rows;
  job.cols = job.transposed ? args.input.rows : args.input.cols;
  job.block_rows = args.block_rows;
  job.block_cols = args.block_cols;
  job.grid_rows = (job.rows + job.block_rows - 1) / job.block_rows;
  job.grid_cols = (job.cols + job.block_cols - 1) / job.block_cols;
  job.epsilon = args.amax_epsilon;
  job.e4m3 = args.out_dtype == OCTET_DTYPE_E4M3;
  job.mx = args.scale_dtype == OCTET_DTYPE_E8M0;
  job.floor_rounding = args.e8m0_rounding == 1;
  job.power_of_two = args.power_of_two != 0;
  job.want_stats = args.stats_out != nullptr;
  cudaError_t error = cudaSuccess;
  if (accumulator != nullptr) {
    error = cudaMemsetAsync(accumulator, 0, sizeof *accumulator, stream);
    if (error != cudaSuccess) return error;
  }
  const int64_t blocks = job.grid_rows * job.grid_cols;
  if (blocks > 0) {
    // A warp per block up to 1024 elements (1x32, 1x128), else the whole CTA
    // (128x128): enough threads per block either way, and few idle lanes.
    const int64_t largest = std::min(job.block_rows, job.rows) * std::min(job.block_cols, job.cols);
    if (largest >= 1024) {
      block_quantize_kernel<kThreads><<<flat_blocks(blocks, 1), kThreads, 0, stream>>>(job);
    } else {
      block_quantize_kernel<32><<<flat_blocks(blocks, kWarps), kThreads, 0, stream>>>(job);
    }
    error = cudaGetLastError();
    if (error != cudaSuccess) return error;
  }
  if (accumulator != nullptr) {
    finish_statistics_kernel<<<1, 1, 0, stream>>>(accumulator, args.amax_out, args.stats_out);
    error = cudaGetLastError();
  }
  return error;
}

cudaError_t launch_block_dequantize(const octet_block_dequantize_args& args, cudaStream_t stream) {
  const int64_t n = args.input.rows * args.input.cols;
  if (n == 0) return cudaSuccess;
  const int64_t grid_cols = (args.input.cols + args.block_cols - 1) / args.block_cols;
  block_dequantize_kernel<<<std::min(flat_blocks(n, kThreads), 4096u * 32u), kThreads, 0, stream>>>(
      args.input, args.scale_inv, args.scale_dtype == OCTET_DTYPE_E8M0, args.block_rows, args.block_cols, grid_cols,
      args.output);
  return cudaGetLastError();
}

cudaError_t launch_block_gemm(const octet_block_gemm_args& args, cudaStream_t stream) {
  if (args.m == 0 || args.n == 0) return cudaSuccess;
  const int64_t tiles = ((args.m + kTileM - 1) / kTileM) * ((args.n + kTileN - 1) / kTileN);
  block_gemm_kernel<<<flat_blocks(tiles, 1), kThreads, 0, stream>>>(args);
  return cudaGetLastError();
}

}  // namespace octet_cuda
