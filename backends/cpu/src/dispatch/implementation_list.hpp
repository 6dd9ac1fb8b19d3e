// How every op family of the cpu backend chooses its implementation: an
// ordered list of candidates, best first, each stating the ISA level it
// needs, what else it needs (a kernel this build compiled, an engine), and
// the problems it serves (shapes, dtypes, layouts). The first candidate
// that runs at the level in use and serves the problem is taken; the last
// one of every list serves every problem at level portable, so a choice
// always exists. Adding a kernel is adding an entry. docs/backends/cpu.md
// lists each family's candidates in order.
#pragma once

#include <cstddef>

#include "dispatch/isa.hpp"

namespace octet_cpu {

// True when a kernel written for level `needed` runs at level `in_use`:
// every higher level includes a lower one, except that the VBMI levels
// (Avx512Vbmi, Avx512Bf16Vbmi) need VBMI, which Avx512Bf16 lacks.
constexpr bool level_runs(Isa needed, Isa in_use) {
  return static_cast<int>(in_use) >= static_cast<int>(needed) && (!has_vbmi(needed) || has_vbmi(in_use));
}

// The problem of a family whose choice depends on the CPU only (the
// element-wise row kernels, say).
struct AnyProblem {};

// One candidate. `available` (nullptr: always) says whether this build and
// configuration have it beyond the level: the kernel compiled in, the FP8
// GEMM engine it belongs to. `serves` (nullptr: every problem) says whether
// it takes this problem.
template <class Problem, class Impl>
struct Candidate {
  const char* name;
  Isa level;
  bool (*available)();
  bool (*serves)(const Problem&);
  Impl impl;
};

// True when the last candidate of `list` takes every problem at level
// portable, so that choose never gives nullptr (each list asserts it).
template <class Problem, class Impl, std::size_t N>
constexpr bool ends_with_fallback(const Candidate<Problem, Impl> (&list)[N]) {
  return list[N - 1].level == Isa::Portable && list[N - 1].available == nullptr && list[N - 1].serves == nullptr;
}

// The first candidate of `list` that runs at `level` and serves `problem`,
// or nullptr when none does (a list whose last entry is unconditional at
// level portable never gives nullptr).
template <class Problem, class Impl, std::size_t N>
const Candidate<Problem, Impl>* choose(const Candidate<Problem, Impl> (&list)[N], Isa level, const Problem& problem) {
  for (const Candidate<Problem, Impl>& c : list) {
    if (!level_runs(c.level, level)) continue;
    if (c.available != nullptr && !c.available()) continue;
    if (c.serves != nullptr && !c.serves(problem)) continue;
    return &c;
  }
  return nullptr;
}

}  // namespace octet_cpu
