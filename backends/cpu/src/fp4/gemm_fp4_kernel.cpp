// The FP4 GEMM entry (numerics.md 15.4): argument checks, the sums, then the
// epilogue of section 8. Where folding the block scales into the elements
// is exact for both operands (fp4/gemm_fp4.hpp), the sums come from the AVX-512
// BF16 kernel (fp4/gemm_fp4_avx512_bf16.cpp) when the CPU has AVX512_BF16 and the
// FP8 GEMM engine is VDPBF16PS or the shape a decode shape; else, on the
// FP32 FMA engine (gemm/fp8_gemm_engine.hpp) and at every level below avx512_bf16, the same
// folded values, widened to FP32 (fp4/widen_folded_fp4.cpp), go through the
// sgemm tiles (gemm/sgemm_tiles.hpp). Otherwise they come from the
// exact path here, which follows 15.4's order to the bit: per tile of the
// output and 256-k panel, both operands' codes are decoded to FP32 in small
// per-thread panels, each k-block's partial (exact) is multiplied by its
// scale product and added to the FP32 accumulator in ascending k-block
// order.
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "dispatch/implementation_list.hpp"
#include "dispatch/isa.hpp"
#include "dispatch/parallel_policy.hpp"
#include "elementwise/activation_rows.hpp"
#include "elementwise/row_kernels.hpp"
#include "fp4/decode_gemm_fp4_avx2.hpp"
#include "fp4/fp4_codes.hpp"
#include "fp4/fp4_kernels.hpp"
#include "fp4/gemm_fp4.hpp"
#include "gemm/fp8_gemm_engine.hpp"
#include "gemm/sgemm_tiles.hpp"
#include "plugin/checks.hpp"
#include "plugin/errors.hpp"
#include "plugin/kernels.hpp"

