// fp8_gemm_engine (gemm/fp8_gemm_engine.hpp): OCTET_CPU_FP8_GEMM, else
// the CPU's vendor and level and oneDNN's BF16 matmul implementation.
#include "gemm/fp8_gemm_engine.hpp"

#include <cstdlib>
#include <cstring>

#include "dispatch/isa.hpp"
#include "gemm/bf16_matmul_tiles.hpp"
#include "gemm/gemm_fp8_amx.hpp"

namespace octet_cpu {

namespace {

Fp8GemmEngine choose_engine() {
  const bool bf16 = cpu_isa() >= Isa::Avx512Bf16;
  const bool amx = cpu_isa() == Isa::Amx && fp8_gemm_amx_built();
  const char* want = std::getenv("OCTET_CPU_FP8_GEMM");
  if (want != nullptr && std::strcmp(want, "amx") == 0 && amx) return Fp8GemmEngine::Amx;
  if (want != nullptr && std::strcmp(want, "fp32") == 0) return Fp8GemmEngine::Fp32Fma;
  if (want != nullptr && std::strcmp(want, "bf16") == 0 && bf16) return Fp8GemmEngine::Bf16Dot;
  if (want != nullptr && std::strcmp(want, "onednn_bf16") == 0 && bf16) return Fp8GemmEngine::OnednnBf16;
  if (amx) return Fp8GemmEngine::Amx;
  if (bf16 && cpu_features().amx_bf16 && std::strstr(onednn_bf16_matmul_impl(), "amx") != nullptr) {
    return Fp8GemmEngine::OnednnBf16;
  }
  return bf16 && !cpu_features().intel ? Fp8GemmEngine::Bf16Dot : Fp8GemmEngine::Fp32Fma;
}

}  // namespace

Fp8GemmEngine fp8_gemm_engine() {
  static const Fp8GemmEngine chosen = choose_engine();
  return chosen;
}

const char* fp8_gemm_engine_name(Fp8GemmEngine engine) {
  switch (engine) {
    case Fp8GemmEngine::Bf16Dot:
      return "vdpbf16ps";
    case Fp8GemmEngine::Fp32Fma:
      return "sgemm tiles";
    case Fp8GemmEngine::OnednnBf16:
      return "oneDNN bf16 matmul tiles";
    case Fp8GemmEngine::Amx:
      return "amx tdpbf16ps";
  }
  return "?";
}

}  // namespace octet_cpu
