// The portable activation rows (activation_rows.hpp): the scalar loops of
// activation_rows_scalar.hpp compiled for the baseline target. The AVX-512
// rows fall back on these for a run of 16 elements that holds a NaN input.
#include "activation_rows.hpp"

#include "activation_rows_scalar.hpp"
#include "isa.hpp"

namespace octet_cpu {
namespace {

const ActivationRows kPortable = {"portable", gelu_rows, gelu_backward_rows, swiglu_rows, swiglu_backward_rows};

}  // namespace

const ActivationRows& portable_activation_rows() { return kPortable; }

const ActivationRows& activation_rows() {
  static const ActivationRows& chosen = [&]() -> const ActivationRows& {
    const ActivationRows* avx512 = avx512_activation_rows();
    if (avx512 != nullptr && cpu_isa() >= Isa::Avx512) return *avx512;
    const ActivationRows* fma = fma_activation_rows();
    if (fma != nullptr && cpu_isa() >= Isa::Avx2) return *fma;
    return kPortable;
  }();
  return chosen;
}

}  // namespace octet_cpu
