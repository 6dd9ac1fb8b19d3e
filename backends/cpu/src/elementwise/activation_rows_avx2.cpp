// The activation rows at level avx2 (elementwise/activation_rows.hpp): the scalar loops
// of elementwise/activation_rows_scalar.hpp compiled for AVX2 + FMA, so that the
// binary64 fmas of octet_math.h's tanhf and expf are instructions (in the
// baseline-compiled portable rows each is a libm call). The same operations
// in the same order: the same bits.
#include "elementwise/activation_rows.hpp"

#include "dispatch/isa.hpp"

#if defined(__GNUC__) && defined(__x86_64__)
#define OCTET_CPU_HAVE_FMA_ACTIVATIONS 1
// Before octet_math.h is included: its inline functions take this target.
#pragma GCC push_options
#pragma GCC target("avx2,fma")

#include "elementwise/activation_rows_scalar.hpp"

namespace octet_cpu {
namespace {

const ActivationRows kFma = {"avx2+fma", gelu_rows, gelu_backward_rows, swiglu_rows, swiglu_backward_rows};

}  // namespace
}  // namespace octet_cpu

#pragma GCC pop_options
#endif

namespace octet_cpu {

const ActivationRows* avx2_activation_rows() {
#if defined(OCTET_CPU_HAVE_FMA_ACTIVATIONS)
  const CpuFeatures& f = cpu_features();
  return f.avx2 && f.fma ? &kFma : nullptr;
#else
  return nullptr;
#endif
}

}  // namespace octet_cpu
