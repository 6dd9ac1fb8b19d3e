// GEMM: acc = A' B'^T in FP32, then the epilogue applies the documented
// order of docs/numerics.md section 8 element by element: v =
// (alpha*(sa*sb))*acc, + beta*D_old, + bias, GELU, rounding to D's dtype.
// Only the summation order of acc differs from the reference.
//
// acc comes from one of four paths, chosen at run time (isa.hpp):
// - FP8 operands on a CPU with AVX512_BF16: gemm_fp8_avx512.cpp (BF16 dot
//   products on panels widened in cache, or the decode kernel for m <= 32,
//   each on the engine fp8_gemm_engine() names);
// - FP8 decode shapes at level avx512 and avx2: the decode kernel on FP32
//   FMAs (gemm_fp8_decode_fma.cpp, gemm_fp8_decode_avx2.cpp);
// - FP8 compute-bound shapes on the OnednnBf16 engine (a CPU whose oneDNN
//   BF16 matmul runs on AMX, or OCTET_CPU_FP8_GEMM=onednn_bf16):
//   bf16_matmul_tiles (bf16_matmul_tiles.hpp), the tiling below with each
//   block widened to BF16 and oneDNN's BF16 matmul in place of its sgemm;
// - otherwise (high precision operands, other FP8 shapes below level
//   avx512_bf16, or the sgemm engine's compute-bound shapes):
//   sgemm_tiles (sgemm_tiles.hpp): acc is cut into tiles of 512 x 512 and K
//   into slices of 256; for each tile and slice a thread widens one block of
//   each operand into FP32 in its cache (an FP32 operand is used in place)
//   and oneDNN's sgemm adds the blocks' product into the tile. No FP32 copy
//   of a whole operand, or of a whole slice of one, is ever made: the
//   workspace is at most 2 MiB a thread, whatever m, n and k are.
// Either way the blocking depends on m, n, k (and, in the BF16 kernels, the
// thread count) only, never on the stored layout, so every layout (and
// every capability profile) gives the same bits. Every workspace lives for
// one call.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <string>
#include <vector>

#include "activation_rows.hpp"
#include "bf16_matmul_tiles.hpp"
#include "checks.hpp"
#include "errors.hpp"
#include "gemm_fp8.hpp"
#include "gemm_fp8_decode_avx2.hpp"
#include "gemm_fp8_decode_fma.hpp"
#include "gemm_fp8_widen_avx512.hpp"
#include "isa.hpp"
#include "kernels.hpp"
#include "parallel_policy.hpp"
#include "row_kernels.hpp"
#include "sgemm_tiles.hpp"

