// FP8 x FP8 -> FP32 accumulators on BF16 dot products (gemm/gemm_fp8_avx512_bf16.cpp).
#pragma once

#include <cstddef>
#include <cstdint>

#include "plugin/errors.hpp"

namespace octet_cpu {

// One FP8 operand as the GEMM reads it: X'[o, kk] is data[o * ld + kk], or
// data[kk * ld + o] when `trans` (stored [k, outer]).
struct Fp8Operand {
  const uint8_t* data;
  int64_t ld;
  bool trans;
  int32_t dtype;  // OCTET_DTYPE_E4M3, E5M2, E4M3FNUZ or E5M2FNUZ
};

// Calls row(i, codes) for i = 0 .. outer - 1, codes = the k codes of X'
// row i, contiguous: read in place, or (x.trans) gathered into a buffer
// that the next call reuses.
template <class Row>
void for_each_row(const Fp8Operand& x, int64_t outer, int64_t k, Row&& row) {
  Buffer<uint8_t> gathered;
  if (x.trans) gathered.reset(static_cast<std::size_t>(k));
  for (int64_t i = 0; i < outer; ++i) {
    const uint8_t* src = x.data + i * x.ld;
    if (x.trans) {  // stored [k, outer]
      for (int64_t kk = 0; kk < k; ++kk) gathered.get()[kk] = x.data[kk * x.ld + i];
      src = gathered.get();
    }
    row(i, src);
  }
}

// True when x is FNUZ and one of its outer x k codes is 0x80, its NaN. The
// BF16 kernels below read a code as a sign and a magnitude, which has no
// room for a NaN at 0x80 (it would read as -0): such an operand goes to the
// FP32-panel path (gemm/gemm_kernel.cpp, block/block_kernels.cpp), whose tables give NaN.
bool fp8_operand_has_fnuz_nan(const Fp8Operand& x, int64_t outer, int64_t k);

// acc[i * ldc + j] = sum over kk of A'[i, kk] * B'[j, kk] (m, n, k > 0), on
// VDPBF16PS: every FP8 value is exactly a BF16 value, operands are widened
// to BF16 in cache-sized packed panels (never a whole-operand copy), and
// sums are FP32. Call only when cpu_isa() >= Isa::Avx512Bf16.
// Throws OutOfMemory (plugin/errors.hpp) before any work when its panels
// cannot be allocated; they are freed before it returns.
void fp8_blocked_gemm_bf16(const Fp8Operand& a, const Fp8Operand& b, int64_t m, int64_t n, int64_t k, float* acc,
                           int64_t ldc);

// The same sums for decode shapes (fp8_gemm_bf16_decodes): B is streamed
// once and decoded in registers by the VPERMI2W decoder, and the products
// are summed on VDPBF16PS, or on FP32 FMAs where fp8_decode_on_fp32().
// Call only when cpu_isa() >= Isa::Avx512Bf16.
void fp8_decode_gemm_bf16(const Fp8Operand& a, const Fp8Operand& b, int64_t m, int64_t n, int64_t k, float* acc,
                          int64_t ldc);

// True when the decode kernels take for these shapes (m <=
// kDecodeMaxM rows, B' rows contiguous): the weights stream once and their
// bytes, not the multiply-adds, set the time, so it runs whatever
// fp8_gemm_engine() (gemm/fp8_gemm_engine.hpp) says.
bool fp8_gemm_bf16_decodes(int64_t m, bool b_trans);

// True when the decode kernel multiplies on FP32 FMAs
// (decode_gemm_fp32_with, gemm/decode_gemm_fp8.hpp) rather than VDPBF16PS: where
// fp8_gemm_engine() (gemm/fp8_gemm_engine.hpp) is Fp32Fma or OnednnBf16. From m = 2 up, a decode shape's
// multiply-adds outlast its weights' bytes on a core that issues
// VDPBF16PS at half the FMA rate (at m = 16 on Emerald Rapids, 0.8 of the
// time); at m = 1 the two kernels stream the weights at the same rate.
bool fp8_decode_on_fp32();

// The scale_inv of each (row block, k-block) of one operand of a block
// GEMM, decoded to FP32: at(row, kb) = values[(row / block_rows) * k_blocks
// + kb].
struct BlockScaleTable {
  const float* values;
  int64_t block_rows;
  int64_t k_blocks;
  float at(int64_t row, int64_t kb) const { return values[(row / block_rows) * k_blocks + kb]; }
};

// acc[i * ldc + j] = sum over k-blocks kb (ascending) of
//   P_kb[i, j] * (sa.at(i, kb) * sb.at(j, kb)), P_kb the sum of the products
// of k-block kb ([kb * bk, (kb + 1) * bk), bk even), each term added to the
// running FP32 sum in numerics.md section 12's order; A' and B' rows
// contiguous (!trans). P_kb is summed on VDPBF16PS like fp8_blocked_gemm_bf16
// (ascending pairs, one lane per output), from packed BF16 panels; no
// whole-operand copy. Call only when cpu_isa() >= Isa::Avx512Bf16.
// bk must be one fp8_block_gemm_bf16_takes.
void fp8_block_gemm_bf16(const Fp8Operand& a, const Fp8Operand& b, int64_t m, int64_t n, int64_t k, int64_t bk,
                         const BlockScaleTable& sa, const BlockScaleTable& sb, float* acc, int64_t ldc);

// The k-block extents fp8_block_gemm_bf16 handles: 32, 64, 128 and 256
// (whole blocks in each of its 256-k panels; MXFP8 and 1x128 / 128x128).
inline bool fp8_block_gemm_bf16_takes(int64_t bk) { return bk >= 32 && bk <= 256 && 256 % bk == 0; }

// True when this build contains the AVX-512 BF16 kernels.
bool fp8_gemm_bf16_built();

}  // namespace octet_cpu
