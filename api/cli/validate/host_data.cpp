#include "validate/host_data.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace octet_cli {

size_t HostArray::count() const {
  size_t n = 1;
  for (int64_t d : shape) n *= static_cast<size_t>(d);
  return n;
}
int64_t HostArray::rows() const {
  int64_t r = 1;
  for (size_t i = 0; i + 1 < shape.size(); ++i) r *= shape[i];
  return r;
}
int64_t HostArray::cols() const { return shape.empty() ? 1 : shape.back(); }

float HostArray::get(size_t i) const {
  switch (dtype) {
    case OCTET_DTYPE_FP32: {
      float f;
      std::memcpy(&f, &bytes[i * 4], 4);
      return f;
    }
    case OCTET_DTYPE_BF16:
    case OCTET_DTYPE_FP16: {
      uint16_t h;
      std::memcpy(&h, &bytes[i * 2], 2);
      return dtype == OCTET_DTYPE_BF16 ? octet_bf16_decode(h) : octet_fp16_decode(h);
    }
    case OCTET_DTYPE_E4M3:
    case OCTET_DTYPE_E5M2:
    case OCTET_DTYPE_E4M3FNUZ:
    case OCTET_DTYPE_E5M2FNUZ:
      return octet_fp8_decode(bytes[i], dtype);
    case OCTET_DTYPE_E8M0:
      return octet_e8m0_decode(bytes[i]);
    default:
      throw std::logic_error("HostArray::get: unknown dtype");
  }
}

HostArray make_array(octet_dtype dtype, const std::vector<int64_t>& shape) {
  HostArray a;
  a.dtype = dtype;
  a.shape = shape;
  a.bytes.assign(a.count() * octet_dtype_size(dtype), 0);
  return a;
}

HostArray encode_array(octet_dtype dtype, const std::vector<int64_t>& shape, const std::vector<float>& values,
                       bool saturate) {
  HostArray a = make_array(dtype, shape);
  if (values.size() != a.count()) throw std::logic_error("encode_array: size mismatch");
  for (size_t i = 0; i < values.size(); ++i) {
    const float v = values[i];
    switch (dtype) {
      case OCTET_DTYPE_FP32:
        std::memcpy(&a.bytes[i * 4], &v, 4);
        break;
      case OCTET_DTYPE_BF16:
      case OCTET_DTYPE_FP16: {
        const uint16_t h = dtype == OCTET_DTYPE_BF16 ? octet_bf16_encode(v) : octet_fp16_encode(v);
        std::memcpy(&a.bytes[i * 2], &h, 2);
        break;
      }
      case OCTET_DTYPE_E4M3:
      case OCTET_DTYPE_E5M2:
      case OCTET_DTYPE_E4M3FNUZ:
      case OCTET_DTYPE_E5M2FNUZ:
        a.bytes[i] = octet_fp8_encode(v, dtype, saturate ? 1 : 0);
        break;
      default:
        throw std::logic_error("encode_array: unsupported dtype");
    }
  }
  return a;
}

std::vector<float> widen(const HostArray& a) {
  std::vector<float> out(a.count());
  for (size_t i = 0; i < out.size(); ++i) out[i] = a.get(i);
  return out;
}

std::vector<uint8_t> transpose_bytes(const std::vector<uint8_t>& in, int64_t rows, int64_t cols, size_t elem) {
  std::vector<uint8_t> out(in.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      std::memcpy(&out[(static_cast<size_t>(c) * rows + r) * elem], &in[(static_cast<size_t>(r) * cols + c) * elem],
                  elem);
  return out;
}

std::string shape_words(const std::vector<int64_t>& shape) {
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "x" : "") + std::to_string(shape[i]);
  return s;
}

std::string hex_code(uint32_t code, int digits) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%0*X", digits, code);
  return buf;
}

namespace {

uint32_t raw_bits(const HostArray& a, size_t i) {
  const size_t size = octet_dtype_size(a.dtype);
  uint32_t bits = 0;
  std::memcpy(&bits, &a.bytes[i * size], size);  // little-endian host
  return bits;
}

bool is_float_dtype(octet_dtype d) { return d == OCTET_DTYPE_FP32 || d == OCTET_DTYPE_BF16 || d == OCTET_DTYPE_FP16; }

}  // namespace

