// GEMM through cuBLASLt, with an exact scalar kernel for what it rejects.
//
// Layout mapping. Octet computes, row-major,
//     D[m,n] = sum_k A'[m,k] * B'[n,k]      (D = A' B'^T, D is M x N)
// cuBLASLt is column-major. The row-major M x N array D (leading dimension
// ld_d) is, read column-major, the N x M matrix D^T with the same ld. And
//     D^T = (A' B'^T)^T = B' A'^T,
// so cuBLASLt computes X = op(P) * op(Q) with X = D^T (N x M), op(P) = B'
// (N x K) and op(Q) = A'^T (K x M): cuBLASLt's "A" is Octet's B and its "B"
// is Octet's A.
//   Octet's B, trans_b = 0: stored [N,K] row-major = column-major K x N = B'^T,
//       so P is K x N (ld ld_b) with op T.
//   Octet's B, trans_b = 1: stored [K,N] row-major = column-major N x K = B',
//       so P is N x K (ld ld_b) with op N.
//   Octet's A, trans_a = 0: stored [M,K] row-major = column-major K x M = A'^T,
//       so Q is K x M (ld ld_a) with op N.
//   Octet's A, trans_a = 1: stored [K,M] row-major = column-major M x K = A',
//       so Q is M x K (ld ld_a) with op T.
// Octet's TN (trans_a = trans_b = 0) is therefore cuBLASLt's transa = T,
// transb = N: both operands K-contiguous, the only FP8 layout Hopper's
// cuBLASLt runs. The bias (length N, indexed by n) is cuBLASLt's bias vector
// over the rows of X = D^T, broadcast along its M columns. The scale of
// cuBLASLt's A is Octet's b_scale_inv and that of its B is a_scale_inv.
//
// Paths, first that cuBLASLt accepts (heuristic returns an algorithm):
// FAST_ACCUM follows args.fast_accumulation (0 unless the caller allows it).
//   1. D = epilogue(alpha * sa * sb * P Q + beta * C + bias) in one cuBLASLt
//      call, C = D (in place), bias and GELU in cuBLASLt's epilogue (GELU only
//      with OCTET_CUDA_CUBLASLT_GELU=1: cuBLASLt's GELU rounds differently
//      from numerics.md 8, so by default GELU takes path 2).
//   2. acc = alpha * sa * sb * P Q into an FP32 workspace by cuBLASLt, then
//      the exact epilogue kernel (beta * D, bias, GELU, rounding to D).
//   3. the scalar kernel in the reference's order (ragged leading dimensions,
//      E5M2 x E5M2, mixed high-precision inputs, K = 0, misaligned data,
//      high-precision operands with scale_inv pointers: gemm_paths.hpp).
#include <octet/octet_backend.h>

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstdlib>
#include <cstring>

#include "arch.hpp"
#include "checks.hpp"
#include "context.hpp"
#include "errors.hpp"
#include "gemm_paths.hpp"
#include "kernels.hpp"

namespace octet_cuda {
namespace {

constexpr size_t kWorkspaceBytes = size_t(32) << 20;

const char* layout_name(int32_t trans_a, int32_t trans_b) {
  if (!trans_a) return trans_b ? "NN (trans_a = 0, trans_b = 1)" : "TN (trans_a = 0, trans_b = 0)";
  return trans_b ? "NT (trans_a = 1, trans_b = 1)" : "TT (trans_a = 1, trans_b = 0)";
}

cudaDataType_t cuda_type(int32_t dtype) {
  switch (dtype) {
    case OCTET_DTYPE_FP32: return CUDA_R_32F;
    case OCTET_DTYPE_BF16: return CUDA_R_16BF;
    case OCTET_DTYPE_FP16: return CUDA_R_16F;
    case OCTET_DTYPE_E4M3: return CUDA_R_8F_E4M3;
    default: return CUDA_R_8F_E5M2;
  }
}

const char* lt_status_text(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    default: return "cuBLAS error";
  }
}

void check_lt(cublasStatus_t status, const char* what) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  fail(status == CUBLAS_STATUS_ALLOC_FAILED ? OCTET_STATUS_OUT_OF_MEMORY : OCTET_STATUS_BACKEND_ERROR, what,
       " failed with ", lt_status_text(status), " (", static_cast<int>(status), ")");
}

