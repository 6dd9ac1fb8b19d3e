// Helpers for driving the cpu and reference backends side by side through
// the users' ABI (octet.h).
#pragma once

#include <octet/octet.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

// The backend these suites compare with the reference: "cpu", or another
// host-visible plugin that reuses them (tests/kokkos_backend defines it).
#ifndef OCTET_TEST_BACKEND
#define OCTET_TEST_BACKEND "cpu"
#endif

namespace cpu_test {

struct ContextDeleter {
  void operator()(octet_context* c) const { octet_context_destroy(c); }
};
using Context = std::unique_ptr<octet_context, ContextDeleter>;
using Tensor = octet::Tensor;

// Whether this run repeats the suites on a path other than the CPU's default
// one: ctest sets OCTET_TEST_REPEATED_PATH=1 on the runs forced to another
// ISA level or FP8 GEMM engine (tests/cpu_backend/CMakeLists.txt). A suite
// that spends most of its time on what does not depend on the path (the
// largest shapes, which test the threaded splits) runs that part on the
// default path only; every path still runs every kernel variant.
inline bool repeated_path_run() {
  const char* v = std::getenv("OCTET_TEST_REPEATED_PATH");
  return v != nullptr && v[0] != '\0' && std::strcmp(v, "0") != 0;
}

// The capabilities of a registered backend (empty info when none has that name).
inline octet_backend_info backend_info(const std::string& name) {
  std::size_t count = 0;
  octet_backend_info info{};
  info.struct_size = sizeof info;
  if (octet_backend_count(&count) != OCTET_STATUS_SUCCESS) return octet_backend_info{};
  for (std::size_t i = 0; i < count; ++i) {
    if (octet_backend_get_info(i, &info) == OCTET_STATUS_SUCCESS && info.name != nullptr && name == info.name) {
      return info;
    }
  }
  return octet_backend_info{};
}

// Whether the backend under test declares a dtype or a scaling mode (the
// FNUZ formats and per-column scaling are optional: another backend reusing
// these suites may not have them).
inline bool tested_backend_declares_dtype(int32_t dtype) {
  return (backend_info(OCTET_TEST_BACKEND).dtypes & OCTET_DTYPE_BIT(dtype)) != 0;
}
inline bool tested_backend_declares_mode(int32_t mode) {
  return (backend_info(OCTET_TEST_BACKEND).scaling_modes & static_cast<uint32_t>(mode)) != 0;
}

// E4M3 and E5M2, then E4M3FNUZ and E5M2FNUZ where the backend under test
// declares them.
inline std::vector<int32_t> fp8_dtypes() {
  std::vector<int32_t> d = {OCTET_DTYPE_E4M3, OCTET_DTYPE_E5M2};
  for (int32_t f : {OCTET_DTYPE_E4M3FNUZ, OCTET_DTYPE_E5M2FNUZ}) {
    if (tested_backend_declares_dtype(f)) d.push_back(f);
  }
  return d;
}

inline Context context(const char* backend, int32_t profile = OCTET_PROFILE_NATIVE) {
  octet_context_options o{};
  o.struct_size = sizeof o;
  o.backend = backend;
  o.capability_profile = profile;
  octet_context* c = nullptr;
  EXPECT_EQ(octet_context_create(&o, &c), OCTET_STATUS_SUCCESS) << octet_last_error_message();
  return Context(c);
}

// A rows x cols tensor of `dtype` with its usages and scaling mode (0: the
// default, per-tensor); a failure to create it fails the test (octet::Error).
inline Tensor tensor(octet_context* ctx, int32_t dtype, int64_t rows, int64_t cols, uint32_t usages = 0,
                     int32_t mode = 0) {
  return octet::Tensor::create(ctx, dtype, {rows, cols}, usages, mode);
}

// A rows x cols tensor of `dtype` with a scaling mode (block-scaled FP8:
// MXFP8, 1x128, 128x128, per-row, per-column) and its usages.
inline Tensor block_tensor(octet_context* ctx, int32_t dtype, int64_t rows, int64_t cols, uint32_t usages,
                           int32_t mode) {
  return tensor(ctx, dtype, rows, cols, usages, mode);
}

inline std::size_t component_bytes(const octet_tensor* t, int32_t component) {
  octet_tensor_info info{};
  info.struct_size = sizeof info;
  EXPECT_EQ(octet_tensor_get_info(t, &info), OCTET_STATUS_SUCCESS);
  switch (component) {
    case OCTET_COMPONENT_DATA: return info.rowwise_bytes;
    case OCTET_COMPONENT_COLUMNWISE_DATA: return info.columnwise_bytes;
    default: return 4;
  }
}

inline void upload(octet_tensor* t, int32_t component, const void* bytes, std::size_t n) {
  ASSERT_EQ(octet_tensor_copy_from_host(t, component, bytes, n), OCTET_STATUS_SUCCESS)
      << octet_last_error_message();
}

inline std::vector<uint8_t> download(const octet_tensor* t, int32_t component) {
  std::vector<uint8_t> out(component_bytes(t, component));
  EXPECT_EQ(octet_tensor_copy_to_host(t, component, out.data(), out.size()),
            OCTET_STATUS_SUCCESS)
      << octet_last_error_message();
  return out;
}

inline uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// FP32 values that exercise every rule of the codecs: FP8 values, the
// midpoints between neighbours and one FP32 ulp either side, the overflow
// thresholds, FP16/BF16 limits, infinities, NaNs with payloads (signalling
// too), zeros and FP32 subnormals.
inline std::vector<float> special_values() {
  std::vector<float> v;
  for (int32_t dtype : {OCTET_DTYPE_E4M3, OCTET_DTYPE_E5M2, OCTET_DTYPE_E4M3FNUZ, OCTET_DTYPE_E5M2FNUZ}) {
    for (int code = 0; code < 0x7F; ++code) {
      const float a = octet_fp8_decode(static_cast<uint8_t>(code), dtype);
      const float b = octet_fp8_decode(static_cast<uint8_t>(code + 1), dtype);
      if (!std::isfinite(a)) continue;
      const float mid = std::isfinite(b) ? 0.5f * (a + b) : a * 1.0714285f;
      for (float x : {a, mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e30f)}) {
        v.push_back(x);
        v.push_back(-x);
      }
    }
  }
  for (uint32_t u : {0x00000000u, 0x80000000u, 0x00000001u, 0x807FFFFFu, 0x00400000u, 0x00400001u,
                     0x7F800000u, 0xFF800000u, 0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0xFF812345u,
                     0x7FBFFFFFu, 0x7F7FFFFFu, 0xFF7FFFFFu, 0x477FE000u, 0x477FF000u, 0x477FEFFFu,
                     0x33800000u, 0x33000000u, 0x33000001u, 0x387FE000u, 0x3F808000u, 0x3F818000u,
                     0x7F7F8000u, 0x43E80000u, 0x43F00000u, 0x47700000u, 0x47800000u}) {
    v.push_back(from_bits(u));
  }
  return v;
}

