// Portable block-quantize region kernels (block_rows.hpp) and the run-time
// choice between them and the AVX-512 ones.
#include <algorithm>

#include "block_rows.hpp"
#include "isa.hpp"
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

const BlockRowKernels kPortable{"portable", block_abs_bits_max_portable, multiply_portable};

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