// RAII holders of cuBLASLt descriptors.
struct MatmulDesc {
  cublasLtMatmulDesc_t handle = nullptr;
  ~MatmulDesc() {
    if (handle) cublasLtMatmulDescDestroy(handle);
  }
  template <typename T>
  cublasStatus_t set(cublasLtMatmulDescAttributes_t attribute, const T& value) {
    return cublasLtMatmulDescSetAttribute(handle, attribute, &value, sizeof value);
  }
};
struct Layout {
  cublasLtMatrixLayout_t handle = nullptr;
  ~Layout() {
    if (handle) cublasLtMatrixLayoutDestroy(handle);
  }
};
struct Preference {
  cublasLtMatmulPreference_t handle = nullptr;
  ~Preference() {
    if (handle) cublasLtMatmulPreferenceDestroy(handle);
  }
  template <typename T>
  cublasStatus_t set(cublasLtMatmulPreferenceAttributes_t attribute, const T& value) {
    return cublasLtMatmulPreferenceSetAttribute(handle, attribute, &value, sizeof value);
  }
};

uint32_t alignment_of(const void* ptr) {
  const auto address = reinterpret_cast<uintptr_t>(ptr);
  uint32_t alignment = 256;
  while (alignment > 1 && (address % alignment) != 0) alignment >>= 1;
  return alignment;
}

bool env_flag(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && value[0] == '1';
}

struct Plan {
  const void* p;  // cuBLASLt's A (Octet's B)
  const void* q;  // cuBLASLt's B (Octet's A)
  cudaDataType_t p_type, q_type;
  cublasOperation_t op_p, op_q;
  uint64_t p_rows, p_cols, q_rows, q_cols;
  int64_t ld_p, ld_q;
  const float* p_scale;
  const float* q_scale;
  bool fp8;
  bool fast_accumulation;  // FP8 only: cuBLASLt's reduced-precision accumulation, on request
};

Plan plan_of(const octet_gemm_args& args, bool fp8) {
  Plan plan{};
  const uint64_t m = uint64_t(args.m), n = uint64_t(args.n), k = uint64_t(args.k);
  plan.fp8 = fp8;
  plan.fast_accumulation = fp8 && args.fast_accumulation == 1;
  plan.p = args.b.data;
  plan.p_type = cuda_type(args.b.dtype);
  plan.op_p = args.trans_b ? CUBLAS_OP_N : CUBLAS_OP_T;
  plan.p_rows = args.trans_b ? n : k;
  plan.p_cols = args.trans_b ? k : n;
  plan.ld_p = args.b.ld;
  plan.q = args.a.data;
  plan.q_type = cuda_type(args.a.dtype);
  plan.op_q = args.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  plan.q_rows = args.trans_a ? m : k;
  plan.q_cols = args.trans_a ? k : m;
  plan.ld_q = args.a.ld;
  plan.p_scale = fp8 ? args.b_scale_inv : nullptr;
  plan.q_scale = fp8 ? args.a_scale_inv : nullptr;
  return plan;
}

