// The block-scaled FP8 GEMM (numerics.md section 12) and the per-row
// scaled one (section 16).
//
// The block GEMM folds power-of-two scales into the operands where that is
// exact and the FP32 engine serves (gemm/block_gemm_folded.hpp). Otherwise it
// keeps the documented order between k-blocks: each
// k-block's partial products, then acc = acc + partial * (sa * sb) element
// by element, then the epilogue of section 8. At level avx512_bf16 and
// above, with k-blocks of 32, 64, 128 or 256 (MXFP8, 1x128, 128x128), the
// partial products come from VDPBF16PS on BF16 panels packed in cache
// (fp8_block_gemm_bf16, gemm/gemm_fp8.hpp), unless the CPU's FP8 GEMM engine is
// FP32 FMAs (gemm/fp8_gemm_engine.hpp) and the k-blocks are 128 or more; otherwise, for
// each output tile, from oneDNN sgemm calls over the block on FP32 blocks
// that each thread widens in its cache. Only the order inside a block
// differs from the reference. With one k-block and one scale per row of
// each operand (per-row scaling, numerics.md section 16), the FP8 GEMM's
// own kernel gives the sums from the codes and the scales go into the
// epilogue, where the engine is VDPBF16PS or the shape a decode shape.
#include <octet/octet_math.h>

#include <dnnl.h>
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "block/block_common.hpp"
#include "block/block_rows.hpp"
#include "block/block_scales.hpp"
#include "codecs/scalar_codecs.hpp"
#include "codecs/widen_fp8_avx512.hpp"
#include "dispatch/implementation_list.hpp"
#include "dispatch/isa.hpp"
#include "dispatch/parallel_policy.hpp"
#include "elementwise/activation_rows.hpp"
#include "elementwise/row_kernels.hpp"
#include "gemm/block_gemm_folded.hpp"
#include "gemm/fp8_gemm_engine.hpp"
#include "gemm/gemm_fp8.hpp"
#include "gemm/gemm_fp8_amx.hpp"
#include "plugin/checks.hpp"
#include "plugin/errors.hpp"
#include "plugin/kernels.hpp"

