// The portable activation rows (elementwise/activation_rows.hpp): the scalar loops of
// elementwise/activation_rows_scalar.hpp compiled for the baseline target. The AVX-512
// rows fall back on these for a run of 16 elements that holds a NaN input.
#include "elementwise/activation_rows.hpp"

#include "dispatch/implementation_list.hpp"
#include "dispatch/isa.hpp"
#include "elementwise/activation_rows_scalar.hpp"

namespace octet_cpu {
namespace {

const ActivationRows kPortable = {"portable", gelu_rows, gelu_backward_rows, swiglu_rows, swiglu_backward_rows};

}  // namespace

const ActivationRows& portable_activation_rows() { return kPortable; }

namespace {

// The activation rows' implementation list (dispatch/implementation_list.hpp).
using ActivationRowsCandidate = Candidate<AnyProblem, const ActivationRows* (*)()>;
constexpr ActivationRowsCandidate kActivationRowsList[] = {
    {"avx512", Isa::Avx512, [] { return avx512_activation_rows() != nullptr; }, nullptr, avx512_activation_rows},
    {"avx2", Isa::Avx2, [] { return avx2_activation_rows() != nullptr; }, nullptr, avx2_activation_rows},
    {"portable", Isa::Portable, nullptr, nullptr, [] { return &kPortable; }},
};
static_assert(ends_with_fallback(kActivationRowsList), "the last candidate takes every problem");

}  // namespace

const ActivationRows& activation_rows() {
  static const ActivationRows& chosen = *choose(kActivationRowsList, cpu_isa(), AnyProblem{})->impl();
  return chosen;
}

}  // namespace octet_cpu