// One cuBLASLt matmul X (N x M, column-major, ld ld_x) = alpha * op(P) op(Q)
// + beta * X, with bias / epilogue as given. Returns false (and queues
// nothing) when cuBLASLt has no algorithm for it.
bool try_cublaslt(octet_backend_context* context, const Plan& plan, uint64_t m, uint64_t n, void* x,
                  cudaDataType_t x_type, int64_t ld_x, float alpha, float beta, const void* bias,
                  cudaDataType_t bias_type, cublasLtEpilogue_t epilogue) {
  if (context->lt == nullptr) check_lt(cublasLtCreate(&context->lt), "cublasLtCreate");
  MatmulDesc desc;
  if (cublasLtMatmulDescCreate(&desc.handle, CUBLAS_COMPUTE_32F, CUDA_R_32F) != CUBLAS_STATUS_SUCCESS) return false;
  const int8_t fast_accumulation = plan.fast_accumulation ? 1 : 0;
  if (desc.set(CUBLASLT_MATMUL_DESC_TRANSA, plan.op_p) != CUBLAS_STATUS_SUCCESS ||
      desc.set(CUBLASLT_MATMUL_DESC_TRANSB, plan.op_q) != CUBLAS_STATUS_SUCCESS ||
      desc.set(CUBLASLT_MATMUL_DESC_EPILOGUE, epilogue) != CUBLAS_STATUS_SUCCESS)
    return false;
  if (plan.fp8) {
    if (desc.set(CUBLASLT_MATMUL_DESC_FAST_ACCUM, fast_accumulation) != CUBLAS_STATUS_SUCCESS) return false;
    // NULL scale pointers mean 1 in both APIs.
    if (plan.p_scale != nullptr &&
        desc.set(CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, static_cast<const void*>(plan.p_scale)) != CUBLAS_STATUS_SUCCESS)
      return false;
    if (plan.q_scale != nullptr &&
        desc.set(CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, static_cast<const void*>(plan.q_scale)) != CUBLAS_STATUS_SUCCESS)
      return false;
  }
  if (bias != nullptr) {
    if (desc.set(CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias) != CUBLAS_STATUS_SUCCESS ||
        desc.set(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, bias_type) != CUBLAS_STATUS_SUCCESS)
      return false;
  }
  Layout lp, lq, lx;
  if (cublasLtMatrixLayoutCreate(&lp.handle, plan.p_type, plan.p_rows, plan.p_cols, plan.ld_p) != CUBLAS_STATUS_SUCCESS ||
      cublasLtMatrixLayoutCreate(&lq.handle, plan.q_type, plan.q_rows, plan.q_cols, plan.ld_q) != CUBLAS_STATUS_SUCCESS ||
      cublasLtMatrixLayoutCreate(&lx.handle, x_type, n, m, ld_x) != CUBLAS_STATUS_SUCCESS)
    return false;

  Preference preference;
  if (cublasLtMatmulPreferenceCreate(&preference.handle) != CUBLAS_STATUS_SUCCESS) return false;
  const uint64_t workspace_bytes = kWorkspaceBytes;
  // cuBLASLt assumes 256-byte aligned pointers unless told otherwise.
  if (preference.set(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, workspace_bytes) != CUBLAS_STATUS_SUCCESS ||
      preference.set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, alignment_of(plan.p)) != CUBLAS_STATUS_SUCCESS ||
      preference.set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, alignment_of(plan.q)) != CUBLAS_STATUS_SUCCESS ||
      preference.set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, alignment_of(x)) != CUBLAS_STATUS_SUCCESS ||
      preference.set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, alignment_of(x)) != CUBLAS_STATUS_SUCCESS)
    return false;

  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t heuristic = cublasLtMatmulAlgoGetHeuristic(context->lt, desc.handle, lp.handle, lq.handle,
                                                                   lx.handle, lx.handle, preference.handle, 1, &result,
                                                                   &found);
  if (heuristic != CUBLAS_STATUS_SUCCESS || found < 1) return false;

  Scratch workspace(context, result.workspaceSize > 0 ? result.workspaceSize : 0);
  const cublasStatus_t status =
      cublasLtMatmul(context->lt, desc.handle, &alpha, plan.p, lp.handle, plan.q, lq.handle, &beta, x, lx.handle, x,
                     lx.handle, &result.algo, workspace.get(), result.workspaceSize, context->stream);
  // Some constraints are only checked here; nothing was queued then.
  if (status == CUBLAS_STATUS_NOT_SUPPORTED || status == CUBLAS_STATUS_INVALID_VALUE) return false;
  check_lt(status, "cublasLtMatmul");
  return true;
}