namespace octet_cpu {
namespace {

int32_t check_block_gemm(const octet_block_gemm_args* args) {
  const char* kernel = "block_gemm";
  if (int32_t s = require_pointer(kernel, "args", args)) return s;
  if (int32_t s = require_struct_size(kernel, "args", args->struct_size, sizeof(octet_block_gemm_args))) {
    return s;
  }
  if (args->m < 0 || args->n < 0 || args->k < 0) {
    return report(OCTET_STATUS_INVALID_ARGUMENT, std::string(kernel) + ": args->m, args->n, args->k are " +
                                                     std::to_string(args->m) + ", " + std::to_string(args->n) + ", " +
                                                     std::to_string(args->k) + "; none may be negative");
  }
  if (int32_t s = require_matrix(kernel, "args->a", args->a, Accept::Fp8)) return s;
  if (int32_t s = require_matrix(kernel, "args->b", args->b, Accept::Fp8)) return s;
  if (int32_t s = require_shape(kernel, "args->a", args->a, args->m, args->k, "[m,k]")) return s;
  if (int32_t s = require_shape(kernel, "args->b", args->b, args->n, args->k, "[n,k]")) return s;
  if (int32_t s = require_scale_dtype(kernel, args->scale_dtype)) return s;
  if (args->a_block_rows < 1 || args->a_block_cols < 1 || args->b_block_rows < 1 || args->b_block_cols < 1 ||
      args->a_block_cols != args->b_block_cols) {
    return report(OCTET_STATUS_INVALID_ARGUMENT,
                  std::string(kernel) + ": block shapes " + std::to_string(args->a_block_rows) + "x" +
                      std::to_string(args->a_block_cols) + " and " + std::to_string(args->b_block_rows) + "x" +
                      std::to_string(args->b_block_cols) +
                      " must be at least 1x1 and cover the same extent of k "
                      "(a_block_cols == b_block_cols)");
  }
  if (int32_t s = require_pointer(kernel, "args->a_scale_inv", args->a_scale_inv)) return s;
  if (int32_t s = require_pointer(kernel, "args->b_scale_inv", args->b_scale_inv)) return s;
  if (int32_t s = require_matrix(kernel, "args->d", args->d, Accept::HighPrecision, OCTET_STATUS_UNSUPPORTED)) {
    return s;
  }
  if (int32_t s = require_shape(kernel, "args->d", args->d, args->m, args->n, "[m,n]")) return s;
  if (args->bias.data != nullptr) {
    if (int32_t s = require_matrix(kernel, "args->bias", args->bias, Accept::HighPrecision)) {
      return s;
    }
    if (int32_t s = require_shape(kernel, "args->bias", args->bias, 1, args->n, "one row of n elements")) {
      return s;
    }
  }
  if (args->epilogue != OCTET_EPILOGUE_NONE && args->epilogue != OCTET_EPILOGUE_GELU) {
    return report(OCTET_STATUS_INVALID_ARGUMENT, std::string(kernel) + ": args->epilogue is " +
                                                     std::to_string(args->epilogue) +
                                                     "; it must be OCTET_EPILOGUE_NONE or OCTET_EPILOGUE_GELU");
  }
  return OCTET_STATUS_SUCCESS;
}

// The BF16-dot-product kernels take the operands (rows contiguous): the
// level has them, and no FNUZ operand holds its NaN code (gemm/gemm_fp8.hpp).
bool bf16_kernels_take(const octet_block_gemm_args* args) {
  if (cpu_isa() < Isa::Avx512Bf16 || !fp8_gemm_bf16_built()) return false;
  const Fp8Operand a{static_cast<const uint8_t*>(args->a.data), args->a.ld, false, args->a.dtype};
  const Fp8Operand b{static_cast<const uint8_t*>(args->b.data), args->b.ld, false, args->b.dtype};
  return !fp8_operand_has_fnuz_nan(a, args->m, args->k) && !fp8_operand_has_fnuz_nan(b, args->n, args->k);
}

// Whether the block GEMM's m x n sums can be written straight into D: D
// is FP32 and its old values are not needed (beta is 0).
bool writes_sums_into_d(const octet_block_gemm_args* args) {
  return args->d.dtype == OCTET_DTYPE_FP32 && args->beta == 0.0f;
}

// The epilogue of section 8 on the m x n sums acc (row stride ldc): v =
// alpha * acc, then beta, bias and GELU, row by row, into D. acc is D's
// own memory when writes_sums_into_d(args) holds.
int32_t finish_block_gemm(const octet_block_gemm_args* args, float* acc, int64_t ldc) {
  const int64_t m = args->m, n = args->n;
  const RowKernels& rk = row_kernels();
  const octet_matrix_view d = args->d;
  const float alpha = args->alpha, beta = args->beta;
  const bool direct = writes_sums_into_d(args);
  std::vector<float> bias_values;
  if (args->bias.data != nullptr) {
    bias_values.resize(static_cast<std::size_t>(n));
    rk.widen(args->bias.data, args->bias.dtype, n, bias_values.data());
  }
  const bool has_gelu = args->epilogue == OCTET_EPILOGUE_GELU;
  // In place with nothing to apply: alpha * v is v when alpha is 1.
  if (direct && alpha == 1.0f && bias_values.empty() && !has_gelu) return OCTET_STATUS_SUCCESS;
  std::vector<float> old_rows(beta != 0.0f ? element_count(omp_get_max_threads(), n) : 0);
#pragma omp parallel if (split_elements(double(m * n)))
  {
    const octet::DefaultFloatMode float_mode;  // this thread, for the region (dispatch/parallel_policy.hpp)
    float* old = beta != 0.0f ? old_rows.data() + static_cast<std::size_t>(omp_get_thread_num()) * n : nullptr;
#pragma omp for schedule(static)
    for (int64_t i = 0; i < m; ++i) {
      float* v = acc + i * ldc;
      for (int64_t j = 0; j < n; ++j) v[j] = alpha * v[j];
      if (beta != 0.0f) {
        rk.widen(element_ptr(d, i, 0), d.dtype, n, old);
        for (int64_t j = 0; j < n; ++j) v[j] = v[j] + beta * old[j];
      }
      if (!bias_values.empty()) {
        for (int64_t j = 0; j < n; ++j) v[j] = v[j] + bias_values[static_cast<std::size_t>(j)];
      }
      if (has_gelu) {
        activation_rows().gelu(v, n, v);
      }
      if (!direct) rk.narrow(v, n, d.dtype, true, element_ptr_mut(d, i, 0));
    }
  }
  return OCTET_STATUS_SUCCESS;
}

// The block GEMM on BF16 dot products: FP32 scale tables, the m x n sums
// from fp8_block_gemm_bf16 (in D itself when D is FP32 and beta is 0, else
// in a workspace), then the epilogue of section 8 row by row.
using BlockSums = void (*)(const Fp8Operand& a, const Fp8Operand& b, int64_t m, int64_t n, int64_t k, int64_t bk,
                           const BlockScaleTable& sa, const BlockScaleTable& sb, float* acc, int64_t ldc);

// The block GEMM on a kernel that takes the decoded scale tables
// (fp8_block_gemm_bf16, fp8_block_gemm_amx), then the epilogue.
int32_t block_gemm_with_tables(const octet_block_gemm_args* args, GemmWorkspace& ws, BlockSums sums) {
  const int64_t m = args->m, n = args->n, k = args->k;
  const int64_t bk = args->a_block_cols, k_blocks = ceil_div(k, bk);
  const int64_t bra = args->a_block_rows, brb = args->b_block_rows;
  const int64_t a_grid = ceil_div(m, bra) * k_blocks, b_grid = ceil_div(n, brb) * k_blocks;
  float* sa = ws.a.get(static_cast<std::size_t>(a_grid));
  float* sb = ws.b.get(static_cast<std::size_t>(b_grid));
  for (int64_t i = 0; i < a_grid; ++i) {
    sa[i] = scale_value(args->a_scale_inv, args->scale_dtype, static_cast<std::size_t>(i));
  }
  for (int64_t i = 0; i < b_grid; ++i) {
    sb[i] = scale_value(args->b_scale_inv, args->scale_dtype, static_cast<std::size_t>(i));
  }
  // The sums go straight into D when D is FP32 and its old values are not
  // needed (as in per_row_gemm); else into an m x n FP32 buffer.
  const bool direct = writes_sums_into_d(args);
  float* acc = direct ? static_cast<float*>(args->d.data) : ws.acc.get(element_count(m, n));
  const int64_t ldc = direct ? args->d.ld : n;
  const Fp8Operand a{static_cast<const uint8_t*>(args->a.data), args->a.ld, false, args->a.dtype};
  const Fp8Operand b{static_cast<const uint8_t*>(args->b.data), args->b.ld, false, args->b.dtype};
  sums(a, b, m, n, k, bk, BlockScaleTable{sa, bra, k_blocks}, BlockScaleTable{sb, brb, k_blocks}, acc, ldc);
  return finish_block_gemm(args, acc, ldc);
}

int32_t block_gemm_bf16(const octet_block_gemm_args* args, GemmWorkspace& ws) {
  return block_gemm_with_tables(args, ws, fp8_block_gemm_bf16);
}

int32_t block_gemm_amx(const octet_block_gemm_args* args, GemmWorkspace& ws) {
  return block_gemm_with_tables(args, ws, fp8_block_gemm_amx);
}

// The block GEMM with its scales folded into the operands
// (gemm/block_gemm_folded.hpp): the m x n sums (in D itself when D is FP32 and
// beta is 0, else in a workspace), then the epilogue of section 8.
int32_t block_gemm_folded(const octet_block_gemm_args* args, GemmWorkspace& ws) {
  const bool direct = writes_sums_into_d(args);
  float* acc = direct ? static_cast<float*>(args->d.data) : ws.acc.get(element_count(args->m, args->n));
  const int64_t ldc = direct ? args->d.ld : args->n;
  if (int32_t s = block_gemm_folded_sums(args, acc, ldc)) return s;
  return finish_block_gemm(args, acc, ldc);
}

// D = alpha * (0 + P[i,j] * (sa[i] * sb[j])) (+ beta * D, + bias, GELU):
// numerics.md section 12 with one k-block, P the per-tensor FP8 GEMM's
// sums (gemm_sums) straight from the codes, one FP32 m x n accumulator.
int32_t per_row_gemm(const octet_block_gemm_args* args) {
  const int64_t m = args->m, n = args->n, k = args->k;
  const RowKernels& rk = row_kernels();
  const octet_matrix_view d = args->d;
  const float alpha = args->alpha, beta = args->beta;
  const bool has_bias = args->bias.data != nullptr;
  const bool has_gelu = args->epilogue == OCTET_EPILOGUE_GELU;
  const float* sa = static_cast<const float*>(args->a_scale_inv);
  const float* sb = static_cast<const float*>(args->b_scale_inv);
  // The sums go straight into D when D is FP32 and its old values are not needed.
  const bool direct = d.dtype == OCTET_DTYPE_FP32 && beta == 0.0f;
  Buffer<float> acc_buffer;
  if (!direct) acc_buffer.reset(element_count(m, n));
  float* acc = direct ? static_cast<float*>(d.data) : acc_buffer.get();
  const int64_t ldc = direct ? d.ld : n;
  // k >= 1: one k-block, summed as the per-tensor FP8 GEMM sums it.
  if (int32_t s = gemm_sums("block_gemm", args->a, false, args->b, false, m, n, k, acc, ldc)) return s;
  Buffer<float> bias_values;
  if (has_bias) {
    bias_values.reset(static_cast<std::size_t>(n));
    rk.widen(args->bias.data, args->bias.dtype, n, bias_values.get());
  }
  Buffer<float> old_rows;
  if (beta != 0.0f) old_rows.reset(element_count(omp_get_max_threads(), n));
#pragma omp parallel if (split_elements(double(m * n)))
  {
    const octet::DefaultFloatMode float_mode;  // this thread, for the region (dispatch/parallel_policy.hpp)
    float* old = beta != 0.0f ? old_rows.get() + static_cast<std::size_t>(omp_get_thread_num()) * n : nullptr;
#pragma omp for schedule(static)
    for (int64_t i = 0; i < m; ++i) {
      float* v = acc + i * ldc;
      const float s = sa[i];
      for (int64_t j = 0; j < n; ++j) v[j] = alpha * (0.0f + v[j] * (s * sb[j]));
      if (beta != 0.0f) {
        rk.widen(element_ptr(d, i, 0), d.dtype, n, old);
        for (int64_t j = 0; j < n; ++j) v[j] = v[j] + beta * old[j];
      }
      if (has_bias) {
        for (int64_t j = 0; j < n; ++j) v[j] = v[j] + bias_values.get()[j];
      }
      if (has_gelu) {
        activation_rows().gelu(v, n, v);
      }
      if (!direct) rk.narrow(v, n, d.dtype, true, element_ptr_mut(d, i, 0));
    }
  }
  return OCTET_STATUS_SUCCESS;
}

// The smallest k-block the FP32 engine takes (see kBlockGemmList).
constexpr int64_t kFp32EngineMinBlockK = 128;

// One block GEMM's arguments (checked) and what the candidates ask of them.
struct BlockGemmProblem {
  const octet_block_gemm_args* args;
  int64_t k_blocks;
  // The CPU's FP8 GEMM engine is FP32 FMAs or oneDNN's BF16 matmul
  // (gemm/fp8_gemm_engine.hpp) and the shape is no decode shape.
  bool engine_fp32() const {
    return fp8_gemm_engine() != Fp8GemmEngine::Bf16Dot && !fp8_gemm_bf16_decodes(args->m, false);
  }
  // The BF16 kernels can run: level, build, and no FNUZ NaN code (one scan
  // of each operand, at most once).
  bool bf16_able() const {
    if (bf16_able_ < 0) bf16_able_ = args->k > 0 && bf16_kernels_take(args);
    return bf16_able_ != 0;
  }

