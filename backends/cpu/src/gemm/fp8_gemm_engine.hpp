// The engine of the cpu backend's FP8 GEMMs: what their compute-bound
// shapes multiply on, chosen once from the CPU (dispatch/isa.hpp) and
// oneDNN's BF16 matmul implementation, or forced by OCTET_CPU_FP8_GEMM.
// The GEMM families' implementation lists (gemm/gemm_sums.cpp,
// gemm/block_gemm_kernel.cpp, fp4/gemm_fp4_kernel.cpp) read it.
#pragma once

namespace octet_cpu {

// What a compute-bound FP8 GEMM (the blocked kernel's shapes: m above the
// decode kernel's 32 rows, or B' stored transposed) multiplies on:
//   Bf16Dot: VDPBF16PS on BF16-widened panels (gemm/gemm_fp8.hpp), 32
//     multiply-adds an instruction;
//   Fp32Fma: oneDNN's sgemm on FP32 blocks widened in cache (gemm/gemm_kernel.cpp), 16 an
//     instruction;
//   OnednnBf16: oneDNN's BF16 matmul on BF16 blocks widened in cache
//     (gemm/bf16_matmul_tiles.hpp), for AMX: one TDPBF16PS does 16 x 16 x 32
//     multiply-adds;
//   Amx: Octet's own TDPBF16PS kernel (gemm/gemm_fp8_amx.hpp), which
//     decodes the codes in tile-sized pieces and takes every per-tensor
//     FP8 shape, decode shapes included.
// Intel's AVX512_BF16 cores (Cooper Lake to Emerald Rapids) issue one
// 512-bit VDPBF16PS every two cycles and two FMAs a cycle, so FP32 FMAs do
// twice the multiply-adds there (octet_bench_cpu's BM_PeakDpbf16VsFma:
// 0.49 on Emerald Rapids); AMD's Zen 4 issues one of each a cycle (about
// 2.0). The default is Amx at level amx (dispatch/isa.hpp), else
// OnednnBf16 where oneDNN's BF16 matmul runs on AMX (the CPU reports
// AMX-BF16 and onednn_bf16_matmul_impl names an amx implementation: level
// amx forced off by OCTET_CPU_ISA), else Fp32Fma on Intel CPUs and below
// level avx512_bf16, else Bf16Dot. OCTET_CPU_FP8_GEMM=amx|bf16|fp32|
// onednn_bf16 forces one (amx only at level amx; bf16 and onednn_bf16
// only where the level is avx512_bf16 or above). OnednnBf16 takes the
// per-tensor FP8 GEMM's compute-bound shapes only; everything else runs as
// under Fp32Fma (decode shapes on the decode kernel's FMA variant,
// block-scaled and FP4 GEMMs on the sgemm tiles), and so do Amx's
// block-scaled and FP4 GEMMs. Below Amx, at level avx512_bf16 and above,
// decode shapes (m <= 32, B' rows contiguous) take the decode kernel,
// which streams the weights once and multiplies on VDPBF16PS under
// Bf16Dot, else on FP32 FMAs on values split from the decoded BF16
// (gemm/gemm_fp8.hpp, fp8_decode_on_fp32).
// Read once, at first use.
enum class Fp8GemmEngine : int { Bf16Dot = 0, Fp32Fma = 1, OnednnBf16 = 2, Amx = 3 };
Fp8GemmEngine fp8_gemm_engine();
const char* fp8_gemm_engine_name(Fp8GemmEngine engine);

}  // namespace octet_cpu