namespace octet_cpu {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

int32_t require_mode(const char* name, int32_t scaling_mode, Fp4Mode* mode) {
  if (fp4_mode_of(scaling_mode, mode)) return OCTET_STATUS_SUCCESS;
  return report(OCTET_STATUS_INVALID_ARGUMENT, std::string("fp4_gemm: ") + name + " (" + std::to_string(scaling_mode) +
                                                   ") must be OCTET_SCALING_MXFP4_1X32, NVFP4_1X16 or NVFP4_16X16");
}

int32_t check_fp4_gemm(const octet_fp4_gemm_args* args, Fp4Mode* a_mode, Fp4Mode* b_mode) {
  const char* kernel = "fp4_gemm";
  if (int32_t s = require_pointer(kernel, "args", args)) return s;
  if (int32_t s = require_struct_size(kernel, "args", args->struct_size, sizeof(octet_fp4_gemm_args))) return s;
  if (args->m < 0 || args->n < 0 || args->k < 0) {
    return report(OCTET_STATUS_INVALID_ARGUMENT, std::string(kernel) + ": m, n, k must be >= 0");
  }
  if (int32_t s = require_mode("args->a_scaling_mode", args->a_scaling_mode, a_mode)) return s;
  if (int32_t s = require_mode("args->b_scaling_mode", args->b_scaling_mode, b_mode)) return s;
  if (a_mode->nvfp4 != b_mode->nvfp4) {
    return report(OCTET_STATUS_INVALID_ARGUMENT, std::string(kernel) +
                                                     ": args->a_scaling_mode and args->b_scaling_mode must both be "
                                                     "MXFP4 or both NVFP4");
  }
  if (int32_t s = require_matrix(kernel, "args->d", args->d, Accept::HighPrecision, OCTET_STATUS_UNSUPPORTED)) {
    return s;
  }
  if (int32_t s = require_shape(kernel, "args->d", args->d, args->m, args->n, "[m,n]")) return s;
  if (args->bias.data != nullptr) {
    if (int32_t s = require_matrix(kernel, "args->bias", args->bias, Accept::HighPrecision)) return s;
    if (int32_t s = require_shape(kernel, "args->bias", args->bias, 1, args->n, "one row of n")) return s;
  }
  if (args->epilogue != OCTET_EPILOGUE_NONE && args->epilogue != OCTET_EPILOGUE_GELU) {
    return report(OCTET_STATUS_INVALID_ARGUMENT, std::string(kernel) + ": bad args->epilogue");
  }
  if (args->k > 0 && args->m > 0) {
    if (int32_t s = require_pointer(kernel, "args->a", args->a)) return s;
    if (int32_t s = require_pointer(kernel, "args->a_scale_inv", args->a_scale_inv)) return s;
  }
  if (args->k > 0 && args->n > 0) {
    if (int32_t s = require_pointer(kernel, "args->b", args->b)) return s;
    if (int32_t s = require_pointer(kernel, "args->b_scale_inv", args->b_scale_inv)) return s;
  }
  if (a_mode->nvfp4) {
    if (int32_t s = require_pointer(kernel, "args->a_tensor_scale_inv", args->a_tensor_scale_inv)) return s;
    if (int32_t s = require_pointer(kernel, "args->b_tensor_scale_inv", args->b_tensor_scale_inv)) return s;
  }
  return OCTET_STATUS_SUCCESS;
}

float block_scale_value(const Fp4Operand& op, uint8_t code) {
  return op.nvfp4 ? fp8_table(OCTET_DTYPE_E4M3)[code] : e8m0_table()[code];
}

// rows [r0, r0 + h) of op, codes [k0, k0 + kc) -> FP32 values, h x kc.
void decode_panel(const Fp4Operand& op, int64_t r0, int64_t h, int64_t k0, int64_t kc, int64_t k, float* out) {
  const int64_t row_bytes = fp4_row_bytes(k);
  for (int64_t r = 0; r < h; ++r) {
    const uint8_t* row = op.codes + (r0 + r) * row_bytes;
    for (int64_t c = 0; c < kc; ++c) out[r * kc + c] = e2m1_decode(fp4_code_at(row, k0 + c));
  }
}

// An FP4 operand for sgemm_tiles with its block scales folded in: each
// element times its block's scale as FP32, exact where fp4_fold_exact
// holds (the same values the BF16 kernel folds). sgemm_tiles' slices start
// at multiples of 256 k, so each slice holds whole blocks but the last.
TileOperand folded_operand(const Fp4Operand& op, int64_t k, int64_t bk) {
  TileOperand t;
  t.buffered = true;
  const int64_t k_blocks = ceil_div(k, bk), row_bytes = fp4_row_bytes(k);
  t.block = [op, bk, k_blocks, row_bytes](int64_t r0, int64_t rows, int64_t k0, int64_t kc, float* out) {
    float scales[kSgemmSliceK / 16];
    const int64_t kb0 = k0 / bk, blocks = ceil_div(kc, bk);
    for (int64_t r = 0; r < rows; ++r) {
      const uint8_t* codes = op.scales + ((r0 + r) / op.block_rows) * k_blocks + kb0;
      for (int64_t q = 0; q < blocks; ++q) scales[q] = block_scale_value(op, codes[q]);
      fp4_widen_folded(op.codes + (r0 + r) * row_bytes, k0, kc, scales, bk, out + r * kc);
    }
    return Fp32Block{out, kc, false};
  };
  return t;
}

// acc (m x n, ld n) by numerics.md 15.4's order, bit for bit.
void exact_sums(const Fp4Operand& a, const Fp4Operand& b, int64_t m, int64_t n, int64_t k, int64_t bk, float* acc) {
  constexpr int64_t kTile = 64, kPanel = 256;  // kPanel: whole 16- and 32-k-blocks
  const int64_t k_blocks = ceil_div(k, bk);
  const int64_t tiles_down = ceil_div(m, kTile), tiles_across = ceil_div(n, kTile);
  const int threads = threads_for(2.0 * double(m) * double(n) * double(k), kGemmFlopsPerThread);
  const std::size_t per_thread = static_cast<std::size_t>(2 * kTile * kPanel + 2 * kTile * (kPanel / 16));
  Buffer<float> scratch(per_thread * static_cast<std::size_t>(threads));
#pragma omp parallel num_threads(threads)
  {
    const octet::DefaultFloatMode float_mode;  // this thread, for the region (dispatch/parallel_policy.hpp)
    float* pa = scratch.get() + per_thread * static_cast<std::size_t>(omp_get_thread_num());
    float* pb = pa + kTile * kPanel;
    float* sa = pb + kTile * kPanel;  // [kTile][kPanel / 16]
    float* sb = sa + kTile * (kPanel / 16);
#pragma omp for schedule(static)
    for (int64_t t = 0; t < tiles_down * tiles_across; ++t) {
      const int64_t i0 = (t / tiles_across) * kTile, j0 = (t % tiles_across) * kTile;
      const int64_t h = std::min(kTile, m - i0), w = std::min(kTile, n - j0);
      for (int64_t i = 0; i < h; ++i) std::fill(acc + (i0 + i) * n + j0, acc + (i0 + i) * n + j0 + w, 0.0f);
      for (int64_t k0 = 0; k0 < k; k0 += kPanel) {
        const int64_t kc = std::min(kPanel, k - k0), kb0 = k0 / bk, nkb = ceil_div(kc, bk);
        decode_panel(a, i0, h, k0, kc, k, pa);
        decode_panel(b, j0, w, k0, kc, k, pb);
        for (int64_t i = 0; i < h; ++i) {
          for (int64_t q = 0; q < nkb; ++q) {
            sa[i * nkb + q] = block_scale_value(a, a.scales[((i0 + i) / a.block_rows) * k_blocks + kb0 + q]);
          }
        }
        for (int64_t j = 0; j < w; ++j) {
          for (int64_t q = 0; q < nkb; ++q) {
            sb[j * nkb + q] = block_scale_value(b, b.scales[((j0 + j) / b.block_rows) * k_blocks + kb0 + q]);
          }
        }
        for (int64_t i = 0; i < h; ++i) {
          float* acc_row = acc + (i0 + i) * n + j0;
          for (int64_t j = 0; j < w; ++j) {
            float v = acc_row[j];
            for (int64_t q = 0; q < nkb; ++q) {
              const int64_t c0 = q * bk, c1 = std::min(kc, c0 + bk);
              float partial = 0.0f;  // exact: multiples of 1/4 below 2^11
              for (int64_t c = c0; c < c1; ++c) partial = partial + pa[i * kc + c] * pb[j * kc + c];
              v = v + partial * (sa[i * nkb + q] * sb[j * nkb + q]);
            }
            acc_row[j] = v;
          }
        }
      }
    }
  }
}

}  // namespace

