// cpuid + xgetbv feature detection and the OCTET_CPU_ISA override.
#include "dispatch/isa.hpp"

#include <cstdint>
#include <cstdlib>
#include <cstring>

#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define OCTET_CPU_X86 1
#endif

namespace octet_cpu {
namespace {

#if defined(OCTET_CPU_X86)
uint64_t read_xcr0() {
  uint32_t eax = 0, edx = 0;
  // xgetbv with ecx = 0, written as bytes so that no -mxsave is needed.
  __asm__ volatile(".byte 0x0f, 0x01, 0xd0" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<uint64_t>(edx) << 32) | eax;
}
#endif

CpuFeatures detect() {
  CpuFeatures f;
#if defined(OCTET_CPU_X86)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(0, &a, &b, &c, &d) == 0) return f;
  const unsigned max_leaf = a;
  f.intel = b == 0x756E6547u && d == 0x49656E69u && c == 0x6C65746Eu;  // "Genu" "ineI" "ntel"
  if (__get_cpuid(1, &a, &b, &c, &d) == 0) return f;
  const bool osxsave = (c >> 27) & 1, avx = (c >> 28) & 1;
  const bool f16c = (c >> 29) & 1, fma = (c >> 12) & 1;
  if (!osxsave || !avx) return f;
  const uint64_t xcr0 = read_xcr0();
  const bool ymm_state = (xcr0 & 0x6) == 0x6;              // SSE + AVX state saved
  const bool zmm_state = ymm_state && (xcr0 & 0xE0) == 0xE0;  // opmask, ZMM0-15 hi, ZMM16-31
  const bool tile_state = (xcr0 & 0x60000) == 0x60000;     // XTILECFG + XTILEDATA
  if (!ymm_state || max_leaf < 7) return f;
  __cpuid_count(7, 0, a, b, c, d);
  f.avx2 = (b >> 5) & 1;
  f.f16c = f16c;
  f.fma = fma;
  if (zmm_state) {
    f.avx512f = (b >> 16) & 1;
    f.avx512dq = (b >> 17) & 1;
    f.avx512bw = (b >> 30) & 1;
    f.avx512vl = (b >> 31) & 1;
    f.avx512_vnni = (c >> 11) & 1;
    f.avx512_vbmi = (c >> 1) & 1;
  }
  f.amx_bf16 = tile_state && ((d >> 22) & 1);
  f.amx_tile = tile_state && ((d >> 24) & 1);
  const unsigned max_sub = a;
  if (max_sub >= 1) {
    unsigned a1 = 0, b1 = 0, c1 = 0, d1 = 0;
    __cpuid_count(7, 1, a1, b1, c1, d1);
    f.avx_vnni = (a1 >> 4) & 1;
    if (zmm_state) f.avx512_bf16 = (a1 >> 5) & 1;
  }
#endif
  return f;
}

// Linux hands the 8 KiB of tile data to a process only after it asks
// (arch_prctl ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA, 18); until then
// the first tile instruction raises SIGILL. Asked once, for the process
// (every thread of it, present and future), when level amx is first
// considered; a kernel that refuses (or another OS) leaves the level out.
bool amx_permitted() {
  static const bool permitted = [] {
#if defined(__linux__) && defined(OCTET_CPU_X86)
    constexpr long kReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
    return syscall(SYS_arch_prctl, kReqXcompPerm, kXfeatureXtiledata) == 0;
#else
    return false;
#endif
  }();
  return permitted;
}

// Whether the CPU has everything level `isa` uses.
bool supports(const CpuFeatures& f, Isa isa) {
  const bool avx2 = f.avx2 && f.f16c && f.fma;
  const bool avx512 = avx2 && f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq;
  switch (isa) {
    case Isa::Portable:
      return true;
    case Isa::Avx2:
      return avx2;
    case Isa::Avx512:
      return avx512;
    case Isa::Avx512Vbmi:
      return avx512 && f.avx512_vbmi;
    case Isa::Avx512Bf16:
      return avx512 && f.avx512_bf16;
    case Isa::Avx512Bf16Vbmi:
      return avx512 && f.avx512_bf16 && f.avx512_vbmi;
    case Isa::Amx:
      return avx512 && f.avx512_bf16 && f.avx512_vbmi && f.amx_tile && f.amx_bf16 && amx_permitted();
  }
  return false;
}

// The highest level at or below `isa` that the CPU supports.
Isa best_at_or_below(const CpuFeatures& f, Isa isa) {
  int level = static_cast<int>(isa);
  while (level > 0 && !supports(f, static_cast<Isa>(level))) --level;
  return static_cast<Isa>(level);
}

Isa level_of(const CpuFeatures& f) { return best_at_or_below(f, Isa::Amx); }

bool parse_isa(const char* s, Isa* out) {
  static const struct {
    const char* name;
    Isa isa;
  } names[] = {{"portable", Isa::Portable},
               {"avx2", Isa::Avx2},
               {"avx512", Isa::Avx512},
               {"avx512_vbmi", Isa::Avx512Vbmi},
               {"avx512_bf16", Isa::Avx512Bf16},
               {"avx512bf16", Isa::Avx512Bf16},
               {"avx512_bf16_vbmi", Isa::Avx512Bf16Vbmi},
               {"amx", Isa::Amx},
               {"best", Isa::Amx}};
  for (const auto& n : names) {
    if (std::strcmp(s, n.name) == 0) {
      *out = n.isa;
      return true;
    }
  }
  return false;
}

Isa choose() {
  Isa isa = best_isa();
  const char* disable = std::getenv("OCTET_CPU_DISABLE_SIMD");
  if (disable != nullptr && disable[0] != '\0' && std::strcmp(disable, "0") != 0) {
    return Isa::Portable;
  }
  Isa forced;
  const char* want = std::getenv("OCTET_CPU_ISA");
  if (want != nullptr && want[0] != '\0' && parse_isa(want, &forced) && forced < isa) {
    isa = best_at_or_below(cpu_features(), forced);
  }
  return isa;
}

}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = detect();
  return features;
}

Isa best_isa() { return level_of(cpu_features()); }

Isa cpu_isa() {
  static const Isa chosen = choose();
  return chosen;
}

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::Portable: return "portable";
    case Isa::Avx2: return "avx2";
    case Isa::Avx512: return "avx512";
    case Isa::Avx512Vbmi:
      return "avx512_vbmi";
    case Isa::Avx512Bf16: return "avx512_bf16";
    case Isa::Avx512Bf16Vbmi:
      return "avx512_bf16_vbmi";
    case Isa::Amx:
      return "amx";
  }
  return "?";
}

std::string isa_description() {
  const CpuFeatures& f = cpu_features();
  std::string s = std::string("isa ") + isa_name(cpu_isa());
  if (cpu_isa() != best_isa()) s += std::string(" forced, cpu has ") + isa_name(best_isa());
  s += "; cpu:";
  if (f.avx2) s += " avx2";
  if (f.f16c) s += " f16c";
  if (f.fma) s += " fma";
  if (f.avx512f) {  // the AVX-512 extensions as one word: avx512f/bw/vl/dq/bf16/vnni/vbmi
    s += " avx512f";
    if (f.avx512bw) s += "/bw";
    if (f.avx512vl) s += "/vl";
    if (f.avx512dq) s += "/dq";
    if (f.avx512_bf16) s += "/bf16";
    if (f.avx512_vnni) s += "/vnni";
    if (f.avx512_vbmi) s += "/vbmi";
  }
  if (f.avx_vnni) s += " avx_vnni";
  s += f.amx_bf16 ? " amx_bf16" : " no amx";
  return s;
}

}  // namespace octet_cpu