std::string compare_arrays(const HostArray& got, const HostArray& expected) {
  if (got.dtype != expected.dtype || got.bytes.size() != expected.bytes.size())
    return "output size or dtype differs from the expectation";
  const int digits = static_cast<int>(octet_dtype_size(got.dtype) * 2);
  for (size_t i = 0; i < got.count(); ++i) {
    const uint32_t g = raw_bits(got, i), e = raw_bits(expected, i);
    if (g == e) continue;
    if (is_float_dtype(got.dtype)) {
      const float gf = got.get(i), ef = expected.get(i);
      if (std::isnan(gf) && std::isnan(ef) && std::signbit(gf) == std::signbit(ef)) continue;
    }
    const int64_t cols = expected.cols();
    return "element [" + std::to_string(i / cols) + "," + std::to_string(i % cols) + "] is " + hex_code(g, digits) +
           ", expected " + hex_code(e, digits);
  }
  return "";
}

std::vector<float> special_floats() {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  return {
      nan,
      -nan,
      inf,
      -inf,
      0.0f,
      -0.0f,
      // E4M3: max, the overflow tie (464 -> 448), just above it, far above.
      448.0f,
      -448.0f,
      464.0f,
      464.00003f,
      -465.0f,
      480.0f,
      1.0e30f,
      FLT_MAX,
      // E5M2: max, the overflow boundary at 61440, FP16's max and its tie.
      57344.0f,
      61439.996f,
      61440.0f,
      -61440.0f,
      65504.0f,
      65520.0f,
      65536.0f,
      // E4M3FNUZ: max, the overflow tie (248 -> 256, out of range), just below.
      240.0f,
      248.0f,
      247.99998f,
      -248.0f,
      // Subnormals of E4M3 (2^-9 spacing) and E5M2 (2^-16 spacing).
      std::ldexp(1.0f, -9),
      -std::ldexp(1.0f, -9),
      std::ldexp(1.0f, -10),
      std::ldexp(1.0001f, -10),
      std::ldexp(3.0f, -11),
      std::ldexp(7.5f, -9),
      std::ldexp(1.0f, -6),
      std::ldexp(1.0f, -16),
      std::ldexp(1.0f, -17),
      std::ldexp(1.5f, -17),
      std::ldexp(1.0f, -14),
      std::ldexp(0.75f, -14),
      // Ties to even in the normal range.
      1.0625f,
      1.1875f,
      1.125f,
      1.375f,
      3.0f / 1024.0f + 1.0f,
      // BF16 and FP16 ties and tiny values.
      1.0f + std::ldexp(1.0f, -8),
      1.0f + std::ldexp(3.0f, -8),
      1.0f + std::ldexp(1.0f, -11),
      std::ldexp(1.0f, -24),
      std::ldexp(1.0f, -25),
      std::ldexp(1.5f, -25),
      std::ldexp(1.0f, -126),
      std::ldexp(1.0f, -149),
      -std::ldexp(1.0f, -140),
  };
}

std::vector<float> random_floats(size_t n, std::mt19937_64& rng, int min_exp, int max_exp) {
  std::uniform_int_distribution<int> exp(min_exp, max_exp);
  std::uniform_int_distribution<uint32_t> mantissa(0, (1u << 23) - 1);
  std::bernoulli_distribution negative(0.5);
  std::vector<float> out(n);
  for (auto& v : out) {
    const float m = 1.0f + static_cast<float>(mantissa(rng)) * std::ldexp(1.0f, -23);
    v = std::ldexp(m, exp(rng)) * (negative(rng) ? -1.0f : 1.0f);
  }
  return out;
}

std::vector<float> uniform_floats(size_t n, std::mt19937_64& rng, float lo, float hi) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> out(n);
  for (auto& v : out) v = dist(rng);
  return out;
}

std::vector<float> floats_with_specials(size_t n, std::mt19937_64& rng) {
  // Exponents span E5M2's whole range and beyond, so every binade, the
  // subnormals and the overflow region of both formats are hit.
  std::vector<float> out = random_floats(n, rng, -20, 18);
  const std::vector<float> specials = special_floats();
  for (size_t i = 0; i < n && i < specials.size(); ++i) out[i] = specials[i];
  return out;
}

double ulp_of(octet_dtype dtype, double x) {
  int mantissa_bits = 23, min_exp = -126;
  if (dtype == OCTET_DTYPE_BF16) mantissa_bits = 7;
  if (dtype == OCTET_DTYPE_FP16) mantissa_bits = 10, min_exp = -14;
  const double ax = std::fabs(x);
  int e = min_exp;
  if (ax > 0 && std::isfinite(ax)) e = std::max(std::ilogb(ax), min_exp);
  return std::ldexp(1.0, e - mantissa_bits);
}

}  // namespace octet_cli
