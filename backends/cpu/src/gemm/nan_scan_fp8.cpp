// Whether an FNUZ operand holds its NaN code 0x80 (fp8_operand_has_fnuz_nan,
// gemm/gemm_fp8.hpp): one memchr per stored row, rows shared among OpenMP
// threads for large operands.
#include <omp.h>

#include <cstring>

#include "gemm/gemm_fp8.hpp"
#include "plugin/checks.hpp"

namespace octet_cpu {

bool fp8_operand_has_fnuz_nan(const Fp8Operand& x, int64_t outer, int64_t k) {
  if (!is_fnuz(x.dtype) || outer <= 0 || k <= 0) return false;
  // Stored rows: outer rows of k codes, or k rows of outer codes (trans).
  const int64_t rows = x.trans ? k : outer, len = x.trans ? outer : k;
  int found = 0;
#pragma omp parallel for schedule(static) reduction(| : found) if (rows * len >= (int64_t{1} << 20))
  for (int64_t r = 0; r < rows; ++r) {
    if (!found && std::memchr(x.data + r * x.ld, 0x80, static_cast<std::size_t>(len)) != nullptr) found = 1;
  }
  return found != 0;
}

}  // namespace octet_cpu
