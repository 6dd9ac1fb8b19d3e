// Test runs that force the cpu backend onto one path (OCTET_CPU_ISA for the
// instruction-set level, OCTET_CPU_FP8_GEMM for the FP8 GEMM engine:
// backends/cpu/src/dispatch/isa.hpp) skip when this CPU cannot give that path: the
// backend would run a lower level instead, so the run would test that lower
// path again under the forced path's name. The skip names the ISA the CPU
// lacks. A forced run whose path is the CPU's default one (the engine the
// CPU picks anyway, or AVX2 on an AVX2-only CPU) skips too: the unforced
// run tests that path. What the backend runs is read from its device
// string, never from the build.
#pragma once

#include <functional>
#include <string>

namespace cpu_test {

// Why the path that `level` (OCTET_CPU_ISA's value, or null) and `engine`
// (OCTET_CPU_FP8_GEMM's, or null) ask for is not the one the cpu backend
// reports in `device` ("host CPU (isa avx2; ...; FP8/FP4 GEMM sgemm tiles
// ...)"): e.g. "needs AVX512_BF16: OCTET_CPU_ISA=avx512_bf16, but this CPU
// runs level avx512_vbmi". Empty when the forced path is the one in use (or
// nothing is forced).
std::string forced_path_missing(const std::string& device, const char* level, const char* engine);

// Why a forced run adds nothing: its device string is the one the backend
// reports unforced (`default_device`), so the run would repeat the default
// run's path ("the forced path is this CPU's default path: ..."); empty when
// they differ or either is unknown (empty).
std::string forced_path_redundant(const std::string& device, const std::string& default_device);

// Registers a GoogleTest environment that skips every test of the program
// when the environment variables of this run force a path the CPU lacks
// (forced_path_missing's message) or the CPU's default path
// (forced_path_redundant's). `device` gives the cpu backend's device
// string in this process, `default_device` the one without the forcing
// variables; each is called once, before the first test, and only when a
// variable is set.
void skip_all_when_forced_path_adds_nothing(std::function<std::string()> device,
                                            std::function<std::string()> default_device);

}  // namespace cpu_test
