#include "layer_test_helpers.hpp"

#include <cmath>
#include <random>

namespace layers_test {

octet_context* make_context(const char* backend, int32_t profile) {
  octet_context_options o;
  octet_context_options_init(&o);
  o.backend = backend;
  o.capability_profile = profile;
  octet_context* ctx = nullptr;
  if (octet_context_create(&o, &ctx) != OCTET_STATUS_SUCCESS) return nullptr;
  return ctx;
}

octet::Tensor make_tensor(octet_context* ctx, int32_t dtype, int64_t rows, int64_t cols) {
  return octet::Tensor::create(ctx, dtype, {rows, cols});
}

static size_t numel(const octet_tensor* t, int32_t* dtype) {
  octet_tensor_info info{};
  info.struct_size = sizeof(info);
  octet_tensor_get_info(t, &info);
  size_t n = 1;
  for (int i = 0; i < info.ndim; ++i) n *= size_t(info.shape[i]);
  *dtype = info.dtype;
  return n;
}

void upload(octet_tensor* t, const Vec& values) {
  int32_t dtype = 0;
  size_t n = numel(t, &dtype);
  ASSERT_EQ(n, values.size());
  if (dtype == OCTET_DTYPE_FP32) {
    std::vector<float> f(values.begin(), values.end());
    ASSERT_EQ(octet_tensor_copy_from_host(t, OCTET_COMPONENT_DATA, f.data(), n * 4), OCTET_STATUS_SUCCESS);
  } else {
    std::vector<uint16_t> h(n);
    for (size_t i = 0; i < n; ++i) h[i] = octet_bf16_encode(float(values[i]));
    ASSERT_EQ(octet_tensor_copy_from_host(t, OCTET_COMPONENT_DATA, h.data(), n * 2), OCTET_STATUS_SUCCESS);
  }
}

Vec download(const octet_tensor* t) {
  int32_t dtype = 0;
  size_t n = numel(t, &dtype);
  Vec out(n);
  if (dtype == OCTET_DTYPE_FP32) {
    std::vector<float> f(n);
    EXPECT_EQ(octet_tensor_copy_to_host(t, OCTET_COMPONENT_DATA, f.data(), n * 4), OCTET_STATUS_SUCCESS);
    for (size_t i = 0; i < n; ++i) out[i] = f[i];
  } else {
    std::vector<uint16_t> h(n);
    EXPECT_EQ(octet_tensor_copy_to_host(t, OCTET_COMPONENT_DATA, h.data(), n * 2), OCTET_STATUS_SUCCESS);
    for (size_t i = 0; i < n; ++i) out[i] = octet_bf16_decode(h[i]);
  }
  return out;
}

Vec random_vec(size_t n, uint32_t seed, double scale) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  Vec v(n);
  for (double& x : v) x = scale * dist(gen);
  return v;
}

Vec rounded(const Vec& v, int32_t dtype) {
  Vec out(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    out[i] = dtype == OCTET_DTYPE_FP32 ? double(float(v[i])) : double(octet_bf16_decode(octet_bf16_encode(float(v[i]))));
  return out;
}

Vec fp8_round_trip(const Vec& v, int32_t dtype, double scale) {
  Vec out(v.size());
  const float s = float(scale);
  for (size_t i = 0; i < v.size(); ++i)
    out[i] = double(octet_fp8_decode(octet_fp8_encode(float(v[i]) * s, dtype, 1), dtype)) * double(1.0f / s);
  return out;
}

Vec matmul_nt(const Vec& a, const Vec& b, int64_t m, int64_t n, int64_t k) {
  Vec y(size_t(m * n), 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t l = 0; l < k; ++l) acc += a[size_t(i * k + l)] * b[size_t(j * k + l)];
      y[size_t(i * n + j)] = acc;
    }
  return y;
}

Vec transpose(const Vec& a, int64_t rows, int64_t cols) {
  Vec t(a.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) t[size_t(c * rows + r)] = a[size_t(r * cols + c)];
  return t;
}

Vec gemm_bound(const Vec& a, const Vec& b, int64_t m, int64_t n, int64_t k) {
  Vec bound(size_t(m * n), 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t l = 0; l < k; ++l) s += std::fabs(a[size_t(i * k + l)] * b[size_t(j * k + l)]);
      bound[size_t(i * n + j)] = double(k) * std::ldexp(1.0, -23) * s;
    }
  return bound;
}

void expect_close(const Vec& got, const Vec& want, double rel, double abs, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i)
    if (!(std::fabs(got[i] - want[i]) <= abs + rel * std::fabs(want[i])) && bad++ < 5)
      ADD_FAILURE() << what << "[" << i << "]: got " << got[i] << ", want " << want[i];
}

void expect_within(const Vec& got, const Vec& want, const Vec& bound, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    // The bound of the summation plus the rounding of the FP32 output.
    const double limit = bound[i] + std::fabs(want[i]) * std::ldexp(1.0, -23) + 1e-30;
    if (!(std::fabs(got[i] - want[i]) <= limit) && bad++ < 5)
      ADD_FAILURE() << what << "[" << i << "]: got " << got[i] << ", want " << want[i] << " (bound " << limit << ")";
  }
}

void expect_identical(const Vec& a, const Vec& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  size_t bad = 0;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i] && bad++ < 5) ADD_FAILURE() << what << "[" << i << "]: " << a[i] << " vs " << b[i];
}

octet_tensor* param(octet_layer* layer, const char* name) {
  size_t index = 0;
  EXPECT_EQ(octet_layer_find_parameter(layer, name, &index), OCTET_STATUS_SUCCESS) << octet_last_error_message();
  octet_tensor* t = nullptr;
  EXPECT_EQ(octet_layer_get_parameter(layer, index, &t), OCTET_STATUS_SUCCESS) << octet_last_error_message();
  return t;
}

octet_tensor* grad(octet_layer* layer, const char* name) {
  size_t index = 0;
  EXPECT_EQ(octet_layer_find_parameter(layer, name, &index), OCTET_STATUS_SUCCESS) << octet_last_error_message();
  octet_tensor* t = nullptr;
  EXPECT_EQ(octet_layer_get_gradient(layer, index, &t), OCTET_STATUS_SUCCESS) << octet_last_error_message();
  return t;
}

static octet_memory_stats stats_of(const octet_context* ctx) {
  octet_memory_stats s{};
  s.struct_size = sizeof(s);
  EXPECT_EQ(octet_context_get_memory_stats(ctx, &s), OCTET_STATUS_SUCCESS);
  return s;
}

uint64_t current_total(const octet_context* ctx) { return stats_of(ctx).current_total; }
uint64_t peak_total(const octet_context* ctx) { return stats_of(ctx).peak_total; }
uint64_t current_of(const octet_context* ctx, int32_t category) { return stats_of(ctx).current_bytes[category]; }

}  // namespace layers_test
