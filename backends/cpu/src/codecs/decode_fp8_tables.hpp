// The BF16 bits of FP8 codes, shared by the FP8 GEMM's kernels
// (gemm/gemm_fp8_avx512_bf16.cpp, gemm/decode_gemm_fp8_avx512_bf16_vbmi.cpp). Plain C++: no intrinsics.
#pragma once

#include <cstdint>

namespace octet_cpu {

// BF16 bits of the 128 non-negative FP8 codes of one dtype; the sign is
// code bit 7 -> BF16 bit 15. NaN codes map to 0x7FC0. Every FP8 value,
// FNUZ ones included, is exactly a BF16 value. An FNUZ dtype's 0x80 (its
// one NaN) would read as -0 here: the kernels take FNUZ operands only when
// no code is 0x80 (fp8_operand_has_fnuz_nan, gemm/gemm_fp8.hpp).
struct Bf16Codes {
  alignas(64) uint16_t v[128];
};

// The table of OCTET_DTYPE_E4M3, E5M2, E4M3FNUZ or E5M2FNUZ (built once).
const Bf16Codes& fp8_bf16_codes(int32_t dtype);

inline uint16_t bf16_of(const Bf16Codes& t, uint8_t c) {
  return static_cast<uint16_t>(t.v[c & 0x7F] | ((c & 0x80u) << 8));
}

inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
constexpr int64_t round_up(int64_t a, int64_t b) { return (a + b - 1) / b * b; }

// Decode kernel: m <= kDecodeMaxM and B' rows contiguous.
constexpr int64_t kDecodeMaxM = 32;

}  // namespace octet_cpu
