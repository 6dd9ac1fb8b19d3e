// forced_path_missing against a table of what each CPU class's cpu backend
// reports (dispatch/isa.hpp's levels, gemm/fp8_gemm_engine.hpp's engines) and what a run forces.
#include "forced_path.hpp"

#include <gtest/gtest.h>

#include <string>

namespace cpu_test {
namespace {

std::string device(const char* level, const char* gemm) {
  return std::string("host CPU (isa ") + level + "; cpu: avx2 f16c fma; avx2+f16c element-wise; " + gemm +
         ", high-precision GEMM oneDNN sgemm; 2 OpenMP threads)";
}

TEST(ForcedPath, SkipsNameTheIsaTheCpuLacks) {
  struct Case {
    const char* running;  // the level in the device string
    const char* gemm;     // the GEMM words in the device string
    const char* level;    // OCTET_CPU_ISA, or null
    const char* engine;   // OCTET_CPU_FP8_GEMM, or null
    const char* missing;  // "" or the start of the message
  };
  const char* tiles = "FP8/FP4 GEMM sgemm tiles (FP8 decode shapes fma)";
  const char* dot = "FP8/FP4 GEMM vdpbf16ps";
  const char* onednn = "FP8 GEMM oneDNN bf16 matmul (decode shapes fma), FP4 sgemm tiles";
  const char* tdp = "FP8 GEMM amx tdpbf16ps, FP4 sgemm tiles";
  const Case cases[] = {
      // Nothing forced, or a level the CPU has.
      {"avx2", tiles, nullptr, nullptr, ""},
      {"avx2", tiles, "avx2", nullptr, ""},
      {"avx512_bf16_vbmi", onednn, "avx512_bf16", nullptr, ""},  // the backend names the level it was lowered to
      {"avx512", tiles, "avx512", nullptr, ""},
      // AVX2-only CPU (and one without AVX2).
      {"avx2", tiles, "avx512", nullptr, "needs AVX-512: OCTET_CPU_ISA=avx512, but this CPU runs level avx2"},
      {"avx2", tiles, "avx512_bf16", nullptr, "needs AVX-512 and AVX512_BF16: "},
      {"avx2", tiles, "avx512_bf16_vbmi", nullptr, "needs AVX-512 and AVX512_BF16 and AVX512_VBMI: "},
      {"portable", tiles, "avx2", nullptr, "needs AVX2: "},
      // Ice Lake (AVX-512 and VBMI, no BF16): level avx512_vbmi.
      {"avx512_vbmi", tiles, "avx512_bf16", nullptr, "needs AVX512_BF16: OCTET_CPU_ISA=avx512_bf16"},
      {"avx512_vbmi", tiles, "avx512_vbmi", nullptr, ""},
      {"avx512_vbmi", tiles, nullptr, "bf16", "needs AVX512_BF16: OCTET_CPU_FP8_GEMM=bf16"},
      {"avx512_vbmi", tiles, nullptr, "onednn_bf16", "needs AVX512_BF16: OCTET_CPU_FP8_GEMM=onednn_bf16"},
      {"avx512_vbmi", tiles, nullptr, "fp32", ""},
      // AVX512_BF16 without VBMI (Cooper Lake): asked avx512_vbmi, it runs avx512.
      {"avx512", tiles, "avx512_vbmi", nullptr, "needs AVX512_VBMI: "},
      {"avx512_bf16", dot, "avx512_bf16", "bf16", ""},
      // Zen 4 (and AMX Xeons forced below level amx): every forced path but AMX is there.
      {"avx512_bf16_vbmi", dot, nullptr, "bf16", ""},
      {"avx512_bf16_vbmi", onednn, nullptr, "onednn_bf16", ""},
      {"avx512_bf16_vbmi", dot, "amx", nullptr,
       "needs AMX: OCTET_CPU_ISA=amx, but this CPU runs level avx512_bf16_vbmi"},
      {"avx512_bf16_vbmi", onednn, nullptr, "amx", "needs AMX: OCTET_CPU_FP8_GEMM=amx"},
      {"avx2", tiles, "amx", nullptr, "needs AMX and AVX-512 and AVX512_BF16 and AVX512_VBMI: "},
      // AMX Xeons at level amx.
      {"amx", tdp, nullptr, nullptr, ""},
      {"amx", tdp, nullptr, "amx", ""},
      {"amx", dot, nullptr, "bf16", ""},
      {"amx", onednn, nullptr, "onednn_bf16", ""},
      {"amx", onednn, "avx512_bf16_vbmi", nullptr, ""},
      {"avx512_bf16", dot, "avx512_bf16", "bf16", ""},
  };
  for (const Case& c : cases) {
    const std::string got = forced_path_missing(device(c.running, c.gemm), c.level, c.engine);
    const std::string where = std::string("running ") + c.running + ", OCTET_CPU_ISA=" + (c.level ? c.level : "-") +
                              ", OCTET_CPU_FP8_GEMM=" + (c.engine ? c.engine : "-");
    if (c.missing[0] == '\0') {
      EXPECT_EQ(got, "") << where;
    } else {
      EXPECT_EQ(got.rfind(c.missing, 0), 0u) << where << ": " << got;
    }
  }
  // No device string (the plugin did not load): no skip, the tests fail on their own.
  EXPECT_EQ(forced_path_missing("", "avx512", nullptr), "");
}

TEST(ForcedPath, ARunOfTheDefaultPathIsRedundant) {
  const std::string amx =
      device("avx512_bf16_vbmi", "FP8 GEMM oneDNN bf16 matmul (decode shapes fma), FP4 sgemm tiles");
  const std::string dot = device("avx512_bf16_vbmi", "FP8/FP4 GEMM vdpbf16ps");
  // OCTET_CPU_FP8_GEMM=onednn_bf16 on an AMX Xeon, whose default engine it is.
  EXPECT_EQ(forced_path_redundant(amx, amx).rfind("the forced path is this CPU's default path", 0), 0u);
  EXPECT_EQ(forced_path_redundant(dot, amx), "");
  EXPECT_EQ(forced_path_redundant("", ""), "");  // unknown: run
  EXPECT_EQ(forced_path_redundant(amx, ""), "");
}

}  // namespace
}  // namespace cpu_test