namespace {

// One FP4 GEMM's sums: acc (m x n, ld n) from the two operands.
struct Fp4GemmProblem {
  Fp4Operand a, b;
  int64_t m, n, k, bk;
  // Folding each block scale into its elements is exact for both operands
  // (gemm_fp4.hpp): the sums are one plain dot-product sum.
  bool folds() const {
    if (folds_ < 0) folds_ = fp4_fold_exact(a, m, k) && fp4_fold_exact(b, n, k);
    return folds_ != 0;
  }

  // Cached: -1 until first asked.
  mutable int folds_ = -1;
};

using Fp4GemmSums = int32_t (*)(const Fp4GemmProblem& p, float* acc, int64_t ldc);
using Fp4GemmCandidate = Candidate<Fp4GemmProblem, Fp4GemmSums>;

// The FP4 GEMM's implementation list (dispatch/implementation_list.hpp).
// On the Fp32Fma engine (gemm/fp8_gemm_engine.hpp) the sgemm tiles do twice
// VDPBF16PS's multiply-adds on Intel cores, so the BF16 kernel keeps only
// the decode shapes there.
constexpr Fp4GemmCandidate kFp4GemmSumsList[] = {
    {"gemm_fp4_avx512_bf16 (folded, VDPBF16PS)", Isa::Avx512Bf16, fp4_gemm_bf16_built,
     [](const Fp4GemmProblem& p) {
       return p.folds() && (fp8_gemm_engine() == Fp8GemmEngine::Bf16Dot || p.m <= kFp4DecodeMaxM);
     },
     [](const Fp4GemmProblem& p, float* acc, int64_t ldc) {
       fp4_gemm_bf16(p.a, p.b, p.m, p.n, p.k, acc, ldc);
       return int32_t{OCTET_STATUS_SUCCESS};
     }},
    {"decode_gemm_fp4_avx2 (folded, FP32 FMAs)", Isa::Avx2, fp4_decode_fma_built,
     [](const Fp4GemmProblem& p) { return p.folds() && p.m <= kFp4DecodeMaxM; },
     [](const Fp4GemmProblem& p, float* acc, int64_t ldc) {
       fp4_decode_gemm_fma(p.a, p.b, p.m, p.n, p.k, p.bk, acc, ldc);
       return int32_t{OCTET_STATUS_SUCCESS};
     }},
    {"sgemm_tiles (folded, oneDNN sgemm)", Isa::Portable, nullptr, [](const Fp4GemmProblem& p) { return p.folds(); },
     [](const Fp4GemmProblem& p, float* acc, int64_t ldc) {
       return sgemm_tiles("fp4_gemm", folded_operand(p.a, p.k, p.bk), folded_operand(p.b, p.k, p.bk), p.m, p.n, p.k,
                          acc, ldc);
     }},
    {"exact (section 15.4's order, FP32 panels)", Isa::Portable, nullptr, nullptr,
     [](const Fp4GemmProblem& p, float* acc, int64_t ldc) {
       (void)ldc;  // exact_sums writes acc with ld n
       exact_sums(p.a, p.b, p.m, p.n, p.k, p.bk, acc);
       return int32_t{OCTET_STATUS_SUCCESS};
     }},
};
static_assert(ends_with_fallback(kFp4GemmSumsList), "the last candidate takes every problem");

}  // namespace

