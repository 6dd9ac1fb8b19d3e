// Portable block-quantize region kernels (block_rows.hpp) and the run-time
// choice between them and the AVX-512 ones.
#include <algorithm>

#include "block_rows.hpp"
#include "isa.hpp"
#include "row_kernels.hpp"
#include "scalar_codecs.hpp"

namespace octet_cpu {
namespace {

void block_abs_bits_max_portable(const float* in, int64_t ld, int64_t h, int64_t w, int64_t bc,
                                 uint32_t* out) {
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

void multiply_portable(const float* in, const float* m, int64_t n, float* out) {
  for (int64_t j = 0; j < n; ++j) out[j] = in[j] * m[j];
}

// The row kernels' transpose (AVX2 at level avx2, plain loops below it).
void transpose_bytes_out_rows(const uint8_t* src, int64_t src_ld, int64_t h, int64_t w, uint8_t* dst,
                              int64_t dst_ld) {
  row_kernels().transpose_bytes(src, src_ld, h, w, dst, dst_ld);
}

const BlockRowKernels kPortable{"portable", block_abs_bits_max_portable, multiply_portable,
                                transpose_bytes_out_rows};

}  // namespace

const BlockRowKernels& portable_block_row_kernels() { return kPortable; }

const BlockRowKernels& block_row_kernels() {
  static const BlockRowKernels& chosen = []() -> const BlockRowKernels& {
    const BlockRowKernels* avx512 = avx512_block_row_kernels();
    if (avx512 != nullptr && cpu_isa() >= Isa::Avx512) return *avx512;
    return kPortable;
  }();
  return chosen;
}

}  // namespace octet_cpu