namespace octet_cpu {

void* aligned_bytes(std::size_t bytes) {
  if (bytes == 0) bytes = 1;
  if (bytes > std::numeric_limits<std::size_t>::max() - 63) throw OutOfMemory(bytes);
  void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  if (p == nullptr) throw OutOfMemory(bytes);
  return p;
}

void Workspace::Free::operator()(float* p) const { std::free(p); }

float* Workspace::get(std::size_t count) {
  if (count == 0) count = 1;
  if (count > capacity_) {
    if (count > (std::numeric_limits<std::size_t>::max() - 63) / sizeof(float)) {
      throw OutOfMemory(std::numeric_limits<std::size_t>::max());
    }
    data_.reset(static_cast<float*>(aligned_bytes(count * sizeof(float))));
    capacity_ = count;
  }
  return data_.get();
}

namespace {

constexpr const char* kKernel = "gemm";

// A matrix operand for sgemm_tiles: an FP32 operand's block is its own
// memory; any other dtype's stored rows are widened into the buffer in the
// same orientation (widen_row_for: the VPERMI2W decoder for FP8 at level
// avx512 and above), so nothing is transposed.
TileOperand tile_operand(const octet_matrix_view& v, bool transposed) {
  const WidenRow widen = widen_row_for(v.dtype);
  TileOperand op;
  op.buffered = v.dtype != OCTET_DTYPE_FP32;
  op.block = [v, transposed, widen](int64_t first_outer, int64_t outer, int64_t first_k, int64_t k, float* buffer) {
    const int64_t row0 = transposed ? first_k : first_outer, col0 = transposed ? first_outer : first_k;
    if (v.dtype == OCTET_DTYPE_FP32) {
      return Fp32Block{reinterpret_cast<const float*>(element_ptr(v, row0, col0)), v.ld, transposed};
    }
    const int64_t rows = transposed ? k : outer, cols = transposed ? outer : k;
    for (int64_t r = 0; r < rows; ++r) widen(element_ptr(v, row0 + r, col0), v.dtype, cols, buffer + r * cols);
    return Fp32Block{buffer, cols, transposed};
  };
  return op;
}

// An FP8 operand for bf16_matmul_tiles: each block widened to BF16 (exact)
// in its stored orientation.
Bf16TileOperand bf16_tile_operand(const octet_matrix_view& v, bool transposed) {
  return [v, transposed](int64_t first_outer, int64_t outer, int64_t first_k, int64_t k, uint16_t* buffer) {
    const int64_t row0 = transposed ? first_k : first_outer, col0 = transposed ? first_outer : first_k;
    const int64_t rows = transposed ? k : outer, cols = transposed ? outer : k;
    for (int64_t r = 0; r < rows; ++r) {
      fp8_widen_bf16_avx512(static_cast<const uint8_t*>(element_ptr(v, row0 + r, col0)), v.dtype, cols,
                            buffer + r * cols);
    }
    return Bf16Block{buffer, cols, transposed};
  };
}

int32_t check_operand(const char* name, const char* trans_name, const octet_matrix_view& v,
                      int32_t trans, int64_t outer, int64_t k, const char* outer_name) {
  if (trans != 0 && trans != 1) {
    return report(OCTET_STATUS_INVALID_ARGUMENT, std::string(kKernel) + ": args->" + trans_name +
                                                     " is " + std::to_string(trans) +
                                                     "; it must be 0 or 1");
  }
  if (int32_t s = require_matrix(kKernel, name, v, Accept::Any)) return s;
  const std::string rule = trans ? std::string("[k,") + outer_name + "] because " + trans_name +
                                       " = 1"
                                 : std::string("[") + outer_name + ",k] because " + trans_name +
                                       " = 0";
  return trans ? require_shape(kKernel, name, v, k, outer, rule.c_str())
               : require_shape(kKernel, name, v, outer, k, rule.c_str());
}

int32_t check_args(const octet_gemm_args* args) {
  if (int32_t s = require_pointer(kKernel, "args", args)) return s;
  if (int32_t s = require_struct_size(kKernel, "args", args->struct_size, sizeof(octet_gemm_args)))
    return s;
  if (args->m < 0 || args->n < 0 || args->k < 0) {
    return report(OCTET_STATUS_INVALID_ARGUMENT,
                  std::string(kKernel) + ": args->m, args->n, args->k are " +
                      std::to_string(args->m) + ", " + std::to_string(args->n) + ", " +
                      std::to_string(args->k) + "; none may be negative");
  }
  if (int32_t s = check_operand("args->a", "trans_a", args->a, args->trans_a, args->m, args->k, "m"))
    return s;
  if (int32_t s = check_operand("args->b", "trans_b", args->b, args->trans_b, args->n, args->k, "n"))
    return s;
  const int32_t ad = args->a.dtype, bd = args->b.dtype;
  if (!((is_fp8(ad) && is_fp8(bd)) || (is_high_precision(ad) && is_high_precision(bd)))) {
    return report(OCTET_STATUS_UNSUPPORTED,
                  std::string(kKernel) + ": args->a.dtype is " + dtype_name(ad) + " and args->b.dtype is " +
                      dtype_name(bd) +
                      "; operands must be both FP8 (e4m3/e5m2/e4m3fnuz/e5m2fnuz) or both fp32/bf16/fp16");
  }
  if (int32_t s = require_matrix(kKernel, "args->d", args->d, Accept::HighPrecision,
                                 OCTET_STATUS_UNSUPPORTED)) {
    return s;
  }
  if (int32_t s = require_shape(kKernel, "args->d", args->d, args->m, args->n, "[m,n]")) return s;
  if (args->bias.data != nullptr) {
    if (int32_t s = require_matrix(kKernel, "args->bias", args->bias, Accept::HighPrecision))
      return s;
    if (int32_t s = require_shape(kKernel, "args->bias", args->bias, 1, args->n,
                                  "one row of n elements")) {
      return s;
    }
  }
  if (args->epilogue != OCTET_EPILOGUE_NONE && args->epilogue != OCTET_EPILOGUE_GELU) {
    return report(OCTET_STATUS_INVALID_ARGUMENT,
                  std::string(kKernel) + ": args->epilogue is " + std::to_string(args->epilogue) +
                      "; it must be OCTET_EPILOGUE_NONE or OCTET_EPILOGUE_GELU");
  }
  // oneDNN accumulates FP32 exactly as asked: fast accumulation has nothing
  // to relax here, so 1 is accepted and changes nothing.
  if (args->fast_accumulation != 0 && args->fast_accumulation != 1) {
    return report(OCTET_STATUS_INVALID_ARGUMENT, std::string(kKernel) + ": args->fast_accumulation is " +
                                                     std::to_string(args->fast_accumulation) +
                                                     "; it must be 0 or 1");
  }
  // The caps do not declare fp8_gemm_output, so no host sends d_scale.
  if (args->d_scale != nullptr) {
    return report(OCTET_STATUS_UNSUPPORTED,
                  std::string(kKernel) + ": args->d_scale is set but this backend writes no FP8 output "
                                         "(caps.fp8_gemm_output = 0; the host composes it)");
  }
  return OCTET_STATUS_SUCCESS;
}

Fp8Operand operand(const octet_matrix_view& v, int32_t trans) {
  return Fp8Operand{static_cast<const uint8_t*>(v.data), v.ld, trans != 0, v.dtype};
}

}  // namespace

int32_t gemm_sums(const char* kernel, const octet_matrix_view& av, bool trans_a, const octet_matrix_view& bv,
                  bool trans_b, int64_t m, int64_t n, int64_t k, float* acc, int64_t ldc) {
  const bool fp8 = is_fp8(av.dtype);
  const Fp8Operand a = operand(av, trans_a), b = operand(bv, trans_b);
  if (k == 0) {
    for (int64_t i = 0; i < m; ++i) std::fill(acc + i * ldc, acc + i * ldc + n, 0.0f);
  } else if (fp8 && cpu_isa() >= Isa::Avx512Bf16 && fp8_gemm_bf16_built() &&
             (fp8_gemm_engine() == Fp8GemmEngine::Bf16Dot || fp8_gemm_bf16_decodes(m, trans_b)) &&
             !fp8_operand_has_fnuz_nan(a, m, k) && !fp8_operand_has_fnuz_nan(b, n, k)) {
    fp8_gemm_bf16(a, b, m, n, k, acc, ldc);
  } else if (fp8 && cpu_isa() >= Isa::Avx512 && fp8_decode_fma_built() && fp8_gemm_bf16_decodes(m, trans_b) &&
             !fp8_operand_has_fnuz_nan(a, m, k) && !fp8_operand_has_fnuz_nan(b, n, k)) {
    // Levels avx512 and avx512_vbmi (no AVX512_BF16; above them the branch
    // before takes these shapes): the decode kernel on FP32 FMAs.
    if (cpu_isa() == Isa::Avx512Vbmi && fp8_decode_fma_vbmi_built()) {
      fp8_decode_gemm_fma_vbmi(a, b, m, n, k, acc, ldc);
    } else {
      fp8_decode_gemm_fma(a, b, m, n, k, acc, ldc);
    }
  } else if (fp8 && cpu_isa() >= Isa::Avx2 && fp8_decode_avx2_built() && fp8_gemm_bf16_decodes(m, trans_b) &&
             fp8_decode_avx2_takes(av.dtype) && fp8_decode_avx2_takes(bv.dtype) && !fp8_operand_has_fnuz_nan(a, m, k) &&
             !fp8_operand_has_fnuz_nan(b, n, k)) {
    // Level avx2: the decode kernel on 8-lane FMAs, F16C decoding.
    fp8_decode_gemm_avx2(a, b, m, n, k, acc, ldc);
  } else if (fp8 && is_fp8(bv.dtype) && fp8_gemm_engine() == Fp8GemmEngine::OnednnBf16 &&
             cpu_isa() >= Isa::Avx512Bf16 && fp8_widen_avx512_built()) {
    // Compute-bound shapes on oneDNN's BF16 matmul (AMX tiles where the CPU
    // has them: isa.hpp, Fp8GemmEngine).
    return bf16_matmul_tiles(kernel, bf16_tile_operand(av, trans_a), bf16_tile_operand(bv, trans_b), m, n, k, acc, ldc);
  } else {
    return sgemm_tiles(kernel, tile_operand(av, trans_a), tile_operand(bv, trans_b), m, n, k, acc, ldc);
  }
  return OCTET_STATUS_SUCCESS;
}

int32_t gemm_kernel(const octet_gemm_args* args) {
  if (int32_t s = check_args(args)) return s;
  const int64_t m = args->m, n = args->n, k = args->k;
  if (m == 0 || n == 0) return OCTET_STATUS_SUCCESS;
  const RowKernels& rk = row_kernels();
  const octet_matrix_view& d = args->d;
  const float sa = args->a_scale_inv != nullptr ? *args->a_scale_inv : 1.0f;
  const float sb = args->b_scale_inv != nullptr ? *args->b_scale_inv : 1.0f;
  const float scale = args->alpha * (sa * sb);
  const float beta = args->beta;
  const bool has_bias = args->bias.data != nullptr;
  const bool has_gelu = args->epilogue == OCTET_EPILOGUE_GELU;

  // acc goes straight into D when D is FP32 and its old values are not needed.
  const bool direct = d.dtype == OCTET_DTYPE_FP32 && beta == 0.0f;
  Buffer<float> acc_buffer;
  if (!direct) acc_buffer.reset(element_count(m, n));
  float* acc = direct ? static_cast<float*>(d.data) : acc_buffer.get();
  const int64_t ldc = direct ? d.ld : n;

  if (int32_t s = gemm_sums(kKernel, args->a, args->trans_a != 0, args->b, args->trans_b != 0, m, n, k, acc, ldc)) {
    return s;
  }

  if (direct && scale == 1.0f && !has_bias && !has_gelu) return OCTET_STATUS_SUCCESS;

  // Epilogue, row by row, in the documented order.
  const bool parallel = split_elements(double(m * n));
  // Buffers are allocated here, outside the parallel region (nothing may
  // throw inside it): the widened bias, and one row of old D per thread.
  Buffer<float> bias_values;
  if (has_bias) {
    bias_values.reset(static_cast<std::size_t>(n));
    rk.widen(args->bias.data, args->bias.dtype, n, bias_values.get());
  }
  const bool widen_old = beta != 0.0f && d.dtype != OCTET_DTYPE_FP32;
  Buffer<float> old_rows;
  if (widen_old) old_rows.reset(element_count(omp_get_max_threads(), n));
#pragma omp parallel if (parallel)
  {
    const octet::DefaultFloatMode float_mode;  // this thread, for the region (parallel_policy.hpp)
    float* row_buffer =
        widen_old ? old_rows.get() + static_cast<std::size_t>(omp_get_thread_num()) * n : nullptr;
#pragma omp for schedule(static)
    for (int64_t i = 0; i < m; ++i) {
      float* v = acc + i * ldc;
      for (int64_t j = 0; j < n; ++j) v[j] = scale * v[j];
      if (beta != 0.0f) {
        const float* old;
        if (d.dtype == OCTET_DTYPE_FP32) {
          old = reinterpret_cast<const float*>(element_ptr(d, i, 0));
        } else {
          rk.widen(element_ptr(d, i, 0), d.dtype, n, row_buffer);
          old = row_buffer;
        }
        for (int64_t j = 0; j < n; ++j) v[j] = v[j] + beta * old[j];
      }
      if (has_bias) {
        for (int64_t j = 0; j < n; ++j) v[j] = v[j] + bias_values.get()[j];
      }
      if (has_gelu) {
        activation_rows().gelu(v, n, v);
      }
      if (!direct) {
        rk.narrow(v, n, d.dtype, true, element_ptr_mut(d, i, 0));
      }
    }
  }
  return OCTET_STATUS_SUCCESS;
}

}  // namespace octet_cpu
