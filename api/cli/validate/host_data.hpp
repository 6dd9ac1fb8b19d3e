// Host-side arrays and the CLI's own element arithmetic: the expectations
// `octet validate` compares a backend with are built from these and from the
// scalar codecs of octet.h, never from the backend under test.
#pragma once

#include <octet/octet.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace octet_cli {

// Elements of one dtype, stored as their raw bytes (row-major).
struct HostArray {
  octet_dtype dtype = OCTET_DTYPE_INVALID;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;

  size_t count() const;
  int64_t rows() const;       // product of all but the last dimension
  int64_t cols() const;       // last dimension
  float get(size_t i) const;  // widened to FP32 (FP8: raw code decoded, no scale)
};

HostArray make_array(octet_dtype dtype, const std::vector<int64_t>& shape);
// Narrows each FP32 value into dtype with the codecs of octet.h.
HostArray encode_array(octet_dtype dtype, const std::vector<int64_t>& shape, const std::vector<float>& values,
                       bool saturate = true);
std::vector<float> widen(const HostArray& a);
// Row-major [rows, cols] -> [cols, rows] of elements of `elem` bytes.
std::vector<uint8_t> transpose_bytes(const std::vector<uint8_t>& in, int64_t rows, int64_t cols, size_t elem);

// "" when equal; otherwise the first difference in words. Floating outputs
// count any NaN as equal to any NaN of the same sign (payloads are not part
// of the contract); FP8 codes must match bit for bit.
std::string compare_arrays(const HostArray& got, const HostArray& expected);
std::string shape_words(const std::vector<int64_t>& shape);
std::string hex_code(uint32_t code, int digits);

// Test inputs. `specials` are the edge cases of numerics.md sections 1-2.
std::vector<float> special_floats();
// Random signs, exponents in [min_exp, max_exp], every mantissa bit random.
std::vector<float> random_floats(size_t n, std::mt19937_64& rng, int min_exp, int max_exp);
std::vector<float> uniform_floats(size_t n, std::mt19937_64& rng, float lo, float hi);
// Random values with the specials written over the first elements.
std::vector<float> floats_with_specials(size_t n, std::mt19937_64& rng);

// One unit in the last place of `dtype` (FP32/BF16/FP16) at magnitude |x|,
// subnormal spacing included.
double ulp_of(octet_dtype dtype, double x);

}  // namespace octet_cli
