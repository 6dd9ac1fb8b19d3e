// Portable block-quantize region kernels (block/block_rows.hpp) and the run-time
// choice between them and the AVX2 and AVX-512 ones.
#include <algorithm>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "block/block_rows.hpp"
#include "block/block_scales.hpp"
#include "codecs/scalar_codecs.hpp"
#include "dispatch/implementation_list.hpp"
#include "dispatch/isa.hpp"
#include "elementwise/row_kernels.hpp"

namespace octet_cpu {
namespace {

void block_abs_bits_max_portable(const float* in, int64_t ld, int64_t h, int64_t w, int64_t bc, uint32_t* out) {
  for (int64_t j0 = 0, b = 0; j0 < w; j0 += bc, ++b) {
    const int64_t je = std::min(w, j0 + bc);
    uint32_t m = 0;
    for (int64_t i = 0; i < h; ++i) {
      for (int64_t j = j0; j < je; ++j) {
        const uint32_t a = bits_of(in[i * ld + j]) & 0x7FFFFFFFu;
        m = a > m ? a : m;
      }
    }
    out[b] = m;
  }
}

// Products into a stack buffer, kChunk at a time, then the row kernels'
// encoder with scale 1 (x * 1 is x, NaN included).
void multiply_encode_portable(const float* in, const float* m, int64_t n, int64_t bc, int32_t fp8_dtype, uint8_t* out) {
  constexpr int64_t kChunk = 256;
  float products[kChunk];
  const RowKernels& k = row_kernels();
  int64_t b = 0, left = bc;  // the block of the next element, and how many of its elements are left
  for (int64_t j0 = 0; j0 < n; j0 += kChunk) {
    const int64_t len = std::min(kChunk, n - j0);
    if (bc == 1) {
      for (int64_t i = 0; i < len; ++i) products[i] = in[j0 + i] * m[j0 + i];
    } else {
      for (int64_t i = 0; i < len;) {  // runs of one block within the chunk
        const int64_t run = std::min(len - i, left);
        const float s = m[b];
        for (int64_t t = 0; t < run; ++t) products[i + t] = in[j0 + i + t] * s;
        i += run;
        left -= run;
        if (left == 0) {
          ++b;
          left = bc;
        }
      }
    }
    k.encode(products, len, 1.0f, fp8_dtype, true, out + j0);
  }
}

// The row kernels' transpose (AVX2 at level avx2, plain loops below it)
// into an L1 staging tile, 64 rows x 256 columns at a time; each column's
// 64 bytes then go out with SSE2 streaming stores where dst is 16-byte
// aligned.
void transpose_bytes_out_rows(const uint8_t* src, int64_t src_ld, int64_t h, int64_t w, uint8_t* dst, int64_t dst_ld) {
  constexpr int64_t kRows = 64, kCols = 256;
  alignas(64) uint8_t staging[kCols * kRows];
  const RowKernels& k = row_kernels();
  bool streamed = false;
  for (int64_t i0 = 0; i0 < h; i0 += kRows) {
    const int64_t th = std::min(kRows, h - i0);
    for (int64_t j0 = 0; j0 < w; j0 += kCols) {
      const int64_t tw = std::min(kCols, w - j0);
      k.transpose_bytes(src + i0 * src_ld + j0, src_ld, th, tw, staging, kRows);
      for (int64_t j = 0; j < tw; ++j) {
        uint8_t* d = dst + (j0 + j) * dst_ld + i0;
        const uint8_t* from = staging + j * kRows;
#if defined(__SSE2__)
        if (th == kRows && (reinterpret_cast<std::uintptr_t>(d) & 15u) == 0) {
          for (int q = 0; q < 4; ++q) {
            _mm_stream_si128(reinterpret_cast<__m128i*>(d + 16 * q),
                             _mm_load_si128(reinterpret_cast<const __m128i*>(from + 16 * q)));
          }
          streamed = true;
          continue;
        }
#endif
        std::memcpy(d, from, static_cast<std::size_t>(th));
      }
    }
  }
#if defined(__SSE2__)
  if (streamed) _mm_sfence();  // the streaming stores are visible before returning
#endif
}

// Each row: bytes up to dst's first 16-byte boundary, then whole 16-byte
// pieces with SSE2 streaming stores, then the rest.
void copy_bytes_out_rows(const uint8_t* src, int64_t src_ld, int64_t h, int64_t w, uint8_t* dst, int64_t dst_ld) {
#if defined(__SSE2__)
  bool streamed = false;
  for (int64_t i = 0; i < h; ++i) {
    const uint8_t* from = src + i * src_ld;
    uint8_t* to = dst + i * dst_ld;
    const int64_t head =
        std::min<int64_t>(w, static_cast<int64_t>((16u - (reinterpret_cast<std::uintptr_t>(to) & 15u)) & 15u));
    std::memcpy(to, from, static_cast<std::size_t>(head));
    int64_t j = head;
    for (; j + 16 <= w; j += 16) {
      _mm_stream_si128(reinterpret_cast<__m128i*>(to + j), _mm_loadu_si128(reinterpret_cast<const __m128i*>(from + j)));
      streamed = true;
    }
    std::memcpy(to + j, from + j, static_cast<std::size_t>(w - j));
  }
  if (streamed) _mm_sfence();  // the streaming stores are visible before returning
#else
  for (int64_t i = 0; i < h; ++i) std::memcpy(dst + i * dst_ld, src + i * src_ld, static_cast<std::size_t>(w));
#endif
}

uint32_t mx_scales_portable(const uint32_t* tops, int64_t nb, float fp8_max, int32_t rounding, uint8_t* codes,
                            float* multipliers) {
  uint32_t top_max = 0;
  for (int64_t q = 0; q < nb; ++q) {
    codes[q] = mx_scale_code(float_of(tops[q]), fp8_max, rounding);
    multipliers[q] = mx_multiplier(codes[q]);
    top_max = tops[q] > top_max ? tops[q] : top_max;
  }
  return top_max;
}

uint32_t fp32_scales_portable(const uint32_t* tops, int64_t nb, float fp8_max, float epsilon, bool pow2,
                              float* scale_inv, float* multipliers) {
  uint32_t top_max = 0;
  for (int64_t q = 0; q < nb; ++q) {
    multipliers[q] = fp32_block_scale(float_of(tops[q]), fp8_max, epsilon, pow2);
    scale_inv[q] = 1.0f / multipliers[q];
    top_max = tops[q] > top_max ? tops[q] : top_max;
  }
  return top_max;
}

const BlockRowKernels kPortable{
    "portable",          block_abs_bits_max_portable, multiply_encode_portable, transpose_bytes_out_rows,
    copy_bytes_out_rows, mx_scales_portable,          fp32_scales_portable};

}  // namespace

const BlockRowKernels& portable_block_row_kernels() { return kPortable; }

namespace {

// The block row kernels' implementation list (dispatch/implementation_list.hpp).
using BlockRowKernelsCandidate = Candidate<AnyProblem, const BlockRowKernels* (*)()>;
constexpr BlockRowKernelsCandidate kBlockRowKernelsList[] = {
    {"avx512", Isa::Avx512, [] { return avx512_block_row_kernels() != nullptr; }, nullptr, avx512_block_row_kernels},
    {"avx2", Isa::Avx2, [] { return avx2_block_row_kernels() != nullptr; }, nullptr, avx2_block_row_kernels},
    {"portable", Isa::Portable, nullptr, nullptr, [] { return &kPortable; }},
};
static_assert(ends_with_fallback(kBlockRowKernelsList), "the last candidate takes every problem");

}  // namespace

const BlockRowKernels& block_row_kernels() {
  static const BlockRowKernels& chosen = *choose(kBlockRowKernelsList, cpu_isa(), AnyProblem{})->impl();
  return chosen;
}

}  // namespace octet_cpu
