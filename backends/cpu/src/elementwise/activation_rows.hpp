// The element-wise math of the GELU and SwiGLU kernels (and of the GEMMs'
// GELU epilogue) on contiguous FP32 runs, in three implementations chosen
// at run time: AVX-512 (F/DQ), AVX2 + FMA (scalar), or portable C++. Each
// gives the reference's bits for every input: the operations of
// octet_backend.h's formulas in their order, each rounded (no contraction),
// tanhf and expf from octet_math.h, and the NaN rule of docs/numerics.md
// section 13.
#pragma once

#include <cstdint>

namespace octet_cpu {

struct ActivationRows {
  const char* name;
  // y[i] = 0.5 * x * (1 + tanh(0.7978845608 * (x + 0.044715 * x * x * x))),
  // left to right. y may be x.
  void (*gelu)(const float* x, int64_t n, float* y);
  // dx[i] = dy[i] * gelu'(x[i]), gelu' as octet_backend.h writes it. dx may
  // be x or dy.
  void (*gelu_backward)(const float* x, const float* dy, int64_t n, float* dx);
  // y[i] = (a[i] * sigmoid(a[i])) * b[i], sigmoid(a) = 1 / (1 + expf(-a)).
  void (*swiglu)(const float* a, const float* b, int64_t n, float* y);
  // With s = sigmoid(a[i]): da[i] = (dy[i] * b[i]) * (s * (1 + a[i] * (1 - s)))
  // and db[i] = dy[i] * (a[i] * s). da and db overlap no input.
  void (*swiglu_backward)(const float* a, const float* b, const float* dy, int64_t n, float* da, float* db);
};

// The reference's scalar expressions (octet_math.h's operations).
const ActivationRows& portable_activation_rows();
// nullptr when this build or this CPU has no AVX-512 F/DQ path.
const ActivationRows* avx512_activation_rows();
// The portable loops compiled for AVX2 + FMA; nullptr when this build or
// this CPU has no such path.
const ActivationRows* avx2_activation_rows();

// The kernels in use: AVX-512 when cpu_isa() (dispatch/isa.hpp) is avx512 or higher,
// AVX2 + FMA at avx2, else portable.
const ActivationRows& activation_rows();

}  // namespace octet_cpu
