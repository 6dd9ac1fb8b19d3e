// The inner loops of the FP4 quantize (fp4/quantize_fp4.cpp) in two
// implementations chosen at run time: AVX-512 (fp4/quantize_fp4_avx512.cpp, at
// level avx512 and above) and portable C++. Both give the same bits: the
// rules are those of fp4/fp4_codes.hpp, lane by lane.
#pragma once

#include <cstdint>

namespace octet_cpu {

struct Fp4QuantizeLoops {
  const char* name;
  // The random Hadamard transform (numerics.md 15.2) of the n / 16 groups
  // of 16 values in place (n a multiple of 16): each output the sum from +0
  // over j ascending of +-x_j, then * 0.25.
  void (*hadamard)(float* values, int64_t n, uint32_t sign_mask);
  // *finite_amax = max(*finite_amax, |y|) over the finite y of y[0, n);
  // *has_nan |= any y is NaN.
  void (*scan)(const float* y, int64_t n, float* finite_amax, bool* has_nan);
  // codes[i] = E2M1 code of y[i] / divisor, nearest even, saturating, for
  // y not NaN (infinities included) and divisor > 0; *saturated += the
  // count of |y / divisor| >= 7; *flushed += the count of finite non-zero y
  // whose code is 0x0 (the reference's rule, numerics.md 15.3).
  void (*encode_rne)(const float* y, int64_t n, float divisor, uint8_t* codes, uint64_t* saturated, uint64_t* flushed);
};

const Fp4QuantizeLoops& fp4_portable_loops();
// nullptr when this build has no AVX-512 path.
const Fp4QuantizeLoops* fp4_avx512_loops();
// The loops in use: AVX-512 when cpu_isa() >= Isa::Avx512, else portable.
const Fp4QuantizeLoops& fp4_quantize_loops();

}  // namespace octet_cpu