void check_gemm_args(const octet_gemm_args& args, bool& fp8) {
  require(args.m >= 0 && args.n >= 0 && args.k >= 0, "m, n and k must be >= 0 (they are ", args.m, ", ", args.n, ", ",
          args.k, ")");
  require(args.trans_a == 0 || args.trans_a == 1, "args->trans_a (", args.trans_a, ") must be 0 or 1");
  require(args.trans_b == 0 || args.trans_b == 1, "args->trans_b (", args.trans_b, ") must be 0 or 1");
  require(args.epilogue == OCTET_EPILOGUE_NONE || args.epilogue == OCTET_EPILOGUE_GELU, "args->epilogue (",
          args.epilogue, ") must be OCTET_EPILOGUE_NONE or OCTET_EPILOGUE_GELU");
  check_view("args->a", &args.a, kHighPrecision | kFp8);
  check_view("args->b", &args.b, kHighPrecision | kFp8);
  require(args.fast_accumulation == 0 || args.fast_accumulation == 1, "args->fast_accumulation (",
          args.fast_accumulation, ") must be 0 or 1");
  // caps.fp8_gemm_output is 0: the host composes FP8 output from an FP32 GEMM
  // and the exact quantize kernel, so no host sends d_scale.
  if (dtype_in(args.d.dtype, kFp8) || args.d_scale != nullptr) {
    fail(OCTET_STATUS_UNSUPPORTED, "args->d.dtype is ", dtype_label(args.d.dtype),
         args.d_scale != nullptr ? " with args->d_scale set" : "",
         ": this backend writes no FP8 GEMM output (caps.fp8_gemm_output = 0); use fp32, bf16 or fp16");
  }
  check_view("args->d", &args.d, kHighPrecision);
  fp8 = dtype_in(args.a.dtype, kFp8) && dtype_in(args.b.dtype, kFp8);
  const bool high = dtype_in(args.a.dtype, kHighPrecision) && dtype_in(args.b.dtype, kHighPrecision);
  if (!fp8 && !high) {
    fail(OCTET_STATUS_UNSUPPORTED, "args->a (", dtype_label(args.a.dtype), ") and args->b (", dtype_label(args.b.dtype),
         ") must both be FP8 or both fp32/bf16/fp16");
  }
  const int64_t a_rows = args.trans_a ? args.k : args.m, a_cols = args.trans_a ? args.m : args.k;
  const int64_t b_rows = args.trans_b ? args.k : args.n, b_cols = args.trans_b ? args.n : args.k;
  require(args.a.rows == a_rows && args.a.cols == a_cols, "args->a is ", args.a.rows, "x", args.a.cols, " but must be ",
          a_rows, "x", a_cols, " (trans_a = ", args.trans_a, ")");
  require(args.b.rows == b_rows && args.b.cols == b_cols, "args->b is ", args.b.rows, "x", args.b.cols, " but must be ",
          b_rows, "x", b_cols, " (trans_b = ", args.trans_b, ")");
  require(args.d.rows == args.m && args.d.cols == args.n, "args->d is ", args.d.rows, "x", args.d.cols,
          " but must be ", args.m, "x", args.n);
  if (args.bias.data != nullptr) {
    check_view("args->bias", &args.bias, kHighPrecision);
    require(args.bias.rows == 1 && args.bias.cols == args.n, "args->bias must be 1x", args.n, " but is ",
            args.bias.rows, "x", args.bias.cols);
  }
}

}  // namespace

void run_gemm(octet_backend_context* context, const octet_gemm_args& args) {
  bool fp8 = false;
  check_gemm_args(args, fp8);
  if (fp8 && !arch_profile(device_info().major).fp8_all_layouts && (args.trans_a != 0 || args.trans_b != 0)) {
    fail(OCTET_STATUS_UNSUPPORTED, "FP8 GEMM layout ", layout_name(args.trans_a, args.trans_b), " is not supported on SM ",
         device_info().major, ".", device_info().minor,
         ": cuBLASLt runs FP8 GEMMs there in the TN layout only (both operands K-contiguous, trans_a = trans_b = 0; "
         "caps.fp8_gemm_layouts = TN)");
  }
  if (args.m == 0 || args.n == 0) return;

  if (cublaslt_eligible(args, fp8)) {
    const Plan plan = plan_of(args, fp8);
    const uint64_t m = uint64_t(args.m), n = uint64_t(args.n);
    // Path 1: everything in one cuBLASLt call.
    const bool gelu = args.epilogue == OCTET_EPILOGUE_GELU;
    if (!gelu || env_flag("OCTET_CUDA_CUBLASLT_GELU")) {
      const bool bias = args.bias.data != nullptr;
      const cublasLtEpilogue_t epilogue = gelu ? (bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU)
                                               : (bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT);
      if (try_cublaslt(context, plan, m, n, args.d.data, cuda_type(args.d.dtype), args.d.ld, args.alpha, args.beta,
                       args.bias.data, bias ? cuda_type(args.bias.dtype) : CUDA_R_32F, epilogue))
        return;
    }
    // Path 2: FP32 accumulator from cuBLASLt, exact epilogue kernel.
    Scratch acc(context, size_t(m) * size_t(n) * sizeof(float));
    if (try_cublaslt(context, plan, m, n, acc.get(), CUDA_R_32F, int64_t(n), args.alpha, 0.0f, nullptr, CUDA_R_32F,
                     CUBLASLT_EPILOGUE_DEFAULT)) {
      check_cuda(launch_gemm_epilogue(static_cast<const float*>(acc.get()), args, context->stream),
                 "GEMM epilogue kernel launch");
      return;
    }
  }
  // Path 3: the scalar kernel.
  check_cuda(launch_gemm_fallback(args, context->stream), "fallback GEMM kernel launch");
}

}  // namespace octet_cuda