  // Cached: -1 until first asked.
  mutable int bf16_able_ = -1;
};

int32_t block_gemm_fp32_blocks(const octet_block_gemm_args* args, GemmWorkspace& ws);

using BlockGemmRun = int32_t (*)(const octet_block_gemm_args* args, GemmWorkspace& ws);
using BlockGemmCandidate = Candidate<BlockGemmProblem, BlockGemmRun>;

// The block GEMM's implementation list (dispatch/implementation_list.hpp).
// On the FP32 and oneDNN BF16 engines, compute-bound shapes with several
// k-blocks whose scales fold exactly into the operands
// (gemm/block_gemm_folded.hpp: MXFP8's E8M0 scales in any sane range,
// power-of-two FP32 scales) are summed on the sgemm tiles in slices of 256
// k, as are such shapes where the BF16 kernels cannot run. Other
// compute-bound shapes there with k-blocks of 128 or more take the
// per-block FP32 path; decode shapes keep the decode kernel, and other
// 32-wide k-blocks the BF16 kernel: one sgemm call per 32 k costs more than
// VDPBF16PS's half rate. Per-row scales (one k-block, one scale per row of
// each operand) factor out of the sum, so the per-tensor FP8 GEMM's sums
// (its own implementation list: gemm/gemm_sums.cpp) are the block's
// partial sums and the scales go into the epilogue.
constexpr BlockGemmCandidate kBlockGemmList[] = {
    {"block_gemm_amx (TDPBF16PS per k-block)", Isa::Amx,
     [] { return fp8_gemm_amx_built() && fp8_gemm_engine() == Fp8GemmEngine::Amx; },
     [](const BlockGemmProblem& p) {
       const octet_block_gemm_args* a = p.args;
       const bool per_row =
           p.k_blocks == 1 && a->a_block_rows == 1 && a->b_block_rows == 1 && a->scale_dtype == OCTET_DTYPE_FP32;
       return !per_row && fp8_block_gemm_amx_takes(a->a_block_cols) && a->m >= kAmxMinDecodeRows && p.bf16_able();
     },
     block_gemm_amx},
    {"block_gemm_folded (scales folded, sgemm_tiles)", Isa::Portable, nullptr,
     [](const BlockGemmProblem& p) {
       return p.k_blocks > 1 && (p.engine_fp32() || !p.bf16_able()) && block_scales_fold(p.args);
     },
     block_gemm_folded},
    {"per_row_gemm (per-tensor GEMM sums, scales in the epilogue)", Isa::Portable, nullptr,
     [](const BlockGemmProblem& p) {
       const octet_block_gemm_args* a = p.args;
       return p.k_blocks == 1 && a->a_block_rows == 1 && a->b_block_rows == 1 && a->scale_dtype == OCTET_DTYPE_FP32;
     },
     [](const octet_block_gemm_args* args, GemmWorkspace&) { return per_row_gemm(args); }},
    {"block_gemm_bf16 (VDPBF16PS per k-block)", Isa::Avx512Bf16, fp8_gemm_bf16_built,
     [](const BlockGemmProblem& p) {
       const int64_t bk = p.args->a_block_cols;
       return fp8_block_gemm_bf16_takes(bk) && p.bf16_able() && !(p.engine_fp32() && bk >= kFp32EngineMinBlockK);
     },
     block_gemm_bf16},
    {"block_gemm_fp32_blocks (oneDNN sgemm per k-block)", Isa::Portable, nullptr, nullptr, block_gemm_fp32_blocks},
};
static_assert(ends_with_fallback(kBlockGemmList), "the last candidate takes every problem");

}  // namespace

int32_t check_block_gemm_kernel_args(const octet_block_gemm_args* args) { return check_block_gemm(args); }

int32_t block_gemm_kernel(const octet_block_gemm_args* args, GemmWorkspace& ws) {
  if (int32_t s = check_block_gemm(args)) return s;
  if (args->m == 0 || args->n == 0) return OCTET_STATUS_SUCCESS;
  const BlockGemmProblem problem{args, ceil_div(args->k, args->a_block_cols)};
  return choose(kBlockGemmList, cpu_isa(), problem)->impl(args, ws);
}

namespace {

// The per-block FP32 path.
int32_t block_gemm_fp32_blocks(const octet_block_gemm_args* args, GemmWorkspace& ws) {
  const int64_t m = args->m, n = args->n, k = args->k;
  const int64_t bk = args->a_block_cols, k_blocks = ceil_div(k, bk);
  const int64_t bra = args->a_block_rows, brb = args->b_block_rows;
  const RowKernels& rk = row_kernels();
  const octet_matrix_view d = args->d;
  const float alpha = args->alpha, beta = args->beta;
  const bool has_bias = args->bias.data != nullptr;
  const bool has_gelu = args->epilogue == OCTET_EPILOGUE_GELU;
  std::vector<float> bias_values;
  if (has_bias) {
    bias_values.resize(static_cast<std::size_t>(n));
    rk.widen(args->bias.data, args->bias.dtype, n, bias_values.data());
  }

  // FP32 path: output tiles of kTm x kTn, each summed k-block by k-block;
  // a k-block's partial products come from oneDNN's sgemm on slices of at
  // most kSlice k whose FP32 blocks each thread widens in its cache (no
  // FP32 copy of a whole operand). Per thread: the tile's partial products
  // and accumulator, the widened A and B slices, the tile's b scales and
  // one row of old D. Every tile is summed on one thread in the same order,
  // so the bits do not depend on the thread count.
  constexpr int64_t kTm = 512, kTn = 512, kSlice = 256;
  const int64_t tm = std::min(kTm, m), tn = std::min(kTn, n), slice = std::min(kSlice, std::min(bk, k));
  const int64_t tiles_down = ceil_div(m, tm), tiles_across = ceil_div(n, tn);
  const int nthreads = static_cast<int>(std::min<int64_t>(
      tiles_down * tiles_across,
      threads_for(2.0 * double(m) * double(n) * double(std::max<int64_t>(k, 1)), kGemmFlopsPerThread)));
  const std::size_t per_thread =
      static_cast<std::size_t>(2 * tm * tn + (tm + tn) * std::max<int64_t>(slice, 1) + 2 * tn) + 16;
  float* scratch = ws.acc.get(per_thread * static_cast<std::size_t>(nthreads));
  const WidenRow widen_a = widen_row_for(args->a.dtype), widen_b = widen_row_for(args->b.dtype);
  int32_t failure = 0;
#pragma omp parallel num_threads(nthreads)
  {
    const octet::DefaultFloatMode float_mode;  // this thread, for the region (dispatch/parallel_policy.hpp)
    const OpenMpThreadLimit one_thread(1);     // oneDNN runs each call on this thread.
    float* part = scratch + static_cast<std::size_t>(omp_get_thread_num()) * per_thread;
    float* acc = part + tm * tn;
    float* a = acc + tm * tn;
    float* b = a + tm * slice;
    float* sb_row = b + tn * slice;
    float* old = sb_row + tn;
#pragma omp for schedule(static)
    for (int64_t t = 0; t < tiles_down * tiles_across; ++t) {
      const int64_t i0 = (t / tiles_across) * tm, j0 = (t % tiles_across) * tn;
      const int64_t h = std::min(tm, m - i0), w = std::min(tn, n - j0);
      std::fill(acc, acc + h * w, 0.0f);
      for (int64_t kb = 0; kb < k_blocks; ++kb) {
        const int64_t k_end = std::min(k, (kb + 1) * bk);
        for (int64_t k0 = kb * bk; k0 < k_end; k0 += slice) {
          const int64_t kw = std::min(slice, k_end - k0);
          for (int64_t i = 0; i < h; ++i) widen_a(element_ptr(args->a, i0 + i, k0), args->a.dtype, kw, a + i * kw);
          for (int64_t j = 0; j < w; ++j) widen_b(element_ptr(args->b, j0 + j, k0), args->b.dtype, kw, b + j * kw);
          const dnnl_status_t st =
              dnnl_sgemm('N', 'T', h, w, kw, 1.0f, a, kw, b, kw, k0 == kb * bk ? 0.0f : 1.0f, part, w);
          if (st != dnnl_success) {
#pragma omp atomic write
            failure = static_cast<int32_t>(st);
          }
        }
        for (int64_t j = 0; j < w; ++j) {
          sb_row[j] = scale_value(args->b_scale_inv, args->scale_dtype,
                                  static_cast<std::size_t>(((j0 + j) / brb) * k_blocks + kb));
        }
        for (int64_t i = 0; i < h; ++i) {
          const float sa = scale_value(args->a_scale_inv, args->scale_dtype,
                                       static_cast<std::size_t>(((i0 + i) / bra) * k_blocks + kb));
          float* acc_row = acc + i * w;
          const float* p = part + i * w;
          for (int64_t j = 0; j < w; ++j) acc_row[j] = acc_row[j] + p[j] * (sa * sb_row[j]);
        }
      }
      for (int64_t i = 0; i < h; ++i) {
        float* v = acc + i * w;
        for (int64_t j = 0; j < w; ++j) v[j] = alpha * v[j];
        if (beta != 0.0f) {
          rk.widen(element_ptr(d, i0 + i, j0), d.dtype, w, old);
          for (int64_t j = 0; j < w; ++j) v[j] = v[j] + beta * old[j];
        }
        if (has_bias) {
          for (int64_t j = 0; j < w; ++j) v[j] = v[j] + bias_values[static_cast<std::size_t>(j0 + j)];
        }
        if (has_gelu) {
          activation_rows().gelu(v, w, v);
        }
        rk.narrow(v, w, d.dtype, true, element_ptr_mut(d, i0 + i, j0));
      }
    }
  }
  if (failure != 0) {
    return report(OCTET_STATUS_BACKEND_ERROR,
                  std::string("block_gemm: oneDNN dnnl_sgemm failed with status ") + std::to_string(failure));
  }
  return OCTET_STATUS_SUCCESS;
}

}  // namespace

}  // namespace octet_cpu
