// The GEMMs (numerics.md sections 8 and 12). Each output element is summed
// in ascending k in FP32, exactly the reference's order, so the results are
// the reference's bits (well inside the bound numerics.md allows). The
// operands are first widened to FP32 panels [outer, k] (exact for every
// accepted dtype; a transposed operand is read along its columns, so every
// FP8 layout runs: native columnwise access); then a team per output row
// spreads the columns over its threads.
#include <string>

#include "views.hpp"

namespace octet_kokkos {
namespace {

constexpr const char* kGemm = "gemm";
constexpr const char* kBlockGemm = "block_gemm";

using Panel = Kokkos::View<float**, Kokkos::LayoutRight, MemSpace>;

// op(X) as [outer, k] FP32 rows.
Panel widen(const char* label, const octet_matrix_view& view, bool transposed, int64_t outer, int64_t k) {
  Panel panel = allocate_view(size_t(outer) * size_t(k) * sizeof(float), [&] {
    return Panel(Kokkos::view_alloc(std::string(label), Kokkos::WithoutInitializing), outer, k);
  });
  if (outer > 0 && k > 0) {
    const Mat m(view);
    Kokkos::parallel_for(
        "octet_kokkos::widen", Range2({0, 0}, {outer, k}),
        KOKKOS_LAMBDA(int64_t i, int64_t kk) { panel(i, kk) = transposed ? m.at(kk, i) : m.at(i, kk); });
  }
  return panel;
}

int32_t check_operand(const char* name, const char* trans_name, const octet_matrix_view& view, int32_t transposed,
                      int64_t outer, int64_t k, const char* outer_name) {
  if (transposed != 0 && transposed != 1) {
    return report(OCTET_STATUS_INVALID_ARGUMENT, std::string(kGemm) + ": args->" + trans_name + " (" +
                                                     std::to_string(transposed) + ") must be 0 or 1");
  }
  if (int32_t s = check_matrix(kGemm, name, view, DtypeClass::Any)) return s;
  const std::string layout = transposed ? std::string("[k,") + outer_name + "] since " + trans_name + " = 1"
                                        : std::string("[") + outer_name + ",k] since " + trans_name + " = 0";
  return transposed ? check_shape(kGemm, name, view, k, outer, layout) : check_shape(kGemm, name, view, outer, k, layout);
}

int32_t check_gemm_args(const octet_gemm_args* args) {
  if (int32_t s = check_not_null(kGemm, "args", args)) return s;
  if (int32_t s = check_struct_size(kGemm, "args", args->struct_size, sizeof(octet_gemm_args))) return s;
  if (args->m < 0 || args->n < 0 || args->k < 0) {
    return report(OCTET_STATUS_INVALID_ARGUMENT, std::string(kGemm) + ": args->m, args->n and args->k must be >= 0 (got " +
                                                     std::to_string(args->m) + ", " + std::to_string(args->n) + ", " +
                                                     std::to_string(args->k) + ")");
  }
  if (int32_t s = check_operand("args->a", "trans_a", args->a, args->trans_a, args->m, args->k, "m")) return s;
  if (int32_t s = check_operand("args->b", "trans_b", args->b, args->trans_b, args->n, args->k, "n")) return s;
  const bool both_fp8 = is_fp8(args->a.dtype) && is_fp8(args->b.dtype);
  const bool both_high = is_high_precision(args->a.dtype) && is_high_precision(args->b.dtype);
  if (!both_fp8 && !both_high) {
    return report(OCTET_STATUS_UNSUPPORTED, std::string(kGemm) + ": args->a.dtype is " + dtype_name(args->a.dtype) +
                                                " and args->b.dtype is " + dtype_name(args->b.dtype) +
                                                ": the operands must both be FP8 (" + kFp8DtypeNames +
                                                ") or both fp32/bf16/fp16");
  }
  if (args->d_scale != nullptr) {
    if (int32_t s = check_matrix(kGemm, "args->d", args->d, DtypeClass::Fp8)) return s;
    if (args->beta != 0.0f) {
      return report(OCTET_STATUS_INVALID_ARGUMENT,
                    std::string(kGemm) + ": args->beta must be 0 when args->d is FP8 (d_scale set)");
    }
    if (args->d_saturate != 0 && args->d_saturate != 1) {
      return report(OCTET_STATUS_INVALID_ARGUMENT, std::string(kGemm) + ": args->d_saturate (" +
                                                       std::to_string(args->d_saturate) + ") must be 0 or 1");
    }
  } else if (is_fp8(args->d.dtype)) {
    return report(OCTET_STATUS_INVALID_ARGUMENT,
                  std::string(kGemm) + ": args->d is FP8 but args->d_scale is NULL (FP8 output needs it)");
  } else if (int32_t s = check_matrix(kGemm, "args->d", args->d, DtypeClass::HighPrecision)) {
    return s;
  }
  if (args->fast_accumulation != 0 && args->fast_accumulation != 1) {
    return report(OCTET_STATUS_INVALID_ARGUMENT, std::string(kGemm) + ": args->fast_accumulation (" +
                                                     std::to_string(args->fast_accumulation) + ") must be 0 or 1");
  }
  if (int32_t s = check_shape(kGemm, "args->d", args->d, args->m, args->n, "[m,n]")) return s;
  if (args->bias.data != nullptr) {
    if (int32_t s = check_matrix(kGemm, "args->bias", args->bias, DtypeClass::HighPrecision)) return s;
    if (int32_t s = check_shape(kGemm, "args->bias", args->bias, 1, args->n, "one row of n elements")) return s;
  }
  if (args->epilogue != OCTET_EPILOGUE_NONE && args->epilogue != OCTET_EPILOGUE_GELU) {
    return report(OCTET_STATUS_INVALID_ARGUMENT, std::string(kGemm) + ": args->epilogue (" +
                                                     std::to_string(args->epilogue) +
                                                     ") must be OCTET_EPILOGUE_NONE or OCTET_EPILOGUE_GELU");
  }
  return OCTET_STATUS_SUCCESS;
}

// The epilogue of both GEMMs: beta, bias, GELU (numerics.md section 8).
struct Epilogue {
  Mat d, bias;
  float beta = 0.0f;
  bool has_bias = false, gelu = false;
  KOKKOS_INLINE_FUNCTION float apply(float v, int64_t i, int64_t j) const {
    if (beta != 0.0f) v = v + beta * d.at(i, j);
    if (has_bias) v = v + bias.at(0, j);
    if (gelu) v = gemm_gelu(v);
    return v;
  }
};

template <typename Args>
Epilogue epilogue_of(const Args& args) {
  Epilogue e;
  e.d = Mat(args.d);
  e.beta = args.beta;
  e.has_bias = args.bias.data != nullptr;
  if (e.has_bias) e.bias = Mat(args.bias);
  e.gelu = args.epilogue == OCTET_EPILOGUE_GELU;
  return e;
}

}  // namespace

int32_t gemm_kernel(const octet_gemm_args* args) {
  if (int32_t s = check_gemm_args(args)) return s;
  const int64_t m = args->m, n = args->n, k = args->k;
  const bool fp8_out = args->d_scale != nullptr;
  const float d_scale = fp8_out ? read_scalar(args->d_scale) : 1.0f;
  float d_amax = 0.0f;
  if (m > 0 && n > 0) {
    const Panel a = widen("octet_kokkos::gemm_a", args->a, args->trans_a != 0, m, k);
    const Panel b = widen("octet_kokkos::gemm_b", args->b, args->trans_b != 0, n, k);
    const float sa = args->a_scale_inv != nullptr ? read_scalar(args->a_scale_inv) : 1.0f;
    const float sb = args->b_scale_inv != nullptr ? read_scalar(args->b_scale_inv) : 1.0f;
    const float scale = args->alpha * (sa * sb);
    const Epilogue epilogue = epilogue_of(*args);
    const Mat d(args->d);
    const int32_t d_dtype = args->d.dtype;
    const bool d_saturate = args->d_saturate != 0;
    // fast_accumulation is only a permission: the sum is always the exact one.
    Kokkos::parallel_reduce(
        "octet_kokkos::gemm", Team(static_cast<int>(m), Kokkos::AUTO),
        KOKKOS_LAMBDA(const Member& team, float& amax) {
          const int64_t i = team.league_rank();
          float row_amax = 0.0f;
          Kokkos::parallel_reduce(
              Kokkos::TeamThreadRange(team, n),
              [&](int64_t j, float& local) {
                float acc = 0.0f;
                for (int64_t kk = 0; kk < k; ++kk) {
                  const float product = a(i, kk) * b(j, kk);  // rounded on its own
                  acc = acc + product;
                }
                const float v = epilogue.apply(scale * acc, i, j);
                if (fp8_out) {
                  if (!is_nan(v) && abs_of(v) > local) local = abs_of(v);
                  d.bytes(i * d.ld + j) = fp8_encode(v * d_scale, d_dtype, d_saturate);
                } else {
                  d.put(i, j, v, true);
                }
              },
              Kokkos::Max<float>(row_amax));
          Kokkos::single(Kokkos::PerTeam(team), [&]() {
            if (row_amax > amax) amax = row_amax;
          });
        },
        Kokkos::Max<float>(d_amax));
    if (!(d_amax > 0.0f)) d_amax = 0.0f;
  }
  if (fp8_out) {
    if (args->d_scale_inv_out != nullptr) write_scalar(args->d_scale_inv_out, 1.0f / d_scale);
    if (args->d_amax_out != nullptr) write_scalar(args->d_amax_out, d_amax);
  }
  return OCTET_STATUS_SUCCESS;
}

namespace {

int32_t check_block_gemm_args(const octet_block_gemm_args* args) {
  const char* kKernel = kBlockGemm;
  if (int32_t s = check_not_null(kKernel, "args", args)) return s;
  if (int32_t s = check_struct_size(kKernel, "args", args->struct_size, sizeof(octet_block_gemm_args))) return s;
  if (args->m < 0 || args->n < 0 || args->k < 0) {
    return report(OCTET_STATUS_INVALID_ARGUMENT, std::string(kKernel) + ": m, n, k must be >= 0");
  }
  if (int32_t s = check_matrix(kKernel, "args->a", args->a, DtypeClass::Fp8)) return s;
  if (int32_t s = check_matrix(kKernel, "args->b", args->b, DtypeClass::Fp8)) return s;
  if (int32_t s = check_shape(kKernel, "args->a", args->a, args->m, args->k, "[m,k]")) return s;
  if (int32_t s = check_shape(kKernel, "args->b", args->b, args->n, args->k, "[n,k]")) return s;
  if (args->scale_dtype != OCTET_DTYPE_E8M0 && args->scale_dtype != OCTET_DTYPE_FP32) {
    return report(OCTET_STATUS_INVALID_ARGUMENT, std::string(kKernel) + ": args->scale_dtype must be e8m0 or fp32");
  }
  if (args->a_block_rows < 1 || args->a_block_cols < 1 || args->b_block_rows < 1 || args->b_block_cols < 1 ||
      args->a_block_cols != args->b_block_cols) {
    return report(OCTET_STATUS_INVALID_ARGUMENT, std::string(kKernel) +
                                                     ": block shapes must be >= 1x1 and cover the same extent of k "
                                                     "(a_block_cols == b_block_cols)");
  }
  if (int32_t s = check_not_null(kKernel, "args->a_scale_inv", args->a_scale_inv)) return s;
  if (int32_t s = check_not_null(kKernel, "args->b_scale_inv", args->b_scale_inv)) return s;
  if (int32_t s = check_matrix(kKernel, "args->d", args->d, DtypeClass::HighPrecision, OCTET_STATUS_UNSUPPORTED))
    return s;
  if (int32_t s = check_shape(kKernel, "args->d", args->d, args->m, args->n, "[m,n]")) return s;
  if (args->bias.data != nullptr) {
    if (int32_t s = check_matrix(kKernel, "args->bias", args->bias, DtypeClass::HighPrecision)) return s;
    if (int32_t s = check_shape(kKernel, "args->bias", args->bias, 1, args->n, "one row of n")) return s;
  }
  if (args->epilogue != OCTET_EPILOGUE_NONE && args->epilogue != OCTET_EPILOGUE_GELU) {
    return report(OCTET_STATUS_INVALID_ARGUMENT, std::string(kKernel) + ": bad args->epilogue");
  }
  return OCTET_STATUS_SUCCESS;
}

// A scale grid in backend memory: E8M0 codes or FP32 values.
struct ScaleGrid {
  DeviceView<uint8_t> codes;
  DeviceView<float> values;
  bool e8m0 = false;
  ScaleGrid(const void* p, int32_t dtype, int64_t count) : e8m0(dtype == OCTET_DTYPE_E8M0) {
    if (e8m0) {
      codes = DeviceView<uint8_t>(static_cast<uint8_t*>(const_cast<void*>(p)), static_cast<size_t>(count));
    } else {
      values = DeviceView<float>(static_cast<float*>(const_cast<void*>(p)), static_cast<size_t>(count));
    }
  }
  KOKKOS_INLINE_FUNCTION float at(int64_t index) const { return e8m0 ? e8m0_decode(codes(index)) : values(index); }
};

}  // namespace

int32_t block_gemm_kernel(const octet_block_gemm_args* args) {
  if (int32_t s = check_block_gemm_args(args)) return s;
  const int64_t m = args->m, n = args->n, k = args->k, bk = args->a_block_cols;
  if (m == 0 || n == 0) return OCTET_STATUS_SUCCESS;
  const int64_t k_blocks = ceil_div(k, bk);
  const int64_t a_rows = args->a_block_rows, b_rows = args->b_block_rows;
  const ScaleGrid sa(args->a_scale_inv, args->scale_dtype, ceil_div(m, a_rows) * k_blocks);
  const ScaleGrid sb(args->b_scale_inv, args->scale_dtype, ceil_div(n, b_rows) * k_blocks);
  const Panel a = widen("octet_kokkos::block_gemm_a", args->a, false, m, k);
  const Panel b = widen("octet_kokkos::block_gemm_b", args->b, false, n, k);
  const Epilogue epilogue = epilogue_of(*args);
  const Mat d(args->d);
  const float alpha = args->alpha;
  Kokkos::parallel_for(
      "octet_kokkos::block_gemm", Team(static_cast<int>(m), Kokkos::AUTO), KOKKOS_LAMBDA(const Member& team) {
        const int64_t i = team.league_rank();
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, n), [&](int64_t j) {
          float acc = 0.0f;
          for (int64_t kb = 0; kb < k_blocks; ++kb) {
            float partial = 0.0f;
            const int64_t end = (kb + 1) * bk < k ? (kb + 1) * bk : k;
            for (int64_t kk = kb * bk; kk < end; ++kk) {
              const float product = a(i, kk) * b(j, kk);  // exact for FP8 operands
              partial = partial + product;
            }
            const float scaled = partial * (sa.at((i / a_rows) * k_blocks + kb) * sb.at((j / b_rows) * k_blocks + kb));
            acc = acc + scaled;
          }
          d.put(i, j, epilogue.apply(alpha * acc, i, j), true);
        });
      });
  Kokkos::fence();
  return OCTET_STATUS_SUCCESS;
}

}  // namespace octet_kokkos