// n raw elements of `dtype` (as little-endian bytes): a mix of specials,
// scaled random values and raw random bit patterns.
inline std::vector<uint8_t> random_elements(int32_t dtype, std::size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  const std::size_t size = octet_dtype_size(dtype);
  std::vector<uint8_t> out(n * size);
  const std::vector<float> specials = special_values();
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-30, 30);
  for (std::size_t i = 0; i < n; ++i) {
    uint32_t raw = rng();
    if (size == 4 || size == 2) {
      const int kind = static_cast<int>(rng() % 4);
      float x;
      if (kind == 0) {
        x = specials[rng() % specials.size()];
      } else if (kind == 1) {
        x = std::ldexp(normal(rng), exponent(rng));
      } else if (kind == 2) {
        x = normal(rng) * 100.0f;
      } else {
        x = from_bits(raw);
      }
      if (size == 4) {
        raw = bits(x);
      } else if (kind == 3) {
        raw = raw & 0xFFFFu;
      } else {
        raw = dtype == OCTET_DTYPE_BF16 ? octet_bf16_encode(x) : octet_fp16_encode(x);
      }
    }
    std::memcpy(&out[i * size], &raw, size);
  }
  return out;
}

struct Shape {
  int64_t rows, cols;
};
inline const std::vector<Shape>& ragged_shapes() {
  static const std::vector<Shape> shapes = {{1, 1}, {7, 13}, {67, 131}, {1481, 677}};
  return shapes;
}

inline std::string shape_name(Shape s) {
  return std::to_string(s.rows) + "x" + std::to_string(s.cols);
}

// Every dtype the element-wise kernels take (FNUZ where declared).
inline std::vector<int32_t> all_dtypes() {
  std::vector<int32_t> d = {OCTET_DTYPE_FP32, OCTET_DTYPE_BF16, OCTET_DTYPE_FP16};
  for (int32_t f : fp8_dtypes()) d.push_back(f);
  d.push_back(OCTET_DTYPE_E8M0);
  return d;
}
inline const std::vector<int32_t>& high_precision_dtypes() {
  static const std::vector<int32_t> d = {OCTET_DTYPE_FP32, OCTET_DTYPE_BF16, OCTET_DTYPE_FP16};
  return d;
}

// Index of the first differing element, or -1.
inline int64_t first_difference(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b,
                                std::size_t element_size) {
  if (a.size() != b.size()) return 0;
  if (a.empty() || std::memcmp(a.data(), b.data(), a.size()) == 0) return -1;  // memcmp needs non-null
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i]) return static_cast<int64_t>(i / element_size);
  }
  return -1;
}

}  // namespace cpu_test
