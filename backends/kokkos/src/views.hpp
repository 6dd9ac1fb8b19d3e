// The Kokkos side of the plugin: the execution and memory spaces every
// kernel runs in, unmanaged Views over the plugin ABI's pointers, and the
// small helpers the kernels share (scalars in backend memory, quantize
// statistics as a Kokkos reduction).
#pragma once

#include <Kokkos_Core.hpp>
#include <octet/octet_backend.h>

#include <cstdint>

#include "checks.hpp"
#include "device_codecs.hpp"

namespace octet_kokkos {

using ExecSpace = Kokkos::DefaultExecutionSpace;
using MemSpace = ExecSpace::memory_space;
// Whether host code can dereference backend memory (Serial, OpenMP,
// Threads; not CUDA/HIP/SYCL device memory): decides the declared memory kind.
constexpr bool kHostMemory = Kokkos::SpaceAccessibility<Kokkos::HostSpace, MemSpace>::accessible;

using Unmanaged = Kokkos::MemoryTraits<Kokkos::Unmanaged>;
template <typename T>
using DeviceView = Kokkos::View<T*, MemSpace, Unmanaged>;
template <typename T>
using HostView = Kokkos::View<T*, Kokkos::HostSpace, Unmanaged>;

using Range = Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<int64_t>>;
using Range2 = Kokkos::MDRangePolicy<ExecSpace, Kokkos::Rank<2>, Kokkos::IndexType<int64_t>>;
using Team = Kokkos::TeamPolicy<ExecSpace>;
using Member = Team::member_type;

// A matrix view of the plugin ABI as an unmanaged byte View over the bytes it
// spans, with its dtype and strides: copied into kernels by value.
struct Mat {
  DeviceView<unsigned char> bytes;
  int32_t dtype = OCTET_DTYPE_FP32;
  int64_t rows = 0, cols = 0, ld = 0;

  Mat() = default;
  explicit Mat(const octet_matrix_view& v) : dtype(v.dtype), rows(v.rows), cols(v.cols), ld(v.ld) {
    const int64_t esize = static_cast<int64_t>(dtype_size(v.dtype));
    const int64_t span = (v.rows > 0 && v.cols > 0 && v.data != nullptr) ? ((v.rows - 1) * v.ld + v.cols) * esize : 0;
    bytes = DeviceView<unsigned char>(static_cast<unsigned char*>(v.data), static_cast<size_t>(span));
  }
  KOKKOS_INLINE_FUNCTION float at(int64_t r, int64_t c) const { return load_element(bytes.data(), dtype, r * ld + c); }
  KOKKOS_INLINE_FUNCTION void put(int64_t r, int64_t c, float v, bool saturate = true) const {
    store_element(bytes.data(), dtype, r * ld + c, v, saturate);
  }
  bool empty() const { return rows <= 0 || cols <= 0; }
};

// One value in backend memory, read or written from the host (deep_copy
// between unmanaged Views: a memcpy on the host, a transfer on a device).
template <typename T>
T read_scalar(const T* device_pointer) {
  T value{};
  Kokkos::deep_copy(HostView<T>(&value, 1), DeviceView<T>(const_cast<T*>(device_pointer), 1));
  return value;
}
template <typename T>
void write_scalar(T* device_pointer, const T& value) {
  T copy = value;
  Kokkos::deep_copy(DeviceView<T>(device_pointer, 1), HostView<T>(&copy, 1));
}

// The statistics of a quantize pass (numerics.md section 10) as a Kokkos
// sum reduction: counts add, amax takes the larger value (never NaN).
struct Stats {
  uint64_t nan_count, saturated_count, flushed_count;
  float amax;
  KOKKOS_INLINE_FUNCTION Stats() : nan_count(0), saturated_count(0), flushed_count(0), amax(0.0f) {}
  KOKKOS_INLINE_FUNCTION Stats& operator+=(const Stats& o) {
    nan_count += o.nan_count;
    saturated_count += o.saturated_count;
    flushed_count += o.flushed_count;
    if (o.amax > amax) amax = o.amax;
    return *this;
  }
  KOKKOS_INLINE_FUNCTION void operator+=(const volatile Stats& o) volatile {
    nan_count += o.nan_count;
    saturated_count += o.saturated_count;
    flushed_count += o.flushed_count;
    if (o.amax > amax) amax = o.amax;
  }
  // One element (the reference's StatisticsCounter::count): x the input,
  // scaled the value handed to the encoder, code the code written.
  KOKKOS_INLINE_FUNCTION void count(float x, float scaled, uint8_t code, int32_t dtype) {
    if (is_nan(x)) {
      ++nan_count;
      return;
    }
    const float a = abs_of(x);
    if (a > amax) amax = a;
    if (!is_nan(scaled)) {
      if (fp8_overflowed(fp8_encode(scaled, dtype, false), dtype)) ++saturated_count;
    }
    // A zero code: FNUZ has one zero (0x80 is its NaN).
    if (is_finite(x) && x != 0.0f && (is_fnuz_dtype(dtype) ? code == 0 : (code & 0x7F) == 0)) ++flushed_count;
  }
  octet_quantize_statistics result() const {
    octet_quantize_statistics s{};
    s.nan_count = nan_count;
    s.saturated_count = saturated_count;
    s.flushed_count = flushed_count;
    s.amax = amax;
    return s;
  }
};

// The GELU of the GEMM epilogue, plain FP32 operations in the order
// numerics.md section 8 writes them (the plugin is built with
// -ffp-contract=off).
KOKKOS_INLINE_FUNCTION float gemm_gelu(float v) {
  return 0.5f * v * (1.0f + tanh_of(0.7978845608f * (v + 0.044715f * v * v * v)));
}

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The kernels (each checks its arguments, reports and returns the status).
int32_t convert_kernel(const octet_matrix_view* input, const octet_matrix_view* output, int32_t saturate);
int32_t amax_kernel(const octet_matrix_view* input, float* amax_out);
int32_t transpose_kernel(const octet_matrix_view* input, const octet_matrix_view* output);
int32_t quantize_kernel(const octet_quantize_args* args, octet_quantize_statistics* stats_out);
int32_t dequantize_kernel(const octet_dequantize_args* args);
int32_t gemm_kernel(const octet_gemm_args* args);
int32_t block_quantize_kernel(const octet_block_quantize_args* args);
int32_t block_dequantize_kernel(const octet_block_dequantize_args* args);
int32_t block_gemm_kernel(const octet_block_gemm_args* args);
int32_t norm_forward_kernel(const octet_norm_forward_args* args);
int32_t norm_backward_kernel(const octet_norm_backward_args* args);
int32_t activation_kernel(const octet_activation_args* args, bool backward);
int32_t bias_gradient_kernel(const octet_bias_gradient_args* args);
int32_t accumulate_kernel(const octet_matrix_view* x, const octet_matrix_view* y, int32_t accumulate);
int32_t scale_from_amax_kernel(const octet_scale_from_amax_args* args);
int32_t delayed_scaling_update_kernel(const octet_delayed_scaling_update_args* args);
int32_t amax_record_kernel(const float* amax, float* slot);

// Quantize of an already checked request (used by the fused layer kernels).
void quantize_checked(const octet_quantize_args& args, octet_quantize_statistics* stats_out);

}  // namespace octet_kokkos

namespace Kokkos {
template <>
struct reduction_identity<octet_kokkos::Stats> {
  KOKKOS_FORCEINLINE_FUNCTION static octet_kokkos::Stats sum() { return octet_kokkos::Stats(); }
};
}  // namespace Kokkos
