// octet_float_mode.hpp: header-only C++17 (nothing exported, nothing
// crosses an ABI). The floating-point mode Octet's results assume, set for
// a scope.
//
// Octet's exact results and GEMM bounds (docs/numerics.md) assume IEEE 754
// binary32/binary64 arithmetic with round to nearest even and subnormals
// kept. A process can run in another mode: a program or library linked
// with -ffast-math (GCC, Clang) sets MXCSR's flush-to-zero (FTZ) and
// denormals-are-zero (DAZ) bits when it starts, and threads created later
// inherit them; fesetround changes the rounding. DefaultFloatMode gives the
// running thread round to nearest even with FTZ and DAZ off for its
// lifetime, and the thread's own mode back when it ends (keeping the
// exception flags raised meanwhile). On x86-64 it reads MXCSR once and
// writes it only when the mode differs; on other CPUs it does nothing.
//
// The core holds one for every C entry point (the calling thread), the
// plugin SDK's guard() for every plugin entry point, and a backend that
// computes on threads of its own (OpenMP, a pool) holds one on each of them
// for the work it runs there.
#ifndef OCTET_OCTET_FLOAT_MODE_HPP
#define OCTET_OCTET_FLOAT_MODE_HPP

#include <cstdint>

namespace octet {

class DefaultFloatMode {
 public:
  DefaultFloatMode() noexcept {
#if defined(__x86_64__) && !defined(__CUDA_ARCH__)
    saved_ = read_mxcsr();
    const uint32_t wanted = saved_ & ~(kFlushToZero | kDenormalsAreZero | kRoundingControl);
    if (wanted != saved_) {
      write_mxcsr(wanted);
      changed_ = true;
    }
#endif
  }
  ~DefaultFloatMode() {
#if defined(__x86_64__) && !defined(__CUDA_ARCH__)
    if (changed_) write_mxcsr(saved_ | (read_mxcsr() & kExceptionFlags));
#endif
  }
  DefaultFloatMode(const DefaultFloatMode&) = delete;
  DefaultFloatMode& operator=(const DefaultFloatMode&) = delete;

  // Whether the thread was in another mode when this scope began.
  bool changed() const noexcept { return changed_; }

 private:
#if defined(__x86_64__) && !defined(__CUDA_ARCH__)
  // MXCSR fields (Intel SDM vol. 1, 10.2.3).
  static constexpr uint32_t kFlushToZero = 0x8000u;
  static constexpr uint32_t kRoundingControl = 0x6000u;  // 00: round to nearest even
  static constexpr uint32_t kDenormalsAreZero = 0x0040u;
  static constexpr uint32_t kExceptionFlags = 0x003Fu;
  static uint32_t read_mxcsr() noexcept {
    uint32_t value;
    __asm__ volatile("stmxcsr %0" : "=m"(value));
    return value;
  }
  static void write_mxcsr(uint32_t value) noexcept { __asm__ volatile("ldmxcsr %0" : : "m"(value)); }
#endif
  uint32_t saved_ = 0;
  bool changed_ = false;
};

}  // namespace octet

#endif  // OCTET_OCTET_FLOAT_MODE_HPP