int32_t fp4_gemm_kernel(const octet_fp4_gemm_args* args) {
  Fp4Mode a_mode{}, b_mode{};
  if (int32_t s = check_fp4_gemm(args, &a_mode, &b_mode)) return s;
  const int64_t m = args->m, n = args->n, k = args->k, bk = a_mode.block_cols;
  if (m == 0 || n == 0) return OCTET_STATUS_SUCCESS;
  const Fp4Operand a{args->a, args->a_scale_inv, a_mode.block_rows, a_mode.nvfp4};
  const Fp4Operand b{args->b, args->b_scale_inv, b_mode.block_rows, b_mode.nvfp4};
  Buffer<float> acc(element_count(m, n));
  if (k == 0) {
    std::fill(acc.get(), acc.get() + m * n, 0.0f);
  } else {
    const Fp4GemmProblem problem{a, b, m, n, k, bk};
    if (int32_t s = choose(kFp4GemmSumsList, cpu_isa(), problem)->impl(problem, acc.get(), n)) return s;
  }

  // Epilogue (numerics.md section 8), per row.
  const float ga = a_mode.nvfp4 ? *args->a_tensor_scale_inv : 1.0f;
  const float gb = a_mode.nvfp4 ? *args->b_tensor_scale_inv : 1.0f;
  const float scale = args->alpha * (ga * gb), beta = args->beta;
  const RowKernels& rk = row_kernels();
  const octet_matrix_view d = args->d;
  std::vector<float> bias;
  if (args->bias.data != nullptr) {
    bias.resize(static_cast<std::size_t>(n));
    rk.widen(args->bias.data, args->bias.dtype, n, bias.data());
  }
  const bool gelu_epilogue = args->epilogue == OCTET_EPILOGUE_GELU;
#pragma omp parallel if (split_elements(double(m * n)))
  {
    const octet::DefaultFloatMode float_mode;  // this thread, for the region (dispatch/parallel_policy.hpp)
    std::vector<float> old(beta != 0.0f ? static_cast<std::size_t>(n) : 0);
#pragma omp for schedule(static)
    for (int64_t i = 0; i < m; ++i) {
      float* v = acc.get() + i * n;
      for (int64_t j = 0; j < n; ++j) v[j] = scale * v[j];
      if (beta != 0.0f) {
        rk.widen(element_ptr(d, i, 0), d.dtype, n, old.data());
        for (int64_t j = 0; j < n; ++j) v[j] = v[j] + beta * old[static_cast<std::size_t>(j)];
      }
      if (!bias.empty()) {
        for (int64_t j = 0; j < n; ++j) v[j] = v[j] + bias[static_cast<std::size_t>(j)];
      }
      if (gelu_epilogue) {
        activation_rows().gelu(v, n, v);
      }
      rk.narrow(v, n, d.dtype, true, element_ptr_mut(d, i, 0));
    }
  }
  return OCTET_STATUS_SUCCESS;
}

}  // namespace octet_cpu
