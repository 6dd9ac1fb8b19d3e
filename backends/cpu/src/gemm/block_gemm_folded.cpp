// block_gemm_folded (gemm/block_gemm_folded.hpp): the fold condition on the
// scale grids, and the operands' folded blocks for sgemm_tiles.
#include "gemm/block_gemm_folded.hpp"

#include <algorithm>
#include <cstring>

#include "codecs/scalar_codecs.hpp"
#include "codecs/widen_fp8_avx512.hpp"
#include "gemm/sgemm_tiles.hpp"
#include "plugin/kernels.hpp"

namespace octet_cpu {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The exponents of an FP8 format's smallest nonzero magnitude (its
// smallest subnormal) and of a power of two above its largest finite one.
struct Fp8Range {
  int lowest, above_largest;
};
Fp8Range fp8_range(int32_t dtype) {
  switch (dtype) {
    case OCTET_DTYPE_E4M3:
      return {-9, 9};  // 2^-9 .. 448
    case OCTET_DTYPE_E4M3FNUZ:
      return {-10, 8};  // 2^-10 .. 240
    case OCTET_DTYPE_E5M2FNUZ:
      return {-17, 16};  // 2^-17 .. 57344
    default:
      return {-16, 16};  // E5M2: 2^-16 .. 57344
  }
}

// The smallest and largest exponent of a scale grid of `count` entries;
// false when an entry is not a positive normal power of two (E8M0 0xFF, an
// FP32 with mantissa bits, zero, a subnormal, inf, NaN or a negative one).
bool power_of_two_exponents(const void* grid, int32_t scale_dtype, int64_t count, int* lowest, int* highest) {
  int lo = 255, hi = -255;
  if (scale_dtype == OCTET_DTYPE_E8M0) {
    const uint8_t* codes = static_cast<const uint8_t*>(grid);
    uint8_t code_lo = 0xFF, code_hi = 0;
    for (int64_t i = 0; i < count; ++i) {
      code_lo = std::min(code_lo, codes[i]);
      code_hi = std::max(code_hi, codes[i]);
    }
    if (code_hi == 0xFF) return false;
    lo = int(code_lo) - 127;
    hi = int(code_hi) - 127;
  } else {
    const float* values = static_cast<const float*>(grid);
    for (int64_t i = 0; i < count; ++i) {
      uint32_t u;
      std::memcpy(&u, &values[i], sizeof u);
      const int field = int(u >> 23);  // the sign bit is in it: negative scales fail below
      if ((u & 0x7FFFFFu) != 0 || field == 0 || field >= 255) return false;
      lo = std::min(lo, field - 127);
      hi = std::max(hi, field - 127);
    }
  }
  *lowest = lo;
  *highest = hi;
  return true;
}

int ceil_log2(int64_t k) {
  int bits = 0;
  while ((int64_t(1) << bits) < k) ++bits;
  return bits;
}

// An operand X [rows, k] (K-contiguous, as the block GEMM takes them) for
// sgemm_tiles: each row's slice widened (widen_row_for) and multiplied by
// its blocks' scales, exact where block_scales_fold holds.
TileOperand folded_operand(const octet_matrix_view& v, const void* grid, int32_t scale_dtype, int64_t block_rows,
                           int64_t bk, int64_t k_blocks) {
  const WidenRow widen = widen_row_for(v.dtype);
  TileOperand t;
  t.buffered = true;
  t.block = [v, grid, scale_dtype, block_rows, bk, k_blocks, widen](int64_t r0, int64_t rows, int64_t k0, int64_t kc,
                                                                    float* out) {
    for (int64_t r = 0; r < rows; ++r) {
      float* row = out + r * kc;
      widen(element_ptr(v, r0 + r, k0), v.dtype, kc, row);
      const int64_t grid_row = ((r0 + r) / block_rows) * k_blocks;
      for (int64_t c = 0; c < kc;) {
        const int64_t kb = (k0 + c) / bk, end = std::min(kc, (kb + 1) * bk - k0);
        const float s = scale_dtype == OCTET_DTYPE_E8M0 ? decode_e8m0(static_cast<const uint8_t*>(grid)[grid_row + kb])
                                                        : static_cast<const float*>(grid)[grid_row + kb];
        for (; c < end; ++c) row[c] *= s;
      }
    }
    return Fp32Block{out, kc, false};
  };
  return t;
}

}  // namespace

bool block_scales_fold(const octet_block_gemm_args* args) {
  const int64_t bk = args->a_block_cols, k_blocks = ceil_div(args->k, bk);
  int ea_lo, ea_hi, eb_lo, eb_hi;
  if (!power_of_two_exponents(args->a_scale_inv, args->scale_dtype, ceil_div(args->m, args->a_block_rows) * k_blocks,
                              &ea_lo, &ea_hi) ||
      !power_of_two_exponents(args->b_scale_inv, args->scale_dtype, ceil_div(args->n, args->b_block_rows) * k_blocks,
                              &eb_lo, &eb_hi)) {
    return false;
  }
  const Fp8Range a = fp8_range(args->a.dtype), b = fp8_range(args->b.dtype);
  return a.lowest + b.lowest + ea_lo + eb_lo >= -149 && a.above_largest + ea_hi <= 127 &&
         b.above_largest + eb_hi <= 127 &&
         a.above_largest + b.above_largest + ea_hi + eb_hi + ceil_log2(args->k) <= 127;
}

int32_t block_gemm_folded_sums(const octet_block_gemm_args* args, float* acc, int64_t ldc) {
  const int64_t bk = args->a_block_cols, k_blocks = ceil_div(args->k, bk);
  return sgemm_tiles("block_gemm",
                     folded_operand(args->a, args->a_scale_inv, args->scale_dtype, args->a_block_rows, bk, k_blocks),
                     folded_operand(args->b, args->b_scale_inv, args->scale_dtype, args->b_block_rows, bk, k_blocks),
                     args->m, args->n, args->k, acc, ldc);
}

}  // namespace octet_cpu
