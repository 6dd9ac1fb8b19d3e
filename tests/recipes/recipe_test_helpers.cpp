#include "recipe_test_helpers.hpp"

#include <cmath>
#include <random>

namespace recipes_test {

Context make_context(const char* backend) {
  octet_context_options o{};
  o.struct_size = sizeof(o);
  o.backend = backend;
  octet_context* c = nullptr;
  EXPECT_EQ(octet_context_create(&o, &c), OCTET_STATUS_SUCCESS) << octet_last_error_message();
  return Context(c);
}

Tensor make_tensor(octet_context* ctx, int32_t dtype, int64_t rows, int64_t cols, uint32_t usages,
                   int32_t scaling_mode) {
  return octet::Tensor::create(ctx, dtype, {rows, cols}, usages, scaling_mode);
}

Tensor make_fp32(octet_context* ctx, int64_t rows, int64_t cols, const std::vector<float>& values) {
  Tensor t = make_tensor(ctx, OCTET_DTYPE_FP32, rows, cols);
  EXPECT_EQ(octet_tensor_copy_from_host(t.get(), OCTET_COMPONENT_DATA, values.data(), values.size() * 4),
            OCTET_STATUS_SUCCESS)
      << octet_last_error_message();
  return t;
}

Quantizer make_quantizer(const octet_recipe* recipe, int32_t role) {
  octet_quantizer* q = nullptr;
  EXPECT_EQ(octet_quantizer_create(recipe, role, &q), OCTET_STATUS_SUCCESS) << octet_last_error_message();
  return Quantizer(q);
}

std::vector<uint8_t> read_bytes(const octet_tensor* t, int32_t component, size_t n) {
  std::vector<uint8_t> out(n);
  EXPECT_EQ(octet_tensor_copy_to_host(t, component, out.data(), n), OCTET_STATUS_SUCCESS)
      << octet_last_error_message();
  return out;
}

std::vector<float> read_floats(const octet_tensor* t, int32_t component, size_t n) {
  std::vector<float> out(n);
  EXPECT_EQ(octet_tensor_copy_to_host(t, component, out.data(), n * 4), OCTET_STATUS_SUCCESS)
      << octet_last_error_message();
  return out;
}

std::vector<float> random_values(size_t n, float sigma, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, sigma);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

double fp8_value(uint8_t code, int32_t dtype) {
  const int man_bits = dtype == OCTET_DTYPE_E4M3 ? 3 : 2;
  const int bias = dtype == OCTET_DTYPE_E4M3 ? 7 : 15;
  const int e = (code & 0x7F) >> man_bits;
  const int m = code & ((1 << man_bits) - 1);
  double v = e == 0 ? std::ldexp(double(m), 1 - bias - man_bits)
                    : std::ldexp(1.0 + std::ldexp(double(m), -man_bits), e - bias);
  return (code & 0x80) ? -v : v;
}

float fp8_max(int32_t dtype) { return dtype == OCTET_DTYPE_E4M3 ? 448.0f : 57344.0f; }

uint8_t fp8_encode_sat(float x, int32_t dtype) {
  if (std::isnan(x)) return std::signbit(x) ? 0xFF : 0x7F;
  const uint8_t max_code = dtype == OCTET_DTYPE_E4M3 ? 0x7E : 0x7B;
  if (std::isinf(x)) return uint8_t(max_code | (std::signbit(x) ? 0x80 : 0));
  const double ax = std::fabs(double(x));
  // At or beyond max normal the saturating conversion clamps (and a search
  // would lose the distinction between codes at this magnitude).
  if (ax >= fp8_value(max_code, dtype)) return uint8_t(max_code | (std::signbit(x) ? 0x80 : 0));
  uint8_t best = 0;
  double best_err = INFINITY;
  for (int c = 0; c <= max_code; ++c) {
    const double err = std::fabs(fp8_value(uint8_t(c), dtype) - ax);
    if (err < best_err || (err == best_err && (c % 2) == 0)) {
      best = uint8_t(c);
      best_err = err;
    }
  }
  // Beyond max normal the saturating conversion clamps (the search already
  // picks max_code for anything above it).
  return uint8_t(best | (std::signbit(x) ? 0x80 : 0));
}

std::vector<uint8_t> save(const octet_quantizer* q) {
  size_t size = 0;
  EXPECT_EQ(octet_quantizer_save(q, nullptr, 0, &size), OCTET_STATUS_SUCCESS) << octet_last_error_message();
  std::vector<uint8_t> bytes(size);
  EXPECT_EQ(octet_quantizer_save(q, bytes.data(), bytes.size(), &size), OCTET_STATUS_SUCCESS)
      << octet_last_error_message();
  return bytes;
}

bool backend_registered(const char* name) {
  size_t count = 0;
  if (octet_backend_count(&count) != OCTET_STATUS_SUCCESS) return false;
  for (size_t i = 0; i < count; ++i) {
    octet_backend_info info{};
    info.struct_size = sizeof(info);
    if (octet_backend_get_info(i, &info) == OCTET_STATUS_SUCCESS && std::string(info.name) == name)
      return info.available != 0;
  }
  return false;
}

bool load_backend(const char* name, const char* path) {
  if (backend_registered(name)) return true;
  if (path == nullptr) return false;
  octet_backend_load(path);
  return backend_registered(name);
}

}  // namespace recipes_test
