// Run-time instruction-set dispatch for the cpu backend. What the CPU (and
// the OS, through XCR0) offers is read with cpuid and xgetbv when first
// asked; nothing is decided at build time. Each kernel family picks its
// implementation from the level returned by cpu_isa().
#pragma once

#include <string>

namespace octet_cpu {

// Ordered levels. A kernel written for one level runs on every higher one,
// except that Avx512Vbmi's extension (VBMI) is not part of Avx512Bf16: a
// kernel that needs VBMI checks for Avx512Vbmi or Avx512Bf16Vbmi by name
// (has_vbmi), never with >=.
enum class Isa : int {
  Portable = 0,        // plain C++ (compiled for the baseline x86-64 target)
  Avx2 = 1,            // AVX2 + F16C + FMA
  Avx512 = 2,          // + AVX-512 F/BW/VL/DQ
  Avx512Vbmi = 3,      // avx512 + AVX512_VBMI, no AVX512_BF16 (Ice Lake): the FP8 decode on FMAs
  Avx512Bf16 = 4,      // avx512 + AVX512_BF16 (VDPBF16PS)
  Avx512Bf16Vbmi = 5,  // + AVX512_VBMI (VPERMI2B: the FP8 GEMM's 64-code decode)
  Amx = 6,             // + AMX-TILE and AMX-BF16 with the OS's tile state and this process's permission (TDPBF16PS)
};

// True for the levels that include AVX512_VBMI.
constexpr bool has_vbmi(Isa isa) { return isa == Isa::Avx512Vbmi || isa == Isa::Avx512Bf16Vbmi || isa == Isa::Amx; }

struct CpuFeatures {
  bool avx2 = false, f16c = false, fma = false;
  bool avx512f = false, avx512bw = false, avx512vl = false, avx512dq = false;
  bool avx512_bf16 = false, avx512_vnni = false, avx_vnni = false, avx512_vbmi = false;
  bool amx_tile = false, amx_bf16 = false;  // CPU flags and XCR0 tile state
  bool intel = false;                       // vendor "GenuineIntel" (cpuid leaf 0)
};

// What this CPU and OS support (cached).
const CpuFeatures& cpu_features();

// The best level the CPU supports.
Isa best_isa();

// The level in use: best_isa(), lowered by the environment:
//   OCTET_CPU_ISA=portable|avx2|avx512|avx512_vbmi|avx512_bf16|
//     avx512_bf16_vbmi|amx forces that level (or the best one below it that the
//     CPU has, e.g. avx512 for avx512_vbmi on a CPU with AVX512_BF16 but no
//     VBMI: never a higher one);
//   OCTET_CPU_DISABLE_SIMD set to a non-empty value other than "0" forces
//     portable (the older switch, kept).
// Read once, at first use.
Isa cpu_isa();

const char* isa_name(Isa isa);

// "avx512_bf16 (cpu: avx2 f16c fma avx512f/bw/vl/dq avx512_bf16 avx512_vnni;
// no amx)"-style summary for the device string.
std::string isa_description();

}  // namespace octet_cpu
