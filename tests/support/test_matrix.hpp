// Host matrices for the plugin-table suites: a row-major matrix of one dtype
// whose padding holds a sentinel byte (so writes outside rows x cols are
// caught), filled with finite values, and element comparison with NaNs
// counted equal. Values come from the test's own codecs (element_oracle.hpp).
// The memory starts 4 bytes past a 64-byte boundary: aligned for every
// element, for no vector register, as caller memory may be on a backend
// whose caller_alignment is 1 (octet_backend.h), so a kernel that assumes
// more faults here.
#pragma once

#include <octet/octet_backend.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <new>
#include <random>
#include <vector>

#include "element_oracle.hpp"

namespace octet::test {

// Allocates 4 bytes past a 64-byte boundary (TestMatrix's memory).
template <typename T>
struct MisalignedAllocator {
  using value_type = T;
  static constexpr std::size_t kOffset = 4;
  MisalignedAllocator() = default;
  template <typename U>
  MisalignedAllocator(const MisalignedAllocator<U>&) {}
  T* allocate(std::size_t n) {
    auto* base = static_cast<unsigned char*>(::operator new (n * sizeof(T) + 64, std::align_val_t{64}));
    return reinterpret_cast<T*>(base + kOffset);
  }
  void deallocate(T* p, std::size_t) {
    ::operator delete (reinterpret_cast<unsigned char*>(p) - kOffset, std::align_val_t{64});
  }
  template <typename U>
  bool operator==(const MisalignedAllocator<U>&) const {
    return true;
  }
  template <typename U>
  bool operator!=(const MisalignedAllocator<U>&) const {
    return false;
  }
};

using MatrixBytes = std::vector<unsigned char, MisalignedAllocator<unsigned char>>;

// A row-major matrix of `dtype` with leading dimension ld, its padding
// filled with a sentinel byte so writes outside rows x cols are caught.
struct TestMatrix {
  TestMatrix(int32_t dtype, int64_t rows, int64_t cols, int64_t ld)
      : dtype(dtype),
        rows(rows),
        cols(cols),
        ld(ld),
        bytes(static_cast<std::size_t>(std::max<int64_t>(rows * ld, 1)) * oracle_dtype_size(dtype), kPadding) {}

  static constexpr unsigned char kPadding = 0xA5;

  octet_matrix_view view() { return octet_matrix_view{bytes.data(), dtype, 0, rows, cols, ld}; }
  std::size_t index(int64_t r, int64_t c) const { return static_cast<std::size_t>(r * ld + c); }
  float load(int64_t r, int64_t c) const { return oracle_load(bytes.data(), dtype, index(r, c)); }
  uint32_t bits(int64_t r, int64_t c) const { return raw_bits(bytes.data(), dtype, index(r, c)); }
  void set_bits(int64_t r, int64_t c, uint32_t value) {
    const std::size_t size = oracle_dtype_size(dtype);
    std::memcpy(bytes.data() + index(r, c) * size, &value, size);
  }
  // Padding bytes (columns cols..ld-1) still hold the sentinel.
  bool padding_untouched() const {
    const std::size_t size = oracle_dtype_size(dtype);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = cols; c < ld; ++c) {
        for (std::size_t b = 0; b < size; ++b) {
          if (bytes[index(r, c) * size + b] != kPadding) return false;
        }
      }
    }
    return true;
  }

  int32_t dtype;
  int64_t rows, cols, ld;
  MatrixBytes bytes;
};

// Fills a matrix with finite values of its dtype in [-range, range]: FP8
// codes drawn at random, high-precision values rounded to the dtype.
inline void fill_finite(TestMatrix& m, std::mt19937& rng, float range = 4.0f) {
  std::uniform_real_distribution<float> uniform(-range, range);
  for (int64_t r = 0; r < m.rows; ++r) {
    for (int64_t c = 0; c < m.cols; ++c) {
      if (const Fp8Spec* fp8 = fp8_spec_of(m.dtype)) {
        const Fp8Spec& spec = *fp8;
        uint8_t code;
        do {
          code = static_cast<uint8_t>(rng());
        } while (fp8_kind(code, spec) != Fp8Kind::Finite || std::fabs(oracle_fp8_decode(code, spec)) > range);
        m.set_bits(r, c, code);
      } else if (m.dtype == OCTET_DTYPE_E8M0) {
        m.set_bits(r, c, 100u + rng() % 50u);
      } else {
        m.set_bits(r, c, oracle_store_bits(m.dtype, uniform(rng), true));
      }
    }
  }
}

// Two elements of `dtype` hold the same value (any two NaNs are the same).
inline bool same_element(int32_t dtype, uint32_t actual, uint32_t expected) {
  const float a = oracle_load(&actual, dtype, 0);
  const float e = oracle_load(&expected, dtype, 0);
  if (std::isnan(a) || std::isnan(e)) return std::isnan(a) && std::isnan(e);
  return actual == expected;
}

}  // namespace octet::test
